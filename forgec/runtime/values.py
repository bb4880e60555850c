"""Run-time value semantics (SPEC §12 "Run semantics"), shared by the VM and its tests.

All values the VM sees are plain JSON (dict, list, str, int, float, bool, None): input and
every host result are normalized through orjson on the way in. That lets these helpers test
types with `type(x) is ...` and keeps JSON's distinctions Python blurs (`True == 1`).

`compile_value` turns a Program's value descriptor into a closure `env -> value` once per
Program, so evaluating a value at run time is one Python call, not a walk over descriptors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from forgec.runtime.jsontext import compact as json_dumps
from forgec.runtime.limits import VALUE_LIMIT

Env = dict[str, Any]
Evaluator = Callable[[Env], Any]

# A list or object literal with at most this many members is measured with one orjson pass
# over the built value, and a template with at most this many placeholders by the length of
# its joined text: every member is already at most VALUE_LIMIT (the invariant this module
# keeps), so that reads at most this many × VALUE_LIMIT bytes. Wider ones count member by
# member and stop at the first byte over the limit.
_MEASURE_WHOLE = 8
# orjson's bytes differ from forgec's text (`jsontext`) only in floats, and a float token of
# at least 3 bytes ("1.0") is at most 24 in forgec's layout: orjson output this short or
# shorter fits whatever floats it holds, and needs no rewriting to be measured.
_SURELY_FITS = VALUE_LIMIT // 8


class RunFailure(Exception):
    """A run stops with `code`; the VM fills in the node and the transitions."""

    def __init__(self, code: str, message: str, node: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.node = node


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_NUMBER = (int, float)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    t = type(value)
    if t is bool:
        return "boolean"
    if t is int or t is float:
        return "number"
    if t is str:
        return "string"
    if t is list:
        return "list"
    if t is dict:
        return "object"
    return t.__name__


def path_text(segments: list[str | int] | tuple[str | int, ...]) -> str:
    """`["input", "items", 0, "title"]` → `input.items[0].title`."""
    out = str(segments[0])
    for seg in segments[1:]:
        out += f"[{seg}]" if type(seg) is int else f".{seg}"
    return out


def truthy(value: Any) -> bool:
    """Falsy: null, false, 0, "", [], {}; everything else is truthy."""
    if value is None or value is False:
        return False
    t = type(value)
    if t is int or t is float:
        return value != 0
    if t is str or t is list or t is dict:
        return len(value) > 0
    return True


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: numbers by value (1 == 1.0), booleans are not numbers.

    Iterative (no recursion limit to hit) and linear in the number of distinct containers:
    each pair of containers is compared once, so shared substructure (`[$v, $v]` against a
    separately built equal list) is not walked again each time it appears. JSON has no NaN,
    so an identical pair is equal without a look."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is not list and ta is not dict:
        return _scalar_equal(a, ta, b, tb)
    if ta is not tb:
        return False
    stack: list[tuple[Any, Any]] = [(a, b)]
    pop, extend = stack.pop, stack.extend
    seen: set[tuple[int, int]] = set()  # both operands stay alive, so ids are stable
    while stack:
        x, y = pop()
        if x is y:
            continue
        tx, ty = type(x), type(y)
        if tx is list or tx is dict:
            if ty is not tx or len(x) != len(y):
                return False
            pair = (id(x), id(y))
            if pair in seen:
                continue
            seen.add(pair)
            if tx is list:
                extend(zip(x, y, strict=True))
            else:
                if x.keys() != y.keys():
                    return False
                extend([(v, y[k]) for k, v in x.items()])
        elif not _scalar_equal(x, tx, y, ty):
            return False
    return True


def _scalar_equal(a: Any, ta: type, b: Any, tb: type) -> bool:
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in _NUMBER and tb in _NUMBER:
        return bool(a == b)
    if ta is not tb:
        return False
    return bool(a == b)


def contains(container: Any, needle: Any) -> bool:
    """Substring of a string, element of a list, key of an object; else `RUN_TYPE`."""
    t = type(container)
    if t is str:
        if type(needle) is not str:
            raise RunFailure(
                "RUN_TYPE", f"contains on a string needs a string, got {type_name(needle)}"
            )
        return needle in container
    if t is list:
        return any(json_equal(item, needle) for item in container)
    if t is dict:
        if type(needle) is not str:
            raise RunFailure(
                "RUN_TYPE", f"contains on an object needs a string key, got {type_name(needle)}"
            )
        return needle in container
    raise RunFailure(
        "RUN_TYPE",
        f"contains needs a string, list or object on the left, got {type_name(container)}",
    )


def ordered(op: str, left: Any, right: Any) -> bool:
    """gt/gte/lt/lte on two numbers or two strings (code-point order); else `RUN_TYPE`."""
    tl, tr = type(left), type(right)
    if not ((tl in _NUMBER and tr in _NUMBER) or (tl is str and tr is str)):
        raise RunFailure(
            "RUN_TYPE",
            f"{op} compares two numbers or two strings, got {type_name(left)} and "
            f"{type_name(right)}",
        )
    if op == "gt":
        return bool(left > right)
    if op == "gte":
        return bool(left >= right)
    if op == "lt":
        return bool(left < right)
    return bool(left <= right)


def render(value: Any) -> str:
    """A template placeholder: strings as they are, anything else as compact JSON."""
    if type(value) is str:
        return value
    return dumps(value, "a template placeholder").decode("utf-8")


def too_large(what: str, size: int | str) -> RunFailure:
    return RunFailure(
        "RUN_VALUE_TOO_LARGE",
        f"{what} would be {size} bytes, over the limit of {VALUE_LIMIT} bytes for a value",
    )


def dumps(value: Any, what: str) -> bytes:
    """Compact JSON of a value already within the limits, as forgec writes it (floats by
    `jsontext`); a value orjson cannot write (nested deeper than 254 levels, an integer beyond
    64 bits) is a run error, never a traceback."""
    try:
        return json_dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        if "Recursion" in str(exc):
            raise RunFailure(
                "RUN_VALUE_TOO_LARGE", f"{what} is nested more than 254 levels deep"
            ) from None
        raise RunFailure("RUN_TYPE", f"{what} is not JSON: {exc}") from None


def json_size(value: Any, what: str = "the value") -> int:
    """Bytes of compact UTF-8 JSON. Only ever called on values that keep the invariant (each
    at most VALUE_LIMIT), so it reads a bounded number of bytes however shared they are."""
    return len(dumps(value, what))


def checked_container(value: Any, members: list[Any] | None, what: str, fixed: int = 0) -> Any:
    """A just-built list or object, refused when its compact JSON is over VALUE_LIMIT.

    Wide literals give `members` (the values just placed in it) and `fixed` (the bytes of
    brackets, separators and keys) and are measured member by member, stopping at the first
    member past the limit."""
    if members is None:
        size = json_size(value, what)
        if size > VALUE_LIMIT:
            raise too_large(what, size)
        return value
    total = fixed
    for member in members:
        total += json_size(member, what)
        if total > VALUE_LIMIT:
            raise too_large(what, f"more than {total}")
    return value


def resolve(env: Env, segments: list[str | int] | tuple[str | int, ...]) -> Any:
    """The value at a path, or MISSING when any step of it is absent."""
    cur = env.get(str(segments[0]), MISSING)
    for seg in segments[1:]:
        if cur is MISSING:
            return MISSING
        if type(seg) is int:
            cur = cur[seg] if type(cur) is list and seg < len(cur) else MISSING
        else:
            cur = cur.get(seg, MISSING) if type(cur) is dict else MISSING
    return cur


def missing_message(env: Env, segments: list[str | int] | tuple[str | int, ...]) -> str:
    """Which step of a path is missing, said so a person can fix the flow or the input."""
    if segments[0] not in env:
        return f"{path_text(segments)}: {segments[0]!s} has no value"
    cur = env[segments[0]]
    for i, seg in enumerate(segments[1:], start=1):
        here = path_text(segments[:i])
        if type(seg) is int:
            if type(cur) is not list:
                return f"{path_text(segments)}: {here} is a {type_name(cur)}, not a list"
            if seg >= len(cur):
                return f"{path_text(segments)}: {here} has {len(cur)} item(s), no index {seg}"
            cur = cur[seg]
        else:
            if type(cur) is not dict:
                return f"{path_text(segments)}: {here} is a {type_name(cur)}, not an object"
            if seg not in cur:
                return f"{path_text(segments)}: {here} has no key {seg!r}"
            cur = cur[seg]
    return f"{path_text(segments)} is missing"


def compile_ref(segments: list[str | int]) -> Evaluator:
    """A path → a closure reading it (RUN_REF_MISSING when absent). The common shapes (a
    root, `root.key`) get their own closures: reads are most of what a flow does."""
    segs = tuple(segments)
    root = str(segs[0])

    def missing(env: Env) -> RunFailure:
        return RunFailure("RUN_REF_MISSING", missing_message(env, segs))

    if len(segs) == 1:

        def read_root(env: Env) -> Any:
            try:
                return env[root]
            except KeyError:
                raise missing(env) from None

        return read_root
    if len(segs) == 2 and type(segs[1]) is str:
        key = segs[1]

        def read_key(env: Env) -> Any:
            cur = env.get(root, MISSING)
            if type(cur) is dict:
                value = cur.get(key, MISSING)
                if value is not MISSING:
                    return value
            raise missing(env)

        return read_key
    # (is_index, segment) pairs, so the loop tests a bool, not a type
    rest: tuple[tuple[bool, Any], ...] = tuple((type(seg) is int, seg) for seg in segs[1:])

    def read_path(env: Env) -> Any:
        cur = env.get(root, MISSING)
        for is_index, seg in rest:
            if is_index:
                if type(cur) is not list or seg >= len(cur):
                    raise missing(env)
                cur = cur[seg]
            else:
                if type(cur) is not dict:
                    raise missing(env)
                cur = cur.get(seg, MISSING)
                if cur is MISSING:
                    raise missing(env)
        if cur is MISSING:
            raise missing(env)
        return cur

    return read_path


class CredentialRef(dict[str, str]):
    """A `{"$credential": id}` the checked manifest wrote literally — the only kind the host
    resolves (SPEC §14 "run-time data is data").

    It serialises as the plain object, but only a `cred` descriptor of the Program makes one:
    input, capability results, model answers and state all arrive as plain JSON dicts, so data
    shaped like `{"$credential": "ghtok"}` never becomes a credential. The VM reads these off a
    step's input into `CallContext.credential_headers` before the input is copied to JSON."""

    __slots__ = ()

    def __init__(self, credential_id: str) -> None:
        super().__init__({"$credential": credential_id})


