"""The smallest edits that turn one text into another, as LSP `TextEdit`s.

A formatter or a quick fix computes the whole new text; sending it as one edit over the whole
document makes an editor lose the cursor, folds, marks and its undo history of everything else.
So the old and new texts are compared line by line (`difflib.SequenceMatcher`, no junk
heuristic) and each differing run of lines becomes one edit from the start of its first line to
the start of the line after it. Whole lines need no column arithmetic, so every client position
encoding reads them alike. Cost: SequenceMatcher is quadratic in the number of lines in the
worst case; a document is at most 256 KiB (`MAX_FORGE_BYTES`), a few thousand lines.
"""

from __future__ import annotations

import difflib

from lsprotocol import types as lsp

from forgec.lsp.positions import LineIndex, Point


def minimal_edits(index: LineIndex, new: str) -> list[lsp.TextEdit]:
    """Edits turning INDEX's text into NEW (none when they are equal)."""
    old = index.text
    if old == new:
        return []
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
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
