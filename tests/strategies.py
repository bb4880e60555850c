"""The one home of the suite's hypothesis strategies.

JSON values: `json_values(leaves, keys=..., max_size=..., max_leaves=...)` over `scalars(...)`;
every property test builds its JSON from these (tune the leaves and keys, do not copy the
recursion). `JSON_VALUES` is the general-purpose default.

Manifests: random VALID `.talostool` manifests (TALOS target).

`manifests()` builds a tool that checks clean: unique node ids, edges only forward (so no
cycle) and every node reachable, refs only into `input` (always defined) or into loop variables
inside their loop, targets that are fresh names, literal capability inputs the catalog accepts.
The values are chosen to be awkward for a text format: unicode, quotes and backslashes, `{{`
and `$` in plain strings, line breaks, floats such as `1.0` and `-0.5`, empty objects and lists,
and keys that need quoting. Other test modules may reuse it.
"""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

from hypothesis import strategies as st

from forgec.ir.rules import MAX_SAFE_INTEGER
from forgec.ir.text_rules import CONTROL_OR_BIDI_RE, MULTILINE_ALLOWED


def shown(text: st.SearchStrategy[str], allow: str = "") -> st.SearchStrategy[str]:
    """Text a tool shows people (title, ui, purpose, description, fail message): no control or
    bidi character but those in `allow` (SPEC §14)."""
    return text.map(
        lambda s: CONTROL_OR_BIDI_RE.sub(lambda m: m.group() if m.group() in allow else "", s)
    )


FINITE_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def scalars(
    *,
    integers: st.SearchStrategy[int] | None = None,
    floats: st.SearchStrategy[float] | None = FINITE_FLOATS,
    text: st.SearchStrategy[str] | None = None,
    extra: st.SearchStrategy[Any] | None = None,
) -> st.SearchStrategy[Any]:
    """JSON leaves: null, booleans, integers, floats (None: none), text, plus `extra`."""
    parts: list[st.SearchStrategy[Any]] = [
        st.none(),
        st.booleans(),
        st.integers() if integers is None else integers,
        st.text(max_size=8) if text is None else text,
    ]
    if floats is not None:
        parts.append(floats)
    if extra is not None:
        parts.append(extra)
    return st.one_of(*parts)


def json_values(
    leaves: st.SearchStrategy[Any] | None = None,
    *,
    keys: st.SearchStrategy[str] | None = None,
    max_size: int = 4,
    max_leaves: int = 12,
) -> st.SearchStrategy[Any]:
    """Arbitrary JSON: lists and objects (keys from `keys`) nested over `leaves`."""
    key_strategy = st.text(max_size=6) if keys is None else keys
    return st.recursive(
        scalars() if leaves is None else leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=max_size),
            st.dictionaries(key_strategy, inner, max_size=max_size),
        ),
        max_leaves=max_leaves,
    )


JSON_VALUES = json_values()

NAME = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,7}", fullmatch=True).filter(
    lambda s: s
    not in {
        "input", "state", "output", "result", "error", "env", "secrets", "credentials", "self",
        "this", "prototype", "constructor",
    }
)  # fmt: skip
AWKWARD_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "{{not a template}}",
            "a {{ b",
            "$input.days",
            "line one\nline two",
            "trailing newline\n",
            '"quoted" and \\ backslash',
            "tab\there",
            "é ü 日本 😀",
            "  leading spaces",
            '"""',
            "\\{",
            "true",
            "null",
            "call",
        ]
    ),
)
KEY = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(["a b", "with-dash", "x.y", "$dollar", "", "if", "true", "max", "日本", "-x"]),
)
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([1.0, -0.5, 0.0, 1e16, 2.5e-7]),
    AWKWARD_TEXT,
)
JSON = json_values(SCALAR, keys=KEY, max_size=3, max_leaves=8)


LADDER = st.sampled_from([1, 2, 3])  # limits that nest: a narrower step beside a wider one


def _input_ref(props: list[str]) -> st.SearchStrategy[Any]:
    return st.sampled_from(props).map(lambda p: {"$ref": f"input.{p}"})