def compile_value(desc: Any, consts: list[Any], paths: list[list[str | int]]) -> Evaluator:
    """A value descriptor (see `forgec.runtime.program`) → a closure `env -> value`.

    Every closure that builds a value (a template, a list, an object) checks its size while
    building it (SPEC §16), so every value a run holds is at most VALUE_LIMIT bytes of
    compact JSON. A ref builds nothing: it reads a value that already keeps the limit."""
    kind, arg = desc
    if kind == "const":
        constant = consts[arg]
        try:
            size = json_size(constant, "a constant")
            failure = too_large("a constant", size) if size > VALUE_LIMIT else None
        except RunFailure as exc:
            failure = exc
        if failure is not None:
            # only a hand-made Program gets here: a checked manifest is at most 64 KiB
            code, message = failure.code, failure.message

            def refused(env: Env) -> Any:
                raise RunFailure(code, message)

            return refused
        return lambda env: constant
    if kind == "ref":
        return compile_ref(paths[arg])
    if kind == "tpl":
        return _compile_template(arg, paths)
    if kind == "obj":
        members = [(key, compile_value(v, consts, paths)) for key, v in arg]
        if len(members) <= _MEASURE_WHOLE:

            def build_object(env: Env) -> dict[str, Any]:
                value = {key: ev(env) for key, ev in members}
                try:  # inline: this runs at every step that builds an object
                    fits = (
                        len(orjson.dumps(value)) <= _SURELY_FITS or json_size(value) <= VALUE_LIMIT
                    )
                except TypeError:
                    fits = json_size(value, "an object") <= VALUE_LIMIT  # raises the run error
                if not fits:
                    raise too_large("an object", json_size(value))
                return value

            return build_object
        # braces, commas, and each `"key":`
        fixed = 1 + len(members) + sum(json_size(key) + 1 for key, _ in members)

        def build_wide_object(env: Env) -> dict[str, Any]:
            built = {key: ev(env) for key, ev in members}
            return checked_container(built, list(built.values()), "an object", fixed)

        return build_wide_object
    if kind == "list":
        items = [compile_value(v, consts, paths) for v in arg]
        if len(items) <= _MEASURE_WHOLE:

            def build_list(env: Env) -> list[Any]:
                value = [ev(env) for ev in items]
                try:
                    fits = (
                        len(orjson.dumps(value)) <= _SURELY_FITS or json_size(value) <= VALUE_LIMIT
                    )
                except TypeError:
                    fits = json_size(value, "a list") <= VALUE_LIMIT
                if not fits:
                    raise too_large("a list", json_size(value))
                return value

            return build_list

        def build_wide_list(env: Env) -> list[Any]:
            built = [ev(env) for ev in items]
            return checked_container(built, built, "a list", 1 + len(built))

        return build_wide_list
    if kind == "cred":
        # passed unresolved: only the host resolves a credential, at the bridge
        return lambda env: CredentialRef(arg)
    raise ValueError(f"unknown value descriptor {kind!r}")


