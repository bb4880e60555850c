"""Diagnostics as a good compiler prints them.

    examples/x.talostool:12:15: error[FORGE_EDGE_MISSING]: node `a` leads to `sve`, ...
       |
    12 |       "next": "sve"
       |               ^^^^^
       = at: /flow/nodes/0/next
       = hint: did you mean `save`?

Colour only on a terminal and never when NO_COLOR is set. Tabs in the source line are expanded
so the caret lines up. Everything that comes from the file or the tool (the path, the message,
the hint, the notes, the source line) goes through `safe_text` before it is painted: a bad file's
control bytes are printed escaped (`\x1b`), never raw, and the caret is measured on the escaped
line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any, ClassVar, TextIO

from forgec.ir.diagnostics import Diagnostic, Severity
from forgec.render.safe import safe_text

_COLORS = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "bold": "\x1b[1m", "blue": "\x1b[1;34m"}
_RESET = "\x1b[0m"


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def _paint(text: str, style: str, color: bool) -> str:
    return f"{_COLORS[style]}{text}{_RESET}" if color else text


def render_diagnostic(
    d: Diagnostic, *, path: str | None, source: str | None, color: bool = False
) -> str:
    where = safe_text(path or "<input>")
    if d.span is not None:
        where = f"{where}:{d.span.line}:{d.span.column}"
    sev = d.severity.value
    head = (
        f"{_paint(where, 'bold', color)}: "
        f"{_paint(f'{sev}[{d.code}]', sev, color)}: {_paint(safe_text(d.message), 'bold', color)}"
    )
    lines = [head]
    gutter_width = len(str(d.span.line)) if d.span else 1
    bar = _paint(" " * gutter_width + " |", "blue", color)
    snippet = _snippet(d, source)
    if snippet is not None:
        src_line, caret_start, caret_len = snippet
        assert d.span is not None
        lines.append(bar)
        lines.append(_paint(f"{d.span.line} |", "blue", color) + " " + src_line)
        carets = " " * caret_start + "^" * caret_len
        lines.append(bar + " " + _paint(carets, sev, color))
    prefix = _paint(" " * gutter_width + " =", "blue", color)
    if d.path:
        lines.append(f"{prefix} at: {safe_text(d.path)}")
    if d.hint:
        lines.append(f"{prefix} hint: {safe_text(d.hint)}")
    lines.extend(f"{prefix} note: {safe_text(note)}" for note in d.notes)
    return "\n".join(lines)


# SPEC §24: an excerpt is at most this many columns, whatever the line's length
EXCERPT_COLUMNS = 200
_BEFORE = 60  # columns shown before the caret when the line is cut
_CUT = 160  # columns shown of a line that is cut (an ellipsis marks each cut end)


def _snippet(d: Diagnostic, source: str | None) -> tuple[str, int, int] | None:
    """The source line (tabs expanded), where the caret starts and how long it is.

    Bounded whatever the source (SPEC §24): the line is found through a line index built once
    per source, each line is scanned for secrets once (`_masked_line`) however many diagnostics
    point into it, only a window of `EXCERPT_COLUMNS` characters around the caret is worked on
    per diagnostic, and the printed line is at most `EXCERPT_COLUMNS` columns (plus an
    ellipsis at a cut end). Whatever looks like a secret on the line is blanked (SPEC §14: no
    output carries a secret, an excerpt included), and for `FORGE_SECRET_FOUND` the flagged
    span is blanked even when the scanner needs more context than the line to recognise it.
    """
    if d.span is None or source is None:
        return None
    raw_line = _line(source, d.span.line)
    if raw_line is None:
        return None
    full_len = len(raw_line)
    start = min(max(d.span.column - 1, 0), full_len)
    if d.span.end_line == d.span.line:
        end = max(d.span.end_column - 1, start + 1)
    else:
        end = full_len  # a multi-line construct: underline to the end of its first line
    # the window shown, in characters of the line
    lo = max(start - _BEFORE, 0) if full_len > EXCERPT_COLUMNS else 0
    hi = min(full_len, lo + _CUT) if full_len > EXCERPT_COLUMNS else full_len
    masked = _masked_line(source, d.span.line)
    raw = masked[lo:hi]
    runs_past = end > hi  # the caret goes on past the cut: it underlines the ellipsis too
    start, end = start - lo, min(end, hi) - lo
    if d.code == "FORGE_SECRET_FOUND" and raw == raw_line[lo:hi]:
        # the scanner needs the value's context (its key, its use): blank the flagged span
        raw = _blank(raw, [(start, end)])
    # expand tabs before measuring so the caret lines up with what the terminal shows
    expanded = raw.expandtabs()
    visible_start = len(raw[:start].expandtabs())
    visible_end = max(len(raw[:end].expandtabs()), visible_start)
    # then escape control and bidi characters, measuring the caret on what is printed
    before = safe_text(expanded[:visible_start])
    inside = safe_text(expanded[visible_start:visible_end])
    line = before + inside + safe_text(expanded[visible_end:])
    visible_start, visible_end = len(before), len(before) + len(inside)
    cut_left, cut_right = lo > 0, hi < full_len
    if len(line) > EXCERPT_COLUMNS:  # escapes and tabs widened it: cut around the caret again
        left = max(visible_start - _BEFORE, 0)
        cut_left = cut_left or left > 0
        cut_right = cut_right or left + _CUT < len(line)
        line = line[left : left + _CUT]
        visible_start -= left
        visible_end -= left
    if cut_left:
        line = "…" + line
        visible_start += 1
        visible_end += 1
    if cut_right:
        line += "…"
        if runs_past or visible_end > len(line) - 1:
            visible_end = len(line)
    visible_start = min(max(visible_start, 0), len(line))
    length = max(min(visible_end, len(line)) - visible_start, 1)
    return line, visible_start, length


class _Lines:
    """Where each line of one source starts (at "\\n" only, as spans count lines), and each
    line as an excerpt may show it (`_masked_line`), built once per source text and kept for
    the next diagnostic of the same text: a source's lines are scanned for secrets once
    however many diagnostics point into them (linear in the source, SPEC §24)."""

    text: ClassVar[str | None] = None
    starts: ClassVar[list[int]] = []
    masked: ClassVar[dict[int, str]] = {}


def _line(source: str, number: int) -> str | None:
    """Line NUMBER (1-based) of SOURCE without its end of line, or None past the end."""
    if _Lines.text is not source:
        _Lines.starts = [0, *(m.end() for m in re.finditer("\n", source))]
        _Lines.masked = {}
        _Lines.text = source
    starts = _Lines.starts
    if not 1 <= number <= len(starts):
        return None
    begin = starts[number - 1]
    stop = starts[number] - 1 if number < len(starts) else len(source)
    return source[begin:stop].removesuffix("\r")


def _masked_line(source: str, number: int) -> str:
    """Line NUMBER with whatever looks like a secret blanked (same length), once per line."""
    line = _line(source, number) or ""
    got = _Lines.masked.get(number)
    if got is None:
        got = _mask_secrets(line)
        _Lines.masked[number] = got
    return got


def _mask_secrets(line: str) -> str:
    """The source line with what looks like a secret blanked out, same length (so the caret
    still lines up): a diagnostic must never print a secret, the one it warns about or any
    other on the line (SPEC §14). The scan is the scanner's own (`scan_text`, linear)."""
    from forgec.secretscan.rules import scan_text

    spans = [(f.start, f.end) for f in scan_text(line)]
    spans.extend(_assigned_secrets(line))
    return _blank(line, spans) if spans else line


