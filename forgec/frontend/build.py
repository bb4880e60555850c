"""The structure pass proper: raw JSON manifest → typed IR (`forgec.ir.nodes`) + diagnostics.

One walk over the document does both jobs. Each object is checked against the fields its
shape takes (unknown → `FORGE_MANIFEST_STRUCTURE` on the key, with a "did you mean"; missing
required → the same at the missing field's pointer), each field against its type, range,
constant, enum or pattern, and the IR is built from what survived. A field whose value is
unusable becomes `None` in the IR; a node is dropped only when its `id` or `type` is unusable,
so later passes still see every other node.

Codes follow SPEC §12 ("codes of bad values"): a field with its own code (id, version,
parentVersion, title, description, maxTransitions, maxItems, body size, retry.attempts,
retry.backoffMs, credential id, node id, hosts) gets that code for any present-but-bad value,
wrong JSON type included; everything else is `FORGE_MANIFEST_STRUCTURE`. Codes that need the
whole graph or a catalog (edges, duplicates, targets, capabilities, credentials' placement) are
left to the later passes.

Values (SPEC §3) are walked once: a subtree without any expression costs one type check per
container member and becomes a single `Literal`; only subtrees holding an expression are
rebuilt as `ObjectExpr`/`ListExpr`. Plain `type(x) is ...` checks throughout: this runs on
every check, and the benchmark allows the whole pipeline ten times orjson's parse.

Every fact (fields and their order, constants, ops, limits, id rules, schema keywords) is read
from `forgec.ir.rules`; a node is described by its row of `NODE_FIELDS`, and `node_checked`
reads each field with the reader of its kind. One path, in two forms from the same row: for
each node type fast code is generated at import (`forgec.frontend.node_codegen`) — the gate,
the pure checks inline, and any doubt hands the node to `node_checked` before anything is
reported or read (a property test holds the two to the same result). Nothing is remembered between
checks (a first check is the figure that counts); parsed paths are remembered for one check.
SPEC §14/§16's static rules live here too: shown text without control or bidi characters,
no `RUN_` fail codes, integers within ±(2^53 − 1), and a `default` that fits its schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from forgec.frontend.names import (
    host_problem,
    is_id,
    is_iso_datetime,
    parse_path,
    path_problem,
    template_paths,
)
from forgec.frontend.node_codegen import generate_node_builders, node_where
from forgec.ir.diagnostics import Diagnostic, Fix, insert_fix, make, suggestion
from forgec.ir.json_subset import schema_problem
from forgec.ir.nodes import (
    NODE_TYPES,
    Condition,
    CredentialRef,
    CredentialRequirement,
    Flow,
    ForeachNode,
    ListExpr,
    Literal,
    Manifest,
    ModelRequirements,
    Network,
    Node,
    ObjectExpr,
    Ref,
    Retry,
    Segment,
    StateDecl,
    Template,
    Trigger,
    Ui,
    UiValue,
    Value,
)
from forgec.ir.pointer import escape
from forgec.ir.rules import (
    ALLOWLIST,
    CONDITION_FIELDS,
    CONDITION_OPS,
    CONTEXT_TOKENS,
    CREDENTIAL_FIELDS,
    DESCRIPTION_CHARS,
    EFFORT,
    EXECUTION,
    EXPRESSION_KEYS,
    FAIL_CODE_RE,
    FLOW_FIELDS,
    FORBIDDEN,
    FORBIDDEN_SEGMENTS,
    INSTALL_SCOPE,
    LLM_OPS,
    MANIFEST_FIELDS,
    MANIFEST_REQUIRED,
    MAX_BODY,
    MAX_ITEMS,
    MAX_NODES,
    MAX_SAFE_INTEGER,
    MAX_SCHEMA_DEPTH,
    MAX_TRANSITIONS,
    MODEL_FIELDS,
    NAME_RE,
    NETWORK_FIELDS,
    NETWORK_MODES,
    NODE_FIELDS,
    NODE_ID_RE,
    NODE_ORDER,
    NODE_TYPE_NAMES,
    PRIVACY,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF_MS,
    RETRY_FIELDS,
    RUNTIME_CODE_PREFIX,
    SCHEMA_ID,
    SCHEMA_KEYWORDS,
    SCHEMA_TYPES,
    STATE_FIELDS,
    STATE_MAX_BYTES,
    TITLE_CHARS,
    TRIGGER_FIELDS,
    TRIGGER_TYPES,
    UI_FIELDS,
    UI_VALUE_FIELDS,
    UNARY_OPS,
    VERSION_LIMIT,
    node_required,
)
from forgec.ir.shapes import json_type_name
from forgec.ir.suggest import suggest
from forgec.ir.text_rules import MULTILINE_ALLOWED, unsafe_problem

STRUCTURE = "FORGE_MANIFEST_STRUCTURE"

_UNSUPPORTED_KEYWORD_HINTS = {
    "$ref": "the subset has no `$ref`: write the schema inline",
    "$defs": "the subset has no `$defs`: write each schema inline",
    "definitions": "the subset has no `definitions`: write each schema inline",
    "pattern": "the subset has no `pattern`; use `enum`, `minLength`/`maxLength` instead",
    "format": "the subset has no `format`; describe the expected format in `description`",
    "patternProperties": "the subset has no `patternProperties`; list `properties` by name",
}
_SCHEMA_KEYWORD_SET = frozenset(SCHEMA_KEYWORDS)
_EXPRESSION_KEY_SET = frozenset(EXPRESSION_KEYS)


def build_manifest(raw: Any) -> tuple[Manifest, list[Diagnostic]]:
    """Check the shape of a parsed manifest and build its IR; never raises."""
    builder = _Builder()
    manifest = builder.manifest(raw)
    return manifest, builder.diags


# ---------------------------------------------------------------------------------------------
# Describing values in messages


def _show(v: Any, limit: int = 40) -> str:
    """A short JSON rendering of `v` for a message (never the whole of a long value)."""
    t = type(v)
    if t is int and not -(10**30) < v < 10**30:
        return "a very large integer"
    if t is dict:
        return "an object" if v else "`{}`"
    if t is list:
        return "a list" if v else "`[]`"
    try:
        text = orjson.dumps(v).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(v)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"`{text}`"


def _got(v: Any) -> str:
    t = type(v)
    if t is bool:
        return f"got {_show(v)}, a boolean (booleans are not numbers)"
    if t is float:
        if v == v and v not in (float("inf"), float("-inf")) and v.is_integer():
            return f"got {_show(v)}, which is not an integer (write it without `.0`)"
        return f"got {_show(v)}"
    if t in (int, str) or v is None:
        return f"got {_show(v)}"
    return f"got {json_type_name(v)}"


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_number(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


def _range_text(lo: int, hi: int) -> str:
    return f"an integer from {lo:,} to {hi:,}".replace(",", "")


# ---------------------------------------------------------------------------------------------


class _Builder:
    """Accumulates diagnostics while building; one instance per manifest."""

    def __init__(self) -> None:
        self.diags: list[Diagnostic] = []
        self.value_bad = False  # set when an expression in the current value slot is unusable
        # Reads of the node being built (its usable values' `$ref`s and placeholders), and per
        # built node, for the references pass (see `Manifest.node_reads`).
        self.refs: list[Ref] = []
        self.reads: dict[str, list[Ref]] = {}
        self.has_credential = False
        self.credential_nodes: list[str] = []
        # parsed `$ref` paths of this manifest (they repeat within one)
        self.paths: dict[str, tuple[Segment, ...] | None] = {}

    def err(
        self,
        code: str,
        pointer: str,
        message: str,
        *,
        hint: str | None = None,
        fixes: tuple[Fix, ...] = (),
    ) -> None:
        self.diags.append(make(code, pointer, message, hint=hint, fixes=fixes))

    # ---- generic field checks ---------------------------------------------------------------

    def fields(self, obj: dict[str, Any], pointer: str, shape: _Shape, where: str) -> None:
        """Unknown fields (on their key) and missing required fields (at their pointer)."""
        keys = obj.keys()
        if keys <= shape.allowed and keys >= shape.required_set:
            return  # the common case, decided by two C-level set comparisons
        for key in obj:
            if key not in shape.allowed:
                shown = key if len(key) <= 60 else key[:57] + "..."
                at = f"{pointer}/{escape(key)}"
                guess, fixes = suggestion(key, shape.order, at, key=True)
                self.diags.append(
                    make(
                        STRUCTURE,
                        at,
                        f"unknown field `{shown}` in {where}",
                        hint=guess
                        or _belongs_elsewhere(key, pointer)
                        or "allowed fields: " + ", ".join(f"`{a}`" for a in shape.order),
                        key=True,
                        fixes=fixes,
                    )
                )
        for key in shape.required:
            if key not in obj:
                hint = _MISSING_HINTS.get(key) if pointer.startswith("/flow/nodes/") else None
                self.err(
                    STRUCTURE,
                    f"{pointer}/{key}",
                    f"{where} is missing `{key}`",
                    hint=hint,
                    fixes=(insert_fix(pointer, key, MISSING_PLACEHOLDERS.get(key, "")),),
                )

    def expect_object(self, v: Any, pointer: str, what: str) -> bool:
        if type(v) is dict:
            return True
        self.err(STRUCTURE, pointer, f"{what} must be an object; {_got(v)}")
        return False

    def string(
        self,
        obj: dict[str, Any],
        key: str,
        pointer: str,
        what: str,
        *,
        lo: int = 0,
        hi: int | None = None,
        code: str = STRUCTURE,
        allow_chars: str | None = None,
    ) -> str | None:
        """A string field with an optional length range in code points (absent → None).

        With `allow_chars` (text shown to people, SPEC §14) it may hold no control or bidi
        character except those listed."""
        if key not in obj:
            return None
        v = obj[key]
        if type(v) is not str:
            self.err(code, f"{pointer}/{key}", f"{what} must be a string; {_got(v)}")
            return None
        n = len(v)
        if n < lo or (hi is not None and n > hi):
            if hi is None:
                limit = "must not be empty"
            else:
                limit = f"must have {lo}–{hi} characters"
            self.err(code, f"{pointer}/{key}", f"{what} {limit}; it has {n}")
            return None
        if allow_chars is not None:
            problem = unsafe_problem(v, allow_chars)
            if problem is not None:
                allowed = " (line breaks and tabs are fine)" if allow_chars else ""
                self.err(
                    code,
                    f"{pointer}/{key}",
                    f"{what} {problem}: text a tool shows may not steer a terminal{allowed}",
                    hint="remove the character; write plain text",
                )
                return None
        return v

    def integer(
        self, obj: dict[str, Any], key: str, pointer: str, what: str, lo: int, hi: int, code: str
    ) -> int | None:
        if key not in obj:
            return None
        v = obj[key]
        if type(v) is int and lo <= v <= hi:
            return v
        self.err(code, f"{pointer}/{key}", f"{what} must be {_range_text(lo, hi)}; {_got(v)}")
        return None

    def enum(
        self, obj: dict[str, Any], key: str, pointer: str, what: str, choices: tuple[str, ...]
    ) -> str | None:
        if key not in obj:
            return None
        v = obj[key]
        if type(v) is str and v in choices:
            return v
        listed = ", ".join(f"`{c}`" for c in choices)
        hint, fixes = suggestion(v, choices, f"{pointer}/{key}")
        self.err(
            STRUCTURE,
            f"{pointer}/{key}",
            f"{what} must be one of {listed}; {_got(v)}",
            hint=hint,
            fixes=fixes,
        )
        return None

    def constant(self, obj: dict[str, Any], key: str, expected: str) -> str | None:
        if key not in obj:
            return None
        v = obj[key]
        if type(v) is str and v == expected:
            return v
        self.err(STRUCTURE, f"/{key}", f'`{key}` must be "{expected}"; {_got(v)}')
        return None

    # ---- the manifest ---------------------------------------------------------------------------

    def manifest(self, raw: Any) -> Manifest:
        if type(raw) is not dict:
            self.err(STRUCTURE, "", f"a manifest is a JSON object; {_got(raw)}")
            return _empty_manifest()
        if raw.keys().isdisjoint(_TOP.allowed):
            # not a manifest at all (another JSON file, or `{}`): one line, not one per field
            self.err(
                STRUCTURE,
                "",
                "this JSON object is not a forged tool manifest: it has none of its fields",
                hint="a manifest has "
                + ", ".join(f"`{k}`" for k in _TOP.order[:6])
                + ", …; `forgec schema` prints its JSON Schema",
            )
            return _empty_manifest()
        self.fields(raw, "", _TOP, "the manifest")
        schema = self.constant(raw, "schema", SCHEMA_ID)
        tool_id = self.tool_id(raw)
        version = self.version(raw)
        title = self.string(
            raw,
            "title",
            "",
            "`title`",
            lo=TITLE_CHARS[0],
            hi=TITLE_CHARS[1],
            code="FORGE_TITLE",
            allow_chars="",
        )
        description = self.string(
            raw,
            "description",
            "",
            "`description`",
            lo=DESCRIPTION_CHARS[0],
            hi=DESCRIPTION_CHARS[1],
            code="FORGE_DESCRIPTION",
            allow_chars=MULTILINE_ALLOWED,
        )
        created_at = None
        if "createdAt" in raw:
            v = raw["createdAt"]
            if is_iso_datetime(v):
                created_at = v
            else:
                self.err(
                    STRUCTURE,
                    "/createdAt",
                    f"`createdAt` must be an ISO 8601 date-time with an offset or `Z` "
                    f"(like 2026-01-31T09:30:00Z); {_got(v)}",
                )
        parent_version = self.parent_version(raw, version)
        execution = self.constant(raw, "execution", EXECUTION)
        install_scope = self.constant(raw, "installScope", INSTALL_SCOPE)
        network = self.network(raw)
        credentials = self.credentials(raw)
        model_defaults = None
        if "modelDefaults" in raw:
            model_defaults = self.model_requirements(
                raw["modelDefaults"], "/modelDefaults", "`modelDefaults`"
            )
        input_schema = self.schema_field(raw, "inputSchema", "/inputSchema")
        output_schema = self.schema_field(raw, "outputSchema", "/outputSchema")
        flow = self.flow(raw)
        state = self.state(raw)
        triggers = self.triggers(raw)
        ui = self.ui(raw)
        return Manifest(
            schema=schema,
            id=tool_id,
            version=version,
            title=title,
            description=description,
            created_at=created_at,
            parent_version=parent_version,
            execution=execution,
            install_scope=install_scope,
            network=network,
            credential_requirements=credentials,
            model_defaults=model_defaults,
            input_schema=input_schema,
            output_schema=output_schema,
            flow=flow,
            state=state,
            triggers=triggers,
            ui=ui,
            node_reads=self.reads,
            credential_nodes=frozenset(self.credential_nodes),
        )

    def tool_id(self, raw: dict[str, Any]) -> str | None:
        if "id" not in raw:
            return None
        v = raw["id"]
        if is_id(v):
            return v
        self.err(
            "FORGE_ID",
            "/id",
            "`id` must be 3–64 characters of lowercase letters, digits, `.`, `_` and `-`; "
            + _got(v),
            hint=_id_hint(v),
        )
        return None

    def version(self, raw: dict[str, Any]) -> int | None:
        if "version" not in raw:
            return None
        v = raw["version"]
        if type(v) is int and 1 <= v < VERSION_LIMIT:
            return v
        self.err(
            "FORGE_VERSION",
            "/version",
            f"`version` must be {_range_text(1, VERSION_LIMIT - 1)}; {_got(v)}",
        )
        return None

    def parent_version(self, raw: dict[str, Any], version: int | None) -> int | None:
        if "parentVersion" not in raw:
            return None
        v = raw["parentVersion"]
        if v is None:
            return None
        if not (type(v) is int and 1 <= v < VERSION_LIMIT):
            self.err(
                "FORGE_VERSION",
                "/parentVersion",
                f"`parentVersion` must be null (first version) or "
                f"{_range_text(1, VERSION_LIMIT - 1)}; {_got(v)}",
            )
            return None
        if version is not None and v >= version:
            self.err(
                "FORGE_VERSION",
                "/parentVersion",
                f"`parentVersion` ({v}) must be lower than `version` ({version})",
            )
            return None
        return v

    # ---- network and credentials ----------------------------------------------------------------

    def hosts(self, v: Any, pointer: str, what: str) -> tuple[str, ...] | None:
        """A list of exact DNS names; every bad entry is `FORGE_DOMAIN_INVALID`."""
        if type(v) is not list:
            self.err(
                "FORGE_DOMAIN_INVALID",
                pointer,
                f"{what} must be a list of host names like `api.example.org`; {_got(v)}",
            )
            return None
        good: dict[str, None] = {}  # ordered and de-duplicated
        for i, host in enumerate(v):
            problem = host_problem(host)
            if problem is None:
                good[host] = None
            else:
                self.err(
                    "FORGE_DOMAIN_INVALID",
                    f"{pointer}/{i}",
                    f"host {_show(host)} in {what} is not an exact DNS name: {problem}",
                )
        return tuple(good)

    def network(self, raw: dict[str, Any]) -> Network | None:
        if "network" not in raw:
            return None
        v = raw["network"]
        if not self.expect_object(v, "/network", "`network`"):
            return None
        self.fields(v, "/network", _NETWORK, "`network`")
        mode = self.enum(v, "mode", "/network", "`network.mode`", NETWORK_MODES)
        hosts: tuple[str, ...] = ()
        if "hosts" in v:
            listed = self.hosts(v["hosts"], "/network/hosts", "`network.hosts`")
            if mode == FORBIDDEN and type(v["hosts"]) is list and v["hosts"]:
                self.err(
                    "FORGE_NETWORK_CONTRADICTION",
                    "/network/hosts",
                    "`network.mode` is `forbidden`, yet `network.hosts` lists hosts",
                    hint='use `"mode": "allowlist"` to allow these hosts, or remove `hosts`',
                )
            elif mode == ALLOWLIST and listed is not None:
                hosts = listed
        elif mode == ALLOWLIST:
            self.err(
                STRUCTURE,
                "/network/hosts",
                "`network` with mode `allowlist` is missing `hosts` (an empty list allows no host)",
            )
        return Network(mode=mode, hosts=hosts, pointer="/network")

    def credentials(self, raw: dict[str, Any]) -> tuple[CredentialRequirement, ...]:
        if "credentialRequirements" not in raw:
            return ()
        v = raw["credentialRequirements"]
        if type(v) is not list:
            self.err(
                STRUCTURE,
                "/credentialRequirements",
                f"`credentialRequirements` must be a list (`[]` when the tool needs none); {_got(v)}",
            )
            return ()
        out: list[CredentialRequirement] = []
        seen: set[str] = set()
        for i, c in enumerate(v):
            p = f"/credentialRequirements/{i}"
            if not self.expect_object(c, p, f"credential {i}"):
                continue
            cid = c.get("id")
            where = f"credential `{cid}`" if type(cid) is str else f"credential {i}"
            self.fields(c, p, _CREDENTIAL, where)
            good_id = None
            if "id" in c:
                if not is_id(cid):
                    self.err(
                        "FORGE_CREDENTIAL_ID",
                        f"{p}/id",
                        "a credential `id` must be 3–64 characters of lowercase letters, digits, "
                        f"`.`, `_` and `-`; {_got(cid)}",
                        hint=_id_hint(cid),
                    )
                elif cid in seen:
                    self.err(
                        "FORGE_CREDENTIAL_ID",
                        f"{p}/id",
                        f"credential id `{cid}` is declared twice; each credential is declared once",
                    )
                else:
                    seen.add(cid)
                    good_id = cid
            purpose = self.string(
                c,
                "purpose",
                p,
                f"`purpose` of {where}",
                lo=DESCRIPTION_CHARS[0],
                hi=DESCRIPTION_CHARS[1],
                allow_chars="",
            )
            hosts: tuple[str, ...] = ()
            if "hosts" in c:
                hosts = self.hosts(c["hosts"], f"{p}/hosts", f"`hosts` of {where}") or ()
            out.append(CredentialRequirement(id=good_id, purpose=purpose, hosts=hosts, pointer=p))
        return tuple(out)

    def model_requirements(self, v: Any, pointer: str, what: str) -> ModelRequirements | None:
        if not self.expect_object(v, pointer, what):
            return None
        self.fields(v, pointer, _MODEL, what)
        structured = None
        if "structuredOutput" in v:
            so = v["structuredOutput"]
            if type(so) is bool:
                structured = so
            else:
                self.err(
                    STRUCTURE,
                    f"{pointer}/structuredOutput",
                    f"`structuredOutput` in {what} must be true or false; {_got(so)}",
                )
        context = self.integer(
            v, "context", pointer, f"`context` in {what} (tokens)", *CONTEXT_TOKENS, STRUCTURE
        )
        privacy = self.enum(v, "privacy", pointer, f"`privacy` in {what}", PRIVACY)
        effort = self.enum(v, "reasoningEffort", pointer, f"`reasoningEffort` in {what}", EFFORT)
        return ModelRequirements(
            structured_output=structured,
            context=context,
            privacy=privacy,
            reasoning_effort=effort,
            pointer=pointer,
        )

    # ---- JSON Schema subset (SPEC §2.2) ---------------------------------------------------------

    def schema_field(self, obj: dict[str, Any], key: str, pointer: str) -> dict[str, Any] | None:
        if key not in obj:
            return None
        v = obj[key]
        before = len(self.diags)
        self.schema(v, pointer, 1, f"`{key}`")
        return v if len(self.diags) == before else None

    def schema(self, s: Any, pointer: str, level: int, what: str) -> None:
        if type(s) is not dict:
            self.err(STRUCTURE, pointer, f"{what} must be a JSON Schema object; {_got(s)}")
            return
        if level > MAX_SCHEMA_DEPTH:
            self.err(
                STRUCTURE,
                pointer,
                f"schemas nest at most {MAX_SCHEMA_DEPTH} levels; {what} is at level {level}",
            )
            return
        before = len(self.diags)
        for k, v in s.items():
            if k not in _SCHEMA_KEYWORD_SET:
                hint = _UNSUPPORTED_KEYWORD_HINTS.get(k) or suggest(k, SCHEMA_KEYWORDS)
                shown = k if len(k) <= 60 else k[:57] + "..."
                self.diags.append(
                    make(
                        STRUCTURE,
                        f"{pointer}/{escape(k)}",
                        f"`{shown}` is not a keyword of the supported JSON Schema subset (in {what})",
                        hint=hint,
                        key=True,
                    )
                )
                continue
            p = f"{pointer}/{k}"
            if k == "type":
                self.schema_type(v, p, what)
            elif k == "properties":
                if type(v) is not dict:
                    self.err(STRUCTURE, p, f"`properties` in {what} must be an object; {_got(v)}")
                    continue
                for name, sub in v.items():
                    self.schema(sub, f"{p}/{escape(name)}", level + 1, f"property `{_short(name)}`")
            elif k == "items":
                self.schema(v, p, level + 1, f"`items` of {what}")
            elif k == "required":
                if type(v) is not list or any(type(x) is not str for x in v):
                    self.err(STRUCTURE, p, f"`required` in {what} must be a list of property names")
                elif len(set(v)) != len(v):
                    self.err(STRUCTURE, p, f"`required` in {what} lists a name twice")
            elif k == "additionalProperties":
                if type(v) is not bool:
                    self.err(
                        STRUCTURE,
                        p,
                        f"`additionalProperties` in {what} must be true or false "
                        f"(schemas there are not supported); {_got(v)}",
                    )
            elif k == "enum":
                if type(v) is not list or not v:
                    self.err(STRUCTURE, p, f"`enum` in {what} must be a non-empty list")
            elif k in ("minimum", "maximum"):
                if not _is_number(v):
                    self.err(STRUCTURE, p, f"`{k}` in {what} must be a number; {_got(v)}")
            elif k in ("minLength", "maxLength", "minItems", "maxItems"):
                if not (type(v) is int and v >= 0):
                    self.err(
                        STRUCTURE, p, f"`{k}` in {what} must be a non-negative integer; {_got(v)}"
                    )
            elif k in ("title", "description") and type(v) is not str:
                self.err(STRUCTURE, p, f"`{k}` in {what} must be a string; {_got(v)}")
            # `const`, `enum` and `default` take any JSON value, within the integer range
            if k in ("const", "enum", "default", "minimum", "maximum"):
                self.unsafe_integers_in(v, p)
        for lo, hi in (
            ("minimum", "maximum"),
            ("minLength", "maxLength"),
            ("minItems", "maxItems"),
        ):
            a: Any = s.get(lo)
            b: Any = s.get(hi)
            if _is_number(a) and _is_number(b) and a > b:
                self.err(
                    STRUCTURE,
                    f"{pointer}/{lo}",
                    f"`{lo}` ({_show(a)}) is greater than `{hi}` ({_show(b)}) in {what}: "
                    "nothing matches",
                )
        required = s.get("required")
        if s.get("additionalProperties") is False and type(required) is list:
            props = s.get("properties")
            known = props if type(props) is dict else {}
            missing = [r for r in required if type(r) is str and r not in known]
            if missing:
                # fastjsonschema (the runtime's validator) refuses such a schema outright
                self.err(
                    STRUCTURE,
                    f"{pointer}/required",
                    f"`required` in {what} names `{_short(missing[0])}`, which is not among its "
                    "`properties` while `additionalProperties` is false: nothing could match",
                    hint="add the property to `properties`, or drop it from `required`",
                )
        if "default" in s and len(self.diags) == before:
            # only a schema that is itself sound is asked whether its default fits
            problem = default_problem(s)
            if problem is not None:
                self.err(
                    STRUCTURE,
                    f"{pointer}/default",
                    f"the `default` of {what} does not satisfy its own schema: {problem}",
                    hint="change the default, or the schema, so the default is a valid value",
                )

    def schema_type(self, v: Any, pointer: str, what: str) -> None:
        listed = ", ".join(SCHEMA_TYPES)
        if type(v) is str:
            if v not in SCHEMA_TYPES:
                self.err(
                    STRUCTURE,
                    pointer,
                    f"`type` in {what} must be one of {listed}; {_got(v)}",
                    hint=suggest(v, SCHEMA_TYPES),
                )
            return
        if (
            type(v) is list
            and v
            and all(type(x) is str and x in SCHEMA_TYPES for x in v)
            and len(set(v)) == len(v)
        ):
            return
        self.err(
            STRUCTURE,
            pointer,
            f"`type` in {what} must be a type name or a non-empty list of distinct type names "
            f"({listed}); {_got(v)}",
        )

    # ---- flow and nodes ---------------------------------------------------------------------------

    def flow(self, raw: dict[str, Any]) -> Flow | None:
        if "flow" not in raw:
            return None
        v = raw["flow"]
        if not self.expect_object(v, "/flow", "`flow`"):
            return None
        self.fields(v, "/flow", _FLOW, "`flow`")
        entry = None
        if "entry" in v:
            e = v["entry"]
            if type(e) is str:
                entry = e
            else:
                self.err(STRUCTURE, "/flow/entry", f"`flow.entry` must be a node id; {_got(e)}")
        max_transitions = self.integer(
            v,
            "maxTransitions",
            "/flow",
            "`flow.maxTransitions`",
            *MAX_TRANSITIONS,
            "FORGE_TRANSITION_BOUNDS",
        )
        nodes: list[Node] = []
        if "nodes" in v:
            raw_nodes = v["nodes"]
            if type(raw_nodes) is not list:
                self.err(
                    STRUCTURE, "/flow/nodes", f"`flow.nodes` must be a list; {_got(raw_nodes)}"
                )
            else:
                # The node count is reported before any node's problems; it is counted in
                # the same loop (body nodes too) and put in its place afterwards.
                mark = len(self.diags)
                total = len(raw_nodes)
                build = self.node
                for i, n in enumerate(raw_nodes):
                    node = build(
                        n, _NODE_POINTERS[i] if i < MAX_NODES else f"/flow/nodes/{i}", None
                    )
                    if node is not None:
                        nodes.append(node)
                        if type(node) is not ForeachNode:
                            continue
                    elif type(n) is not dict or n.get("type") != "foreach":
                        continue
                    body = n.get("body")
                    if type(body) is list:
                        total += len(body)
                if total == 0:
                    self.diags.insert(
                        mark, make("FORGE_NODE_BOUNDS", "/flow/nodes", "the flow has no nodes")
                    )
                elif total > MAX_NODES:
                    self.diags.insert(
                        mark,
                        make(
                            "FORGE_NODE_BOUNDS",
                            "/flow/nodes",
                            f"the flow has {total} nodes (loop bodies included); "
                            f"the limit is {MAX_NODES}",
                        ),
                    )
        return Flow(entry=entry, max_transitions=max_transitions, nodes=tuple(nodes))

    def node(self, n: Any, pointer: str, loop: str | None) -> Node | None:
        """One node; `loop` is the id of the enclosing foreach (None at the top level)."""
        outer_refs, outer_credential = self.refs, self.has_credential  # body nodes nest
        self.refs, self.has_credential = [], False
        built = None
        if type(n) is dict:
            typ = n.get("type")
            if type(typ) is str:
                fast = (_FAST_TOP if loop is None else _FAST_BODY).get(typ)
                if fast is not None:
                    built = fast(self, n, pointer, loop)
        if built is None:  # not a node the generated code is sure of: check and report
            built = self.node_checked(n, pointer, loop)
        if built is not None:
            self.reads[pointer] = self.refs
            if self.has_credential:
                self.credential_nodes.append(pointer)
        self.refs, self.has_credential = outer_refs, outer_credential
        return built

    def node_checked(self, n: Any, pointer: str, loop: str | None) -> Node | None:
        if type(n) is not dict:
            self.err(
                STRUCTURE, pointer, f"a node must be an object with `id` and `type`; {_got(n)}"
            )
            return None
        node_id = n.get("id")
        id_ok = False
        if "id" not in n:
            self.err(STRUCTURE, f"{pointer}/id", f"the node at `{pointer}` is missing `id`")
        elif type(node_id) is str and NODE_ID_RE.fullmatch(node_id):
            id_ok = True
        else:
            self.err(
                "FORGE_NODE_ID",
                f"{pointer}/id",
                "a node `id` must start with a letter, then up to 63 letters, digits, `_` or `-`; "
                + _got(node_id),
            )
        typ = n.get("type")
        shown_id = f"`{node_id}`" if id_ok else f"at `{pointer}`"
        if "type" not in n:
            self.err(STRUCTURE, f"{pointer}/type", f"node {shown_id} is missing `type`")
            return None
        shapes = _NODE_TOP if loop is None else _NODE_BODY
        shape = shapes.get(typ) if type(typ) is str else None
        if shape is None:
            listed = ", ".join(f"`{t}`" for t in NODE_TYPE_NAMES)
            hint, fixes = suggestion(typ, NODE_TYPE_NAMES, f"{pointer}/type")
            self.err(
                STRUCTURE,
                f"{pointer}/type",
                f"node {shown_id} has an unknown `type`; it must be one of {listed}; {_got(typ)}",
                hint=hint,
                fixes=fixes,
            )
            return None
        where = f"{typ} node {shown_id}"
        self.fields(n, pointer, shape, where)
        if typ == "foreach" and loop is not None:
            self.err(
                STRUCTURE,
                f"{pointer}/type",
                f"{where} is inside the body of loop `{loop}`: a loop body cannot hold a foreach",
                hint="move the inner loop to the top level, or flatten the data first",
            )
        # One reader per field kind, in the table's order (which is also the IR's attribute
        # order after `id` and `pointer`): the table is the node's whole description.
        good_id = node_id if id_ok and type(node_id) is str else ""
        args: list[Any] = [good_id, pointer]
        kind = str(typ)  # (a known type name: the shape lookup above found it)
        for f in NODE_FIELDS[kind]:
            args.append(_READERS[f.kind](self, n, f.name, pointer, where, loop, good_id))
        built = NODE_TYPES[kind](*args)
        return built if id_ok else None

    # ---- readers of node fields, one per `NodeField.kind` -----------------------------------
    # Each takes (node, key, node pointer, "where" text, enclosing loop, node id).

    def read_name(self, n: dict[str, Any], key: str, p: str, where: str, *_: Any) -> str | None:
        return self.name_field(n, key, p, where)

    def read_value(self, n: dict[str, Any], key: str, p: str, *_: Any) -> Value | None:
        return self.value_field(n, key, p)

    def read_op(self, n: dict[str, Any], key: str, p: str, where: str, *_: Any) -> str | None:
        return self.enum(n, key, p, f"`{key}` of {where}", LLM_OPS)

    def read_retry(self, n: dict[str, Any], key: str, p: str, where: str, *_: Any) -> Retry | None:
        return self.retry(n, p, where)

    def read_requirements(
        self, n: dict[str, Any], key: str, p: str, where: str, *_: Any
    ) -> ModelRequirements | None:
        if key not in n:
            return None
        return self.model_requirements(n[key], f"{p}/{key}", f"`{key}` of {where}")

    def read_schema(self, n: dict[str, Any], key: str, p: str, *_: Any) -> dict[str, Any] | None:
        return self.schema_field(n, key, f"{p}/{key}")

    def read_condition(
        self, n: dict[str, Any], key: str, p: str, where: str, *_: Any
    ) -> Condition | None:
        return self.condition(n, p, where)

    def fast_condition(self, n: dict[str, Any], key: str, p: str, typ: str) -> Condition | None:
        """A condition of the right shape built directly; any other goes to `condition`,
        which reports (nothing is reported or read before that choice)."""
        c = n.get(key)
        if type(c) is dict and c.keys() <= _CONDITION.allowed and "left" in c:
            op = c.get("op")
            if type(op) is str and op in _BINARY_OPS and "right" in c:
                cp = p + "/" + key
                left = self.value_field(c, "left", cp)
                return Condition(op, left, self.value_field(c, "right", cp), cp)
            if type(op) is str and op in _UNARY_OP_SET and "right" not in c:
                cp = p + "/" + key
                return Condition(op, self.value_field(c, "left", cp), None, cp)
        return self.condition(n, p, node_where(n, typ))

    def read_max_items(
        self, n: dict[str, Any], key: str, p: str, where: str, *_: Any
    ) -> int | None:
        lo, hi = MAX_ITEMS
        return self.integer(n, key, p, f"`{key}` of {where}", lo, hi, "FORGE_FOREACH_BOUNDS")

    def read_body(
        self, n: dict[str, Any], key: str, p: str, where: str, loop: str | None, node_id: str
    ) -> tuple[Node, ...]:
        body: list[Node] = []
        if key not in n:
            return ()
        raw_body = n[key]
        bp = f"{p}/{key}"
        if type(raw_body) is not list:
            self.err(
                "FORGE_INLINE_BOUNDS",
                bp,
                f"`body` of {where} must be a list of 1–{MAX_BODY} nodes; {_got(raw_body)}",
            )
            return ()
        if not raw_body or len(raw_body) > MAX_BODY:
            self.err(
                "FORGE_INLINE_BOUNDS",
                bp,
                f"`body` of {where} must hold 1–{MAX_BODY} nodes; it holds {len(raw_body)}",
            )
        if loop is None:  # a nested loop's body is not built (the nesting is the error)
            for i, child in enumerate(raw_body):
                node = self.node(child, f"{bp}/{i}", node_id or p)
                if node is not None:
                    body.append(node)
        return tuple(body)

    def read_fail_code(
        self, n: dict[str, Any], key: str, p: str, where: str, *_: Any
    ) -> str | None:
        if key not in n:
            return None
        c = n[key]
        if type(c) is not str or not FAIL_CODE_RE.fullmatch(c):
            self.err(
                STRUCTURE,
                f"{p}/{key}",
                f"`code` of {where} must be 3–64 characters: an uppercase letter, then "
                f"uppercase letters, digits or `_` (like `NOT_FOUND`); {_got(c)}",
            )
            return None
        if c.startswith(RUNTIME_CODE_PREFIX):
            self.err(
                STRUCTURE,
                f"{p}/{key}",
                f"`code` of {where} starts with `{RUNTIME_CODE_PREFIX}`, which only the runtime "
                "uses: a tool cannot speak as the runtime",
                hint=f"use a code of your own, like `{c[len(RUNTIME_CODE_PREFIX) :] or 'FAILED'}`"
                if len(c) > len(RUNTIME_CODE_PREFIX) + 2
                else None,
            )
            return None
        return c

    def read_message(self, n: dict[str, Any], key: str, p: str, where: str, *_: Any) -> str | None:
        lo, hi = DESCRIPTION_CHARS
        return self.string(
            n, key, p, f"`{key}` of {where}", lo=lo, hi=hi, allow_chars=MULTILINE_ALLOWED
        )

    def name_field(self, n: dict[str, Any], key: str, p: str, where: str) -> str | None:
        """A string naming something (a node, a variable, a capability); checked later."""
        if key not in n:
            return None
        v = n[key]
        if type(v) is str:
            return v
        self.err(STRUCTURE, f"{p}/{key}", f"`{key}` of {where} must be a string; {_got(v)}")
        return None

    def retry(self, n: dict[str, Any], p: str, where: str) -> Retry | None:
        if "retry" not in n:
            return None
        r = n["retry"]
        rp = f"{p}/retry"
        if not self.expect_object(r, rp, f"`retry` of {where}"):
            return None
        self.fields(r, rp, _RETRY, f"`retry` of {where}")
        attempts = self.integer(
            r, "attempts", rp, f"`retry.attempts` of {where}", *RETRY_ATTEMPTS, "FORGE_RETRY_BOUNDS"
        )
        backoff = self.integer(
            r,
            "backoffMs",
            rp,
            f"`retry.backoffMs` of {where}",
            *RETRY_BACKOFF_MS,
            "FORGE_RETRY_BACKOFF",
        )
        return Retry(attempts=attempts, backoff_ms=backoff, pointer=rp)

    def condition(self, n: dict[str, Any], p: str, where: str) -> Condition | None:
        if "condition" not in n:
            return None
        c = n["condition"]
        cp = f"{p}/condition"
        if not self.expect_object(c, cp, f"`condition` of {where}"):
            return None
        self.fields(c, cp, _CONDITION, f"`condition` of {where}")
        op = self.enum(c, "op", cp, f"`condition.op` of {where}", CONDITION_OPS)
        if op in UNARY_OPS:
            if "right" in c:
                self.diags.append(
                    make(
                        STRUCTURE,
                        f"{cp}/right",
                        f"`{op}` takes only `left`; remove `right` from the condition of {where}",
                        key=True,
                    )
                )
        elif op is not None and "right" not in c:
            self.err(
                STRUCTURE,
                f"{cp}/right",
                f"`{op}` compares two values: the condition of {where} is missing `right`",
            )
        left = self.value_field(c, "left", cp)
        right = self.value_field(c, "right", cp) if op not in UNARY_OPS else None
        return Condition(op=op, left=left, right=right, pointer=cp)

    # ---- values and expressions (SPEC §3) -------------------------------------------------------

    def value_field(self, obj: dict[str, Any], key: str, pointer: str) -> Value | None:
        v = obj.get(key, _ABSENT)
        if v is _ABSENT:
            return None
        p = f"{pointer}/{key}"
        t = type(v)
        if t is not dict and t is not list:
            if t is int and not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
                self.unsafe_integer(v, p)
            return Literal(v, p)  # a scalar: nothing to walk
        self.value_bad = False
        mark = len(self.refs)
        had_credential = self.has_credential
        if t is dict and len(v) == 1:
            for k in v:
                if type(k) is str and k[:1] == "$":
                    # the value is one expression: no walk
                    expr = self.expression(k, v[k], p)
                    if self.value_bad:
                        del self.refs[mark:]
                        self.has_credential = had_credential
                        return None
                    return expr
        built = self.value(v, p)
        if self.value_bad:
            # the value is left out of the IR, and so are its reads and credentials
            del self.refs[mark:]
            self.has_credential = had_credential
            return None
        return built if built is not None else Literal(v, p)

    def value(self, v: Any, pointer: str) -> Value | None:
        """The value's IR when it holds an expression; None when it is a plain literal.

        Hot path: a literal subtree costs one type check per member and allocates nothing.
        Once a member holds an expression, the fields are collected in the same loop (the
        literal members before it are made `Literal`s then, once). Integers outside ±(2^53−1)
        are reported on the way (SPEC §16)."""
        t = type(v)
        if t is dict:
            if len(v) == 1:
                for k in v:
                    if type(k) is str and k[:1] == "$":
                        return self.expression(k, v[k], pointer)
            fields: list[tuple[str, Value]] | None = None
            paths = self.paths
            before = False  # a literal member came before the first expression
            sub: Value | None
            for k, x in v.items():
                tx = type(x)
                if tx is dict or tx is list:
                    cp = (
                        f"{pointer}/{k}"
                        if "~" not in k and "/" not in k
                        else f"{pointer}/{escape(k)}"
                    )
                    if tx is dict and len(x) == 1 and "$ref" in x:
                        # the commonest member, a read: built here, without two more calls
                        operand = x["$ref"]
                        segments = paths.get(operand, _ABSENT) if type(operand) is str else None
                        if segments is _ABSENT:
                            segments = paths[operand] = parse_path(operand)
                        if segments is not None:
                            sub = Ref(operand, segments, cp)
                            self.refs.append(sub)
                        else:
                            sub = self.expression("$ref", operand, cp)
                    elif (
                        tx is dict
                        and len(x) == 1
                        and type(xk := next(iter(x))) is str
                        and xk[:1] == "$"
                    ):
                        sub = self.expression(xk, x[xk], cp)  # another expression: no walk
                    else:
                        sub = self.value(x, cp)
                    if sub is not None:
                        if fields is None:
                            fields = self.literal_fields(v, pointer, k) if before else []
                        fields.append((k, sub))
                    elif fields is not None:
                        fields.append((k, Literal(x, cp)))
                    else:
                        before = True
                else:
                    if tx is int and not -MAX_SAFE_INTEGER <= x <= MAX_SAFE_INTEGER:
                        self.unsafe_integer(x, _child(pointer, k))
                    if fields is not None:
                        fields.append((k, Literal(x, _child(pointer, k))))
                    else:
                        before = True
            if len(v) > 1 and not _EXPRESSION_KEY_SET.isdisjoint(v):
                self.mixed_expression(v, pointer)
            if fields is None:
                return None
            return ObjectExpr(tuple(fields), pointer)
        if t is list:
            items: dict[int, Value] | None = None
            for i, x in enumerate(v):
                tx = type(x)
                if tx is dict or tx is list:
                    sub = self.value(x, f"{pointer}/{i}")
                    if sub is not None:
                        if items is None:
                            items = {}
                        items[i] = sub
                elif tx is int and not -MAX_SAFE_INTEGER <= x <= MAX_SAFE_INTEGER:
                    self.unsafe_integer(x, f"{pointer}/{i}")
            if items is None:
                return None
            return ListExpr(
                tuple(
                    [
                        items[i] if i in items else Literal(x, f"{pointer}/{i}")
                        for i, x in enumerate(v)
                    ]
                ),
                pointer,
            )
        return None

    def unsafe_integer(self, v: int, pointer: str) -> None:
        self.err(
            STRUCTURE,
            pointer,
            f"the integer {_show(v)} is outside ±(2^53 − 1) = ±{MAX_SAFE_INTEGER}: not every "
            "JSON host keeps it exactly",
            hint="write it as a string, or as a number with a fraction if precision may go",
        )

    def unsafe_integers_in(self, v: Any, pointer: str) -> None:
        """Report every out-of-range integer inside a literal (schema `enum`, `const`, ...)."""
        t = type(v)
        if t is int:
            if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
                self.unsafe_integer(v, pointer)
        elif t is dict:
            for k, x in v.items():
                self.unsafe_integers_in(x, _child(pointer, k))
        elif t is list:
            for i, x in enumerate(v):
                self.unsafe_integers_in(x, f"{pointer}/{i}")

    @staticmethod
    def literal_fields(v: dict[str, Any], pointer: str, stop: str) -> list[tuple[str, Value]]:
        """The members of `v` before key `stop`, each a `Literal` (they held no expression)."""
        out: list[tuple[str, Value]] = []
        for k, x in v.items():
            if k == stop:
                break
            out.append((k, Literal(x, _child(pointer, k))))
        return out

    def mixed_expression(self, v: dict[str, Any], pointer: str) -> None:
        self.value_bad = True
        for k in EXPRESSION_KEYS:
            if k in v:
                others = ", ".join(f"`{_short(o)}`" for o in list(v)[:9] if o != k)
                self.diags.append(
                    make(
                        STRUCTURE,
                        f"{pointer}/{k}",
                        f"`{k}` must be the only key of its object; this one also has {others}",
                        hint="wrap the expression: put it as the value of its own field",
                        key=True,
                    )
                )

    def expression(self, key: str, operand: Any, pointer: str) -> Value:
        if key == "$ref":
            segments = None
            if type(operand) is str:
                # per check, not per process: a first check is the figure that counts
                segments = self.paths.get(operand, _ABSENT)
                if segments is _ABSENT:
                    segments = self.paths[operand] = parse_path(operand)
            if segments is not None:
                ref = Ref(operand, segments, pointer)
                self.refs.append(ref)
                return ref
            self.value_bad = True
            self.err(
                "FORGE_REF_UNSAFE",
                f"{pointer}/$ref",
                f"`$ref` {_show(operand)} is not a safe path: {path_problem(operand)}",
                hint="write a path like `input.items[0].title`",
            )
            return Literal(None, pointer)
        if key == "$template":
            parts, problem = _template_parts(operand)
            if parts is not None:
                refs = self.refs
                built: list[str | Ref] = []
                for part in parts:
                    if isinstance(part, str):
                        built.append(part)
                    else:
                        ref = Ref(part[0], part[1], pointer)
                        built.append(ref)
                        refs.append(ref)
                return Template(operand, tuple(built), pointer)
            self.value_bad = True
            self.err(
                "FORGE_REF_UNSAFE",
                f"{pointer}/$template",
                f"`$template` {_show(operand)} is not a safe template: {problem}",
                hint="placeholders look like `{{input.name}}`",
            )
            return Literal(None, pointer)
        if key == "$credential":
            if type(operand) is str:
                self.has_credential = True
                return CredentialRef(id=operand, pointer=pointer)
            self.value_bad = True
            self.err(
                STRUCTURE,
                f"{pointer}/$credential",
                f"`$credential` takes the id of a declared credential (a string); {_got(operand)}",
            )
            return Literal(None, pointer)
        self.value_bad = True
        self.diags.append(
            make(
                STRUCTURE,
                f"{pointer}/{escape(key)}",
                f"`{_short(key)}` is not an expression: an object whose only key starts with `$` "
                "must be `$ref`, `$template` or `$credential`",
                hint=suggest(key, EXPRESSION_KEYS),
                key=True,
            )
        )
        return Literal(None, pointer)

    # ---- state, triggers, ui --------------------------------------------------------------------

    def state(self, raw: dict[str, Any]) -> StateDecl | None:
        if "state" not in raw:
            return None
        v = raw["state"]
        if not self.expect_object(v, "/state", "`state`"):
            return None
        self.fields(v, "/state", _STATE, "`state`")
        fields: dict[str, dict[str, Any]] = {}
        if "fields" in v:
            f = v["fields"]
            if type(f) is not dict:
                self.err(STRUCTURE, "/state/fields", f"`state.fields` must be an object; {_got(f)}")
            else:
                for name, schema in f.items():
                    fp = f"/state/fields/{escape(name)}"
                    name_ok = type(name) is str and bool(NAME_RE.fullmatch(name))
                    if not name_ok or name in FORBIDDEN_SEGMENTS:
                        self.diags.append(
                            make(
                                STRUCTURE,
                                fp,
                                f"state field name {_show(name)} must start with a letter, then "
                                "up to 63 letters, digits or `_` (and not be `prototype` or "
                                "`constructor`)",
                                key=True,
                            )
                        )
                    self.schema(schema, fp, 1, f"state field `{_short(name)}`")
                    # A good name is declared even when its schema is not: one cause, one
                    # code (SPEC §4.1), so its reads and writes are not reported again.
                    if name_ok and name not in FORBIDDEN_SEGMENTS:
                        fields[name] = schema
        max_bytes = self.integer(
            v, "maxBytes", "/state", "`state.maxBytes`", *STATE_MAX_BYTES, STRUCTURE
        )
        return StateDecl(fields=fields, max_bytes=max_bytes)

    def triggers(self, raw: dict[str, Any]) -> tuple[Trigger, ...]:
        if "triggers" not in raw:
            return ()
        v = raw["triggers"]
        if type(v) is not list:
            self.err(STRUCTURE, "/triggers", f"`triggers` must be a list; {_got(v)}")
            return ()
        out: list[Trigger] = []
        for i, t in enumerate(v):
            p = f"/triggers/{i}"
            if not self.expect_object(t, p, f"trigger {i}"):
                continue
            self.fields(t, p, _TRIGGER, f"trigger {i}")
            typ = self.enum(t, "type", p, f"`type` of trigger {i}", TRIGGER_TYPES)
            cron = None
            if typ == "schedule":
                if "cron" not in t:
                    self.err(STRUCTURE, f"{p}/cron", f"schedule trigger {i} is missing `cron`")
                else:
                    problem = cron_problem(t["cron"])
                    if problem is None:
                        cron = t["cron"]
                    else:
                        self.err(STRUCTURE, f"{p}/cron", f"`cron` of trigger {i}: {problem}")
            elif typ is not None and "cron" in t:
                self.diags.append(
                    make(
                        STRUCTURE,
                        f"{p}/cron",
                        f"a `{typ}` trigger takes no `cron` (only `schedule` triggers do)",
                        key=True,
                    )
                )
            out.append(Trigger(type=typ, cron=cron, pointer=p))
        return tuple(out)

    def ui(self, raw: dict[str, Any]) -> Ui | None:
        if "ui" not in raw:
            return None
        v = raw["ui"]
        if not self.expect_object(v, "/ui", "`ui`"):
            return None
        self.fields(v, "/ui", _UI, "`ui`")
        title = self.string(
            v, "title", "/ui", "`ui.title`", lo=TITLE_CHARS[0], hi=TITLE_CHARS[1], allow_chars=""
        )
        values: list[UiValue] = []
        if "values" in v:
            vals = v["values"]
            if type(vals) is not list:
                self.err(STRUCTURE, "/ui/values", f"`ui.values` must be a list; {_got(vals)}")
            else:
                for i, item in enumerate(vals):
                    p = f"/ui/values/{i}"
                    if not self.expect_object(item, p, f"ui value {i}"):
                        continue
                    self.fields(item, p, _UI_VALUE, f"ui value {i}")
                    label = self.string(
                        item,
                        "label",
                        p,
                        f"`label` of ui value {i}",
                        lo=TITLE_CHARS[0],
                        hi=TITLE_CHARS[1],
                        allow_chars="",
                    )
                    path = None
                    segments = None
                    if "path" in item:
                        raw_path = item["path"]
                        if type(raw_path) is not str:
                            self.err(
                                STRUCTURE,
                                f"{p}/path",
                                f"`path` of ui value {i} must be a string; {_got(raw_path)}",
                            )
                        else:
                            path = raw_path
                            segments = parse_path(raw_path)
                            if segments is None:
                                self.err(
                                    "FORGE_REF_UNSAFE",
                                    f"{p}/path",
                                    f"`path` {_show(raw_path)} of ui value {i} is not a safe path "
                                    f"into the output: {path_problem(raw_path)}",
                                    hint="ui paths are relative to the output, like `noteId` "
                                    "or `items[0].title`",
                                )
                    values.append(UiValue(label=label, path=path, segments=segments, pointer=p))
        return Ui(title=title, values=tuple(values))


_ABSENT: Any = object()
# Top-level node pointers, made once: they are stored in the IR and are keys of the later
# passes' dicts, and a made-once string keeps its hash.
_NODE_POINTERS = tuple([f"/flow/nodes/{i}" for i in range(MAX_NODES)])


class _Shape(NamedTuple):
    """The fields an object takes (in canonical order, for hints) and the ones it needs."""

    order: tuple[str, ...]
    allowed: frozenset[str]
    required: tuple[str, ...]
    required_set: frozenset[str]


def _shape(order: tuple[str, ...], required: tuple[str, ...]) -> _Shape:
    return _Shape(order, frozenset(order), required, frozenset(required))


_TOP = _shape(MANIFEST_FIELDS, MANIFEST_REQUIRED)
_NETWORK = _shape(NETWORK_FIELDS, ("mode",))
_CREDENTIAL = _shape(CREDENTIAL_FIELDS, CREDENTIAL_FIELDS)
_MODEL = _shape(MODEL_FIELDS, ())
_FLOW = _shape(FLOW_FIELDS, FLOW_FIELDS)
_RETRY = _shape(RETRY_FIELDS, RETRY_FIELDS)
_CONDITION = _shape(CONDITION_FIELDS, ("op", "left"))
_STATE = _shape(STATE_FIELDS, STATE_FIELDS)
_TRIGGER = _shape(TRIGGER_FIELDS, ("type",))
_UI = _shape(UI_FIELDS, UI_FIELDS)
_UI_VALUE = _shape(UI_VALUE_FIELDS, UI_VALUE_FIELDS)
_UNARY_OP_SET = frozenset(UNARY_OPS)
_BINARY_OPS = frozenset(CONDITION_OPS) - _UNARY_OP_SET
# node type → its shape at the top level and inside a loop body (where `next` is optional);
# `id` and `type` are checked before the shape, so they are not among the required
_NODE_TOP = {typ: _shape(NODE_ORDER[typ], node_required(typ, top=True)) for typ in NODE_FIELDS}
_NODE_BODY = {typ: _shape(NODE_ORDER[typ], node_required(typ, top=False)) for typ in NODE_FIELDS}

# `NodeField.kind` → the reader of such a field
_READERS: dict[str, Callable[..., Any]] = {
    "name": _Builder.read_name,
    "value": _Builder.read_value,
    "op": _Builder.read_op,
    "retry": _Builder.read_retry,
    "requirements": _Builder.read_requirements,
    "schema": _Builder.read_schema,
    "condition": _Builder.read_condition,
    "max_items": _Builder.read_max_items,
    "body": _Builder.read_body,
    "fail_code": _Builder.read_fail_code,
    "message": _Builder.read_message,
}


# the node code generated from `NODE_FIELDS` (see `forgec.frontend.node_codegen`)
_FAST_TOP, _FAST_BODY = generate_node_builders(
    {typ: shape.allowed for typ, shape in _NODE_TOP.items()},
    {typ: shape.required_set for typ, shape in _NODE_TOP.items()},
    {typ: shape.required_set for typ, shape in _NODE_BODY.items()},
)

# what a quick fix writes for a missing required field (the person then edits it); each one is
# itself valid where it goes, so a fix never trades one error for another (issue 22: `created
# ""`; tests/test_lsp.py holds every top-level one to that). A fixed createdAt keeps the
# check's output the same from run to run; the language server writes the current time.
MISSING_PLACEHOLDERS: dict[str, Any] = {
    "createdAt": "2026-01-01T00:00:00Z",
    "parentVersion": None,
    "network": {"mode": FORBIDDEN},
    "credentialRequirements": [],
    "execution": EXECUTION,
    "installScope": INSTALL_SCOPE,
    "schema": SCHEMA_ID,
    "next": "done",
    "then": "done",
    "else": "done",
    "value": None,
    "input": {},
    "target": "result1",
    "message": "Describe what went wrong.",
    "code": "FAILED",
    "description": "What this tool does.",
    "title": "Untitled tool",
    "version": 1,
}

_MISSING_HINTS = {
    "next": "name the node that runs next; only nodes inside a loop body may leave it out "
    "(to end the iteration)",
    "then": "an `if` needs both `then` and `else`; point them at the same node if one branch "
    "has nothing to do",
    "else": "an `if` needs both `then` and `else`; point them at the same node if one branch "
    "has nothing to do",
}

# Where a field that is unknown in one place does belong, for the hint.
_TOP_LEVEL_ELSEWHERE = {
    "entry": "`flow`",
    "maxTransitions": "`flow`",
    "nodes": "`flow`",
    "mode": "`network`",
    "hosts": "`network` (or a credential)",
    "fields": "`state`",
    "maxBytes": "`state`",
    "structuredOutput": "`modelDefaults`",
    "context": "`modelDefaults`",
    "privacy": "`modelDefaults`",
    "reasoningEffort": "`modelDefaults`",
}
_NODE_TYPES_OF_FIELD: dict[str, list[str]] = {}
for _typ, _fields in NODE_ORDER.items():
    for _field in _fields:
        _NODE_TYPES_OF_FIELD.setdefault(_field, []).append(_typ)


def _belongs_elsewhere(key: str, pointer: str) -> str | None:
    if pointer == "":
        if key == "name":
            return "a tool is named `dynamic:<id>`; its display name is `title`"
        place = _TOP_LEVEL_ELSEWHERE.get(key)
        return f"`{key}` belongs in {place}" if place else None
    if pointer.startswith("/flow/nodes/") and key in _NODE_TYPES_OF_FIELD:
        types = ", ".join(f"`{t}`" for t in _NODE_TYPES_OF_FIELD[key])
        return f"`{key}` is a field of {types} nodes"
    return None


def _child(pointer: str, key: str) -> str:
    if "~" in key or "/" in key:
        return f"{pointer}/{escape(key)}"
    return f"{pointer}/{key}"


def _template_parts(
    text: Any,
) -> tuple[tuple[str | tuple[str, tuple[Segment, ...]], ...] | None, str | None]:
    if type(text) is not str:
        return None, "a template must be a string; " + _got(text)
    return template_paths(text)


def default_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema["default"]` does not satisfy `schema`, or None when it does.

    `forgec.ir.json_subset` decides as fastjsonschema (the runtime's validator) does on the
    subset, in linear time: no code is generated per schema, so a manifest of a thousand
    defaults checks as fast as one."""
    return schema_problem(schema, schema["default"], "the default")


