"""The `.forge` front end: text → the manifest as a JSON value, plus a source map into the text.

Algorithm. One LALR(1) parser (grammar in `forgec/grammar/forge.lark`) is built once per process
from the shipped table cache `forgec/grammar/forge.lalr` (lark rebuilds and rewrites it when the
grammar, lark or Python changed). The parser runs *tree-less*: the `_Builder` callbacks fire as
each rule is reduced and build JSON directly, so no parse tree is ever allocated. Every JSON value
travels with an `_N` (its span, the span of the key or keyword that introduced it, and its
children), and the finished `_N` tree is the `ForgeSourceMap`: a JSON Pointer walks it and stops
at the deepest construct that exists, which is what a diagnostic should point at.

The result is the same JSON a `.talostool` would give, so every later check applies unchanged;
only syntax-level problems (bad syntax, bad escapes, duplicate members, numbers out of range,
nesting deeper than 64, compiled size over 64 KiB) are reported here.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from forgec.frontend.jsonsyntax import unsafe_integer_message, unsafe_integer_token
from forgec.frontend.loaded import Loaded
from forgec.ir.diagnostics import Diagnostic, make
from forgec.ir.pointer import split
from forgec.ir.rules import (
    EXECUTION,
    INSTALL_SCOPE,
    MAX_FORGE_BYTES,
    MAX_JSON_DEPTH,
    MAX_MANIFEST_BYTES,
    OP_SYMBOLS,
    SCHEMA_ID,
)
from forgec.ir.span import Span

GRAMMAR_DIR = Path(__file__).resolve().parent.parent / "grammar"
GRAMMAR_PATH = GRAMMAR_DIR / "forge.lark"
CACHE_PATH = GRAMMAR_DIR / "forge.lalr"

MAX_BYTES = MAX_MANIFEST_BYTES  # of the compiled manifest, as compact JSON
MAX_DEPTH = MAX_JSON_DEPTH
SCHEMA = SCHEMA_ID

STRUCTURE = "FORGE_MANIFEST_STRUCTURE"

# (line, column, end_line, end_column), 1-based, end exclusive (lark's convention).
Pos = tuple[int, int, int, int]

_HEADER_KEYS = {
    "version": "version",
    "title": "title",
    "description": "description",
    "created": "createdAt",
    "parent": "parentVersion",
    "schema": "schema",
    "execution": "execution",
    "installScope": "installScope",
    "input": "inputSchema",
    "output": "outputSchema",
}
_CMP_OPS = {symbol: op for op, symbol in OP_SYMBOLS.items()}
_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "{": "{",
}


class _N:
    """A JSON value with where it was written: `s` its span, `k` its key's, `kids` its members."""

    __slots__ = ("g", "k", "kids", "plain", "s", "v")

    def __init__(self, v: Any, s: Pos, kids: dict[str, _N] | list[_N] | None = None) -> None:
        self.v = v
        self.s = s
        self.k: Pos | None = None
        self.kids = kids
        self.plain: str | None = None  # a string token's text, when a template would be wrong
        # A block written between braces (an object, a list, the flow's nodes, the tool's
        # items): from its opening to its closing brace. Comments are placed by it (dsl_trivia).
        self.g: Pos | None = None


def _tpos(tok: Any) -> Pos:
    return (tok.line, tok.column, tok.end_line, tok.end_column)


def _join(a: Pos, b: Pos) -> Pos:
    return (a[0], a[1], b[2], b[3])


def _clause(kw: Any, parts: list[tuple[str, _N | None]]) -> _N:
    """The object a keyword clause writes (`network`, `retry`, ...): its present parts, in the
    given key order, spanning from the keyword to the part written last."""
    members: dict[str, Any] = {}
    kids: dict[str, _N] = {}
    start = end = _tpos(kw)
    for key, n in parts:
        if n is not None:
            members[key] = n.v
            kids[key] = n
            end = max(end, n.s)
    return _N(members, _join(start, end), kids)


