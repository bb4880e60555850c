"""Comments and blank lines of `.forge` text, attached to the construct they belong to.

The parser reads comments as whitespace, so a manifest alone has none; `collect` finds them in
the text and files each one under a JSON Pointer of the parsed tree, in one of three slots the
formatter (`dsl_format`) writes back:

- `lead` — on lines of their own before an *item* (a tool statement, a node, an object member,
  a list item, a `ui` row): written before it, at its indent;
- `trail` — after an item's last token on the same line (a `,` between may intervene): written
  after the item's last line;
- `end` — after the last item of a *block* (`{...}` or `[...]`) and before its closing brace:
  written before the closing brace.

Placement. A comment is looked up from the tool's block down: in a block, the item holding it
is entered; a comment after an item's last token on its line trails it; otherwise it leads the
next item, or ends the block when no item follows. Inside an item, a block holding the comment
is entered; otherwise the comment ends the last block of the item that closed before it (so the
order of comments is kept), or leads the item when no block closed before it. A comment before
the tool's `{` leads the file; one after its `}` ends the file.

A blank line (two line breaks with only whitespace between) before an item or a comment is kept
as one blank line, except right after a block's opening brace.

Cost: building the item table is one walk of the tree (O(n) nodes); each comment is placed with
a binary search per level (O(depth · log n)); the text is scanned once for comments.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from forgec.ir.pointer import escape

# A comment starts at `#` outside a string; strings are skipped whole by the same alternation.
_SCAN = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""|"(?:[^"\\\n]|\\[^\n])*"|(#[^\n]*)|[^"#]+|"',
)

Pos = tuple[int, int]  # (line, column), 1-based


class Comment:
    __slots__ = ("blank", "order", "text")

    def __init__(self, text: str, blank: bool, order: int) -> None:
        self.text = text
        self.blank = blank  # a blank line before it
        self.order = order  # its place among the file's comments


class Trivia:
    """Comments by slot, plus which items had a blank line before them."""

    def __init__(self) -> None:
        self.slots: dict[tuple[str, str], list[Comment]] = {}
        self.blank: set[str] = set()
        self.head: list[Comment] = []  # before the tool's `{`
        self.tail: list[Comment] = []  # after its `}`
        self.head_blank = False  # a blank line between the head comments and `tool`
        self.count = 0

    def add(self, kind: str, pointer: str, comment: Comment) -> None:
        self.slots.setdefault((kind, pointer), []).append(comment)

    def comments(self) -> list[str]:
        every = [*self.head, *self.tail, *(c for cs in self.slots.values() for c in cs)]
        return [c.text for c in sorted(every, key=lambda c: c.order)]


def comment_texts(text: str) -> list[str]:
    """Every comment of `.forge` TEXT, in order (strings are not mistaken for comments)."""
    return [m.group(1) for m in _SCAN.finditer(text) if m.group(1) is not None]


class _Block:
    __slots__ = ("close", "ends", "items", "open", "pointer", "starts")

    def __init__(self, pointer: str, g: Any) -> None:
        self.pointer = pointer
        self.open: Pos = (g[0], g[1])
        self.close: Pos = (g[2], g[3] - 1)  # the closing brace itself
        self.items: list[_Item] = []
        self.starts: list[Pos] = []
        self.ends: list[Pos] = []


class _Item:
    __slots__ = ("blocks", "end", "pointer", "start")

    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.start: Pos = (1 << 30, 0)
        self.end: Pos = (0, 0)  # just after its last token
        self.blocks: list[_Block] = []


def _kids(n: Any, pointer: str) -> list[tuple[str, Any]]:
    kids = n.kids
    if isinstance(kids, dict):
        return [(pointer + "/" + escape(k), x) for k, x in kids.items()]
    if isinstance(kids, list):
        return [(f"{pointer}/{i}", x) for i, x in enumerate(kids)]
    return []


def _fill_block(block: _Block, n: Any, pointer: str, *, root: bool = False) -> None:
    for ptr, kid in _kids(n, pointer):
        if kid.kids is not None and kid.g is None and isinstance(kid.kids, list) and root:
            # the tool's credentials and triggers: one statement each, no brackets of their own
            for p2, k2 in _kids(kid, ptr):
                block.items.append(_item(p2, k2))
            continue
        item = _item(ptr, kid)
        if root and item.start < block.open:
            continue  # the tool's name, written before its `{`
        block.items.append(item)
    block.items.sort(key=lambda i: i.start)
    block.starts = [i.start for i in block.items]
    block.ends = [i.end for i in block.items]


def _item(pointer: str, n: Any) -> _Item:
    item = _Item(pointer)
    _extent(item, n, pointer, top=True)
    return item


def _extent(item: _Item, n: Any, pointer: str, *, top: bool) -> None:
    """Widen ITEM over N's text and collect the blocks directly inside it."""
    for p in (n.s, n.k, n.g):
        if p is not None:
            item.start = min(item.start, (p[0], p[1]))
            item.end = max(item.end, (p[2], p[3]))
    if n.g is not None:
        block = _Block(pointer, n.g)
        _fill_block(block, n, pointer)
        item.blocks.append(block)
        return
    for ptr, kid in _kids(n, pointer):
        _extent(item, kid, ptr, top=False)


