"""Syntax errors of `.forge` text, said in words.

lark reports a syntax error as the parser state, the unexpected token and the set of terminals
it would have accepted. This module turns that into one `FORGE_MANIFEST_STRUCTURE` diagnostic:
the accepted terminals named as a person would ("a value", "`->`", "a name"), what came before,
and a span under the offending token. Common mistakes are recognised by lark's `match_examples`
(the error is matched to the parser state of a known bad snippet) and get a targeted message.
"""

from __future__ import annotations

import re
from typing import Any

from forgec.ir.diagnostics import Diagnostic, make
from forgec.ir.span import Span

_WORDS = {
    "IDENT": "a name",
    "STRING": "a string",
    "TSTRING": 'a multi-line string (`"""`)',
    "NUMBER": "a number",
    "REF": "a reference like `$input.days`",
    "CREDENTIAL": "`$credential(id)`",
    "$END": "the end of the file",
}
_VALUE_START = {
    "STRING",
    "TSTRING",
    "NUMBER",
    "TRUE",
    "FALSE",
    "NULL",
    "REF",
    "CREDENTIAL",
    "LBRACE",
    "LSQB",
}
_NAME_START = {"IDENT", "STRING"}

# Known mistakes, each a list of snippets that fail at the same parser state as the mistake.
MISTAKES: dict[str, list[str]] = {
    "to call a capability write `call` before its name: `x = call tasks.list {...}` "
    "(and `x = llm summarize {...}` for a model step)": [
        "tool t { flow { a: x = tasks.list {} } }",
        "tool t { flow { a: x = notes.create {title: 1} -> b } }",
    ],
    "a node goes on to the next one with `-> id`, not `next id`": [
        "tool t { flow { a: call tasks.list {} next b } }",
        "tool t { flow { a: x = 1 next b } }",
        "tool t { flow { a: x = 1 next: b } }",
    ],
    "`=` is not a comparison: write `==` (or `!=`, `<`, `<=`, `>`, `>=`, `contains`)": [
        "tool t { flow { a: if $x = 1 then b else c } }",
    ],
    'header fields take no colon: write `title "Weekly review"`, `version 1`': [
        'tool t { title: "x" }',
        "tool t { version: 1 }",
        'tool t { description: "x" }',
        'tool t { created: "x" }',
        "tool t { parent: null }",
    ],
    "object members are written `key: value`, separated by commas": [
        "tool t { input {a = 1} }",
        "tool t { flow { a: x = {a = 1} } }",
    ],
    "separate the members of an object (and the items of a list) with commas": [
        "tool t { input {a: 1 b: 2} }",
        'tool t { input {a: "x" b: 2} }',
        "tool t { input [1 2] }",
        'tool t { input ["a" "b"] }',
    ],
    "each node starts with its id and a colon, e.g. `fetch: x = call tasks.list {...}`": [
        "tool t { flow { call tasks.list {} } }",
        "tool t { flow { x = call tasks.list {} } }",
        "tool t { flow { return 1 } }",
        "tool t { flow { if $x then a else b } }",
    ],
    "after the condition write `then NODE else NODE`": [
        "tool t { flow { a: if $x b else c } }",
        "tool t { flow { a: if $x == 1 b else c } }",
        "tool t { flow { a: if $x == 1 { } } }",
    ],
    "`else` names a node; put a second test in its own `if` node": [
        "tool t { flow { a: if $x then b else if $y then c else d } }",
    ],
    "a capability step takes its input after the name, e.g. `call tasks.list {}`": [
        "tool t { flow { a: call tasks.list } }",
        "tool t { flow { a: call tasks.list -> b } }",
        "tool t { flow { a: x = call tasks.list -> b } }",
    ],
}


_EXAMPLE_STATES: list[tuple[str, int, frozenset[str], str, str]] | None = None


def _example_states(parser: Any) -> list[tuple[str, int, frozenset[str], str, str]]:
    """Where each known mistake leaves the parser: (label, state, accepted, token type, text)."""
    global _EXAMPLE_STATES
    if _EXAMPLE_STATES is None:
        from lark.exceptions import UnexpectedInput

        found = []
        for label, snippets in MISTAKES.items():
            for snippet in snippets:
                try:
                    parser.parse(snippet)
                except UnexpectedInput as ut:
                    tok = getattr(ut, "token", None)
                    found.append(
                        (
                            label,
                            ut.state.position if ut.state is not None else -1,
                            frozenset(getattr(ut, "accepts", None) or ()),
                            getattr(tok, "type", ""),
                            str(tok) if tok is not None else "",
                        )
                    )
        _EXAMPLE_STATES = found
    return _EXAMPLE_STATES


