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
from collections.abc import Iterable
from typing import Any, TextIO

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


def _snippet(d: Diagnostic, source: str | None) -> tuple[str, int, int] | None:
    """The source line (tabs expanded), where the caret starts and how long it is."""
    if d.span is None or source is None:
        return None
    # lines as spans count them: at "\n" only (`splitlines` also breaks at \x1c, \x85, U+2028…)
    all_lines = source.split("\n")
    if not 1 <= d.span.line <= len(all_lines):
        return None
    raw = all_lines[d.span.line - 1].removesuffix("\r")
    start = max(d.span.column - 1, 0)
    if d.span.end_line == d.span.line:
        end = max(d.span.end_column - 1, start + 1)
    else:
        end = len(raw)  # a multi-line construct: underline to the end of its first line
    if d.code == "FORGE_SECRET_FOUND":
        raw = _mask_secrets(raw, start, end)
    # expand tabs before measuring so the caret lines up with what the terminal shows
    expanded = raw.expandtabs()
    visible_start = len(raw[:start].expandtabs())
    visible_end = max(len(raw[:end].expandtabs()), visible_start)
    # then escape control and bidi characters, measuring the caret on what is printed
    before = safe_text(expanded[:visible_start])
    inside = safe_text(expanded[visible_start:visible_end])
    line = before + inside + safe_text(expanded[visible_end:])
    visible_start, visible_end = len(before), len(before) + len(inside)
    if len(line) > 200:  # minified JSON: show a window around the caret
        left = max(visible_start - 60, 0)
        line = (
            ("…" if left else "")
            + line[left : left + 160]
            + ("…" if left + 160 < len(line) else "")
        )
        shift = left - (1 if left else 0)
        visible_start -= shift
        visible_end -= shift
    length = max(min(visible_end, len(line)) - visible_start, 1)
    return line, visible_start, length


def _mask_secrets(line: str, start: int, end: int) -> str:
    """The source line with what looks like a secret blanked out, same length (so the caret
    still lines up): a diagnostic must never print the secret it warns about."""
    from forgec.secretscan.rules import scan_text

    spans = [(f.start, f.end) for f in scan_text(line)]
    if not spans:  # the scanner needs the value's context: blank the whole flagged span
        spans = [(start, end)]
    chars = list(line)
    for lo, hi in spans:
        for i in range(max(lo, 0), min(hi, len(chars))):
            if chars[i] not in ' "':
                chars[i] = "•"
    return "".join(chars)


def render_report(report: object, *, color: bool = False) -> str:
    """Every diagnostic of one `forgec.api.Report`, then a one-line summary."""
    diagnostics: Iterable[Diagnostic] = report.diagnostics  # type: ignore[attr-defined]
    path: str | None = report.path  # type: ignore[attr-defined]
    source_map = report.source_map  # type: ignore[attr-defined]
    source = source_map.text if source_map is not None else None
    blocks = [render_diagnostic(d, path=path, source=source, color=color) for d in diagnostics]
    return "\n\n".join(blocks)


def summary_line(reports: list[Any]) -> str:
    severities = [d.severity for r in reports for d in r.diagnostics]
    errors = severities.count(Severity.ERROR)
    warnings = severities.count(Severity.WARNING)
    files = len(reports)
    noun = "file" if files == 1 else "files"
    if not errors and not warnings:
        return f"{files} {noun} checked: no problems"
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return f"{files} {noun} checked: {', '.join(parts)}"
