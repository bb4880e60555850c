"""The strict `.talostool` loader: bytes in, a JSON value and load diagnostics out.

Order of checks (SPEC §2, §12): size first (over 65,536 bytes → `FORGE_MANIFEST_TOO_LARGE`
alone, nothing parsed), then a UTF-8 byte order mark, then orjson parses (it also validates
UTF-8 and refuses NaN/Infinity). Any failure is `FORGE_MANIFEST_STRUCTURE` with the line and
column of the problem, as `forgec.frontend.jsonsyntax` finds and words it: orjson's own
messages and positions differ between releases, so they are never shown.

Two properties orjson does not check are verified without a Python walk of the tree:

* **Duplicate keys.** First, the common case: when the text is byte for byte the
  re-serialisation below (give or take a final newline), it cannot have held a member the
  parse dropped, so there is nothing more to check. Otherwise: every structural `:` of the
  text belongs to exactly one object member; every other `:` is inside a string. Re-serialising the parsed value with orjson writes one
  `:` per member it kept plus the colons of the strings it kept. So, unless the text spells a
  colon as an escape (`\\u003a`), the two counts are equal exactly when no member was dropped,
  i.e. when no key repeats. When they differ, or an escaped colon makes the count unreliable,
  the slow path tokenizes the text (`forgec.frontend.jsonpos`) and names every duplicate.
* **Depth.** The same re-serialisation, indented by two spaces, puts each member of a
  level-k container at indent 2k. A level-65 container is therefore either a member of a
  level-64 container (a line indented 128 spaces starting a container) or has members of its
  own (a line indented 130); a substring search finds either. orjson refuses to serialise
  beyond 255 levels, which is deep enough to fail as well.

Positions are computed lazily: the returned `TextSourceMap` tokenizes only when a diagnostic
asks for a span.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from forgec.frontend.jsonpos import NullSourceMap, PositionIndex, TextSourceMap, line_col
from forgec.frontend.jsonsyntax import DEPTH, first_problem
from forgec.frontend.loaded import Loaded
from forgec.ir.diagnostics import Diagnostic, make
from forgec.ir.span import Span

MAX_MANIFEST_BYTES = 65_536
MAX_DEPTH = 64

STRUCTURE = "FORGE_MANIFEST_STRUCTURE"
TOO_LARGE = "FORGE_MANIFEST_TOO_LARGE"

_BOM = b"\xef\xbb\xbf"
_DEEP_MEMBER = b"\n" + b" " * (2 * MAX_DEPTH + 2)
_DEEP_LINE = b"\n" + b" " * (2 * MAX_DEPTH)
# A line at indent 128 that opens a container: an array item, or an object member's value.
_DEEP_CONTAINER = re.compile(
    rb"\n {%d}(?:[\[{]|\"[^\"\\]*(?:\\.[^\"\\]*)*\": [\[{])" % (2 * MAX_DEPTH), re.DOTALL
)


def load_manifest(data: bytes | str, *, path: str | None = None) -> Loaded:
    """Read one `.talostool` document; never raises on any input."""
    if isinstance(data, str):
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            # A Python str holding a lone surrogate: not something a UTF-8 file can contain.
            span = _span_at(data, exc.start, path)
            diag = make(
                STRUCTURE,
                "",
                f"the manifest is not valid UTF-8 text: character {exc.start + 1} "
                f"(line {span.line}, column {span.column}) is a lone surrogate",
                span=span,
            )
            return Loaded(None, TextSourceMap(data, path), [diag], "talostool")
    else:
        raw = bytes(data)
    size = len(raw)
    if size > MAX_MANIFEST_BYTES:
        diag = make(
            TOO_LARGE,
            "",
            f"the manifest is {size:,} bytes; the limit is {MAX_MANIFEST_BYTES:,} bytes (64 KiB)",
            hint="split the tool, or move long texts out of the manifest",
        )
        return Loaded(None, _NoText(path), [diag], "talostool")
    source_map = TextSourceMap(data, path)
    if raw.startswith(_BOM):
        diag = make(
            STRUCTURE,
            "",
            "the manifest starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without BOM",
            span=Span(path, 1, 1, 1, 2),
        )
        return Loaded(None, source_map, [diag], "talostool")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return Loaded(None, source_map, _decode_error(raw, path, source_map), "talostool")
    problems = _structural_problems(raw, value, source_map)
    if problems is None:
        return Loaded(value, source_map, [], "talostool")
    too_deep, duplicates = problems
    if too_deep:
        return Loaded(None, source_map, too_deep, "talostool")
    return Loaded(value, source_map, duplicates, "talostool")


def _structural_problems(
    raw: bytes, value: Any, source_map: TextSourceMap
) -> tuple[list[Diagnostic], list[Diagnostic]] | None:
    """None on the fast path (no duplicate, not too deep); else (depth, duplicate) diagnostics."""
    if not isinstance(value, (dict, list)):
        return None
    try:
        out = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        out = None  # deeper than orjson's own limit (255 levels)
    deep = out is None or (
        _DEEP_LINE in out and (_DEEP_MEMBER in out or _DEEP_CONTAINER.search(out) is not None)
    )
    if not deep and out is not None and _same_text(raw, out):
        return None  # the text is its own re-serialisation: no member was dropped
    suspicious = deep or out is None or out.count(b":") != raw.count(b":")
    if not suspicious and b"\\" in raw:
        # Escaped colons would upset the count: fall back to the exact scan.
        suspicious = b"\\u003a" in raw or b"\\u003A" in raw
    if not suspicious:
        return None
    index = source_map.index()
    return _depth_diagnostics(index, source_map, deep), _duplicate_diagnostics(index, source_map)


def _same_text(raw: bytes, out: bytes) -> bool:
    """Whether `raw` is exactly `out`, give or take one final newline: a manifest formatted the
    way forgec writes one (`forgec fmt`; also Python's `json.dumps(indent=2,
    ensure_ascii=False)` and JavaScript's `JSON.stringify(v, null, 2)`)."""
    n = len(out)
    if len(raw) == n:
        return raw == out
    return len(raw) == n + 1 and raw.endswith(b"\n") and raw.startswith(out)


def _depth_diagnostics(
    index: PositionIndex, source_map: TextSourceMap, deep: bool
) -> list[Diagnostic]:
    if index.too_deep is None:
        if not deep:
            return []
        # The scan stopped early on text orjson accepted (should not happen): still refuse.
        return [make(STRUCTURE, "", f"the manifest nests deeper than {MAX_DEPTH} levels")]
    pointer, start = index.too_deep
    shown = pointer if len(pointer) <= 80 else pointer[:77] + "..."
    return [
        make(
            STRUCTURE,
            pointer,
            f"the manifest nests deeper than {MAX_DEPTH} levels (at `{shown}`); "
            "the top-level object counts as level 1",
            span=source_map.span_of(start, start + 1),
        )
    ]


def _duplicate_diagnostics(index: PositionIndex, source_map: TextSourceMap) -> list[Diagnostic]:
    out = []
    for pointer, start, end in index.duplicates:
        key = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        where = pointer.rsplit("/", 1)[0] or "the top-level object"
        out.append(
            make(
                STRUCTURE,
                pointer,
                f"duplicate key `{key}` in {where if where.startswith('the') else f'`{where}`'}: "
                "each key may appear once (JSON readers disagree on which copy wins)",
                hint="remove or rename one of the copies",
                key=True,
                span=source_map.span_of(start, end),
            )
        )
    return out


def _decode_error(raw: bytes, path: str | None, source_map: TextSourceMap) -> list[Diagnostic]:
    """Explain why orjson refused the bytes: encoding first, then JSON syntax, in forgec's own
    words and positions (`forgec.frontend.jsonsyntax`), never orjson's, which change between
    releases."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as uerr:
        good = raw[: uerr.start].decode("utf-8", "replace")
        line, col = line_col(good, len(good))
        return [
            make(
                STRUCTURE,
                "",
                f"the manifest is not valid UTF-8: byte {uerr.start + 1} (line {line}, "
                f"column {col}) is 0x{raw[uerr.start]:02x}",
                hint="save the file as UTF-8",
                span=Span(path, line, col, line, col + 1),
            )
        ]
    problem = first_problem(text, max_depth=MAX_DEPTH)
    if problem is not None and problem[0] == DEPTH:
        return _depth_diagnostics(source_map.index(), source_map, True)
    if problem is None:
        # forgec reads the text as JSON but this orjson refused it: say so without its words.
        return [make(STRUCTURE, "", "the manifest is not JSON that forgec can read")]
    reason, pos = problem
    line, col = line_col(text, pos)
    return [
        make(
            STRUCTURE,
            "",
            f"the manifest is not valid JSON: {reason} at line {line}, column {col}",
            span=Span(path, line, col, line, col + 1),
        )
    ]


def _span_at(text: str, offset: int, path: str | None) -> Span:
    line, col = line_col(text, offset)
    return Span(path, line, col, line, col + 1)


class _NoText(NullSourceMap):
    """Source map of an oversized file: it is not read, so only the whole file has a position."""

    def span(self, pointer: str, *, key: bool = False) -> Span | None:
        if pointer == "":
            return Span(self._file, 1, 1, 1, 1)
        return None
