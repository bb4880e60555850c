"""Declarative field specs for capability inputs: one description gives a checker and a schema.

Plain data in `forgec.ir` (beside the capability rows of `forgec.ir.capabilities`), so the
compiler (`forgec.catalog`), the reference host's bridge and the in-memory host of the runtime
run the very same input check.

A capability's input is a JSON object. `Shape` lists its fields (`Field`, built with the small
constructors below), which are required (always, or when a selector such as `action` has a given
literal value) and which exclude each other, plus the input's size limit. From that one
description come both `Shape.check` (the static/run-time checker of a capability's input) and
`Shape.schema()` (the JSON Schema the MCP server and the docs show), so the two cannot drift.

A field may have a shape of its own that another field's literal value chooses (`Nested`:
`subagent.invoke`'s `input`, by the built-in sub-agent its `name` names); a value with no shape
there is a warning of `check`'s (`Shape.unchosen`), never a refusal of the shape's.

Checking modes. At compile time the checker sees only the literal fields of the input; fields
that are expressions are named in `computed` (present, value unknown): they count as present
for required-ness and exclusivity, their values are checked at run time. A nested object whose
only key is `$ref`, `$template` or `$credential` is an expression too and is skipped statically.
At run time (`runtime=True`) every value is real data and is checked, except the unresolved
`{"$credential": id}` header values the host resolves itself at the bridge.

Integers: a literal written in the manifest follows the manifest rule (`1.0` is not an integer);
run-time data follows JSON Schema, as the tool's `inputSchema` and the MCP schemas do (`5.0` is).

Validators that need a third-party library (cron, SQL, URL) are named, not held: a field says
`validate="cron"` and `forgec.catalog` registers the function under that name when it is
imported (`register_validator`). A named validator that is not registered is a problem, never a
silent pass: a host without the rules refuses the value instead of running it unchecked.

The URL rule also answers where a URL goes (`url_host`): the run-time labels (`external:<host>`,
`egress:<host>`) read a URL's host through it, so the VM, the hosts and the checker's network
pass read a URL one way (`register_url_host`). Without it loaded the host is not known
(`external:*`), never read by a second parser.

Never raises: any JSON value (and most non-JSON Python values) yields a list of problems.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from forgec.ir import rules
from forgec.ir.readable import HashedByValue
from forgec.ir.suggest import closest

EXPRESSION_KEYS = frozenset(rules.EXPRESSION_KEYS)

# An extra validator for a value already of the right JSON type: returns messages (empty: ok).
Validator = Callable[[Any], list[str]]

# named validators (see the module text): name → function
VALIDATORS: dict[str, Validator] = {}


def register_validator(name: str, function: Validator) -> None:
    """Make `validate="<name>"` fields run `function` (idempotent for the same function)."""
    VALIDATORS[name] = function


# the URL rule's reader of a URL's host (None: not an acceptable URL); `forgec.catalog` registers it
_URL_HOST: list[Callable[[str], str | None]] = []


def register_url_host(function: Callable[[str], str | None]) -> None:
    """Make `url_host` read hosts with `function`, the URL rule's own reader."""
    _URL_HOST[:] = [function]


def url_host(url: Any) -> str | None:
    """The host `url` reaches by the URL rule; None when it is not an acceptable URL or the
    rule is not loaded (the host is then not known: a label says `*`)."""
    if type(url) is not str or not _URL_HOST:
        return None
    return _URL_HOST[0](url)


def _run_validator(validate: Validator | str, value: Any) -> list[str]:
    if isinstance(validate, str):
        function = VALIDATORS.get(validate)
        if function is None:
            return [f"cannot be checked here: the {validate} rule is not loaded"]
        return function(value)
    return validate(value)


@attrs.frozen(repr=False, eq=False)
class InputProblem(HashedByValue):
    """One thing wrong with a capability input; `path` is relative to the input (tokens)."""

    path: tuple[str | int, ...]
    message: str
    # the likely meant value (an enum's) or field name (`rename`): the diagnostic's fix
    suggestion: str | None = None
    rename: bool = False
    # a code other than the input check's own, for a problem that is not a refusal
    # (`Shape.unchosen`: a sub-agent name with no built-in shape)
    code: str | None = None