def match_mistake(exc: Any, parser: Any) -> str | None:
    """lark's `match_examples`, but matching the parser state alone, not the stack depth: the
    same mistake inside `flow entry a max 9 {` and inside `flow {` is the same mistake."""
    state = getattr(exc, "state", None)
    if state is None:
        return None
    tok = getattr(exc, "token", None)
    accepts = frozenset(getattr(exc, "accepts", None) or ())
    by_type = None
    fallback = None
    for label, position, ex_accepts, tok_type, tok_text in _example_states(parser):
        if position != state.position or (accepts and ex_accepts and accepts != ex_accepts):
            continue
        if tok is not None and tok.type == tok_type and str(tok) == tok_text:
            return label
        if tok is not None and tok.type == tok_type and by_type is None:
            by_type = label
        fallback = fallback or label
    return by_type or fallback


def _word(name: str, parser: Any) -> str:
    if name in _WORDS:
        return _WORDS[name]
    try:
        term = parser.get_terminal(name)
    except KeyError:
        return name.lower()
    pattern = term.pattern
    if type(pattern).__name__ == "PatternStr":
        return f"`{pattern.value}`"
    return name.lower()


def _describe_expected(expected: set[str], parser: Any) -> str:
    names = set(expected)
    words: list[str] = []
    if names >= _VALUE_START:
        names -= _VALUE_START
        words.append("a value")
    elif names >= _NAME_START:
        names -= _NAME_START
        words.append("a name")
    words.extend(sorted(_word(n, parser) for n in names if not n.startswith("__IGNORE")))
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    if len(words) > 8:
        return ", ".join(words[:8]) + " or another statement"
    return ", ".join(words[:-1]) + " or " + words[-1]


def _shown(token: Any) -> str:
    if token.type == "$END":
        return "the end of the file"
    text = str(token)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"`{text}`"