def collect(text: str, root: Any) -> Trivia:
    """The comments and blank lines of TEXT, whose parsed tree is ROOT (`dsl._N`)."""
    trivia = Trivia()
    line_starts = [0]
    for m in re.finditer("\n", text):
        line_starts.append(m.end())

    def pos_of(offset: int) -> Pos:
        line = bisect.bisect_right(line_starts, offset)
        return (line, offset - line_starts[line - 1] + 1)

    def blank_before(offset: int) -> bool:
        before = text[:offset]
        stripped = before.rstrip(" \t\r\n\f")
        return before.count("\n", len(stripped)) >= 2 and bool(stripped)

    if root is None or root.g is None:
        return trivia
    trivia.head_blank = blank_before(line_starts[root.s[0] - 1] + root.s[1] - 1)
    top = _Block("", root.g)
    _fill_block(top, root, "", root=True)

    def mark_blanks(block: _Block) -> None:
        for item in block.items:
            offset = line_starts[item.start[0] - 1] + item.start[1] - 1
            if blank_before(offset):
                trivia.blank.add(item.pointer)
            for inner in item.blocks:
                mark_blanks(inner)

    mark_blanks(top)

    order = 0
    for m in _SCAN.finditer(text):
        body = m.group(1)
        if body is None:
            continue
        start = m.start(1)
        comment = Comment(body.rstrip(" \t\r"), blank_before(start), order)
        order += 1
        trivia.count += 1
        line_start = line_starts[bisect.bisect_right(line_starts, start) - 1]
        before = text[line_start:start].rstrip(" \t")
        prev_end: Pos | None = None
        if before.strip(" \t"):
            if before.endswith(","):
                before = before[:-1].rstrip(" \t")
            prev_end = pos_of(line_start + len(before))
        _place(trivia, top, pos_of(start), prev_end, comment)
    return trivia


def _place(trivia: Trivia, top: _Block, at: Pos, prev_end: Pos | None, c: Comment) -> None:
    if at < top.open:
        trivia.head.append(c)
        return
    if at > top.close:
        trivia.tail.append(c)
        return
    block = top
    while True:
        i = bisect.bisect_right(block.starts, at) - 1
        if i >= 0:
            item = block.items[i]
            if at < item.end:
                inner = next((b for b in item.blocks if b.open < at < b.close), None)
                if inner is not None:
                    block = inner
                    continue
                closed = [b for b in item.blocks if b.close < at]
                if closed:
                    trivia.add("end", closed[-1].pointer, c)
                else:
                    trivia.add("lead", item.pointer, c)
                return
            if prev_end is not None and prev_end == item.end:
                trivia.add("trail", item.pointer, c)
                return
        if i + 1 < len(block.items):
            trivia.add("lead", block.items[i + 1].pointer, c)
        else:
            trivia.add("end", block.pointer, c)
        return


def of_text(text: str) -> Trivia | None:
    """The trivia of `.forge` TEXT, or None when it does not parse."""
    from forgec.frontend.dsl import parse_forge

    root, diagnostics = parse_forge(text)
    if root is None or diagnostics:
        return None
    return collect(text, root)


def trivia_of(source_map: Any) -> Trivia | None:
    """The trivia of a loaded `.forge` document (None for a `.talostool` or a failed parse)."""
    root = getattr(source_map, "root", None)
    text = getattr(source_map, "text", None)
    if root is None or text is None:
        return None
    return collect(text, root)
