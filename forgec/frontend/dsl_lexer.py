"""The `.forge` lexer: one regex for every terminal of `forgec/grammar/forge.lark`.

Imported only when a `.forge` file is parsed (it imports lark). Keep `_MASTER` in step with the
grammar's terminals; the round-trip and example tests fail if the two disagree.
"""

from __future__ import annotations

import re
from typing import Any

from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer, Token


class ForgeLexer(Lexer):
    """One-regex lexer for the grammar's terminals, contextual like lark's own.

    lark's contextual lexer tries each terminal of the parser state in turn; here one compiled
    alternation finds the next token, and a word is a keyword only when the parser state accepts
    that keyword (else it is a name), which is exactly the contextual rule. About twice as fast,
    which is what keeps a whole check within 1.5x of a bare parse.
    """

    __future_interface__ = 1

    _MASTER = re.compile(
        r"""(?P<WS>[ \t\r\n\f]+)
        |(?P<COMMENT>\#[^\n]*)
        |(?P<TSTRING>\"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*\"\"\")
        |(?P<STRING>"(?:[^"\\\n]|\\[^\n])*")
        |(?P<CREDENTIAL>\$credential\([A-Za-z0-9._-]+\))
        |(?P<REF>\$[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*)
        |(?P<NUMBER>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
        |(?P<WORD>[A-Za-z_][A-Za-z0-9_]*(?:[.-][A-Za-z0-9_]+)*)
        |(?P<PUNCT>->|==|!=|<=|>=|[{}\[\]:,=<>])""",
        re.VERBOSE,
    )

    def __init__(self, lexer_conf: Any) -> None:
        self.words: dict[str, str] = {}
        self.puncts: dict[str, str] = {}
        for term in lexer_conf.terminals:
            pattern = term.pattern
            if type(pattern).__name__ != "PatternStr":
                continue
            if re.fullmatch(r"[A-Za-z_]\w*", pattern.value):
                self.words[pattern.value] = term.name
            else:
                self.puncts[pattern.value] = term.name
        self.terminals_by_name = {t.name: t for t in lexer_conf.terminals}

    def lex(self, lexer_state: Any, parser_state: Any) -> Any:
        text = lexer_state.text
        text = getattr(text, "text", text)  # lark 1.2+ wraps the input in a TextSlice
        states = parser_state.parse_conf.parse_table.states
        words, puncts = self.words, self.puncts
        match = self._MASTER.match
        # Where to start: the beginning, or where error recovery (dsl_recover) resumes.
        counter = lexer_state.line_ctr
        pos, line, line_start = counter.char_pos, counter.line, counter.line_start_pos
        end = len(text)
        while pos < end:
            m = match(text, pos)
            if m is None:
                allowed = set(states[parser_state.position])
                raise UnexpectedCharacters(
                    text, pos, line, pos - line_start + 1, allowed=allowed, state=parser_state,
                    terminals_by_name=self.terminals_by_name,
                )  # fmt: skip
            kind = m.lastgroup or ""
            value = m.group()
            start = pos
            pos = m.end()
            if kind == "WS" or kind == "COMMENT":
                nl = value.count("\n")
                if nl:
                    line += nl
                    line_start = start + value.rindex("\n") + 1
                continue
            col = start - line_start + 1
            if kind == "WORD":
                kw = words.get(value)
                kind = kw if kw is not None and kw in states[parser_state.position] else "IDENT"
            elif kind == "PUNCT":
                kind = puncts[value]
            if kind == "TSTRING" and "\n" in value:
                first = line
                line += value.count("\n")
                line_start = start + value.rindex("\n") + 1
                yield Token(kind, value, start, first, col, line, pos - line_start + 1, pos)
                continue
            yield Token(kind, value, start, line, col, line, col + len(value), pos)