def syntax_diagnostic(
    exc: Any, text: str, path: str | None, parser: Any, *, since: int = 0
) -> Diagnostic:
    """One diagnostic for a lark `UnexpectedInput`, with a span under the offending input.
    SINCE is where the parser started reading for this error (recovery resumes mid-text)."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    unclosed = unclosed_diagnostic(exc, text, path, since=since)
    if unclosed is not None:
        return unclosed
    label = None
    if isinstance(exc, UnexpectedCharacters):
        at = exc.pos_in_stream or 0
        if at < len(text) and text[at] == "'":
            label = "strings are written in double quotes"
    else:
        label = match_mistake(exc, parser)
    if isinstance(exc, UnexpectedCharacters):
        line, col = exc.line, exc.column
        at = exc.pos_in_stream or 0
        char = text[at] if at < len(text) else ""
        if char == '"':
            what = "this string is not closed on its line"
            label = (
                label
                or 'a string ends on the line it starts; use `"""` for text over several lines'
            )
        elif char == "\n" or not char:
            what = "unexpected end of line"
        else:
            what = f"unexpected character `{char}`"
        span = Span(path, line, col, line, col + 1)
    elif isinstance(exc, UnexpectedToken):
        tok = exc.token
        expected = _describe_expected(set(exc.accepts or exc.expected), parser)
        prev = _previous(exc)
        what = f"expected {expected}" + (f" after {prev}" if prev else "")
        what += f", found {_shown(tok)}"
        if tok.type == "$END" or not getattr(tok, "line", None):
            span = _end_span(text, path)
        else:
            span = Span(
                path,
                tok.line,
                tok.column,
                tok.end_line or tok.line,
                tok.end_column or tok.column + 1,
            )
    elif isinstance(exc, UnexpectedEOF):
        what = f"the file ends early; expected {_describe_expected(set(exc.expected), parser)}"
        span = _end_span(text, path)
    else:  # pragma: no cover - lark has no other kind
        what = str(exc).splitlines()[0]
        span = _end_span(text, path)
    return make(
        "FORGE_MANIFEST_STRUCTURE",
        "",
        f"syntax error: {what}",
        span=span,
        hint=label,
    )


def _previous(exc: Any) -> str | None:
    state: Any = getattr(exc, "state", None)
    values = getattr(state, "value_stack", None)
    if not values:
        return None
    last = values[-1]
    if hasattr(last, "type"):  # a token
        return _shown(last)
    value = getattr(last, "v", None)  # a value the builder already made
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        shown = str(value)
        return f"`{shown if len(shown) <= 30 else shown[:27] + '...'}`"
    return None


def _end_span(text: str, path: str | None) -> Span:
    lines = text.split("\n")
    line = len(lines)
    col = len(lines[-1]) + 1
    return Span(path, line, col, line, col + 1)


# ---- a block left open ------------------------------------------------------------------------

_BRACKETS = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""|"(?:[^"\\\n]|\\[^\n])*"|#[^\n]*|([{}\[\]])'
)
_PAIRS = {"}": "{", "]": "["}
_CLOSER = {"{": "}", "[": "]"}


def bracket_offsets(text: str, start: int = 0) -> Any:
    """(offset, bracket) of each `{`, `}`, `[`, `]` from START, strings and comments skipped."""
    for m in _BRACKETS.finditer(text, start):
        if m.group(1) is not None:
            yield m.start(1), m.group(1)


def _indent_of(text: str, offset: int) -> tuple[int, bool]:
    """The indentation of OFFSET's line, and whether OFFSET is the first thing on it."""
    start = text.rfind("\n", 0, offset) + 1
    head = text[start:offset]
    line = text[start:]
    indent = len(line) - len(line.lstrip(" \t"))
    return indent, not head.strip(" \t")


def _open_block(text: str, error_at: int, since: int = 0) -> tuple[int, int | None] | None:
    """The bracket most likely left open, as (its offset, the offset of the closer that
    indentation says closes an outer block instead), or None when the brackets balance.

    Only a bracket opened where the parser read for this error (from SINCE to ERROR_AT) can be
    the cause: one opened after the error is another mistake (reported when reached), and one
    before SINCE was already dealt with by the recovery that resumed there.

    Brackets are matched as written (strings and comments skipped). When more are opened than
    closed, the one left open is read off the indentation: the first closer that starts its
    line at another indentation than its opener's line closes an outer block, so its opener is
    the one never closed. Without such a closer it is the innermost bracket still open where
    the parser stopped.
    """
    stack: list[int] = []
    mismatch: tuple[int, int] | None = None
    open_at_error: list[int] | None = None
    other_kind: int | None = None
    balance = 0
    for m in _BRACKETS.finditer(text):
        ch = m.group(1)
        if ch is None:
            continue
        at = m.start(1)
        if open_at_error is None and at >= error_at:
            open_at_error = list(stack)
        if ch in _CLOSER:
            stack.append(at)
            balance += 1
            continue
        balance -= 1
        own = next((o for o in reversed(stack) if text[o] == _PAIRS[ch]), None)
        if own is None:
            return None  # a stray closer: some other mistake
        while stack[-1] != own:  # `[1, 2 }`: the openers of the other kind were never closed
            other = stack.pop()
            balance -= 1
            if other_kind is None and since <= other < error_at:
                other_kind = other
        opener = stack.pop()
        if mismatch is None and since <= opener < error_at and "\n" in text[opener:at]:
            closer_indent, first = _indent_of(text, at)
            if first and closer_indent != _indent_of(text, opener)[0]:
                mismatch = (opener, at)
    if other_kind is not None:
        return other_kind, None
    if balance <= 0:
        return None
    line_start = text.rfind("\n", 0, error_at) + 1
    if open_at_error and open_at_error[-1] >= max(since, line_start):
        # the innermost bracket is open on the very line the parser stopped at (`{a: 1 -> b`):
        # that one, even when an earlier block is also left open (reported on its own)
        return open_at_error[-1], None
    if mismatch is not None:
        return mismatch
    still = [o for o in (open_at_error if open_at_error is not None else stack) if o >= since]
    return (still[-1], None) if still else None


def _closers_would_help(exc: Any) -> bool:
    from lark import Token

    from forgec.frontend.dsl_recover import _copy, _insert_closers

    ip = getattr(exc, "interactive_parser", None)
    if ip is None:
        return False
    try:
        return _insert_closers(_copy(ip), exc, Token) is not None
    except Exception:
        return False


def unclosed_diagnostic(
    exc: Any, text: str, path: str | None, *, since: int = 0
) -> Diagnostic | None:
    """When the error is a block left open (the end of the file, or a token that a `}` or `]`
    would let through, with more brackets opened than closed): the diagnostic at the bracket
    that was never closed, not at where the parser noticed."""
    from lark.exceptions import UnexpectedEOF, UnexpectedToken

    if isinstance(exc, UnexpectedToken):
        at_end = exc.token.type == "$END"
        error_at = len(text) if at_end else (exc.token.start_pos or 0)
        if not at_end and not _closers_would_help(exc):
            return None
    elif isinstance(exc, UnexpectedEOF):
        error_at = len(text)
    else:
        return None
    found = _open_block(text, error_at, since)
    if found is None:
        return None
    opener, closer = found
    line = text.count("\n", 0, opener) + 1
    col = opener - (text.rfind("\n", 0, opener) + 1) + 1
    bracket = text[opener]
    hint = f"add `{_CLOSER[bracket]}` where this block ends"
    if closer is not None:
        closer_line = text.count("\n", 0, closer) + 1
        hint += f"; the `{text[closer]}` on line {closer_line} is indented to close an outer block"
    return make(
        "FORGE_MANIFEST_STRUCTURE",
        "",
        f"syntax error: this `{bracket}` is never closed",
        span=Span(path, line, col, line, col + 1),
        hint=hint,
    )