def cron_problem(expr: Any) -> str | None:
    """Why `expr` is not a cron expression the host accepts, or None when it is one.

    The rule itself is `forgec.catalog.cron.check_cron`, the one shared with
    `schedule.manage` and the host (SPEC §16); this only words its first problem."""
    if type(expr) is not str:
        return f"a cron expression is a string; {_got(expr)}"
    if len(expr) > 200:
        return "the cron expression is too long"
    from forgec.catalog.cron import check_cron  # only manifests with a schedule trigger pay

    problems = check_cron(expr)
    return "; ".join(problems) if problems else None


def _short(text: Any, limit: int = 40) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _id_hint(v: Any) -> str | None:
    if type(v) is str and v:
        import re

        slug = re.sub(r"[^a-z0-9._-]+", "-", v.lower()).strip("-")[:64]
        if len(slug) >= 3 and slug != v:
            return f"try `{slug}`"
    return None


def _empty_manifest() -> Manifest:
    return Manifest(
        schema=None,
        id=None,
        version=None,
        title=None,
        description=None,
        created_at=None,
        parent_version=None,
        execution=None,
        install_scope=None,
        network=None,
        credential_requirements=(),
        model_defaults=None,
        input_schema=None,
        output_schema=None,
        flow=None,
        state=None,
        triggers=(),
        ui=None,
    )
