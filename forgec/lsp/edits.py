"""The smallest edits that turn one text into another, as LSP `TextEdit`s.

A formatter or a quick fix computes the whole new text; sending it as one edit over the whole
document makes an editor lose the cursor, folds, marks and its undo history of everything else.
So the old and new texts are compared line by line (`difflib.SequenceMatcher`, no junk
heuristic) and each differing run of lines becomes one edit from the start of its first line to
the start of the line after it. Whole lines need no column arithmetic, so every client position
encoding reads them alike. Cost: the common first and last lines are skipped in linear time;
SequenceMatcher, quadratic in the number of lines in the worst case, compares only the lines in
between, and when either side has more than `MAX_DIFF_LINES` of them (a hostile 256 KiB text of
one-character lines), that middle becomes one edit instead (SPEC §24: bounded on every path).
"""

from __future__ import annotations

import difflib

from lsprotocol import types as lsp

from forgec.lsp.positions import LineIndex, Point

MAX_DIFF_LINES = 2000


def minimal_edits(index: LineIndex, new: str) -> list[lsp.TextEdit]:
    """Edits turning INDEX's text into NEW (none when they are equal)."""
    old = index.text
    if old == new:
        return []
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    first = 0
    while first < min(len(a), len(b)) and a[first] == b[first]:
        first += 1
    last = 0
    while last < min(len(a), len(b)) - first and a[-1 - last] == b[-1 - last]:
        last += 1
    a_end, b_end = len(a) - last, len(b) - last
    if max(a_end - first, b_end - first) > MAX_DIFF_LINES:
        opcodes = [("replace", first, a_end, first, b_end)]
    else:
        matcher = difflib.SequenceMatcher(None, a[first:a_end], b[first:b_end], autojunk=False)
        opcodes = [
            (tag, i1 + first, i2 + first, j1 + first, j2 + first)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    edits = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        edits.append(
            lsp.TextEdit(
                range=lsp.Range(_start_of(index, a, i1), _start_of(index, a, i2)),
                new_text="".join(b[j1:j2]),
            )
        )
    return edits


def _start_of(index: LineIndex, lines: list[str], i: int) -> lsp.Position:
    """The position where line I starts (the end of the text when I is past the last line)."""
    if i < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return lsp.Position(line=i, character=0)
    line, character = index.to_client(Point(len(lines) - 1, len(lines[-1])))
    return lsp.Position(line=line, character=character)
