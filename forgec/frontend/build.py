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

Speed: a node whose fields are exactly right takes `fast_node`, which checks inline and builds
directly; at the first doubt it steps aside, before reporting anything, and `node_body` (the
checking path, with a helper per field and a message per problem) takes over. A property test
holds the two paths to the same result. Pure answers are remembered across checks, each cache
cleared at 4096 entries: node layouts that passed the gate (known field names only), ids that
matched the id pattern (at most 64 characters), parsed paths and templates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from forgec.frontend.canonical import NODE_ORDER
from forgec.frontend.names import (
    FAIL_CODE_RE,
    FORBIDDEN_SEGMENTS,
    NAME_RE,
    NODE_ID_RE,
    host_problem,
    is_id,
    is_iso_datetime,
    parse_path,
    path_problem,
    split_template,
)
from forgec.ir.diagnostics import Diagnostic, make
from forgec.ir.nodes import (
    CapabilityNode,
    Condition,
    CredentialRef,
    CredentialRequirement,
    FailNode,
    Flow,
    ForeachNode,
    IfNode,
    ListExpr,
    Literal,
    LlmNode,
    Manifest,
    ModelRequirements,
    Network,
    Node,
    ObjectExpr,
    Ref,
    Retry,
    ReturnNode,
    Segment,
    SetNode,
    StateDecl,
    Template,
    Trigger,
    Ui,
    UiValue,
    Value,
)
from forgec.ir.pointer import escape

STRUCTURE = "FORGE_MANIFEST_STRUCTURE"
SCHEMA_ID = "talos.local-tool.v1"

MAX_NODES = 64
MAX_BODY = 16
MAX_SCHEMA_DEPTH = 8
INT32_LIMIT = 2**31  # version < 2^31

TOP_REQUIRED = (
    "schema", "id", "version", "title", "description", "createdAt", "parentVersion",
    "execution", "installScope", "network", "credentialRequirements", "flow",
)  # fmt: skip
TOP_OPTIONAL = ("modelDefaults", "inputSchema", "outputSchema", "state", "triggers", "ui")
TOP_FIELDS = TOP_REQUIRED + TOP_OPTIONAL

MODEL_FIELDS = ("structuredOutput", "context", "privacy", "reasoningEffort")
PRIVACY = ("local-only", "local-preferred", "remote-allowed")
EFFORT = ("low", "medium", "high")
LLM_OPS = ("classify", "extract", "summarize", "generate", "rank")
CONDITION_OPS = ("eq", "neq", "truthy", "exists", "contains", "gt", "gte", "lt", "lte")
UNARY_OPS = ("truthy", "exists")
TRIGGER_TYPES = ("manual", "schedule", "app-resume", "task-changed")
NETWORK_MODES = ("forbidden", "allowlist")

# the fields each node type takes, in canonical order: one table for the builder and the
# canonical form
NODE_FIELDS: dict[str, tuple[str, ...]] = NODE_ORDER
NODE_REQUIRED: dict[str, tuple[str, ...]] = {
    "set": ("target", "value"),
    "capability": ("capability", "input"),
    "llm": ("op", "input", "target"),
    "if": ("condition", "then", "else"),
    "foreach": ("source", "itemVar", "maxItems", "body"),
    "return": ("value",),
    "fail": ("code", "message"),
}
NEEDS_NEXT = frozenset({"set", "capability", "llm", "foreach"})  # at the top level

SCHEMA_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "title",
        "description", "default",
    }
)  # fmt: skip
SCHEMA_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_UNSUPPORTED_KEYWORD_HINTS = {
    "$ref": "the subset has no `$ref`: write the schema inline",
    "$defs": "the subset has no `$defs`: write each schema inline",
    "definitions": "the subset has no `definitions`: write each schema inline",
    "pattern": "the subset has no `pattern`; use `enum`, `minLength`/`maxLength` instead",
    "format": "the subset has no `format`; describe the expected format in `description`",
    "patternProperties": "the subset has no `patternProperties`; list `properties` by name",
}