_JSON_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "a list",
    "object": "an object",
}


def is_expression(value: Any) -> bool:
    """Whether a value is an expression object (`{"$ref": ..}` and the like)."""
    if type(value) is dict:  # the common case, without the ABC check below
        return len(value) == 1 and next(iter(value)) in EXPRESSION_KEYS
    return isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in EXPRESSION_KEYS


def json_type_name(value: Any) -> str:
    """How a person calls the JSON type of a value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def compact_json_size(value: Any) -> int:
    """Bytes of the value as compact UTF-8 JSON (non-ASCII kept, as SPEC §5 counts limits).

    -1 when the value cannot be serialised at all (nested beyond the recursion limit).
    """
    try:
        import orjson

        return len(orjson.dumps(value))
    except (TypeError, ValueError):
        pass
    # orjson refuses integers beyond 64 bits and lone surrogates; the stdlib writes both.
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return -1  # nested too deeply to serialise: no JSON document of ours is
    return len(text.encode("utf-8", "surrogatepass"))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return _is_int(value)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "any":
        return True
    if kind == "integer":
        return _is_int(value)
    if kind == "number":
        return _is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, (list, tuple))
    if kind == "object":
        return isinstance(value, Mapping)
    return False


def _fmt_num(n: float | int) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


@attrs.frozen(repr=False, eq=False)
class Field(HashedByValue):
    """One input field: its JSON type and the constraints on its value."""

    kind: str  # string | integer | number | boolean | array | object | any
    description: str = ""
    min_length: int | None = None  # strings: code points
    max_length: int | None = None
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: Field | None = None  # arrays: each item
    values: Field | None = None  # objects used as maps: each value (None: anything)
    nullable: bool = False
    validate: Validator | str | None = None  # a function, or the name of a registered one
    credential_values: bool = False  # map values may be `{"$credential": id}` (net.http headers)
    max_items: int | None = None  # arrays
    # a host cap (SPEC §12): a literal above `maximum` is an error, a computed value above it
    # is lowered to it at the bridge
    host_cap: bool = False
    schema_extra: Mapping[str, Any] = attrs.field(factory=dict)

    def problems(
        self, value: Any, path: tuple[str | int, ...], runtime: bool
    ) -> list[InputProblem]:
        if not runtime and is_expression(value):
            return []  # computed: checked at run time
        if value is None and self.nullable:
            return []
        if self.kind == "string" and type(value) is str and self.validate is None:
            # the common case, without building the messages' `where`
            if self.enum is None and (
                (self.min_length is None or len(value) >= self.min_length)
                and (self.max_length is None or len(value) <= self.max_length)
            ):
                return []
            return self._string_problems(value, path, _where(path))
        where = _where(path)
        if runtime and self.kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)  # run-time data follows JSON Schema, where 5.0 is an integer
        if not _type_ok(self.kind, value):
            expected = _JSON_TYPE_NAMES.get(self.kind, self.kind)
            if self.kind == "number" and isinstance(value, float):
                return [InputProblem(path, f"{where} must be a finite number")]
            return [InputProblem(path, f"{where} must be {expected}, not {json_type_name(value)}")]
        out: list[InputProblem] = []
        if self.kind == "string":
            out.extend(self._string_problems(value, path, where))
        elif self.kind in ("integer", "number"):
            out.extend(self._number_problems(value, path, where))
        elif self.kind == "array" and self.max_items is not None and len(value) > self.max_items:
            out.append(
                InputProblem(path, f"{where} has {len(value)} items, at most {self.max_items}")
            )
        elif self.kind == "array" and self.items is not None:
            for index, item in enumerate(value):
                out.extend(self.items.problems(item, (*path, index), runtime))
        elif self.kind == "object" and self.values is not None:
            for key, item in value.items():
                if self.credential_values and _is_credential(item):
                    continue
                out.extend(self.values.problems(item, (*path, str(key)), runtime))
        if not out and self.validate is not None:
            out.extend(
                InputProblem(path, f"{where}: {m}") for m in _run_validator(self.validate, value)
            )
        return out

    def _string_problems(
        self, value: str, path: tuple[str | int, ...], where: str
    ) -> list[InputProblem]:
        if self.enum is not None and value not in self.enum:
            options = ", ".join(f"`{v}`" for v in self.enum)
            close = [v for v in self.enum if v.lower() == value.lower()] or [
                c for c in [closest(value, self.enum)] if c is not None
            ]
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            shown = value if len(value) <= 40 else value[:40] + "…"
            message = f"{where} is `{shown}`, expected one of {options}{hint}"
            return [InputProblem(path, message, close[0] if close else None)]
        n = len(value)
        if self.min_length is not None and n < self.min_length:
            if self.min_length == 1:
                return [InputProblem(path, f"{where} must not be empty")]
            return [InputProblem(path, f"{where} must be at least {self.min_length} characters")]
        if self.max_length is not None and n > self.max_length:
            return [
                InputProblem(
                    path, f"{where} is {n} characters long, at most {self.max_length} allowed"
                )
            ]
        return []

    def _number_problems(
        self, value: float | int, path: tuple[str | int, ...], where: str
    ) -> list[InputProblem]:
        low, high = self.minimum, self.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            if low is not None and high is not None:
                bounds = f"from {_fmt_num(low)} to {_fmt_num(high)}"
            elif low is not None:
                bounds = f"at least {_fmt_num(low)}"
            else:
                bounds = f"at most {_fmt_num(high or 0)}"
            return [InputProblem(path, f"{where} is {_fmt_num(value)}, must be {bounds}")]
        return []

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.kind != "any":
            out["type"] = [self.kind, "null"] if self.nullable else self.kind
        if self.description:
            out["description"] = self.description
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.items is not None:
            out["items"] = self.items.schema()
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.kind == "object" and self.values is not None:
            value_schema = self.values.schema()
            if self.credential_values:
                value_schema = {"anyOf": [value_schema, CREDENTIAL_SCHEMA]}
            out["additionalProperties"] = value_schema
        out.update(self.schema_extra)
        return out


CREDENTIAL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "description": "a declared credential, resolved by the host at the bridge",
    "properties": {"$credential": {"type": "string"}},
    "required": ["$credential"],
    "additionalProperties": False,
}


def _is_credential(value: Any) -> bool:
    return (
        isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("$credential"), str)
    )


def _where(path: tuple[str | int, ...]) -> str:
    if not path:
        return "the input"
    text = str(path[0])
    for seg in path[1:]:
        text += f"[{seg}]" if isinstance(seg, int) else f".{seg}"
    return f"`{text}`"


# Constructors: the catalogs read as tables of these.


def string(
    description: str = "",
    *,
    min_length: int | None = None,
    max_length: int | None = None,
    validate: Validator | str | None = None,
    nullable: bool = False,
    **schema_extra: Any,
) -> Field:
    return Field(
        "string",
        description,
        min_length=min_length,
        max_length=max_length,
        validate=validate,
        nullable=nullable,
        schema_extra=schema_extra,
    )


def enum(description: str, *values: str) -> Field:
    return Field("string", description, enum=values)


def integer(
    description: str = "",
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    host_cap: bool = False,
) -> Field:
    return Field("integer", description, minimum=minimum, maximum=maximum, host_cap=host_cap)


def number(
    description: str = "",
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    host_cap: bool = False,
) -> Field:
    return Field("number", description, minimum=minimum, maximum=maximum, host_cap=host_cap)


def boolean(description: str = "") -> Field:
    return Field("boolean", description)


def array(description: str, items: Field, *, max_items: int | None = None) -> Field:
    return Field("array", description, items=items, max_items=max_items)


def obj(description: str = "") -> Field:
    """Any JSON object (passed through, e.g. a sub-agent's input)."""
    return Field("object", description)


def any_value(description: str = "") -> Field:
    return Field("any", description)


@attrs.frozen(repr=False, eq=False)
class RequiredWhen(HashedByValue):
    """`field` (or one of its `alternatives`) is required when `selector` is literally one of
    `values` (`cronExpr` on create; `prompt` or `promptFile` on create)."""

    selector: str
    values: tuple[str, ...]
    field: str
    alternatives: tuple[str, ...] = ()  # any one of `field` and these satisfies the rule


@attrs.frozen(repr=False, eq=False)
class Nested(HashedByValue):
    """The value of `field` has its own shape, chosen by the literal value of `selector`
    (`subagent.invoke`: `name` picks the built-in sub-agent whose shape `input` must fit).

    An absent `field` is checked as `{}` (what the handler then receives); a `field` that is in
    `computed` and also in the literal is an object holding expressions, given as its literal
    members with each expression standing as itself (skipped). A selector value
    with no shape here is no refusal of this shape's (an embedder may register more sub-agents
    than the built-in ones): `Shape.unchosen` names it, under `unknown_code`, and the host's
    registry decides at run time."""

    selector: str
    field: str
    shapes: Mapping[str, Shape]
    what: str  # how a person calls a choice, for messages ("sub-agent")
    unknown_code: str  # the (warning) code `check` reports an unknown choice under

    def problems(
        self, literal: Mapping[str, Any], computed: frozenset[str], runtime: bool
    ) -> list[InputProblem]:
        name = literal.get(self.selector)
        shape = self.shapes.get(name) if type(name) is str else None
        if shape is None:
            return []
        if self.field in literal:
            value = literal[self.field]  # literal, or (also in `computed`) its literal part
        elif self.field in computed:
            return []  # computed as a whole: checked at run time
        else:
            value = {}
        if not isinstance(value, Mapping) or (not runtime and is_expression(value)):
            return []  # the field's own type check said so, or it is computed
        inner = frozenset(
            () if runtime else (str(k) for k, item in value.items() if is_expression(item))
        )
        prefix = f"`{self.field}` of the {self.what} `{name}`: "
        return [
            InputProblem((self.field, *p.path), prefix + p.message, p.suggestion, p.rename)
            for p in shape.check(value, inner, runtime=runtime)
        ]

    def unchosen(self, literal: Mapping[str, Any]) -> list[InputProblem]:
        name = literal.get(self.selector)
        if type(name) is not str or name in self.shapes:
            return []
        known = sorted(self.shapes)
        meant = closest(name, known)
        hint = f" (did you mean `{meant}`?)" if meant else ""
        shown = name if len(name) <= 40 else name[:40] + "…"
        message = (
            f"`{shown}` is not a built-in {self.what}{hint}: `check` cannot check its "
            f"`{self.field}`, and the host refuses the call unless it registers one by that "
            f"name (built-in: {', '.join(known)})"
        )
        return [InputProblem((self.selector,), message, meant, code=self.unknown_code)]


@attrs.frozen(repr=False, eq=False)
class Shape(HashedByValue):
    """A capability input: its fields, required-ness rules and size limit."""

    fields: Mapping[str, Field]
    limit: int  # bytes of compact UTF-8 JSON
    required: tuple[str, ...] = ()
    required_when: tuple[RequiredWhen, ...] = ()
    exclusive: tuple[tuple[str, str], ...] = ()
    nested: tuple[Nested, ...] = ()  # fields whose own shape another field's value chooses
    # at least one field of each group is given (`persona.send`: `message` or `tool`)
    one_of: tuple[tuple[str, ...], ...] = ()
    # (field, the field it needs): `input` means nothing without the `tool` it is for
    needs: tuple[tuple[str, str], ...] = ()

    def check(
        self, literal: Any, computed: frozenset[str] = frozenset(), *, runtime: bool = False
    ) -> list[InputProblem]:
        if not runtime and is_expression(literal):
            return []  # the whole input is computed: checked at run time
        if type(literal) is not dict and not isinstance(literal, Mapping):
            return [InputProblem((), f"the input must be an object, not {json_type_name(literal)}")]
        if type(computed) is not frozenset and not isinstance(computed, (set, frozenset)):
            try:
                computed = frozenset(computed)
            except TypeError:
                computed = frozenset()
        out: list[InputProblem] = []
        present: set[str] = set()
        fields = self.fields
        extra = [k for k in computed if k not in literal]
        for key in [*literal.keys(), *sorted(str(k) for k in extra)] if extra else literal:
            name = key if type(key) is str else str(key)
            present.add(name)
            if name not in fields:
                meant = closest(name, fields) if fields else None
                out.append(InputProblem((name,), self._unknown_message(name), meant, rename=True))
        for key, value in literal.items():
            spec = fields.get(key) if type(key) is str else None
            if spec is not None:
                found = spec.problems(value, (key,), runtime)
                if found:
                    out.extend(found)
        for name in self.required:
            if name not in present:
                out.append(InputProblem((name,), f"missing required field `{name}`"))
        for rule in self.required_when:
            selected = literal.get(rule.selector)
            if (
                isinstance(selected, str)
                and selected in rule.values
                and rule.field not in present
                and not any(other in present for other in rule.alternatives)
            ):
                names = " or ".join(f"`{n}`" for n in (rule.field, *rule.alternatives))
                what = "field" if not rule.alternatives else "one of the fields"
                out.append(
                    InputProblem(
                        (rule.field,),
                        f"missing {what} {names}, required when `{rule.selector}` is `{selected}`",
                    )
                )
        for first, second in self.exclusive:
            if first in present and second in present:
                out.append(
                    InputProblem(
                        (second,),
                        f"`{first}` and `{second}` are mutually exclusive: give one of them",
                    )
                )
        for group in self.one_of:
            if not any(name in present for name in group):
                names = " or ".join(f"`{n}`" for n in group)
                out.append(InputProblem((group[0],), f"missing one of the fields {names}"))
        for name, needed in self.needs:
            if name in present and needed not in present:
                out.append(InputProblem((name,), f"`{name}` needs `{needed}`: give both"))
        for nested in self.nested:
            out.extend(nested.problems(literal, computed, runtime))
        if not computed:
            size = compact_json_size(literal)
            if size < 0:
                out.append(InputProblem((), "the input is nested too deeply to be JSON"))
            elif size > self.limit:
                out.append(
                    InputProblem(
                        (),
                        f"the input is {size} bytes as compact JSON, over this capability's "
                        f"limit of {self.limit} bytes",
                    )
                )
        return out

    def unchosen(self, literal: Any) -> list[InputProblem]:
        """Warnings, not refusals: a literal selector value with no nested shape (a sub-agent
        `check` does not know; the host's registry decides at run time)."""
        if not self.nested or not isinstance(literal, Mapping):
            return []
        return [p for nested in self.nested for p in nested.unchosen(literal)]

    def caps(self) -> dict[str, float]:
        """The host caps (SPEC §12): field → the most a computed value may be."""
        return {
            name: spec.maximum
            for name, spec in self.fields.items()
            if spec.host_cap and spec.maximum is not None
        }

    def _unknown_message(self, name: str) -> str:
        known = sorted(self.fields)
        if not known:
            return f"unknown field `{name}`: this capability takes no input fields"
        found = closest(name, known)
        hint = f" (did you mean `{found}`?)" if found else ""
        return f"unknown field `{name}`{hint}; known fields: {', '.join(known)}"

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "object",
            "properties": {name: spec.schema() for name, spec in self.fields.items()},
            "additionalProperties": False,
        }
        if self.required:
            out["required"] = list(self.required)
        conditions: list[dict[str, Any]] = []
        for rule in self.required_when:
            conditions.append(
                {
                    "if": {
                        "properties": {rule.selector: {"enum": list(rule.values)}},
                        "required": [rule.selector],
                    },
                    "then": (
                        {"anyOf": [{"required": [n]} for n in (rule.field, *rule.alternatives)]}
                        if rule.alternatives
                        else {"required": [rule.field]}
                    ),
                }
            )
        for nested in self.nested:
            for name, shape in nested.shapes.items():
                then: dict[str, Any] = {"properties": {nested.field: shape.schema()}}
                if shape.required:
                    then["required"] = [nested.field]
                conditions.append(
                    {
                        "if": {
                            "properties": {nested.selector: {"const": name}},
                            "required": [nested.selector],
                        },
                        "then": then,
                    }
                )
        for first, second in self.exclusive:
            conditions.append({"not": {"required": [first, second]}})
        for group in self.one_of:
            conditions.append({"anyOf": [{"required": [n]} for n in group]})
        if self.needs:
            out["dependencies"] = {name: [needed] for name, needed in self.needs}
        if conditions:
            out["allOf"] = conditions
        return out