# A string of n code points is at most 6n + 2 bytes of JSON (`\u0001` for a control
# character), so a template this short or shorter needs no exact measure.
_SURELY_SMALL = (VALUE_LIMIT - 2) // 6


def _compile_template(arg: list[Any], paths: list[list[str | int]]) -> Evaluator:
    parts: list[str | Evaluator] = [
        p if isinstance(p, str) else compile_ref(paths[p[1]]) for p in arg
    ]
    if sum(1 for p in parts if not isinstance(p, str)) <= _MEASURE_WHOLE:
        # few placeholders: each renders a value within the limit, so the joined text is at
        # most that many × VALUE_LIMIT before it is measured
        def template(env: Env) -> str:
            text = "".join([p if type(p) is str else render(p(env)) for p in parts])  # type: ignore[operator]
            if len(text) > _SURELY_SMALL:
                # JSON is at least one byte per code point, plus the quotes
                if len(text) + 2 > VALUE_LIMIT:
                    raise too_large("a template", f"at least {len(text) + 2}")
                size = json_size(text)
                if size > VALUE_LIMIT:
                    raise too_large("a template", size)
            return text

        return template

    def wide_template(env: Env) -> str:
        # Count code points while rendering, and stop before the next piece is rendered
        # and before anything is joined.
        pieces: list[str] = []
        total = 2
        for p in parts:
            piece = p if type(p) is str else render(p(env))  # type: ignore[operator]
            total += len(piece)
            if total > VALUE_LIMIT:
                raise too_large("a template", f"more than {total}")
            pieces.append(piece)
        text = "".join(pieces)
        if total > _SURELY_SMALL:
            size = json_size(text)
            if size > VALUE_LIMIT:
                raise too_large("a template", size)
        return text

    return wide_template


def compile_condition(
    cond: dict[str, Any], values: list[Any], consts: list[Any], paths: list[list[str | int]]
) -> Callable[[Env], bool]:
    """A condition → a closure `env -> bool` (RUN_TYPE / RUN_REF_MISSING as the rules say)."""
    op = cond["op"]
    left_desc = values[cond["left"]]
    left = compile_value(left_desc, consts, paths)
    if op in ("exists", "truthy"):
        # a missing step of a bare $ref path makes exists/truthy false instead of an error
        if left_desc[0] == "ref":
            segs = tuple(paths[left_desc[1]])
            if op == "exists":
                return lambda env: resolve(env, segs) is not MISSING

            def truthy_ref(env: Env) -> bool:
                value = resolve(env, segs)
                return value is not MISSING and truthy(value)

            return truthy_ref
        if op == "exists":
            return lambda env: (left(env), True)[1]
        return lambda env: truthy(left(env))
    right = compile_value(values[cond["right"]], consts, paths)
    if op == "eq":
        return lambda env: json_equal(left(env), right(env))
    if op == "neq":
        return lambda env: not json_equal(left(env), right(env))
    if op == "contains":
        return lambda env: contains(left(env), right(env))
    return lambda env: ordered(op, left(env), right(env))