EXPRESSION_KEYS = ("$ref", "$template", "$credential")
_EXPRESSION_KEY_SET = frozenset(EXPRESSION_KEYS)


def build_manifest(raw: Any) -> tuple[Manifest, list[Diagnostic]]:
    """Check the shape of a parsed manifest and build its IR; never raises."""
    builder = _Builder()
    manifest = builder.manifest(raw)
    return manifest, builder.diags


def format_path(segments: tuple[Segment, ...]) -> str:
    """``("input", "items", 0)`` → ``input.items[0]`` (the canonical spelling of a path)."""
    out = [str(segments[0])]
    for seg in segments[1:]:
        out.append(f"[{seg}]" if type(seg) is int else f".{seg}")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Describing values in messages


def _kind(v: Any) -> str:
    t = type(v)
    if v is None:
        return "null"
    if t is bool:
        return "a boolean"
    if t is int:
        return "an integer"
    if t is float:
        return "a number"
    if t is str:
        return "a string"
    if t is list:
        return "a list"
    if t is dict:
        return "an object"
    return "an unsupported value"


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
    return f"got {_kind(v)}"


def _suggest(word: str, choices: tuple[str, ...] | frozenset[str] | list[str]) -> str | None:
    if len(word) > 64:
        return None  # nothing we know is that long; spare difflib the work
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not close and len(word) > 1:
        lowered = {c.lower(): c for c in choices}
        if word.lower() in lowered:
            close = [lowered[word.lower()]]
    return f"did you mean `{close[0]}`?" if close else None


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

    def err(self, code: str, pointer: str, message: str, *, hint: str | None = None) -> None:
        self.diags.append(make(code, pointer, message, hint=hint))

    # ---- generic field checks ---------------------------------------------------------------

    def fields(
        self,
        obj: dict[str, Any],
        pointer: str,
        allowed: tuple[str, ...],
        required: tuple[str, ...],
        where: str,
    ) -> None:
        """Unknown fields (on their key) and missing required fields (at their pointer)."""
        keys = obj.keys()
        if keys <= _sets(allowed) and keys >= _sets(required):
            return  # the common case, decided by two C-level set comparisons
        for key in obj:
            if key not in allowed:
                shown = key if len(key) <= 60 else key[:57] + "..."
                self.diags.append(
                    make(
                        STRUCTURE,
                        f"{pointer}/{escape(key)}",
                        f"unknown field `{shown}` in {where}",
                        hint=_suggest(key, allowed)
                        or _belongs_elsewhere(key, pointer)
                        or "allowed fields: " + ", ".join(f"`{a}`" for a in allowed),
                        key=True,
                    )
                )
        for key in required:
            if key not in obj:
                hint = _MISSING_HINTS.get(key) if pointer.startswith("/flow/nodes/") else None
                self.err(STRUCTURE, f"{pointer}/{key}", f"{where} is missing `{key}`", hint=hint)

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
    ) -> str | None:
        """A string field with an optional length range in code points (absent → None)."""
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
        hint = _suggest(v, choices) if type(v) is str else None
        self.err(
            STRUCTURE, f"{pointer}/{key}", f"{what} must be one of {listed}; {_got(v)}", hint=hint
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
        self.fields(raw, "", TOP_FIELDS, TOP_REQUIRED, "the manifest")
        schema = self.constant(raw, "schema", SCHEMA_ID)
        tool_id = self.tool_id(raw)
        version = self.version(raw)
        title = self.string(raw, "title", "", "`title`", lo=1, hi=120, code="FORGE_TITLE")
        description = self.string(
            raw, "description", "", "`description`", lo=1, hi=1000, code="FORGE_DESCRIPTION"
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
        execution = self.constant(raw, "execution", "declarative-flow")
        install_scope = self.constant(raw, "installScope", "device")
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
        if type(v) is int and 1 <= v < INT32_LIMIT:
            return v
        self.err(
            "FORGE_VERSION",
            "/version",
            f"`version` must be {_range_text(1, INT32_LIMIT - 1)}; {_got(v)}",
        )
        return None

    def parent_version(self, raw: dict[str, Any], version: int | None) -> int | None:
        if "parentVersion" not in raw:
            return None
        v = raw["parentVersion"]
        if v is None:
            return None
        if not (type(v) is int and 1 <= v < INT32_LIMIT):
            self.err(
                "FORGE_VERSION",
                "/parentVersion",
                f"`parentVersion` must be null (first version) or "
                f"{_range_text(1, INT32_LIMIT - 1)}; {_got(v)}",
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
        self.fields(v, "/network", ("mode", "hosts"), ("mode",), "`network`")
        mode = self.enum(v, "mode", "/network", "`network.mode`", NETWORK_MODES)
        hosts: tuple[str, ...] = ()
        if "hosts" in v:
            listed = self.hosts(v["hosts"], "/network/hosts", "`network.hosts`")
            if mode == "forbidden" and type(v["hosts"]) is list and v["hosts"]:
                self.err(
                    "FORGE_NETWORK_CONTRADICTION",
                    "/network/hosts",
                    "`network.mode` is `forbidden`, yet `network.hosts` lists hosts",
                    hint='use `"mode": "allowlist"` to allow these hosts, or remove `hosts`',
                )
            elif mode == "allowlist" and listed is not None:
                hosts = listed
        elif mode == "allowlist":
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
            self.fields(c, p, ("id", "purpose", "hosts"), ("id", "purpose", "hosts"), where)
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
            purpose = self.string(c, "purpose", p, f"`purpose` of {where}", lo=1, hi=1000)
            hosts: tuple[str, ...] = ()
            if "hosts" in c:
                hosts = self.hosts(c["hosts"], f"{p}/hosts", f"`hosts` of {where}") or ()
            out.append(CredentialRequirement(id=good_id, purpose=purpose, hosts=hosts, pointer=p))
        return tuple(out)

    def model_requirements(self, v: Any, pointer: str, what: str) -> ModelRequirements | None:
        if not self.expect_object(v, pointer, what):
            return None
        self.fields(v, pointer, MODEL_FIELDS, (), what)
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
            v, "context", pointer, f"`context` in {what} (tokens)", 256, 131072, STRUCTURE
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
        for k, v in s.items():
            if k not in SCHEMA_KEYWORDS:
                hint = _UNSUPPORTED_KEYWORD_HINTS.get(k) or _suggest(k, SCHEMA_KEYWORDS)
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
            # `const` and `default` take any JSON value
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

    def schema_type(self, v: Any, pointer: str, what: str) -> None:
        listed = ", ".join(SCHEMA_TYPES)
        if type(v) is str:
            if v not in SCHEMA_TYPES:
                self.err(
                    STRUCTURE,
                    pointer,
                    f"`type` in {what} must be one of {listed}; {_got(v)}",
                    hint=_suggest(v, SCHEMA_TYPES),
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
        keys = ("entry", "maxTransitions", "nodes")
        self.fields(v, "/flow", keys, keys, "`flow`")
        entry = None
        if "entry" in v:
            e = v["entry"]
            if type(e) is str:
                entry = e
            else:
                self.err(STRUCTURE, "/flow/entry", f"`flow.entry` must be a node id; {_got(e)}")
        max_transitions = self.integer(
            v, "maxTransitions", "/flow", "`flow.maxTransitions`", 1, 256, "FORGE_TRANSITION_BOUNDS"
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
        built = self.fast_node(n, pointer, loop)
        if built is None:
            self.refs, self.has_credential = [], False  # whatever a declined fast path saw
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
        if type(typ) is not str or typ not in NODE_FIELDS:
            listed = ", ".join(f"`{t}`" for t in NODE_FIELDS)
            self.err(
                STRUCTURE,
                f"{pointer}/type",
                f"node {shown_id} has an unknown `type`; it must be one of {listed}; {_got(typ)}",
                hint=_suggest(typ, tuple(NODE_FIELDS)) if type(typ) is str else None,
            )
            return None
        allowed, required = _NODE_KEYS[typ, loop is None]
        where = f"{typ} node {shown_id}"
        self.fields(n, pointer, allowed, required, where)
        built = self.node_body(
            typ, n, node_id if id_ok and type(node_id) is str else "", pointer, loop, where
        )
        return built if id_ok else None

    def fast_node(self, n: Any, p: str, loop: str | None) -> Node | None:
        """The happy path for a node whose fields are known to be the right ones.

        The gate: the type's (allowed, required, builder) entry, two set comparisons and a
        known-good id. The builder checks each non-value field inline and returns None at the
        first doubt, before reporting anything; the caller then takes the checking path
        (`node_body`), which reports. Values are built last: `value_field` reports its own
        problems and never causes a fall-back, so nothing is reported twice. Must build
        exactly what `node_body` builds for the same input (tested)."""
        if type(n) is not dict or len(n) > _MOST_NODE_KEYS:
            return None
        typ = n.get("type")
        if type(typ) is not str:
            return None  # (a list would not even hash)
        # A layout (type, then the keys in order) that passed the gate before needs only a
        # probe; manifests repeat a handful of layouts. Only passing layouts are kept, so the
        # cache holds nothing but known field names.
        layout = (typ, *n)
        layouts = _LAYOUTS_TOP if loop is None else _LAYOUTS_BODY
        build = layouts.get(layout)
        if build is None:
            entry = _FAST_TOP.get(typ) if loop is None else _FAST_BODY.get(typ)
            if entry is None or not (n.keys() <= entry[0] and n.keys() >= entry[1]):
                return None
            if len(layouts) >= _CACHE_LIMIT:
                layouts.clear()
            build = layouts[layout] = entry[2]
        node_id = n.get("id")
        if type(node_id) is not str:
            return None
        if node_id not in _GOOD_IDS:
            if NODE_ID_RE.fullmatch(node_id) is None:
                return None
            _remember_id(node_id)
        return build(self, n, node_id, p)

    def fast_set(self, n: dict[str, Any], node_id: str, p: str) -> Node | None:
        nxt = n.get("next", _ABSENT)
        if nxt is _ABSENT:
            nxt = None
        elif type(nxt) is not str:
            return None
        target = n["target"]
        if type(target) is not str:
            return None
        # positional arguments (field order): keywords cost a third more per construction
        return SetNode(node_id, p, target, self.value_field(n, "value", p), nxt)

    def fast_capability(self, n: dict[str, Any], node_id: str, p: str) -> Node | None:
        get = n.get
        nxt = get("next", _ABSENT)
        if nxt is _ABSENT:
            nxt = None
        elif type(nxt) is not str:
            return None
        capability = n["capability"]
        target = get("target", _ABSENT)
        compensation = get("compensation", _ABSENT)
        if type(capability) is not str:
            return None
        if target is _ABSENT:
            target = None
        elif type(target) is not str:
            return None
        if compensation is _ABSENT:
            compensation = None
        elif type(compensation) is not str:
            return None
        retry = None
        r = get("retry", _ABSENT)
        if r is not _ABSENT:
            if type(r) is not dict or r.keys() != _RETRY_KEYS:
                return None
            attempts, backoff = r["attempts"], r["backoffMs"]
            if not (
                type(attempts) is int
                and 1 <= attempts <= 3
                and type(backoff) is int
                and 0 <= backoff <= 5000
            ):
                return None
            retry = Retry(attempts, backoff, p + "/retry")
        return CapabilityNode(
            node_id,
            p,
            capability,
            self.value_field(n, "input", p),
            target,
            retry,
            compensation,
            nxt,
        )

    def fast_if(self, n: dict[str, Any], node_id: str, p: str) -> Node | None:
        then, else_, c = n["then"], n["else"], n["condition"]
        if type(then) is not str or type(else_) is not str or type(c) is not dict:
            return None
        op = c.get("op")
        unary = _UNARY.get(op) if type(op) is str else None  # None: not a condition op
        if (
            unary is None
            or not c.keys() <= _CONDITION_KEYS
            or "left" not in c
            or ("right" in c) == unary
        ):
            return None
        cp = p + "/condition"
        left = self.value_field(c, "left", cp)
        right = None if unary else self.value_field(c, "right", cp)
        return IfNode(node_id, p, Condition(op, left, right, cp), then, else_)

    def fast_llm(self, n: dict[str, Any], node_id: str, p: str) -> Node | None:
        if "requirements" in n or "outputSchema" in n:
            return None
        nxt = n.get("next", _ABSENT)
        if nxt is _ABSENT:
            nxt = None
        elif type(nxt) is not str:
            return None
        op, target = n["op"], n["target"]
        if type(op) is not str or op not in _LLM_OPS or type(target) is not str:
            return None
        return LlmNode(node_id, p, op, self.value_field(n, "input", p), target, None, None, nxt)

    def fast_return(self, n: dict[str, Any], node_id: str, p: str) -> Node | None:
        return ReturnNode(node_id, p, self.value_field(n, "value", p))

    def node_body(
        self, typ: str, n: dict[str, Any], node_id: str, p: str, loop: str | None, where: str
    ) -> Node:
        if typ == "set":
            return SetNode(
                id=node_id,
                pointer=p,
                target=self.name_field(n, "target", p, where),
                value=self.value_field(n, "value", p),
                next=self.name_field(n, "next", p, where),
            )
        if typ == "capability":
            return CapabilityNode(
                id=node_id,
                pointer=p,
                capability=self.name_field(n, "capability", p, where),
                input=self.value_field(n, "input", p),
                target=self.name_field(n, "target", p, where),
                retry=self.retry(n, p, where),
                compensation=self.name_field(n, "compensation", p, where),
                next=self.name_field(n, "next", p, where),
            )
        if typ == "llm":
            requirements = None
            if "requirements" in n:
                requirements = self.model_requirements(
                    n["requirements"], f"{p}/requirements", f"`requirements` of {where}"
                )
            return LlmNode(
                id=node_id,
                pointer=p,
                op=self.enum(n, "op", p, f"`op` of {where}", LLM_OPS),
                input=self.value_field(n, "input", p),
                target=self.name_field(n, "target", p, where),
                requirements=requirements,
                output_schema=self.schema_field(n, "outputSchema", f"{p}/outputSchema"),
                next=self.name_field(n, "next", p, where),
            )
        if typ == "if":
            return IfNode(
                id=node_id,
                pointer=p,
                condition=self.condition(n, p, where),
                then=self.name_field(n, "then", p, where),
                else_=self.name_field(n, "else", p, where),
            )
        if typ == "foreach":
            return self.foreach(n, node_id, p, loop, where)
        if typ == "return":
            return ReturnNode(id=node_id, pointer=p, value=self.value_field(n, "value", p))
        code = None
        if "code" in n:
            c = n["code"]
            if type(c) is str and FAIL_CODE_RE.fullmatch(c):
                code = c
            else:
                self.err(
                    STRUCTURE,
                    f"{p}/code",
                    f"`code` of {where} must be 3–64 characters: an uppercase letter, then "
                    f"uppercase letters, digits or `_` (like `NOT_FOUND`); {_got(c)}",
                )
        message = self.string(n, "message", p, f"`message` of {where}", lo=1, hi=1000)
        return FailNode(id=node_id, pointer=p, code=code, message=message)

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
        keys = ("attempts", "backoffMs")
        self.fields(r, rp, keys, keys, f"`retry` of {where}")
        attempts = self.integer(
            r, "attempts", rp, f"`retry.attempts` of {where}", 1, 3, "FORGE_RETRY_BOUNDS"
        )
        backoff = self.integer(
            r, "backoffMs", rp, f"`retry.backoffMs` of {where}", 0, 5000, "FORGE_RETRY_BACKOFF"
        )
        return Retry(attempts=attempts, backoff_ms=backoff, pointer=rp)

    def condition(self, n: dict[str, Any], p: str, where: str) -> Condition | None:
        if "condition" not in n:
            return None
        c = n["condition"]
        cp = f"{p}/condition"
        if not self.expect_object(c, cp, f"`condition` of {where}"):
            return None
        self.fields(c, cp, ("op", "left", "right"), ("op", "left"), f"`condition` of {where}")
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

    def foreach(
        self, n: dict[str, Any], node_id: str, p: str, loop: str | None, where: str
    ) -> ForeachNode:
        if loop is not None:
            self.err(
                STRUCTURE,
                f"{p}/type",
                f"{where} is inside the body of loop `{loop}`: a loop body cannot hold a foreach",
                hint="move the inner loop to the top level, or flatten the data first",
            )
        source = self.value_field(n, "source", p)
        item_var = self.name_field(n, "itemVar", p, where)
        index_var = self.name_field(n, "indexVar", p, where)
        max_items = self.integer(
            n, "maxItems", p, f"`maxItems` of {where}", 1, 100, "FORGE_FOREACH_BOUNDS"
        )
        body: list[Node] = []
        if "body" in n:
            raw_body = n["body"]
            bp = f"{p}/body"
            if type(raw_body) is not list:
                self.err(
                    "FORGE_INLINE_BOUNDS",
                    bp,
                    f"`body` of {where} must be a list of 1–{MAX_BODY} nodes; {_got(raw_body)}",
                )
            else:
                if not raw_body or len(raw_body) > MAX_BODY:
                    self.err(
                        "FORGE_INLINE_BOUNDS",
                        bp,
                        f"`body` of {where} must hold 1–{MAX_BODY} nodes; it holds {len(raw_body)}",
                    )
                if loop is None:
                    for i, child in enumerate(raw_body):
                        node = self.node(child, f"{bp}/{i}", node_id or p)
                        if node is not None:
                            body.append(node)
        return ForeachNode(
            id=node_id,
            pointer=p,
            source=source,
            item_var=item_var,
            index_var=index_var,
            max_items=max_items,
            body=tuple(body),
            next=self.name_field(n, "next", p, where),
        )

    # ---- values and expressions (SPEC §3) -------------------------------------------------------

    def value_field(self, obj: dict[str, Any], key: str, pointer: str) -> Value | None:
        v = obj.get(key, _ABSENT)
        if v is _ABSENT:
            return None
        p = f"{pointer}/{key}"
        t = type(v)
        if t is not dict and t is not list:
            return Literal(v, p)  # a scalar: nothing to walk
        self.value_bad = False
        mark = len(self.refs)
        if t is dict and len(v) == 1:
            for k in v:
                if k == "$ref":
                    # the value is one read (the common case): no walk, no call
                    operand = v[k]
                    segments = _PATHS.get(operand) if type(operand) is str else None
                    if segments is not None:
                        ref = Ref(operand, segments, p)
                        self.refs.append(ref)
                        return ref
                if type(k) is str and k[:1] == "$":
                    # the value is one expression: no walk
                    expr = self.expression(k, v[k], p)
                    if self.value_bad:
                        del self.refs[mark:]
                        return None
                    return expr
        built = self.value(v, p)
        if self.value_bad:
            del self.refs[mark:]  # the value is left out of the IR, and so are its reads
            return None
        return built if built is not None else Literal(v, p)

    def value(self, v: Any, pointer: str) -> Value | None:
        """The value's IR when it holds an expression; None when it is a plain literal.

        Hot path: a literal subtree costs one type check per member and allocates nothing.
        Once a member holds an expression, the fields are collected in the same loop (the
        literal members before it are made `Literal`s then, once)."""
        t = type(v)
        if t is dict:
            if len(v) == 1:
                for k in v:
                    if type(k) is str and k[:1] == "$":
                        return self.expression(k, v[k], pointer)
            fields: list[tuple[str, Value]] | None = None
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
                    sub = None
                    if tx is dict and len(x) == 1:
                        # a member that is an expression, without another call to find out
                        for xk in x:
                            if xk == "$ref":  # a read of a path seen before: built here
                                operand = x[xk]
                                segments = _PATHS.get(operand) if type(operand) is str else None
                                if segments is not None:
                                    sub = Ref(operand, segments, cp)
                                    self.refs.append(sub)
                                else:
                                    sub = self.expression(xk, operand, cp)
                            elif type(xk) is str and xk[:1] == "$":
                                sub = self.expression(xk, x[xk], cp)
                            else:
                                sub = self.value(x, cp)
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
                elif fields is not None:
                    cp = (
                        f"{pointer}/{k}"
                        if "~" not in k and "/" not in k
                        else f"{pointer}/{escape(k)}"
                    )
                    fields.append((k, Literal(x, cp)))
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
                others = ", ".join(f"`{_short(o)}`" for o in v if o != k)
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
                segments = _PATHS.get(operand, _ABSENT)
                if segments is _ABSENT:
                    segments = _cached_path(operand)
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
            parts, problem = _cached_template(operand)
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
                hint=_suggest(key, EXPRESSION_KEYS),
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
        keys = ("fields", "maxBytes")
        self.fields(v, "/state", keys, keys, "`state`")
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
        max_bytes = self.integer(v, "maxBytes", "/state", "`state.maxBytes`", 1, 65536, STRUCTURE)
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
            self.fields(t, p, ("type", "cron"), ("type",), f"trigger {i}")
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
        self.fields(v, "/ui", ("title", "values"), ("title", "values"), "`ui`")
        title = self.string(v, "title", "/ui", "`ui.title`", lo=1, hi=120)
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
                    keys = ("label", "path")
                    self.fields(item, p, keys, keys, f"ui value {i}")
                    label = self.string(item, "label", p, f"`label` of ui value {i}", lo=1, hi=120)
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
_RETRY_KEYS = frozenset({"attempts", "backoffMs"})
_UNARY = {op: op in UNARY_OPS for op in CONDITION_OPS}  # condition op → takes only `left`
_LLM_OPS = frozenset(LLM_OPS)
_CONDITION_KEYS = frozenset({"op", "left", "right"})
# (type, at top level) → (allowed fields, required fields)
_NODE_KEYS: dict[tuple[str, bool], tuple[tuple[str, ...], tuple[str, ...]]] = {
    (typ, top): (
        NODE_FIELDS[typ],
        (*NODE_REQUIRED[typ], "next") if top and typ in NEEDS_NEXT else NODE_REQUIRED[typ],
    )
    for typ in NODE_FIELDS
    for top in (True, False)
}

_SET_CACHE: dict[tuple[str, ...], frozenset[str]] = {}

# The node types `fast_node` builds, with (allowed keys, required keys, builder) for a node
# at the top level and in a loop body.
_FAST_TYPES = ("set", "capability", "llm", "if", "return")
_FastEntry = tuple[
    frozenset[str], frozenset[str], Callable[[_Builder, dict[str, Any], str, str], Node | None]
]
_FAST_BUILDERS: dict[str, Callable[[_Builder, dict[str, Any], str, str], Node | None]] = {
    "set": _Builder.fast_set,
    "capability": _Builder.fast_capability,
    "llm": _Builder.fast_llm,
    "if": _Builder.fast_if,
    "return": _Builder.fast_return,
}
_FAST_TOP: dict[str, _FastEntry] = {
    typ: (
        frozenset(_NODE_KEYS[typ, True][0]),
        frozenset(_NODE_KEYS[typ, True][1]),
        _FAST_BUILDERS[typ],
    )
    for typ in _FAST_TYPES
}
_FAST_BODY: dict[str, _FastEntry] = {
    typ: (
        frozenset(_NODE_KEYS[typ, False][0]),
        frozenset(_NODE_KEYS[typ, False][1]),
        _FAST_BUILDERS[typ],
    )
    for typ in _FAST_TYPES
}

_MOST_NODE_KEYS = max(len(entry[0]) for entry in _FAST_TOP.values())
_LAYOUTS_TOP: dict[
    tuple[str, ...], Callable[[_Builder, dict[str, Any], str, str], Node | None]
] = {}
_LAYOUTS_BODY: dict[
    tuple[str, ...], Callable[[_Builder, dict[str, Any], str, str], Node | None]
] = {}

# Node ids already known to match `NODE_ID_RE`: a dict probe (whose hash the later passes'
# dicts reuse) instead of a regex run per node and check. Bounded like the caches below.
_GOOD_IDS: set[str] = set()


def _remember_id(node_id: str) -> None:
    if len(_GOOD_IDS) >= _CACHE_LIMIT:
        _GOOD_IDS.clear()
    _GOOD_IDS.add(node_id)


def _sets(names: tuple[str, ...]) -> frozenset[str]:
    try:
        return _SET_CACHE[names]
    except KeyError:
        result = _SET_CACHE[names] = frozenset(names)
        return result


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
for _typ, _fields in NODE_FIELDS.items():
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


# Paths and templates repeat within a manifest and across checks in one process; parsing is
# pure, so the results are memoised (bounded: cleared when full).
_CACHE_LIMIT = 4096
_PATHS: dict[str, tuple[Segment, ...] | None] = {}
_TEMPLATES: dict[
    str, tuple[tuple[str | tuple[str, tuple[Segment, ...]], ...] | None, str | None]
] = {}


def _cached_path(text: str) -> tuple[Segment, ...] | None:
    try:
        return _PATHS[text]
    except KeyError:
        pass
    if len(_PATHS) >= _CACHE_LIMIT:
        _PATHS.clear()
    segments = _PATHS[text] = parse_path(text)
    return segments


def _cached_template(
    text: Any,
) -> tuple[tuple[str | tuple[str, tuple[Segment, ...]], ...] | None, str | None]:
    if type(text) is not str:
        return None, "a template must be a string; " + _got(text)
    try:
        return _TEMPLATES[text]
    except KeyError:
        pass
    parts, problem = split_template(text)
    result: tuple[tuple[str | tuple[str, tuple[Segment, ...]], ...] | None, str | None]
    if parts is None:
        result = (None, problem)
    else:
        result = (
            tuple([p if isinstance(p, str) else (format_path(p), p) for p in parts]),
            None,
        )
    if len(_TEMPLATES) >= _CACHE_LIMIT:
        _TEMPLATES.clear()
    _TEMPLATES[text] = result
    return result


def cron_problem(expr: Any) -> str | None:
    """Why `expr` is not a five-field cron expression, or None when it is one."""
    if type(expr) is not str:
        return f"a cron expression is a string; {_got(expr)}"
    fields = expr.split()
    if len(expr) > 200:
        return "the cron expression is too long"
    if len(fields) != 5:
        return (
            f"a cron expression has 5 fields (minute hour day month weekday); "
            f"{_show(expr)} has {len(fields)}"
        )
    from croniter import croniter  # lazy: only manifests with a schedule trigger pay for it

    try:
        ok = bool(croniter.is_valid(expr))
    except Exception:  # croniter raises assorted errors on odd input
        ok = False
    return None if ok else f"{_show(expr)} is not a valid cron expression"


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
