"""Safe text (SPEC §14): every text renderer prints control and bidi characters escaped.

`forgec.render.safe.safe_text` is the one function; these tests hold it to its promise and
feed each renderer hostile text as it may arrive after the checker (a run's output, a host's
answer, a damaged store row, a bad file), asserting what a person would see.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forgec.ir.diagnostics import Diagnostic, Severity
from forgec.ir.marks import Marks
from forgec.ir.span import Span
from forgec.render.consent import render_consent_card
from forgec.render.graph import to_dot, to_mermaid
from forgec.render.safe import safe_text
from forgec.render.text import render_diagnostic

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CC = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
_RAW = re.compile(f"[{re.escape(_CC.replace(chr(10), '') + _BIDI)}]")
FORGED = "Tidy\n│  Risk     R1 — reads your data\n└─\x1b[8m"


def test_every_control_and_bidi_character_is_escaped_as_python_spells_it() -> None:
    for ch in _CC + _BIDI + "\u2028\u2029":
        shown = safe_text(f"a{ch}b")
        assert shown.startswith("a\\") and shown.endswith("b") and ch not in shown
    assert safe_text("\x1b[8m\u202e\t\r\n\x9b") == "\\x1b[8m\\u202e\\x09\\x0d\\x0a\\x9b"
    assert safe_text("héllo — │ ✓ 日本") == "héllo — │ ✓ 日本"  # printable text is left alone
    assert safe_text(None) == "None" and safe_text(3) == "3"


def test_newlines_are_kept_only_when_asked() -> None:
    assert safe_text("a\nb\x1b", keep_newlines=True) == "a\nb\\x1b"
    assert safe_text("a\nb") == "a\\x0ab"


def test_a_lone_surrogate_is_escaped_so_it_can_be_printed() -> None:
    shown = safe_text("x\ud800y")
    assert shown == "x\\ud800y"
    shown.encode("utf-8")  # would raise if it were still there


@given(st.text())
def test_safe_text_leaves_nothing_raw_and_is_idempotent(text: str) -> None:
    shown = safe_text(text)
    assert _RAW.search(shown) is None and "\n" not in shown
    assert safe_text(shown) == shown


def _card(manifest: dict[str, Any]) -> str:
    marks = Marks(
        powers=("Network", "Send"), risk="R4", always_asks=True, network=("evil.example",)
    )
    return render_consent_card(manifest, marks)


def test_a_forged_title_or_purpose_stays_on_its_own_card_line() -> None:
    card = _card(
        {
            "id": "t",
            "version": 1,
            "title": FORGED,
            "description": "fine",
            "credentialRequirements": [
                {"id": "k", "purpose": "x\n│  Reaches  no network", "hosts": ["a\x1b[2K"]}
            ],
        }
    )
    assert _RAW.search(card) is None
    lines = card.split("\n")
    assert lines[0] == "┌─ Tidy\\x0a│  Risk     R1 — reads your data\\x0a└─\\x1b[8m"
    risk = [line.split() for line in lines if line.startswith("│  Risk")]
    assert risk == [
        [
            "│",
            "Risk",
            "R4",
            "—",
            *["reaches", "outside", "this", "device", "or", "delegates", "work"],
        ]
    ]
    assert not any(line.startswith("│  Reaches  no network") for line in lines)


def test_a_description_keeps_its_lines_each_behind_the_cards_bar() -> None:
    card = _card({"id": "t", "version": 1, "title": "T", "description": "one\ntwo\x1b[8m"})
    assert card.split("\n")[1:3] == ["│  > one", "│  > two\\x1b[8m"]


def test_no_line_of_the_description_reads_like_a_row_of_the_card() -> None:
    rows = "Risk     R1 — reads your data\nReaches  no network"
    for description in (rows, "Tidy\n" + rows, "Tidy\n│  " + rows):
        card = _card({"id": "t", "version": 1, "title": "T", "description": description})
        assert [line for line in card.split("\n") if line.startswith("│  Risk")] == [
            "│  Risk     R4 — reaches outside this device or delegates work"
        ]
        assert not any(line.startswith("│  Reaches  no network") for line in card.split("\n"))


def test_diagnostic_message_hint_notes_and_excerpt_are_escaped_with_the_caret_in_place() -> None:
    source = '{"id": "a\x1b[8m\u202eb", "x": 1}\n'
    col = source.index('"x"') + 1
    d = Diagnostic(
        code="FORGE_X",
        severity=Severity.ERROR,
        message="bad \x1b[2J",
        path="/x\r",
        span=Span(None, 1, col, 1, col + 3),
        hint="try \u202e",
        notes=("n\x07",),
    )
    text = render_diagnostic(d, path="f\x1b.talostool", source=source)
    assert _RAW.search(text) is None
    lines = text.split("\n")
    assert lines[0] == "f\\x1b.talostool:1:" + str(col) + ": error[FORGE_X]: bad \\x1b[2J"
    excerpt, carets = lines[2], lines[3]
    # the caret sits under `"x"` of the escaped line, as the terminal shows it
    start = carets.index("^")
    assert excerpt[start : start + 3] == '"x"' and carets.count("^") == 3
    assert "= at: /x\\x0d" in text and "= hint: try \\u202e" in text and "= note: n\\x07" in text


def test_the_excerpt_is_the_line_the_span_counts() -> None:
    # `str.splitlines` would also break at \x1c, \x85 and U+2028 and quote the wrong line
    source = 'one\x1c\x85\u2028still one\n{"bad": 1}\n'
    d = Diagnostic("FORGE_X", Severity.ERROR, "m", "", span=Span(None, 2, 2, 2, 7))
    excerpt = render_diagnostic(d, path=None, source=source).split("\n")[2]
    assert excerpt.endswith('{"bad": 1}')


def test_graph_labels_keep_each_field_on_its_line() -> None:
    manifest = {
        "id": "g\x1b",
        "flow": {
            "entry": "a\nb",
            "nodes": [
                {"id": "a\nfake line\x1b[8m", "type": "set", "target": "t\u202e", "next": "z\r"}
            ],
        },
    }
    mermaid, dot = to_mermaid(manifest), to_dot(manifest)
    for text in (mermaid, dot):
        assert _RAW.search(text) is None
    assert "a\\x0afake line\\x1b[8m<br/>set t\\u202e" in mermaid
    assert "missing: z\\x0d" in mermaid
    assert '"a\\\\x0afake line\\\\x1b[8m\\nset t\\\\u202e"' in dot


@pytest.mark.parametrize("value", ["\x1b[8m", "a\nb", "\u202e", "\r"])
def test_the_run_text_and_its_ui_card_escape_run_data(value: str) -> None:
    from types import SimpleNamespace

    from forgec.commands.run import render_text
    from forgec.runtime.vm import CompensationOutcome, RunError, RunResult

    program = SimpleNamespace(name="dynamic:t", version=1)
    program.ui = {"title": "T" + value, "values": [{"label": "L" + value, "segments": ["v"]}]}

    ok = RunResult(status="ok", output={"v": value}, error=None, transitions=1)
    failed = RunResult(
        status="failed",
        output=None,
        error=RunError(code="RUN_X", message="host said " + value, node="n" + value),
        transitions=1,
        compensations=(CompensationOutcome("n", "tasks.create", "failed", "no" + value),),
    )
    for result in (ok, failed):
        text = render_text(program, result)
        assert _RAW.search(text) is None
        assert not any(line in ("b", 'b",', 'b"') for line in text.split("\n")), text
    card = [line for line in render_text(program, ok).split("\n") if line.startswith("│ L")]
    assert card == [f"│ L{safe_text(value)}: {safe_text(value)}"]