class _SyntaxProblem(Exception):
    """A problem inside a token (a bad escape, a badly indented multi-line string)."""


def decode_string(body: str) -> tuple[str, bool]:
    """The text of a string body (between the quotes) and whether it is a template.

    A string is a template when it holds `{{` made of two unescaped braces; `\\{` writes a
    literal brace, so a literal text with `{{` in it is written `\\{\\{`.
    """
    if "\\" not in body:
        return body, "{{" in body
    out: list[str] = []
    template = False
    prev_brace = False  # the previous character was an unescaped `{`
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            if c == "{":
                template = template or prev_brace
                prev_brace = True
            else:
                prev_brace = False
            out.append(c)
            i += 1
            continue
        prev_brace = False
        e = body[i + 1] if i + 1 < n else ""
        if e == "u":
            code = _hex4(body, i + 2)
            i += 6
            if 0xD800 <= code <= 0xDBFF:
                if body[i : i + 2] != "\\u":
                    raise _SyntaxProblem("a `\\u` high surrogate must be followed by a low one")
                low = _hex4(body, i + 2)
                if not 0xDC00 <= low <= 0xDFFF:
                    raise _SyntaxProblem("a `\\u` high surrogate must be followed by a low one")
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            elif 0xDC00 <= code <= 0xDFFF:
                raise _SyntaxProblem("a lone `\\u` low surrogate is not a character")
            out.append(chr(code))
            continue
        repl = _ESCAPES.get(e)
        if repl is None:
            shown = "end of line" if e in ("", "\n") else f"`\\{e}`"
            raise _SyntaxProblem(
                f"unknown escape {shown} in a string "
                '(escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t \\{ and \\uXXXX)'
            )
        out.append(repl)
        i += 2
    return "".join(out), template


def _hex4(body: str, at: int) -> int:
    digits = body[at : at + 4]
    if len(digits) != 4 or any(ch not in "0123456789abcdefABCDEF" for ch in digits):
        raise _SyntaxProblem("`\\u` needs four hexadecimal digits")
    return int(digits, 16)


def dedent_triple(body: str) -> str:
    """The raw text of a `\"\"\"` string: lines between the delimiters, minus the indentation
    of the closing delimiter (Swift's rule), joined with newlines; escapes still to decode."""
    lines = body.split("\n")
    if len(lines) < 2 or lines[0].strip(" \t\r") or lines[-1].strip(" \t"):
        raise _SyntaxProblem(
            'a multi-line string starts with `"""` and a line break, and ends with `"""` '
            "on a line of its own"
        )
    indent = lines[-1]
    out = []
    for line in lines[1:-1]:
        line = line.removesuffix("\r")
        if line.startswith(indent):
            out.append(line[len(indent) :])
        elif not line.strip(" \t"):
            out.append("")
        else:
            raise _SyntaxProblem(
                'a line of a multi-line string is indented less than its closing `"""`'
            )
    return "\n".join(out)


def _merge(
    owner: str, members: dict[str, Any], kids: dict[str, _N], key: str, n: _N, diags: list
) -> None:
    """Add one member, reporting a duplicate (two parsers must never see two tools)."""
    if key in members:
        first = kids[key]
        where = f" (first at line {first.k[0]})" if first.k else ""
        diags.append((n.k or n.s, f"`{key}` is given twice in {owner}{where}"))
        return
    members[key] = n.v
    kids[key] = n


