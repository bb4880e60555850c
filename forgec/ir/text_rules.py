"""Which characters a tool's text may not hold, and how to show one (SPEC §14).

One table for every consumer: the checker refuses these characters in `title`, `ui`, credential
`purpose`, `description` and `fail` messages, and every text forgec writes for a person prints
any that still reach it escaped (`ESCAPED_ON_OUTPUT`: the terminal renderers through
`forgec.render.safe`, `.forge` string literals through the formatter, JSON text through
`forgec.runtime.jsontext`). Plain data and `re` only, so the runtime and the renderers may
import it.

Unicode category Cc is exactly U+0000–U+001F and U+007F–U+009F (the category is closed: no
future Unicode version adds to it), so the class is written as ranges, not looked up per
character.
"""

from __future__ import annotations

import re

# (first, last) code points, inclusive.
CONTROL_RANGES: tuple[tuple[int, int], ...] = ((0x00, 0x1F), (0x7F, 0x9F))  # category Cc
BIDI_RANGES: tuple[tuple[int, int], ...] = (
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x200E, 0x200F),  # LEFT-TO-RIGHT MARK, RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # embeddings and overrides (LRE RLE PDF LRO RLO)
    (0x2066, 0x2069),  # isolates (LRI RLI FSI PDI)
)
CONTROL_OR_BIDI: tuple[tuple[int, int], ...] = CONTROL_RANGES + BIDI_RANGES

# Not refused in a tool's text, but escaped wherever forgec writes text for a person: the line
# and paragraph separators (some viewers break lines at them) and lone surrogates (a UTF-8
# stream cannot even encode one: printing it would be a traceback).
LINE_SEPARATOR_RANGES: tuple[tuple[int, int], ...] = ((0x2028, 0x2029),)
SURROGATE_RANGES: tuple[tuple[int, int], ...] = ((0xD800, 0xDFFF),)
ESCAPED_ON_OUTPUT: tuple[tuple[int, int], ...] = (
    CONTROL_OR_BIDI + LINE_SEPARATOR_RANGES + SURROGATE_RANGES
)
ESCAPED_ON_OUTPUT_CHARS: frozenset[str] = frozenset(
    chr(c) for lo, hi in ESCAPED_ON_OUTPUT for c in range(lo, hi + 1)
)

# What a description or a fail message may hold of the above: line breaks and tabs.
MULTILINE_ALLOWED = "\n\t"

CONTROL_OR_BIDI_RE = re.compile(
    "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CONTROL_OR_BIDI) + "]"
)


def unsafe_chars(text: str, allow: str = "") -> list[tuple[int, str]]:
    """(offset, character) of each control or bidi character of `text` not in `allow`."""
    if CONTROL_OR_BIDI_RE.search(text) is None:
        return []  # the common case: one C-level scan
    return [
        (m.start(), m.group()) for m in CONTROL_OR_BIDI_RE.finditer(text) if m.group() not in allow
    ]


def escape_char(ch: str) -> str:
    """How a renderer shows the character: `\\x1b` below U+0100, else `\\u202e`."""
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def escape_unsafe(text: str, allow: str = "") -> str:
    """`text` with every control or bidi character not in `allow` written as its escape."""
    if CONTROL_OR_BIDI_RE.search(text) is None:
        return text
    return CONTROL_OR_BIDI_RE.sub(
        lambda m: m.group() if m.group() in allow else escape_char(m.group()), text
    )


def unsafe_problem(text: str, allow: str = "") -> str | None:
    """A message fragment naming the first unsafe character, or None when there is none."""
    found = unsafe_chars(text, allow)
    if not found:
        return None
    offset, ch = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    kind = (
        "a bidirectional control"
        if any(lo <= ord(ch) <= hi for lo, hi in BIDI_RANGES)
        else "a control character"
    )
    return f"holds {kind}, `{escape_char(ch)}` at character {offset + 1}{more}"
