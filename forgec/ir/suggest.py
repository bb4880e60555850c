"""The one "did you mean" of forgec: the closest known name to a misspelt one.

Every hint that proposes a name (unknown fields, node types, ops, capabilities, edges,
variables, state fields, schema keywords) asks here, so they all match the same way: difflib's
ratio at 0.6, then a case-insensitive exact match (`Type` → `type`). Words longer than any
known name are not compared at all: difflib is quadratic and the input is hostile.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_WORD = 200  # longer words get no suggestion


def closest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The known name nearest to `word`, or None when nothing is near enough."""
    if not isinstance(word, str) or not word or len(word) > MAX_WORD:
        return None
    known = sorted({c for c in choices if isinstance(c, str)})
    if not known or len(word) > max(len(c) for c in known) * 2 + 8:
        return None  # nothing we know is that long; spare difflib the work
    import difflib  # only once a name is unknown

    found = difflib.get_close_matches(word, known, n=1, cutoff=cutoff)
    if found:
        return found[0]
    if len(word) > 1:
        lowered = {c.lower(): c for c in known}
        return lowered.get(word.lower())
    return None


def suggest(
    word: str, choices: Iterable[str], prefix: str = "", *, cutoff: float = 0.6
) -> str | None:
    """``did you mean `X`?`` for the closest known name, or None."""
    found = closest(word, choices, cutoff=cutoff)
    return f"did you mean `{prefix}{found}`?" if found is not None else None