class _Builder:
    """Rule callbacks for lark's tree-less LALR mode; each returns an `_N` (or a tagged tuple)."""

    def __init__(self) -> None:
        self.diags: list[tuple[Pos, str]] = []

    # ---- names and values -------------------------------------------------------------
    def ident(self, c: list) -> _N:
        t = c[0]
        return _N(str(t), _tpos(t))

    def quoted_name(self, c: list) -> _N:
        t = c[0]
        n = _N(self._text(t, str(t)[1:-1])[0], _tpos(t))
        return n

    def _text(self, tok: Any, body: str) -> tuple[str, bool]:
        try:
            return decode_string(body)
        except _SyntaxProblem as exc:
            self.diags.append((_tpos(tok), str(exc)))
            return body, False

    def string(self, c: list) -> _N:
        t = c[0]
        text, template = self._text(t, str(t)[1:-1])
        n = _N({"$template": text} if template else text, _tpos(t))
        n.plain = text
        return n

    def tstring(self, c: list) -> _N:
        t = c[0]
        try:
            raw = dedent_triple(str(t)[3:-3])
        except _SyntaxProblem as exc:
            self.diags.append((_tpos(t), str(exc)))
            raw = str(t)[3:-3]
        text, template = self._text(t, raw)
        n = _N({"$template": text} if template else text, _tpos(t))
        n.plain = text
        return n

    def number(self, c: list) -> _N:
        t = c[0]
        s = str(t)
        v: int | float
        if "." in s or "e" in s or "E" in s:
            v = float(s)
            if v in (float("inf"), float("-inf")):
                self.diags.append((_tpos(t), f"the number {s} is too large"))
                v = 0.0
        elif unsafe_integer_token(s):
            # by its digits: Python will not convert one of more than 4300 (SPEC §16)
            self.diags.append((_tpos(t), unsafe_integer_message(s)))
            v = 0
        else:
            v = int(s)
        return _N(v, _tpos(t))

    def true(self, c: list) -> _N:
        return _N(True, _tpos(c[0]))

    def false(self, c: list) -> _N:
        return _N(False, _tpos(c[0]))

    def null(self, c: list) -> _N:
        return _N(None, _tpos(c[0]))

    def ref(self, c: list) -> _N:
        t = c[0]
        return _N({"$ref": str(t)[1:]}, _tpos(t))

    def credential_ref(self, c: list) -> _N:
        t = c[0]
        return _N({"$credential": str(t)[len("$credential(") : -1]}, _tpos(t))

    def pair(self, c: list) -> tuple[str, _N]:
        key, val = c
        val.k = key.s
        return (key.v, val)

    def object(self, c: list) -> _N:
        members: dict[str, Any] = {}
        kids: dict[str, _N] = {}
        for p in c[1:-1]:
            if p is not None:
                _merge("this object", members, kids, p[0], p[1], self.diags)
        n = _N(members, _join(_tpos(c[0]), _tpos(c[-1])), kids)
        n.g = n.s
        return n

    def array(self, c: list) -> _N:
        items = [x for x in c[1:-1] if x is not None]
        n = _N([x.v for x in items], _join(_tpos(c[0]), _tpos(c[-1])), items)
        n.g = n.s
        return n

    # ---- the tool's header -------------------------------------------------------------
    @staticmethod
    def _plain(n: _N) -> _N:
        if n.plain is not None and isinstance(n.v, dict):
            n.v = n.plain  # a text field: `{{` there is just text
        return n

    def header(self, c: list) -> tuple:
        kw, val = c
        key = _HEADER_KEYS[str(kw)]
        if key not in ("inputSchema", "outputSchema"):
            self._plain(val)
        val.k = _tpos(kw)
        return ("member", key, val)

    schema_decl = header

    def network(self, c: list) -> tuple:
        kw, mode, hosts = c
        n = _clause(kw, [("mode", mode), ("hosts", hosts)])
        n.k = _tpos(kw)
        return ("member", "network", n)

    def credential(self, c: list) -> tuple:
        kw, cid, purpose, hosts = c
        if purpose is not None:
            self._plain(purpose)
        return ("credential", _clause(kw, [("id", cid), ("purpose", purpose), ("hosts", hosts)]))

    def model(self, c: list) -> tuple:
        kw, val = c
        val.k = _tpos(kw)
        return ("member", "modelDefaults", val)

    def state(self, c: list) -> tuple:
        kw, max_bytes, fields = c
        n = _clause(kw, [("fields", fields), ("maxBytes", max_bytes)])
        n.k = _tpos(kw)
        return ("member", "state", n)

    def trigger(self, c: list) -> tuple:
        kw, kind, cron = c
        if cron is not None:
            self._plain(cron)
        return ("trigger", _clause(kw, [("type", kind), ("cron", cron)]))

    def ui_value(self, c: list) -> _N:
        label, path = c[0], c[1]
        self._plain(label)
        self._plain(path)
        return _N(
            {"label": label.v, "path": path.v},
            _join(label.s, path.s),
            {"label": label, "path": path},
        )

    def ui(self, c: list) -> tuple:
        kw, title, lbrace, *values, rbrace = c
        self._plain(title)
        items = [v for v in values if v is not None]
        vals = _N([v.v for v in items], items[0].s if items else title.s, items)
        if items:
            vals.s = _join(items[0].s, items[-1].s)
        vals.g = _join(_tpos(lbrace), _tpos(rbrace))
        n = _N(
            {"title": title.v, "values": vals.v},
            _join(_tpos(kw), vals.s),
            {"title": title, "values": vals},
        )
        n.k = _tpos(kw)
        return ("member", "ui", n)

    def raw_field(self, c: list) -> tuple:
        kw, name, val = c
        val.k = _join(_tpos(kw), name.s)
        return ("member", name.v, val)

    # ---- the flow -----------------------------------------------------------------------
    def items(self, c: list) -> tuple[Pos, list]:
        return _join(_tpos(c[0]), _tpos(c[-1])), c[1:-1]

    def nodes(self, c: list) -> tuple[Pos, list]:
        return _join(_tpos(c[0]), _tpos(c[-1])), c[1:-1]

    def flow(self, c: list) -> tuple:
        kw, entry, max_t, (braces, nodes) = c
        members: dict[str, Any] = {}
        kids: dict[str, _N] = {}
        if entry is not None:
            members["entry"] = entry.v
            kids["entry"] = entry
        if max_t is not None:
            members["maxTransitions"] = max_t.v
            kids["maxTransitions"] = max_t
        node_ns = [x for x in nodes if x is not None]
        end = node_ns[-1].s if node_ns else (max_t or entry or _N(None, _tpos(kw))).s
        list_n = _N(
            [x.v for x in node_ns], _join(node_ns[0].s, end) if node_ns else _tpos(kw), node_ns
        )
        list_n.g = braces
        members["nodes"] = list_n.v
        kids["nodes"] = list_n
        n = _N(members, _join(_tpos(kw), end), kids)
        n.k = _tpos(kw)
        return ("member", "flow", n)

    def _mk_node(self, id_n: _N, kind: str, kw_pos: Pos, fields: list[tuple[str, _N | None]]) -> _N:
        type_n = _N(kind, kw_pos)
        members: dict[str, Any] = {"id": id_n.v, "type": kind}
        kids: dict[str, _N] = {"id": id_n, "type": type_n}
        end = id_n.s
        for key, n in fields:
            if n is None:
                continue
            if n.s > end:
                end = n.s
            _merge(f"node `{id_n.v}`", members, kids, key, n, self.diags)
        return _N(members, _join(id_n.s, end), kids)

    def next(self, c: list) -> _N:
        return c[0]

    def then(self, c: list) -> _N:
        return c[0]

    else_ = then

    def set_node(self, c: list) -> _N:
        id_n, target, value, nxt = c
        return self._mk_node(
            id_n, "set", target.s, [("target", target), ("value", value), ("next", nxt)]
        )

    def _step(self, c: list, kind: str, head: str) -> _N:
        """A `call` or `llm` step: `id: [target =] KW NAME input [options] [next]`."""
        id_n, target, kw, what, value, *rest = c
        nxt = rest.pop()
        fields: list[tuple[str, _N | None]] = [(head, what), ("input", value), ("target", target)]
        fields.extend(rest)
        fields.append(("next", nxt))
        return self._mk_node(id_n, kind, _tpos(kw), fields)

    def call_node(self, c: list) -> _N:
        return self._step(c, "capability", "capability")

    def retry(self, c: list) -> tuple[str, _N]:
        kw, attempts, backoff = c
        n = _clause(kw, [("attempts", attempts), ("backoffMs", backoff)])
        n.k = _tpos(kw)
        return ("retry", n)

    def undo(self, c: list) -> tuple[str, _N]:
        kw, cap = c
        cap.k = _tpos(kw)
        return ("compensation", cap)

    def llm_node(self, c: list) -> _N:
        return self._step(c, "llm", "op")

    def requires(self, c: list) -> tuple[str, _N]:
        kw, val = c
        val.k = _tpos(kw)
        return ("requirements", val)

    def returns(self, c: list) -> tuple[str, _N]:
        kw, val = c
        val.k = _tpos(kw)
        return ("outputSchema", val)

    def binary(self, c: list) -> _N:
        left, op, right = c
        return _N(
            {"op": op.v, "left": left.v, "right": right.v},
            _join(left.s, right.s),
            {"op": op, "left": left, "right": right},
        )

    def cmp(self, c: list) -> _N:
        t = c[0]
        return _N(_CMP_OPS.get(str(t), str(t)), _tpos(t))

    def unary(self, c: list) -> _N:
        t, left = c
        op = _N(str(t), _tpos(t))
        return _N({"op": op.v, "left": left.v}, _join(op.s, left.s), {"op": op, "left": left})

    def bare(self, c: list) -> _N:
        left = c[0]
        op = _N("truthy", left.s)
        return _N({"op": "truthy", "left": left.v}, left.s, {"op": op, "left": left})

    def raw_cond(self, c: list) -> _N:
        kw, val = c
        val.k = _tpos(kw)
        return val

    def if_node(self, c: list) -> _N:
        id_n, kw, cond, then, els = c
        return self._mk_node(
            id_n, "if", _tpos(kw), [("condition", cond), ("then", then), ("else", els)]
        )

    def for_node(self, c: list) -> _N:
        id_n, kw, item, index, source, max_items, (braces, nodes), nxt = c
        body = [x for x in nodes if x is not None]
        body_n = _N([x.v for x in body], _join(body[0].s, body[-1].s) if body else _tpos(kw), body)
        body_n.g = braces
        return self._mk_node(
            id_n,
            "foreach",
            _tpos(kw),
            [
                ("source", source),
                ("itemVar", item),
                ("indexVar", index),
                ("maxItems", max_items),
                ("body", body_n),
                ("next", nxt),
            ],
        )

    def return_node(self, c: list) -> _N:
        id_n, kw, value = c
        return self._mk_node(id_n, "return", _tpos(kw), [("value", value)])

    def fail_node(self, c: list) -> _N:
        id_n, kw, code, message = c
        return self._mk_node(
            id_n, "fail", _tpos(kw), [("code", code), ("message", self._plain(message))]
        )

    def raw_node(self, c: list) -> _N:
        kw, val = c
        val.k = _tpos(kw)
        return val

    # ---- the whole tool ---------------------------------------------------------------
    def start(self, c: list) -> _N:
        kw, id_n, (braces, items) = c
        members: dict[str, Any] = {"schema": SCHEMA}
        kids: dict[str, _N] = {}
        head = _tpos(kw)
        if id_n is not None:
            members["id"] = id_n.v
            kids["id"] = id_n
            head = _join(head, id_n.s)
        creds: list[_N] = []
        triggers: list[_N] = []
        for item in items:
            tag, *rest = item
            if tag == "credential":
                creds.append(rest[0])
            elif tag == "trigger":
                triggers.append(rest[0])
            else:
                key, n = rest
                if key == "schema" and "schema" not in kids:
                    del members["schema"]  # written out: the implied constant gives way
                _merge("the tool", members, kids, key, n, self.diags)
        for key, group in (("credentialRequirements", creds), ("triggers", triggers)):
            if not group:
                continue
            list_n = _N([g.v for g in group], _join(group[0].s, group[-1].s), group)
            list_n.k = group[0].s
            _merge("the tool", members, kids, key, list_n, self.diags)
        for key, const in (
            ("execution", EXECUTION),
            ("installScope", INSTALL_SCOPE),
            ("credentialRequirements", []),
        ):
            members.setdefault(key, const)
        root = _N(members, head, kids)
        root.g = braces
        return root


