"""Safe text: the one function every text renderer sends tool-supplied text through.

A tool's text (its title, a run's output, a host's answer, a bad file's bytes) is data. On a
terminal a raw ESC starts an escape sequence (`\\x1b[8m` hides what follows, `\\x1b[2K` erases a
line), a CR rewrites the line, a bidi override (U+202E) reverses what a person reads, and a raw
newline inside a value forges a line of the consent card. `safe_text` prints every such
character escaped, as a hex escape (`\\x1b`, `\\x0d`, `\\u202e`), so the person sees that
it was there and nothing acts on it.

Neutralised: every Unicode Cc character (C0, DEL, C1) and the bidi controls of SPEC §14
(U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), plus the line and paragraph
separators U+2028/U+2029 (some viewers break lines at them) and lone surrogates (a UTF-8
stream cannot even encode them: printing one would be a traceback). A renderer that lays out lines
itself may keep "\\n" (`keep_newlines=True`), and only where it deliberately splits a value
into lines (a description, a JSON body); inside a single value (a title, a label, a message)
a newline is escaped too.

The function is idempotent (its output holds none of these characters) and costs one regex
search when the text is clean.
"""

from __future__ import annotations

import functools
import re

from forgec.ir.text_rules import BIDI_RANGES, ESCAPED_ON_OUTPUT_CHARS, escape_char

__all__ = ["BIDI_CONTROLS", "UNSAFE_CHARACTERS", "escape_char", "is_safe", "safe_text"]


def _chars(ranges: tuple[tuple[int, int], ...]) -> frozenset[str]:
    return frozenset(chr(c) for lo, hi in ranges for c in range(lo, hi + 1))


# The one table (`forgec.ir.text_rules.ESCAPED_ON_OUTPUT`): Cc, SPEC §14's bidi controls, and
# the line separators and lone surrogates that only matter on output.
BIDI_CONTROLS: frozenset[str] = _chars(BIDI_RANGES)
UNSAFE_CHARACTERS: frozenset[str] = ESCAPED_ON_OUTPUT_CHARS


def _char_class(chars: frozenset[str]) -> str:
    """A regex class of `chars`, written as ranges of consecutive code points."""
    codes = sorted(map(ord, chars))
    ranges: list[list[int]] = []
    for c in codes:
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]"


@functools.cache
def _unsafe(keep_newlines: bool) -> re.Pattern[str]:
    # compiled on first use (≈ 0.5 ms each, a class of 2,100 characters): a clean check
    # prints no tool text, and most runs of the command line need one of the two at most
    chars = UNSAFE_CHARACTERS - {"\n"} if keep_newlines else UNSAFE_CHARACTERS
    return re.compile(_char_class(chars))


def _escape_match(m: re.Match[str]) -> str:
    return escape_char(m.group())


def safe_text(text: object, *, keep_newlines: bool = False) -> str:
    """`text` (made a `str` if it is not one) with every unsafe character escaped (module doc)."""
    s = text if isinstance(text, str) else str(text)
    pattern = _unsafe(keep_newlines)
    if pattern.search(s) is None:
        return s
    return pattern.sub(_escape_match, s)


def is_safe(text: str, *, keep_newlines: bool = False) -> bool:
    """True when `safe_text` would return `text` unchanged."""
    return _unsafe(keep_newlines).search(text) is None
