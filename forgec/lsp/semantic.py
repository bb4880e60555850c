"""Semantic tokens of a `.forge` document: what each word is, for the editor's colours.

Read off the lexer's own regex (`dsl_lexer.ForgeLexer._MASTER`), so the editor colours exactly
the tokens the parser reads, and it works on a broken file too (a character no token starts
with is skipped). A word is a keyword when the language has that keyword (the formatter's
`KEYWORDS`, the one list); names are told apart by their neighbours: the name before `:` at the
start of a node line is a node id (declared), a name after `->`, `then`, `else` or `entry` a
node id (used), after `call`, `llm` or `undo` a capability, before `=` a variable written, and
before `:` anywhere else an object key. A multi-line string is one token per line (LSP tokens
do not span lines unless the client says so). Cost: one pass over the text, O(n).
"""

from __future__ import annotations

from typing import Any

from forgec.lsp.positions import LineIndex, Point

TOKEN_TYPES = [
    "keyword",  # 0
    "comment",  # 1
    "string",  # 2
    "number",  # 3
    "variable",  # 4
    "function",  # 5: a node id
    "method",  # 6: a capability or model operation
    "property",  # 7: an object key
    "operator",  # 8
    "macro",  # 9: $credential(id)
]
TOKEN_MODIFIERS = ["declaration", "readonly"]
_T = {name: i for i, name in enumerate(TOKEN_TYPES)}
_DECLARATION = 1
_LITERALS = frozenset(("true", "false", "null"))
_NODE_USE = frozenset(("->", "then", "else", "entry"))
_CAPABILITY = frozenset(("call", "llm", "undo"))


def _lexed(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every token and comment; unknown characters skipped."""
    from forgec.frontend.dsl_lexer import ForgeLexer

    match = ForgeLexer._MASTER.match
    out = []
    pos, end = 0, len(text)
    while pos < end:
        m = match(text, pos)
        if m is None:
            pos += 1
            continue
        kind = m.lastgroup or ""
        if kind != "WS":
            out.append((kind, pos, m.end()))
        pos = m.end()
    return out


def classify(text: str) -> list[tuple[int, int, int, int]]:
    """(start offset, end offset, type, modifiers) of each coloured token, in order."""
    from forgec.frontend.dsl_format import KEYWORDS

    tokens = _lexed(text)
    significant = [t for t in tokens if t[0] != "COMMENT"]
    nxt: dict[int, str] = {}
    prev: dict[int, str] = {}
    for i, (_kind, start, end) in enumerate(significant):
        if i + 1 < len(significant):
            a, b = significant[i + 1][1:]
            nxt[start] = text[a:b]
        if i > 0:
            a, b = significant[i - 1][1:]
            prev[start] = text[a:b]
        del end
    out: list[tuple[int, int, int, int]] = []
    for kind, start, end in tokens:
        word = text[start:end]
        after, before = nxt.get(start, ""), prev.get(start, "")
        if kind == "COMMENT":
            out.append((start, end, _T["comment"], 0))
        elif kind in ("STRING", "TSTRING"):
            key = kind == "STRING" and after == ":" and before in ("{", ",")
            out.append((start, end, _T["property" if key else "string"], 0))
        elif kind == "NUMBER":
            out.append((start, end, _T["number"], 0))
        elif kind == "REF":
            out.append((start, end, _T["variable"], 0))
        elif kind == "CREDENTIAL":
            out.append((start, end, _T["macro"], 0))
        elif kind == "PUNCT":
            if word in ("->", "==", "!=", "<=", ">=", "<", ">", "="):
                out.append((start, end, _T["operator"], 0))
        elif kind == "WORD":
            out.append((start, end, *_word_type(text, start, word, before, after, KEYWORDS)))
    return out


def _word_type(
    text: str, start: int, word: str, before: str, after: str, keywords: Any
) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, start) + 1
    first_on_line = not text[line_start:start].strip()
    if before in _CAPABILITY:
        return _T["method"], 0
    if before in _NODE_USE:
        return _T["function"], 0
    if after == ":" and first_on_line:
        # a node line (`id: ...`) or a member of a multi-line object: a node when the text
        # after the colon starts a node
        rest = text[start + len(word) :].lstrip()[1:].lstrip()
        head = rest.split(None, 1)[0] if rest.split() else ""
        node_kw = head in ("call", "llm", "if", "for", "return", "fail") or (
            "=" in rest.split("\n", 1)[0][:80] and not rest.startswith(("{", "[", '"'))
        )
        if node_kw:
            return _T["function"], _DECLARATION
        return _T["property"], 0
    if after == ":":
        return _T["property"], 0
    if after == "=":
        return _T["variable"], _DECLARATION
    if word in _LITERALS:
        return _T["keyword"], 1 << 1  # readonly
    if word in keywords:
        return _T["keyword"], 0
    return _T["variable"], 0


def encode(text: str, index: LineIndex) -> list[int]:
    """The LSP relative encoding (deltaLine, deltaStart, length, type, modifiers) * n."""
    data: list[int] = []
    last_line = last_col = 0
    for start, end, typ, mods in classify(text):
        for a, b in _line_pieces(text, start, end):
            pa, pb = index.point(a), index.point(b)
            line, col = index.to_client(pa)
            _, col_end = index.to_client(pb)
            length = col_end - col
            if length <= 0:
                continue
            delta_line = line - last_line
            delta_col = col - last_col if delta_line == 0 else col
            data += [delta_line, delta_col, length, typ, mods]
            last_line, last_col = line, col
    return data


def _line_pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    pieces = []
    while True:
        nl = text.find("\n", start, end)
        if nl == -1:
            pieces.append((start, end))
            return pieces
        if nl > start:
            pieces.append((start, nl))
        start = nl + 1


__all__ = ["TOKEN_MODIFIERS", "TOKEN_TYPES", "Point", "classify", "encode"]