class ForgeSourceMap:
    """JSON Pointer → where in the `.forge` text the construct that produced it was written."""

    def __init__(self, file: str | None, text: str | None, root: _N | None) -> None:
        self._file = file
        self._text = text
        self._root = root

    @property
    def file(self) -> str | None:
        return self._file

    @property
    def text(self) -> str | None:
        return self._text

    @property
    def root(self) -> _N | None:
        """The parsed tree (`dsl_trivia` places comments by it)."""
        return self._root

    def span(self, pointer: str, *, key: bool = False) -> Span | None:
        node = self._root
        if node is None:
            return None
        exact = True
        for token in split(pointer):
            kids = node.kids
            child: _N | None = None
            if isinstance(kids, dict):
                child = kids.get(token)
            elif isinstance(kids, list) and token.isdigit() and int(token) < len(kids):
                child = kids[int(token)]
            if child is None:
                exact = False
                break
            node = child
        pos = node.k if (key and exact and node.k is not None) else node.s
        return Span(self._file, pos[0], pos[1], pos[2], pos[3])


_LOCK = threading.RLock()


_LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "forgec.frontend.dsl_lexer.ForgeLexer",  # resolved in `_parser` (lark is lazy)
    "maybe_placeholders": True,
    # Positions come from the tokens themselves: in tree-less mode lark's
    # `propagate_positions` only wraps every reduction in a call that finds no tree to mark.
    "propagate_positions": False,
}


