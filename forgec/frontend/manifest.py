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

* **Integers as written** (SPEC §16). orjson keeps an integer up to 64 bits exactly (the
  builder then refuses one outside ±(2^53 − 1) at its path), but turns a longer one into a
  float and refuses one past a double's range; either would hide it. Such an integer has at
  least 19 digits in a row outside a string, so on the fast path above (the text is its own
  re-serialisation, where a float would have been written differently) there is none; else one
  C-speed pass (`bytes.translate`) looks for a run of 19 digits, and only when there is one does
  an exact scan find each integer token orjson could not keep, and report it at its path.

Positions are computed lazily: the returned `TextSourceMap` tokenizes only when a diagnostic
asks for a span.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from forgec.frontend.jsonpos import NullSourceMap, PositionIndex, TextSourceMap, line_col
from forgec.frontend.jsonsyntax import (
    DEPTH,
    UNSAFE_INTEGER_HINT,
    first_problem,
    unsafe_integer_message,
)
from forgec.frontend.loaded import Loaded
from forgec.ir.diagnostics import Diagnostic, make
from forgec.ir.rules import MAX_JSON_DEPTH as MAX_DEPTH
from forgec.ir.rules import MAX_MANIFEST_BYTES
from forgec.ir.span import Span

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
            # "or more": a file is read only up to the limit + 1 bytes (SPEC §24)
            f"the manifest is {size:,} bytes or more; the limit is {MAX_MANIFEST_BYTES:,} bytes "
            "(64 KiB)",
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
        # valid JSON whose only fault is an integer past a double's range is refused by
        # orjson: say which integers, at their paths, not "not JSON"
        lost = _lost_integers(raw, source_map, refused=True)
        if lost:
            return Loaded(None, source_map, lost, "talostool")
        return Loaded(None, source_map, _decode_error(raw, path, source_map), "talostool")
    problems = _structural_problems(raw, value, source_map)
    if problems is None:
        return Loaded(value, source_map, [], "talostool")
    too_deep, duplicates = problems
    if too_deep:
        return Loaded(None, source_map, too_deep, "talostool")
    lost = _lost_integers(raw, source_map, refused=False)
    if lost:
        # the parsed value holds a float where the text wrote an integer: nothing built on it
        # would be the tool as written
        return Loaded(None, source_map, [*lost, *duplicates], "talostool")
    return Loaded(value, source_map, duplicates, "talostool")


# every byte a digit maps to `0`, every other byte to a space: a run of digits is a run of `0`s
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
# An integer orjson cannot keep as one: beyond -2^63 (19 digits) or 2^64 - 1 (20 digits).
_LOST_RUN = b"0" * 19
_INTEGER_TOKEN = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"|(?<![0-9.eE+\-])(-?[0-9]{19,})(?![.eE0-9])', re.DOTALL
)
_I64_MIN = "9223372036854775808"
_U64_MAX = "18446744073709551615"


def _kept_by_orjson(token: str) -> bool:
    digits, limit = (token[1:], _I64_MIN) if token[0] == "-" else (token, _U64_MAX)
    return len(digits) < len(limit) or (len(digits) == len(limit) and digits <= limit)


def _lost_integers(raw: bytes, source_map: TextSourceMap, *, refused: bool) -> list[Diagnostic]:
    """`FORGE_MANIFEST_STRUCTURE` at the path of every integer token orjson could not keep as
    an integer (see the module doc). With REFUSED (orjson refused the text), only when the text
    is valid JSON once those integers are read as 0."""
    if _LOST_RUN not in raw.translate(_DIGITS_ONLY):
        return []
    text = source_map.text or ""
    found = [
        m.span(1)
        for m in _INTEGER_TOKEN.finditer(text)
        if m.group(1) is not None and not _kept_by_orjson(m.group(1))
    ]
    if not found:
        return []
    if refused:
        pieces, at = [], 0
        for start, end in found:
            pieces += [text[at:start], "0"]
            at = end
        try:
            orjson.loads("".join([*pieces, text[at:]]))
        except orjson.JSONDecodeError:
            return []  # another fault: the syntax error is the one to report
    where = {entry[2]: pointer for pointer, entry in source_map.index().entries.items()}
    out = []
    for start, end in found:
        token = text[start:end]
        out.append(
            make(
                STRUCTURE,
                where.get(start, ""),
                unsafe_integer_message(token),
                hint=UNSAFE_INTEGER_HINT,
                span=source_map.span_of(start, end),
            )
        )
    return out


def _structural_problems(
    raw: bytes, value: Any, source_map: TextSourceMap
) -> tuple[list[Diagnostic], list[Diagnostic]] | None:
    """None on the fast path (the text is its own re-serialisation: no duplicate, not too
    deep, no integer turned float); else (depth, duplicate) diagnostics, maybe none."""
    if not isinstance(value, (dict, list)):
        return ([], []) if _LOST_RUN in raw.translate(_DIGITS_ONLY) else None
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
        return [], []
    index = source_map.index()
    return (
        _depth_diagnostics(index, source_map, deep),
        _duplicate_diagnostics(index, source_map),
    )


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