@st.composite
def values(draw: st.DrawFn, props: list[str], loop_vars: tuple[str, ...] = ()) -> Any:
    """A value for a value position: JSON with refs and templates mixed in."""
    roots = [f"input.{p}" for p in props] + list(loop_vars)
    ref = st.sampled_from(roots).map(lambda r: {"$ref": r})
    template = st.tuples(
        AWKWARD_TEXT.filter(lambda s: "{" not in s and "}" not in s), st.sampled_from(roots)
    ).map(lambda t: {"$template": f"{t[0]}{{{{{t[1]}}}}}"})
    return draw(
        json_values(
            st.one_of(SCALAR, ref, template),
            keys=KEY.filter(lambda k: not k.startswith("$")),
            max_size=3,
            max_leaves=6,
        )
    )


@st.composite
def _step(
    draw: st.DrawFn, nid: str, props: list[str], loop_vars: tuple[str, ...]
) -> dict[str, Any]:
    kind = draw(st.sampled_from(["set", "capability", "llm"]))
    target = draw(NAME)
    if kind == "set":
        return {"id": nid, "type": "set", "target": target, "value": draw(values(props, loop_vars))}
    if kind == "capability":
        cap = draw(st.sampled_from(["tasks.list", "notes.list", "memory.search", "notes.create"]))
        inp: dict[str, Any]
        # queries and limits from small pools half the time: two steps of one capability
        # that differ only in how far they narrow come up often (issue 31's verdict bug)
        query = st.one_of(st.sampled_from(["open", "due"]), AWKWARD_TEXT.filter(bool))
        if cap == "notes.create":
            inp = {"title": draw(st.text(min_size=1, max_size=20)), "body": draw(AWKWARD_TEXT)}
        elif cap == "memory.search":
            inp = {"query": draw(query), "limit": draw(st.one_of(LADDER, st.integers(1, 50)))}
        else:
            inp = {
                "query": draw(st.one_of(query, st.just(""))),
                "limit": draw(st.one_of(LADDER, st.integers(1, 100))),
            }
        node: dict[str, Any] = {
            "id": nid,
            "type": "capability",
            "capability": cap,
            "input": inp,
            "target": target,
        }
        if draw(st.booleans()):
            node["retry"] = {
                "attempts": draw(st.integers(1, 3)),
                "backoffMs": draw(st.integers(0, 5000)),
            }
        return node
    node = {
        "id": nid,
        "type": "llm",
        "op": draw(st.sampled_from(["classify", "extract", "summarize", "generate", "rank"])),
        "input": draw(values(props, loop_vars)),
        "target": target,
    }
    if draw(st.booleans()):
        node["requirements"] = {"privacy": draw(st.sampled_from(["local-only", "remote-allowed"]))}
    if draw(st.booleans()):
        node["outputSchema"] = {"type": "object", "description": draw(AWKWARD_TEXT)}
    return node


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.lists(NAME, min_size=1, max_size=3, unique=True))
    count = draw(st.integers(1, 8))
    ids = [f"n{i}" for i in range(count)]
    nodes: list[dict[str, Any]] = []
    loop_literals: list[str] = []  # variables written only inside a loop, from a literal
    reads: list[dict[str, Any]] = []  # the capability steps with a `limit` so far
    for i, nid in enumerate(ids):
        nxt = ids[i + 1] if i + 1 < count else None
        if nxt is None:
            if draw(st.booleans()):
                value = draw(values(props))
                if loop_literals and draw(st.booleans()):
                    # issue 12: a read after the loop of what only the loop wrote
                    value = {"v": value, "acc": {"$ref": loop_literals[0]}}
                nodes.append({"id": nid, "type": "return", "value": value})
            else:
                nodes.append(
                    {
                        "id": nid,
                        "type": "fail",
                        "code": draw(
                            st.from_regex(r"[A-Z][A-Z0-9_]{2,10}", fullmatch=True).filter(
                                lambda c: not c.startswith("RUN_")  # the runtime's (SPEC §14)
                            )
                        ),
                        "message": draw(
                            shown(st.text(min_size=1, max_size=30), MULTILINE_ALLOWED).filter(bool)
                        ),
                    }
                )
            continue
        shape = draw(st.sampled_from(["step", "step", "if", "foreach"]))
        if shape == "if":
            op = draw(st.sampled_from(["eq", "neq", "lt", "gte", "contains", "truthy", "exists"]))
            cond: dict[str, Any] = {"op": op, "left": draw(_input_ref(props))}
            if op not in ("truthy", "exists"):
                cond["right"] = draw(values(props))
            nodes.append({"id": nid, "type": "if", "condition": cond, "then": nxt, "else": ids[-1]})
        elif shape == "foreach":
            item = draw(NAME)
            loop: dict[str, Any] = {
                "id": nid,
                "type": "foreach",
                "source": draw(_input_ref(props)),
                "itemVar": item,
            }
            loop_vars: tuple[str, ...] = (item,)
            if draw(st.booleans()):
                index = draw(NAME.filter(lambda s, item=item: s != item))
                loop["indexVar"] = index
                loop_vars += (index,)
            loop["maxItems"] = draw(st.integers(1, 5))
            body = [
                draw(_step(f"{nid}b{j}", props, loop_vars)) for j in range(draw(st.integers(1, 2)))
            ]
            if draw(st.booleans()):
                literal = draw(st.sampled_from([[1, 2], {"a": 1}, {"a": [1, {"b": None}]}, []]))
                body.append(
                    {"id": f"{nid}lit", "type": "set", "target": f"lit_{nid}", "value": literal}
                )
                loop_literals.append(f"lit_{nid}")
            for a, b in itertools.pairwise(body):
                a["next"] = b["id"]
            loop["body"] = body
            loop["next"] = nxt
            nodes.append(loop)
        else:
            step = draw(_step(nid, props, ()))
            if reads and draw(st.booleans()):
                # a narrowing twin: an earlier read again, with another limit (issue 31: the
                # verdict once counted two such calls against the one that allows both)
                twin = draw(st.sampled_from(reads))
                other = draw(LADDER.filter(lambda k, was=twin["input"]["limit"]: k != was))
                step = {
                    **copy.deepcopy(twin),
                    "id": nid,
                    "input": {**twin["input"], "limit": other},
                }
            if step["type"] == "capability" and "limit" in step["input"]:
                reads.append(step)
            step["next"] = nxt
            nodes.append(step)
    manifest: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": draw(st.from_regex(r"[a-z0-9][a-z0-9._-]{2,20}", fullmatch=True)),
        "version": draw(st.integers(1, 100)),
        "title": draw(shown(st.text(min_size=1, max_size=40)).filter(lambda s: s.strip())),
        "description": draw(shown(AWKWARD_TEXT, MULTILINE_ALLOWED).filter(bool)),
        "createdAt": "2026-11-02T09:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
    }
    if draw(st.booleans()):
        manifest["modelDefaults"] = {
            "privacy": "local-only",
            "context": draw(st.integers(256, 131072)),
        }
    manifest["inputSchema"] = {
        "type": "object",
        "properties": {p: {"description": draw(AWKWARD_TEXT)} for p in props},
        "required": props,
    }
    manifest["flow"] = {"entry": ids[0], "maxTransitions": 256, "nodes": nodes}
    if draw(st.booleans()):
        manifest["state"] = {
            "fields": {"last": {"type": "string"}},
            "maxBytes": draw(st.integers(1, 65536)),
        }
    if draw(st.booleans()):
        manifest["triggers"] = draw(
            st.lists(
                st.sampled_from(
                    [
                        {"type": "manual"},
                        {"type": "schedule", "cron": "0 9 * * 1"},
                        {"type": "app-resume"},
                    ]
                ),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        manifest["ui"] = {
            "title": "Result",
            "values": [{"label": draw(shown(AWKWARD_TEXT).filter(bool)), "path": "a.b[0]"}],
        }
    return manifest


# ---- `.forge` text with comments ---------------------------------------------------------------

COMMENT_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20
).map(lambda s: ("# " + s).rstrip())


def token_ends(text: str) -> list[int]:
    """The offset just after each token of `.forge` TEXT (where a comment may go)."""
    from forgec.frontend.dsl_lexer import ForgeLexer

    ends = []
    pos = 0
    while pos < len(text):
        m = ForgeLexer._MASTER.match(text, pos)
        assert m is not None, text[pos : pos + 20]
        if m.lastgroup not in ("WS", "COMMENT"):
            ends.append(m.end())
        pos = m.end()
    return ends


@st.composite
def commented_forge(draw: st.DrawFn, base: st.SearchStrategy[str] | None = None) -> str:
    """`.forge` text (canonical text of a generated manifest, or BASE) with comments after any
    tokens and blank lines between some: every comment on a line of its own or after a token."""
    from forgec.frontend.dsl_format import format_forge

    text = draw(base) if base is not None else format_forge(draw(manifests()))
    ends = token_ends(text)
    picks = draw(st.lists(st.sampled_from([0, *ends]), max_size=12, unique=True))
    out = []
    last = 0
    for at in sorted(picks):
        out.append(text[last:at])
        blank = "\n" if draw(st.integers(0, 3)) == 0 else ""
        own_line = draw(st.booleans())
        out.append(("\n" + blank if own_line else " ") + draw(COMMENT_TEXT) + "\n")
        last = at
    out.append(text[last:])
    return "".join(out)


@st.composite
def raw_forge(draw: st.DrawFn) -> str:
    """`.forge` text of a generated manifest written the long way: every member with `raw`, as
    JSON, in a shuffled order (text `fmt` rewrites into sugar and canonical order)."""
    import orjson

    manifest = draw(manifests())
    items = list(manifest.items())
    items = draw(st.permutations(items))
    body = "".join(
        f"  raw {orjson.dumps(k).decode()} {orjson.dumps(v).decode()}\n" for k, v in items
    )
    return "tool {\n" + body + "}\n"


# --- capability inputs, from the rows' shapes (forgec.ir.capabilities) --------------------

# values for the fields whose rule is named (cron, SQL, URL): some pass, some do not
NAMED_RULE_SAMPLES = {
    "cron": ["0 9 * * 1", "*/15 * * * *", "0 9 31 2 *", "@daily", ""],
    "sql": ["SELECT 1 FROM threads", "SELECT * FROM tasks", "DELETE FROM threads", ""],
    "url": ["https://example.org/a", "http://example.org:8080/", "ftp://example.org/", "x"],
}


def field_values(field: Any) -> st.SearchStrategy[Any]:
    """Values for one input `Field`: around its bounds and enum, of its kind, or any JSON."""
    anything = json_values(scalars(), max_leaves=4)
    if field.kind == "string":
        if field.enum:
            choices: st.SearchStrategy[Any] = st.sampled_from(field.enum) | st.text(max_size=8)
        elif isinstance(field.validate, str):
            choices = st.sampled_from(NAMED_RULE_SAMPLES[field.validate])
        else:
            edge = [n for n in (field.min_length, field.max_length) if n is not None]
            sizes = st.sampled_from([0, 1, *edge, *(n + 1 for n in edge), *(n - 1 for n in edge)])
            # a short text repeated to exactly n code points (n may be far beyond what
            # hypothesis draws directly)
            choices = st.tuples(
                sizes, st.text(st.characters(codec="utf-8"), min_size=1, max_size=3)
            ).map(lambda pair: (pair[1] * max(pair[0], 0))[: max(pair[0], 0)])
    elif field.kind in ("integer", "number"):
        bounds = [b for b in (field.minimum, field.maximum) if b is not None]
        ints = st.sampled_from([0, 1, -1, *(int(b) + d for b in bounds for d in (-1, 0, 1))])
        choices = ints | st.integers(-10, 10**6) | FINITE_FLOATS
    elif field.kind == "boolean":
        choices = st.booleans()
    elif field.kind == "array":
        item = field_values(field.items) if field.items is not None else anything
        choices = st.lists(item, max_size=(field.max_items or 4) + 2)
    elif field.kind == "object":
        value = field_values(field.values) if field.values is not None else anything
        choices = st.dictionaries(st.text(max_size=6), value, max_size=3)
    else:
        choices = anything
    return choices | anything if field.kind != "any" else anything


def shape_inputs(shape: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Inputs for a `Shape`: any subset of its fields, sometimes an unknown one; for a field
    whose own shape another field chooses (`Nested`: a sub-agent's `input`), also inputs that
    choose one and fill the field from the chosen shape."""
    fields = shape.fields
    optional = {name: field_values(spec) for name, spec in fields.items()}
    extra = st.dictionaries(st.sampled_from(["zz", "Key", "limit "]), scalars(), max_size=1)
    loose = st.tuples(st.fixed_dictionaries({}, optional=optional), extra).map(
        lambda pair: {**pair[0], **pair[1]}
    )
    chosen = [
        st.sampled_from(sorted(rule.shapes)).flatmap(
            lambda name, rule=rule: st.fixed_dictionaries(
                {rule.selector: st.just(name)},
                optional={rule.field: shape_inputs(rule.shapes[name])},
            )
        )
        for rule in shape.nested
    ]
    return st.one_of(loose, *chosen)


def capability_inputs(row: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Inputs for a capability row, from its shape (`shape_inputs`)."""
    return shape_inputs(row.shape)


# -- request paths that a browser may read as another origin (the screen's login redirect) ------

# the pieces browsers treat specially when they resolve a path against an origin (WHATWG URL):
# slashes and backslashes (raw and percent-encoded), tabs, newlines and other C0 characters
# (removed, or stripped at the ends), spaces, dot segments (raw and encoded), userinfo and port
# marks, scheme-like prefixes, query and fragment marks, and full-width or ideographic look-alikes
URL_PIECES = (
    "/", "\\", "%5C", "%5c", "%2F", "%2f", "\t", "\n", "\r", " ", "\x00", "\x0b", "\x1f", "\x7f",
    ".", "..", "%2e", "%2E%2E", "@", ":", "http:", "https:", "HTTP:", "javascript:", "//", "?",
    "#", "%09", "%0a", "%00", "\u3002", "\uff0f", "\uff3c", "evil.example", "127.0.0.1", "x",
)  # fmt: skip


def origin_escapes() -> st.SearchStrategy[str]:
    """A request path spelled from `URL_PIECES`, starting with `/` as a request target does:
    `/\\evil.example/`, `/\\t/evil.example`, `/x/..//evil.example`, `/%5C%5Cevil`, ..."""
    return st.lists(st.sampled_from(URL_PIECES), min_size=1, max_size=8).map(
        lambda parts: "/" + "".join(parts)
    )


# --- turn scripts (SPEC §21): a model's own calls, each argument copied from an earlier result


TURN_TOOLS = ("remember", "recall", "post", "read_texts", "read_channels")
TURN_KEYS = ("k0", "k1", "k2")


@st.composite
def turn_scripts(draw: st.DrawFn, max_steps: int = 8) -> list[tuple[str, Any, Any]]:
    """A turn as a list of `(tool, a, b)` steps. An argument is `("copy", n)` — the n-th latest
    value the turn has seen, modulo how many it has (a model copying an earlier result, or the
    text that started the turn) — or `("new", None)`: a value the model wrote itself. What
    each tool does with `a` and `b` is the test's business (`tests/test_agent_labels_property`)."""
    arg = st.one_of(
        st.tuples(st.just("copy"), st.integers(min_value=0, max_value=4)),
        st.tuples(st.just("new"), st.none()),
    )
    steps = st.tuples(st.sampled_from(TURN_TOOLS), arg, st.one_of(arg, st.sampled_from(TURN_KEYS)))
    return draw(st.lists(steps, min_size=1, max_size=max_steps))


# --- db.query SELECTs (SPEC §21 lineage): one plain SELECT over messages and threads --------

_MSG_COLS = ("id", "channel_id", "content", "markdown", "created_at", "role", "thread_id")
_THR_COLS = ("id", "title", "channel_id", "created_at")


@st.composite
def lineage_selects(draw: st.DrawFn) -> tuple[str, str]:
    """An allowed SELECT over `messages m` (optionally joined with `threads t`) whose columns
    appear in every position the lineage must see: the select list (bare, qualified, inside a
    function, aliased), WHERE, JOIN … ON, GROUP BY, HAVING, ORDER BY (by column, alias or
    ordinal). Returned with its *decider*: the same query with the select list replaced by
    `count(*)` and every alias or ordinal outside it by its item — what SQLite reads for the
    decider is what decides every result column."""
    joined = draw(st.booleans())
    cols = [f"m.{c}" for c in _MSG_COLS] + ([f"t.{c}" for c in _THR_COLS] if joined else [])
    if not joined:
        cols += [c for c in _MSG_COLS if c not in ("id", "channel_id", "created_at")]
    col = st.sampled_from(cols)
    item = st.one_of(
        col,
        col.map(lambda c: f"length({c})"),
        col.map(lambda c: f"upper({c})"),
        st.just("count(*)"),
        st.tuples(col, col).map(lambda p: f"coalesce({p[0]}, {p[1]})"),
    )
    items = draw(st.lists(item, min_size=1, max_size=4))
    aliases = [f"a{i}" if draw(st.booleans()) else None for i in range(len(items))]
    shown = [f"{it} AS {al}" if al else it for it, al in zip(items, aliases, strict=True)]
    rest = decider = " FROM messages m"
    if joined:
        on = f" JOIN threads t ON {draw(col)} = {draw(col)}"
        rest, decider = rest + on, decider + on
    if draw(st.booleans()):
        where = f" WHERE {draw(col)} LIKE '%x%'"
        rest, decider = rest + where, decider + where
    if draw(st.booleans()):
        group = f" GROUP BY {draw(col)}"
        if draw(st.booleans()):
            group += f" HAVING count({draw(col)}) > 1"
        rest, decider = rest + group, decider + group
    if draw(st.booleans()):
        how = draw(st.sampled_from(["column", "ordinal", "alias"]))
        if how == "column" or (how == "alias" and not any(aliases)):
            by = by_item = draw(col)
        elif how == "ordinal":
            n = draw(st.integers(min_value=1, max_value=len(items)))
            by, by_item = str(n), items[n - 1]
        else:
            i = draw(st.sampled_from([i for i, al in enumerate(aliases) if al]))
            by, by_item = str(aliases[i]), items[i]
        rest += f" ORDER BY {by} DESC"
        decider += f" ORDER BY {by_item} DESC"
    return "SELECT " + ", ".join(shown) + rest, "SELECT count(*)" + decider


# --- `.forge` text with two syntax errors in two different steps ----------------------------

_NODE_LINE = re.compile(r'^(\s+)([A-Za-z_][\w.-]*|"[^"\n]*"): ')
# each kind of mistake: (name, edit of a node's first line after `id: `, or None when the line
# has nothing it applies to)
SYNTAX_MISTAKES = ("missing =", "stray token", "broken ->", "unclosed string", "unclosed bracket",
                   "bad keyword")  # fmt: skip
_STRAY = (")", ";", "@", "then", ",", "=", "->", ":", "max")
_BROKEN_EDGE = ("next", "- >", "->->", "=>", "-> ->", "->\n")
_BAD_KEYWORDS = (("call ", "cal "), ("llm ", "lm "), ("return ", "retrun "), ("if ", "iff "),
                 ("for ", "fro "))  # fmt: skip


def _node_spans(text: str) -> list[tuple[int, int]]:
    """(first line, last line), 0-based, of each step of the flow and of loop bodies."""
    from forgec.frontend.dsl_errors import bracket_offsets

    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    brackets = list(bracket_offsets(text))
    blocks: list[bool] = []  # innermost last: is this bracket a block of steps?
    k = 0
    firsts: list[int] = []
    for i, line in enumerate(lines):
        while k < len(brackets) and brackets[k][0] < starts[i]:
            offset, bracket = brackets[k]
            if bracket in "{[":
                head = text[text.rfind("\n", 0, offset) + 1 : offset]
                blocks.append(
                    bool(re.match(r"^\s*flow\b", head))
                    or (bracket == "{" and bool(_NODE_LINE.match(head)) and " for " in head)
                )
            elif blocks:
                blocks.pop()
            k += 1
        if blocks and blocks[-1] and _NODE_LINE.match(line):
            firsts.append(i)
    spans = []
    for j, first in enumerate(firsts):
        indent = len(lines[first]) - len(lines[first].lstrip())
        last = first
        for m in range(first + 1, firsts[j + 1] if j + 1 < len(firsts) else len(lines)):
            if lines[m].strip().startswith("}") and len(lines[m]) - len(lines[m].lstrip()) < indent:
                break  # the line closing the step's block
            last = m
        spans.append((first, last))
    return spans


def _mistake(line: str, kind: str, pick: int) -> str | None:
    from forgec.frontend.dsl_errors import bracket_offsets

    m = _NODE_LINE.match(line)
    assert m is not None
    head, rest = line[: m.end()], line[m.end() :]
    if kind == "missing =":
        return head + rest.replace(" = ", " ", 1) if " = " in rest else None
    if kind == "stray token":
        return f"{head}{_STRAY[pick % len(_STRAY)]} {rest}"
    if kind == "broken ->":
        edge = _BROKEN_EDGE[pick % len(_BROKEN_EDGE)]
        if " -> " not in rest:
            return None
        if edge == "->\n":  # the arrow with no target: the next line's id is read as it
            tail = re.search(r' -> ([\w.-]+|"[^"\n]*")\s*$', rest)
            return head + rest[: tail.start()] + " ->" if tail else None
        return head + rest.replace(" -> ", f" {edge} ", 1)
    if kind == "unclosed string":
        quotes = [i for i, c in enumerate(rest) if c == '"']
        if len(quotes) < 2 or '"""' in rest:
            return None
        return head + rest[: quotes[-1]] + rest[quotes[-1] + 1 :]
    if kind == "unclosed bracket":
        closers = [o for o, b in bracket_offsets(rest) if b in "}]"]
        return head + rest[: closers[-1]] + rest[closers[-1] + 1 :] if closers else None
    for good, bad in _BAD_KEYWORDS:  # "bad keyword"
        if rest.startswith(good) or f" = {good}" in rest[:40]:
            return head + rest.replace(good, bad, 1)
    return None


@st.composite
def forge_with_two_mistakes(
    draw: st.DrawFn, bases: st.SearchStrategy[str]
) -> tuple[str, tuple[str, int, int], tuple[str, int, int]]:
    """A valid `.forge` text from BASES with one mistake (a kind of `SYNTAX_MISTAKES`) on the
    first line of each of two steps at least two lines apart: (text, (kind, first line, last
    line) of each mistaken step, 1-based). A mistake the parser can only notice on the next
    line (an `->` with no target) has that next line as its last."""
    from hypothesis import assume

    text = draw(bases)
    # steps written on one line: a step spread over several (a long object) is not yet
    # recovered from reliably (docs/language.md, "Syntax errors")
    spans = [(first, last) for first, last in _node_spans(text) if first == last]
    assume(len(spans) >= 2)
    a, b = sorted(draw(st.lists(st.sampled_from(range(len(spans))), min_size=2, max_size=2,
                                unique=True)))  # fmt: skip
    (a0, a1), (b0, b1) = spans[a], spans[b]
    assume(b0 - a1 >= 2)
    lines = text.split("\n")
    out = []
    for first, last in ((a0, a1), (b0, b1)):
        kind = draw(st.sampled_from(SYNTAX_MISTAKES))
        edited = _mistake(lines[first], kind, draw(st.integers(0, 99)))
        assume(edited is not None)
        assert edited is not None
        lines[first] = edited
        out.append((kind, first + 1, last + 1 + edited.endswith("->")))
    return "\n".join(lines), out[0], out[1]