def cache_key(grammar: str) -> str:
    """What the shipped tables depend on: the grammar, the options and lark's version."""
    import hashlib

    import lark

    text = grammar + repr(sorted(_LARK_OPTIONS.items())) + lark.__version__
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def _parser() -> tuple[Any, _Builder]:
    """The one LALR parser of the process, loaded from the shipped table cache.

    lark's own `cache=` keys the file on its path too, so a copy installed elsewhere would always
    look stale; `Lark.save`/`Lark.load` with our own key (first line of the file) does not.
    A missing, stale or unreadable cache is rebuilt and, where the directory is writable,
    rewritten.
    """
    from lark import Lark

    builder = _Builder()
    grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
    key = cache_key(grammar).encode("ascii")
    try:
        with CACHE_PATH.open("rb") as f:
            if f.readline().rstrip(b"\n") == key:
                # `Lark.load` takes no options; `_load` is what it calls, with the transformer
                loaded = Lark.__new__(Lark)._load(f, transformer=builder)
                return loaded, builder
    except Exception:
        pass
    from forgec.frontend.dsl_lexer import ForgeLexer

    options = {**_LARK_OPTIONS, "lexer": ForgeLexer}
    parser = Lark(grammar, transformer=builder, **options)
    try:
        with CACHE_PATH.open("wb") as f:
            f.write(key + b"\n")
            parser.save(f)
    except OSError:
        pass  # a read-only install: build per process, still correct
    return parser, builder