def _blank(line: str, spans: list[tuple[int, int]]) -> str:
    chars = list(line)
    for lo, hi in spans:
        for i in range(max(lo, 0), min(hi, len(chars))):
            if chars[i] not in ' "':
                chars[i] = "•"
    return "".join(chars)


def _assigned_secrets(line: str) -> list[tuple[int, int]]:
    """`NAME=value`, `NAME: value` and `"NAME": "value"` pairs of the line whose NAME means a
    secret (`API_KEY`, `token`, `passwd`, …: the scanner's own name rule), the value's span:
    an environment dump or a credentials file read as a tool prints its values as excerpts."""
    from forgec.secretscan.rules import is_secret_name

    out = []
    for m in _PAIR.finditer(line):
        if is_secret_name(m.group(1)) and len(m.group(2)) >= 4:
            out.append((m.start(2), m.end(2)))
    return out


_PAIR = re.compile(
    r"""["']?([A-Za-z_][A-Za-z0-9_.-]{0,63})["']?\s{0,4}[:=]\s{0,4}["']?([^\s"'\x00,;&]{1,4096})"""
)


def render_report(report: object, *, color: bool = False) -> str:
    """Every diagnostic of one `forgec.api.Report`, then a one-line summary."""
    diagnostics: Iterable[Diagnostic] = report.diagnostics  # type: ignore[attr-defined]
    path: str | None = report.path  # type: ignore[attr-defined]
    source_map = report.source_map  # type: ignore[attr-defined]
    source = source_map.text if source_map is not None else None
    blocks = [render_diagnostic(d, path=path, source=source, color=color) for d in diagnostics]
    return "\n\n".join(blocks)


def summary_line(reports: list[Any], *, unreadable: int = 0) -> str:
    """`N files checked: …`; files that could not be read are counted, never "no problems"."""
    severities = [d.severity for r in reports for d in r.diagnostics]
    errors = severities.count(Severity.ERROR)
    warnings = severities.count(Severity.WARNING)
    files = len(reports)
    noun = "file" if files == 1 else "files"
    parts = []
    if unreadable:
        parts.append(f"{unreadable} not read")
    if not errors and not warnings and not parts:
        return f"{files} {noun} checked: no problems"
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return f"{files} {noun} checked: {', '.join(parts)}"
