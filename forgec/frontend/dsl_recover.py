"""Syntax errors after the first: recover the LALR parser and keep reading.

Only runs once a parse has already failed, so a clean parse pays nothing. From the parser
state at the error it tries, in order:

1. **Insert the closers that were forgotten** — a `}` or `]` (up to three) after which the
   offending token is accepted: `{title: "x" -> next` reads as `{title: "x"} -> next`.
2. **Resynchronise at a later line** — drop what is left of the broken construct and pop the
   parser's stack until the first three tokens (else two) of one of the next lines are accepted
   (a new node, a new header field): the broken line is given up, the rest of the file is read.

A further error is reported only on a later line than the last one reported, so one mistake
does not fan out into a cascade, and an unexpected end of file met while recovering is not
reported (it is the recovery's own doing far more often than the author's); at most
`MAX_ERRORS` are listed. The tree built during
recovery is thrown away: a file with a syntax error has no manifest, only diagnostics.
"""

from __future__ import annotations

from itertools import accumulate, islice
from typing import Any

from forgec.ir.diagnostics import Diagnostic
from forgec.ir.rules import MAX_JSON_DEPTH

MAX_ERRORS = 20
_CLOSERS = (("RBRACE", "}"), ("RSQB", "]"))
_LINES_AHEAD = 6


def more_syntax_errors(exc: Any, text: str, path: str | None, parser: Any) -> list[Diagnostic]:
    """Diagnostics for the syntax errors after EXC (the first), as far as recovery reaches."""
    from lark import Token
    from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

    from forgec.frontend.dsl_errors import syntax_diagnostic, unclosed_diagnostic

    found: list[Diagnostic] = []
    reported_line = exc.line
    error = exc
    resumed_at = -1
    skipping: _Skipping | None = None
    for _ in range(MAX_ERRORS * 4):
        ip = getattr(error, "interactive_parser", None)
        if ip is None or len(found) >= MAX_ERRORS - 1:
            break
        if skipping is None:
            skipping = _Skipping(ip.parser_state.lexer)
            ip.parser_state.lexer = skipping
        if isinstance(error, UnexpectedToken):
            if error.token.type == "$END":
                break
            at = error.token.start_pos
        elif isinstance(error, UnexpectedCharacters):
            at = error.pos_in_stream
        else:
            break
        resume = _insert_closers(ip, error, Token) if isinstance(error, UnexpectedToken) else None
        if resume is None:
            closer = _construct_end(text, at)
            resume = _resync(ip, text, at)
            if resume is not None and closer is not None:
                # the given-up line opened a block (`a: fro t in $xs {`): its body is read on,
                # its closer's line (`} -> next`) is given up with it, or that `}` would close
                # the enclosing block early and fan out into errors that are not the author's
                line_end = text.find("\n", closer)
                skipping.ranges.append((closer, len(text) if line_end == -1 else line_end))
        if resume is None or resume <= resumed_at:
            break
        resumed_at = resume
        _seek(ip, text, resume)
        try:
            ip.resume_parse()
            break  # read to the end
        except UnexpectedInput as next_error:
            at_end = isinstance(next_error, UnexpectedToken) and next_error.token.type == "$END"
            if at_end:
                # the end of the file: the author's mistake only when a bracket opened where
                # the parser read since resuming is never closed in the text (else it is
                # recovery's own doing: a skipped line's bracket, a popped block). One opened
                # before an earlier error counts too when no reported line holds it.
                reported = {exc.line, *(d.span.line for d in found if d.span)}
                for since in (resume, 0):
                    unclosed = unclosed_diagnostic(next_error, text, path, since=since)
                    if unclosed and unclosed.span and unclosed.span.line not in reported:
                        found.append(unclosed)
                        break
                break
            if next_error.line > reported_line:
                found.append(syntax_diagnostic(next_error, text, path, parser, since=resume))
                reported_line = next_error.line
            error = next_error
        except Exception:  # a builder callback that cannot cope with a recovered state
            break
    return found


class _Skipping:
    """The parser's lexer, leaving out the tokens in `ranges` (text the recovery gave up)."""

    def __init__(self, inner: Any, ranges: list[tuple[int, int]] | None = None) -> None:
        self.inner = inner
        self.ranges: list[tuple[int, int]] = [] if ranges is None else ranges

    def __copy__(self) -> _Skipping:  # a trial parser's lexer: its own position, same ranges
        from copy import copy

        return _Skipping(copy(self.inner), self.ranges)

    def __getattr__(self, name: str) -> Any:  # the lexer's own state, token class...
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def lex(self, parser_state: Any) -> Any:
        for token in self.inner.lex(parser_state):
            at = token.start_pos
            if not any(start <= at < end for start, end in self.ranges):
                yield token


def _seek(ip: Any, text: str, offset: int) -> None:
    """Make the lexer start again at OFFSET (dsl_lexer.ForgeLexer reads the line counter)."""
    counter = ip.parser_state.lexer.state.line_ctr
    counter.char_pos = offset
    counter.line = text.count("\n", 0, offset) + 1
    counter.line_start_pos = text.rfind("\n", 0, offset) + 1
    counter.column = offset - counter.line_start_pos + 1


