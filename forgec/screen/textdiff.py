"""Each version's text and a line diff of them, with the changed words marked (SPEC §23).

The text of a version is its `.forge` form, written by the decompiler (`forgec.frontend.dsl_format.format_forge`,
what `forgec fmt x.talostool` prints), so two versions read alike however each was written;
a manifest the decompiler cannot write is shown as its canonical JSON instead. The diff is
`difflib`'s: lines by `SequenceMatcher` over the two texts' lines, and within each replaced
pair of lines the words (runs of letters and digits, runs of spaces, single other characters)
by a second `SequenceMatcher`, so `limit: 20` → `limit: 50` marks `20` and `50`, not the line.

Cost, bounded whatever the texts (SPEC §16; docs/analysis.md lists it): the common first and
last lines are set aside in linear time; difflib's matcher, quadratic in the worst case, runs
only on what is left when that holds at most `MAX_LINE_PAIRS` line pairs (else what is left is
shown as removed, then added, with no matching inside: still every line, still correct), with
difflib's "popular line" heuristic on (a line in over 1% of a long text, `}` say, is matched
only next to others); the word pass matches replaced pairs of lines of at most
`MAX_WORDS_DIFFED` words a side while their summed costs (n·m·min(n, m), difflib's worst
case on repeated words) stay within `MAX_WORD_WORK` (any other pair is marked as whole lines).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

MAX_WORDS_DIFFED = 200  # words per side of one replaced line pair
# difflib's matcher costs up to n·m·min(n, m) on words that repeat: that product, summed
# over the pairs of lines matched
MAX_WORD_WORK = 4_000_000
MAX_LINE_PAIRS = 1_000_000  # (lines left on one side) × (on the other) that difflib matches
_WORDS = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


def version_text(manifest: dict[str, Any]) -> tuple[str, str]:
    """(the text, its form: "forge" or "json") of a stored version's manifest."""
    from forgec.frontend.dsl_format import format_forge
    from forgec.runtime.jsontext import dumps_text

    try:
        return format_forge(manifest), "forge"
    except Exception:  # the decompiler never stops a page: the manifest itself is the text
        return dumps_text(manifest, indent=True), "json"


def line_diff(old: str, new: str, *, context: int = 3) -> list[dict[str, Any]]:
    """The rows of a line diff of OLD → NEW: each {"kind": "same" | "del" | "ins" | "gap",
    "old": line number or None, "new": line number or None, "parts": [(text, marked)]}.
    Unchanged runs longer than 2 × CONTEXT lines are cut to CONTEXT lines each side of a
    change, with one "gap" row saying how many lines were left out."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[dict[str, Any]] = []
    budget = [MAX_WORD_WORK]
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            rows.extend(_same(a, i1, i2, j1, context, first=i1 == 0, last=i2 == len(a)))
            continue
        dels, inss = a[i1:i2], b[j1:j2]
        if tag == "replace":
            pairs = min(len(dels), len(inss))
            marked = [_words(dels[k], inss[k], budget) for k in range(pairs)]
            old_parts = [m[0] for m in marked] + [[(x, True)] for x in dels[pairs:]]
            new_parts = [m[1] for m in marked] + [[(x, True)] for x in inss[pairs:]]
        else:
            old_parts = [[(x, True)] for x in dels]
            new_parts = [[(x, True)] for x in inss]
        for k, parts in enumerate(old_parts):
            rows.append({"kind": "del", "old": i1 + k + 1, "new": None, "parts": parts})
        for k, parts in enumerate(new_parts):
            rows.append({"kind": "ins", "old": None, "new": j1 + k + 1, "parts": parts})
    return rows


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for A → B, within `MAX_LINE_PAIRS` (see the module doc)."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    out: list[tuple[str, int, int, int, int]] = []
    if head:
        out.append(("equal", 0, head, 0, head))
    if len(mid_a) * len(mid_b) <= MAX_LINE_PAIRS:
        matcher = difflib.SequenceMatcher(a=mid_a, b=mid_b, autojunk=True)
        out += [
            (tag, i1 + head, i2 + head, j1 + head, j2 + head)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    elif mid_a or mid_b:
        out.append(("replace", head, head + len(mid_a), head, head + len(mid_b)))
    if tail:
        out.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return out


def _same(
    a: list[str], i1: int, i2: int, j1: int, context: int, *, first: bool, last: bool
) -> list[dict[str, Any]]:
    def row(i: int) -> dict[str, Any]:
        return {"kind": "same", "old": i + 1, "new": j1 + (i - i1) + 1, "parts": [(a[i], False)]}

    keep_head = 0 if first and not last else context  # both: the texts are the same
    keep_tail = 0 if last else context
    if i2 - i1 <= keep_head + keep_tail + 1:
        return [row(i) for i in range(i1, i2)]
    out = [row(i) for i in range(i1, i1 + keep_head)]
    left_out = (i2 - keep_tail) - (i1 + keep_head)
    out.append({"kind": "gap", "old": None, "new": None, "parts": [(f"{left_out} lines", False)]})
    out.extend(row(i) for i in range(i2 - keep_tail, i2))
    return out


def _words(
    old: str, new: str, budget: list[int]
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """OLD and NEW as parts (text, changed), the changed words marked while BUDGET (word
    pairs left) lasts; past it, or for a line of too many words, the whole lines."""
    if budget[0] <= 0 or len(old) > MAX_WORDS_DIFFED * 64 or len(new) > MAX_WORDS_DIFFED * 64:
        return [(old, True)], [(new, True)]
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    cost = len(a) * len(b) * min(len(a), len(b))
    if len(a) > MAX_WORDS_DIFFED or len(b) > MAX_WORDS_DIFFED or cost > budget[0]:
        return [(old, True)], [(new, True)]
    budget[0] -= cost
    left: list[tuple[str, bool]] = []
    right: list[tuple[str, bool]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            _add(left, "".join(a[i1:i2]), tag != "equal")
        if j2 > j1:
            _add(right, "".join(b[j1:j2]), tag != "equal")
    return _joined(left), _joined(right)


def _joined(parts: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """A space left unmarked between two changed words is part of the change: `Answer a web`
    → `Other title here` is one marked run, not three."""
    out: list[tuple[str, bool]] = []
    for k, (text, marked) in enumerate(parts):
        between = 0 < k < len(parts) - 1 and parts[k - 1][1] and parts[k + 1][1]
        _add(out, text, marked or (between and not text.strip()))
    return out


def _add(parts: list[tuple[str, bool]], text: str, marked: bool) -> None:
    if parts and parts[-1][1] == marked:
        parts[-1] = (parts[-1][0] + text, marked)
    else:
        parts.append((text, marked))


def texts_and_diff(
    old_manifest: dict[str, Any] | None, new_manifest: dict[str, Any]
) -> dict[str, Any]:
    """What the review and enable pages show under "The text": each side's text and form, and
    the line diff (None when there is no old side)."""
    new_text, new_form = version_text(new_manifest)
    if old_manifest is None:
        return {"old": None, "new": new_text, "new_form": new_form, "rows": None}
    old_text, old_form = version_text(old_manifest)
    return {
        "old": old_text,
        "old_form": old_form,
        "new": new_text,
        "new_form": new_form,
        "rows": line_diff(old_text, new_text),
        "changed": old_text != new_text,
    }
