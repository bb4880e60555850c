"""The diagnostic corpus: for every check code, a manifest that triggers it and one at its
boundary that does not, plus a few showcase files. Rendered text, JSON and SARIF are snapshot
tested so a change to any message shows up in review.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import forgec
from forgec.ir.codes import CHECK_CODES, REGISTRY
from forgec.render.sarif import to_sarif
from forgec.render.text import render_report

CORPUS = Path(__file__).parent / "corpus"
REL = Path("tests") / "corpus"


def _target(name: str) -> str:
    return "talon" if ".talon." in name else "talos"


def _check(name: str) -> forgec.Report:
    data = (CORPUS / name).read_bytes()
    return forgec.check(data, path=str(REL / name), target=_target(name))


TRIGGERS = sorted(p.name for p in CORPUS.glob("*.trigger*.talostool"))
BOUNDARIES = sorted(p.name for p in CORPUS.glob("*.boundary*.talostool"))
SHOWCASE = ["many-errors.talostool", "bad-json.talostool", "duplicate-keys.talostool"]


def test_every_check_code_has_a_trigger_and_a_boundary() -> None:
    triggered = {name.split(".")[0] for name in TRIGGERS}
    bounded = {name.split(".")[0] for name in BOUNDARIES}
    assert set(CHECK_CODES) - triggered == set()
    assert set(CHECK_CODES) - bounded == set()


@pytest.mark.parametrize("name", TRIGGERS)
def test_trigger_reports_its_code(name: str) -> None:
    code = name.split(".")[0]
    report = _check(name)
    codes = [d.code for d in report.diagnostics]
    assert code in codes, f"{name}: expected {code}, got {codes}"
    if REGISTRY[code].severity.value == "error":
        assert not report.ok


@pytest.mark.parametrize("name", BOUNDARIES)
def test_boundary_does_not_report_the_code(name: str) -> None:
    code = name.split(".")[0]
    report = _check(name)
    assert code not in [d.code for d in report.diagnostics]


@pytest.mark.parametrize("name", TRIGGERS + SHOWCASE)
def test_text_rendering(name: str, snapshot) -> None:  # type: ignore[no-untyped-def]
    assert render_report(_check(name)) == snapshot


@pytest.mark.parametrize("name", SHOWCASE)
def test_json_rendering(name: str, snapshot) -> None:  # type: ignore[no-untyped-def]
    doc = {"files": [_check(name).to_json()]}
    assert orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() == snapshot


def test_sarif_rendering(snapshot) -> None:  # type: ignore[no-untyped-def]
    reports = [_check(name) for name in SHOWCASE]
    sarif = to_sarif(reports)
    run = sarif["runs"][0]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning")
    assert orjson.dumps(run["results"], option=orjson.OPT_INDENT_2).decode() == snapshot


def test_every_diagnostic_in_the_corpus_points_at_a_line() -> None:
    for name in TRIGGERS + SHOWCASE:
        if name.startswith("FORGE_MANIFEST_TOO_LARGE"):
            continue  # nothing is parsed: the whole file is the location
        for d in _check(name).diagnostics:
            assert d.span is not None, f"{name}: {d.code} at {d.path!r} has no position"


def test_rendered_text_never_shows_the_secret_it_reports() -> None:
    name = "FORGE_SECRET_FOUND.trigger.talostool"
    secret = "Tr0ub4dor-3xq"
    assert secret in (CORPUS / name).read_text()
    text = render_report(_check(name))
    assert "FORGE_SECRET_FOUND" in text
    assert secret not in text
    assert "@db.example.org/prod" in text  # the rest of the line is still shown for context