def parser() -> Any:
    """The process-wide lark parser (tree-less: `parse` returns the builder's result)."""
    return _parser()[0]


def _span(file: str | None, pos: Pos) -> Span:
    return Span(file, pos[0], pos[1], pos[2], pos[3])


def _depth(value: Any) -> int:
    """JSON nesting depth (the top-level object is level 1), iteratively."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest


def parse_forge(text: str, *, path: str | None = None) -> tuple[_N | None, list[Diagnostic]]:
    """Parse `.forge` text; on syntax errors, None and a diagnostic for each one recovery reaches."""
    from lark.exceptions import UnexpectedInput

    lark_parser, builder = _parser()
    with _LOCK:
        builder.diags = []
        try:
            root = lark_parser.parse(text)
        except UnexpectedInput as exc:
            from forgec.frontend.dsl_errors import syntax_diagnostic
            from forgec.frontend.dsl_recover import more_syntax_errors

            first = syntax_diagnostic(exc, text, path, lark_parser)
            more = more_syntax_errors(exc, text, path, lark_parser)
            builder.diags = []
            found: list[Diagnostic] = []
            for d in (first, *more):  # one open block is one mistake, however often met
                if not any(d.message == f.message and d.span == f.span for f in found):
                    found.append(d)
            # in the order of the text: an open block is reported at its opener, which may
            # come before where the parser noticed
            found.sort(key=lambda d: (d.span.line, d.span.column) if d.span else (0, 0))
            return None, found
        problems = builder.diags
        builder.diags = []
    return root, [make(STRUCTURE, "", msg, span=_span(path, pos)) for pos, msg in problems]


def load_forge(text: str | bytes, *, path: str | None = None) -> Loaded:
    """`.forge` source → `Loaded(form="forge")`: the compiled manifest JSON and a source map."""
    import orjson

    # Size first, before any decoding or parsing (SPEC §16): a huge text costs nothing.
    if isinstance(text, str):
        size = len(text)  # a lower bound on its UTF-8 bytes; exact below when it matters
        if size <= MAX_FORGE_BYTES:
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError as exc:
                # a Python str with a lone surrogate: no UTF-8 file can hold it
                line = text.count("\n", 0, exc.start) + 1
                column = exc.start - (text.rfind("\n", 0, exc.start) + 1) + 1
                return _failed(
                    path,
                    None,
                    f"the text is not valid UTF-8: character {exc.start + 1} (line {line}, "
                    f"column {column}) is a lone surrogate",
                )
    else:
        size = len(text)
    if size > MAX_FORGE_BYTES:
        d = make(
            "FORGE_MANIFEST_TOO_LARGE",
            "",
            f"the .forge text is {size:,} bytes or more; the limit is {MAX_FORGE_BYTES:,} bytes "
            "(256 KiB), checked before parsing",
            hint="split the tool, or move long texts out of it",
            span=Span(path, 1, 1, 1, 1),
        )
        return Loaded(None, ForgeSourceMap(path, None, None), [d], "forge")
    if isinstance(text, bytes):
        if text.startswith(b"\xef\xbb\xbf"):
            return _failed(path, None, "the file starts with a UTF-8 byte order mark; remove it")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _failed(path, None, f"the file is not valid UTF-8 (byte {exc.start})")
    if text.startswith("\ufeff"):
        return _failed(path, text, "the file starts with a byte order mark; remove it")
    root, diagnostics = parse_forge(text, path=path)
    if root is None:
        return Loaded(None, ForgeSourceMap(path, text, None), diagnostics, "forge")
    source_map = ForgeSourceMap(path, text, root)
    value = root.v
    try:
        size = len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):  # unreachable: numbers are range-checked
        size = 0
    if size > MAX_BYTES:
        d = make(
            "FORGE_MANIFEST_TOO_LARGE",
            "",
            f"the compiled manifest is {size} bytes of compact JSON; the limit is {MAX_BYTES}",
            span=_span(path, root.s),
        )
        return Loaded(None, source_map, [d], "forge")
    if _depth(value) > MAX_DEPTH:
        diagnostics.append(
            make(
                STRUCTURE,
                "",
                f"the manifest nests deeper than {MAX_DEPTH} levels",
                span=_span(path, root.s),
            )
        )
        return Loaded(None, source_map, diagnostics, "forge")
    return Loaded(value, source_map, diagnostics, "forge")


def _failed(path: str | None, text: str | None, message: str) -> Loaded:
    d = make(STRUCTURE, "", message, span=Span(path, 1, 1, 1, 2))
    return Loaded(None, ForgeSourceMap(path, text, None), [d], "forge")
