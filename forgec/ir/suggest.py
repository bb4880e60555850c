"""The one "did you mean" of forgec: the closest known name to a misspelt one.

Every hint that proposes a name (unknown fields, node types, ops, capabilities, edges,
variables, state fields, schema keywords) asks here, so they all match the same way: difflib's
ratio at 0.6, then a case-insensitive exact match (`Type` → `type`).

Bounded whatever the input (SPEC §24: suggestions compare a bounded number of candidates). A
hostile manifest holds thousands of near-identical names and thousands of near-misses of them
(`tests/worst_cases.py` `similar_names`: 7–12 s of difflib before these caps). So:

- words longer than `MAX_WORD`, or far longer than every known name, are not compared at all
  (difflib is quadratic in the lengths);
- the known names are prepared once per collection (sorted, indexed by lower-cased spelling and
  by length; cached), so a question costs a few lookups, not a pass over every name;
- difflib compares at most `MAX_CANDIDATES` names per question: the neighbours of the word in
  sorted order (names sharing its beginning) and the names of its length and the lengths next
  to it (a typo rarely changes the length by more than one);
- and within one check (`bounded()`, entered by `forgec.api.check`), the comparisons together
  cost at most `WORK_PER_CHECK` units (the product of the two lengths, difflib's own worst
  case): past it, hints that need difflib are left out — the diagnostics are all still there.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import threading
from collections.abc import Iterable, Iterator

MAX_WORD = 200  # longer words get no suggestion
MAX_CANDIDATES = 32  # names difflib compares per question
WORK_PER_CHECK = 2_000_000  # len(word) × len(name), summed over one check's comparisons

_local = threading.local()


@contextlib.contextmanager
def bounded(work: int = WORK_PER_CHECK) -> Iterator[None]:
    """Within this block (one check), all questions together spend at most WORK units."""
    previous = getattr(_local, "left", None)
    _local.left = work
    try:
        yield
    finally:
        _local.left = previous


class _Known:
    """One collection of names, prepared for questions."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.sorted = sorted(set(names))
        self.lowered = {n.lower(): n for n in reversed(self.sorted)}
        by_length: dict[int, list[str]] = {}
        for name in self.sorted:
            by_length.setdefault(len(name), []).append(name)
        self.by_length = by_length
        self.longest = max((len(n) for n in self.sorted), default=0)

    def candidates(self, word: str) -> list[str]:
        """At most MAX_CANDIDATES names near WORD: by sorted position, then by length."""
        names = self.sorted
        if len(names) <= MAX_CANDIDATES:
            return names
        half = MAX_CANDIDATES // 4
        at = bisect.bisect_left(names, word)
        picked = dict.fromkeys(names[max(at - half, 0) : at + half])
        for delta in (0, -1, 1):
            for name in self.by_length.get(len(word) + delta, ())[:half]:
                if len(picked) >= MAX_CANDIDATES:
                    break
                picked[name] = None
        return sorted(picked)


@functools.lru_cache(maxsize=64)
def _prepare(names: tuple[object, ...]) -> _Known:
    return _Known(tuple(n for n in names if isinstance(n, str)))


def closest(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The known name nearest to `word`, or None when nothing is near enough."""
    if not isinstance(word, str) or not word or len(word) > MAX_WORD:
        return None
    try:
        known = _prepare(tuple(choices))
    except TypeError:  # an unhashable member: nothing forgec asks about
        return None
    if not known.sorted or len(word) > known.longest * 2 + 8:
        return None  # nothing we know is that long; spare difflib the work
    candidates = known.candidates(word)
    left = getattr(_local, "left", None)
    if left is not None:
        cost = sum(len(word) * len(c) for c in candidates)
        if cost > left:
            candidates = []  # this check's allowance is spent: the exact match only
        else:
            _local.left = left - cost
    if candidates:
        import difflib  # only once a name is unknown

        found = difflib.get_close_matches(word, candidates, n=1, cutoff=cutoff)
        if found:
            return found[0]
    if len(word) > 1:
        return known.lowered.get(word.lower())
    return None


MAX_LISTED = 8  # names a message lists before "… and N more"


def listed(names: Iterable[str], *, limit: int = MAX_LISTED) -> str:
    """`a`, `b`, … and N more: a message that lists names the input chose stays short, so the
    output of a check is linear in its diagnostics, never diagnostics × names (SPEC §24)."""
    shown = sorted(names)
    if not shown:
        return "none"
    text = ", ".join(f"`{n}`" for n in shown[:limit])
    more = len(shown) - limit
    return f"{text} and {more} more" if more > 0 else text


def suggest(
    word: str, choices: Iterable[str], prefix: str = "", *, cutoff: float = 0.6
) -> str | None:
    """``did you mean `X`?`` for the closest known name, or None."""
    found = closest(word, choices, cutoff=cutoff)
    return f"did you mean `{prefix}{found}`?" if found is not None else None