def _insert_closers(ip: Any, error: Any, token_cls: Any) -> int | None:
    """Feed up to three `}`/`]` if the offending token is accepted after them."""
    bad = error.token.type
    for depth in range(1, 4):
        for combo in _closer_sequences(depth):
            trial = _copy(ip)
            try:
                for kind, value in combo:
                    trial.feed_token(token_cls.new_borrow_pos(kind, value, error.token))
            except Exception:
                continue
            if bad in trial.choices():
                for kind, value in combo:
                    ip.feed_token(token_cls.new_borrow_pos(kind, value, error.token))
                return int(error.token.start_pos)
    return None


def _closer_sequences(depth: int) -> list[list[tuple[str, str]]]:
    seqs: list[list[tuple[str, str]]] = [[]]
    for _ in range(depth):
        seqs = [[*s, c] for s in seqs for c in _CLOSERS]
    return seqs


def _resync(ip: Any, text: str, at: int) -> int | None:
    """Pop the stack until one of the next lines' first three tokens are accepted.

    A depth that keeps the blocks the text still has open is tried first: popping out of a
    loop body whose `}` is still ahead would let that `}` close the flow early, and every
    later line would be read at the wrong level (errors made up, real ones swallowed)."""
    state = ip.parser_state
    starts = list(islice(_next_line_starts(text, at), _LINES_AHEAD))
    # open[k]: the blocks held open by the first k values (one pass, not one per depth tried:
    # a deeply nested line would make the search quadratic in its depth)
    open_ = list(accumulate((_is_opener(v) for v in state.value_stack), initial=0))
    for consistent in (True, False):
        for line_start in starts:
            want = open_[-1] + min(0, _net_brackets(text, at, line_start))
            # three tokens tell a node from an object key; two, a broken node
            for tokens in (3, 2):
                for depth in range(len(state.state_stack), 0, -1):
                    held = open_[min(depth - 1, len(open_) - 1)]
                    if held > MAX_JSON_DEPTH or (consistent and held != want):
                        continue  # deeper than a document may nest: never the author's level
                    trial = _copy(ip, depth)
                    if _accepts_line(trial, text, line_start, tokens):
                        _pop_to(state, depth)
                        return line_start
    return None


def _is_opener(value: Any) -> int:
    """1 for a `{` / `[` the parser holds open (on its value stack until closed), else 0."""
    return 1 if getattr(value, "type", None) in ("LBRACE", "LSQB") else 0


def _net_brackets(text: str, start: int, end: int) -> int:
    """Brackets opened minus closed in text[start:end], the lowest the count falls to (a
    closer of a block opened before START counts; brackets opened and left open do not: the
    given-up line's block goes with it)."""
    from forgec.frontend.dsl_errors import bracket_offsets

    net = low = 0
    for offset, bracket in bracket_offsets(text, start):
        if offset >= end:
            break
        net += 1 if bracket in "{[" else -1
        low = min(low, net)
    return low


def _copy(ip: Any, depth: int | None = None) -> Any:
    """A trial parser, its stack popped to DEPTH (None: the whole stack), copying only what it
    keeps. Values are shared, not copied (a trial's tree is thrown away): none are handed to
    lark's copy, which deep-copies them before lark 1.2. Copying the whole stack for every
    depth tried was quadratic in a deeply nested line."""
    state = ip.parser_state
    states, values = state.state_stack, state.value_stack
    state.state_stack = states if depth is None else states[:depth]
    state.value_stack = []
    try:
        trial = ip.copy()
    finally:
        state.state_stack, state.value_stack = states, values
    trial.parser_state.value_stack = values[:] if depth is None else values[: depth - 1]
    return trial


def _pop_to(state: Any, depth: int) -> None:
    del state.state_stack[depth:]
    del state.value_stack[depth - 1 :]


def _accepts_line(trial: Any, text: str, offset: int, tokens: int) -> bool:
    """Whether the parser takes the first TOKENS tokens at OFFSET (lexed for its own states)."""
    _seek(trial, text, offset)
    lexer = trial.parser_state.lexer
    try:
        for token in islice(lexer.lex(trial.parser_state), tokens):
            trial.feed_token(token)
    except Exception:
        return False
    return True


def _next_line_starts(text: str, at: int) -> Any:
    """AT itself when it starts its line, then the first non-blank character of each later line."""
    line_start = text.rfind("\n", 0, at) + 1
    if not text[line_start:at].strip(" \t"):
        yield at
    pos = text.find("\n", at)
    while pos != -1:
        start = pos + 1
        stripped = len(text) - len(text[start:].lstrip(" \t"))
        if stripped < len(text) and text[stripped] not in "\n#":
            yield stripped
        pos = text.find("\n", start)


def _construct_end(text: str, at: int) -> int | None:
    """The offset of the closer of a bracket that AT's line opens and leaves open, or None
    when the line's brackets balance, or the text never closes it with its own kind."""
    from forgec.frontend.dsl_errors import bracket_offsets

    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line_end = len(text) if line_end == -1 else line_end
    stack: list[str] = []
    for offset, bracket in bracket_offsets(text, line_start):
        if offset >= line_end and not stack:
            return None
        if bracket in "{[":
            stack.append(bracket)
            continue
        if not stack or stack.pop() != {"}": "{", "]": "["}[bracket]:
            return None
        if offset >= line_end and not stack:
            return offset
    return None
