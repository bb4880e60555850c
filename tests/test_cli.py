"""The command line as a user meets it: exit codes, formats, and a fast, lazy start-up."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from forgec.cli import main

CORPUS = Path(__file__).parent / "corpus"
CLEAN = CORPUS / "FORGE_ID.boundary.talostool"
EXAMPLES = Path(__file__).parent.parent / "examples"
BROKEN = CORPUS / "many-errors.talostool"


def test_check_clean_file_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(CLEAN)]) == 0
    assert "no problems" in capsys.readouterr().err


def test_check_errors_exit_one_and_show_line_and_caret(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(BROKEN)]) == 1
    out = capsys.readouterr().out
    assert f"{BROKEN}:3:" in out  # the id line
    assert "error[FORGE_ID]" in out
    assert "^" in out


def test_warnings_only_exit_zero() -> None:
    assert main(["check", str(CORPUS / "FORGE_UNREACHABLE_NODE.trigger.talostool")]) == 0


def test_missing_file_exits_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "does/not/exist.talostool"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_bad_usage_exits_two() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--format", "xml", str(CLEAN)])
    assert exc.value.code == 2


def test_json_format_lists_every_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "json", str(CLEAN), str(BROKEN)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["ok"] for f in doc["files"]] == [True, False]
    codes = {d["code"] for d in doc["files"][1]["diagnostics"]}
    assert {"FORGE_ID", "FORGE_VERSION", "FORGE_CYCLE"} <= codes
    first = doc["files"][1]["diagnostics"][0]
    assert set(first) == {"code", "severity", "message", "path", "span", "hint", "notes"}


def test_sarif_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "sarif", str(BROKEN)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    assert run["tool"]["driver"]["name"] == "forgec"
    assert any(r["ruleId"] == "FORGE_CYCLE" for r in run["results"])
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1


def test_talon_capability_needs_talon_target(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CORPUS / "FORGE_NETWORK_NOT_DECLARED.boundary.talon.talostool")
    assert main(["check", path]) == 1
    assert "FORGE_CAPABILITY_UNKNOWN" in capsys.readouterr().out
    assert main(["check", "--target", "talon", path]) == 0


def test_explain_prints_the_doc(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "forge_cycle"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("FORGE_CYCLE (error)")
    assert "a -> b -> a" in out


def test_explain_unknown_code_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "FORGE_CYCL"]) == 2
    assert "did you mean FORGE_CYCLE" in capsys.readouterr().err


def test_inspect_json_shows_marks_and_worst_case(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CORPUS / "FORGEC_TRANSITIONS_MAY_EXCEED.boundary.talostool")
    assert main(["inspect", "--format", "json", path]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["transitions"] == {
        "worstCase": 3,
        "limit": 3,
        "worstCasePath": ["a", "b", "done"],
    }
    assert doc["marks"]["risk"] == "R0"
    assert doc["consent"]["name"] == "dynamic:demo.tool"


def test_inspect_text_shows_consent_card(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CORPUS / "FORGE_COMPENSATION_MISMATCH.boundary.talostool")
    assert main(["inspect", path]) == 0
    out = capsys.readouterr().out
    assert "┌─ Demo tool" in out
    assert "R2" in out
    assert "Write" in out


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['forgec', *{args!r}]\n"
        "try:\n"
        "    runpy.run_module('forgec', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return set(proc.stderr.split())


HEAVY = ("lark", "forgec.host", "httpx", "sqlglot", "mcp", "rich", "jsonschema", "croniter")
# what a check that cannot warn about flows never needs: the flow analysis (its gate is
# `forgec.passes.flow_gate`) and the SQL rule only the analysis and `db.query` inputs read
NOT_ON_A_CLEAN_CHECK = ("forgec.passes.flows", "forgec.catalog.sql")


@pytest.mark.parametrize("args", [["--help"], ["check", str(CLEAN)]])
def test_startup_stays_lazy(args: list[str]) -> None:
    loaded = _modules_after(args)
    assert "forgec.cli" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m.startswith("forgec.host"))
    assert heavy == []
    assert sorted(loaded & set(NOT_ON_A_CLEAN_CHECK)) == []
    if args[0] == "check":  # the gate ran: the pass is on the path, the analysis is not
        assert "forgec.passes.flow_gate" in loaded


def test_building_every_parser_imports_no_capability_rows() -> None:
    # the --persona-labels help lists the rows' labels, computed only when that help is
    # formatted: `forgec --help` (every command's parser built) and `forgec mcp --help` import
    # no rows, `forgec mcp serve --help` and `forgec run --help` do
    for args in (["--help"], ["mcp", "--help"], ["tools", "--help"]):
        assert "forgec.ir.capabilities" not in _modules_after(args), args
    for args in (["mcp", "serve", "--help"], ["run", "--help"]):
        assert "forgec.ir.capabilities" in _modules_after(args), args


def _help_of(*words: str) -> str:
    """The help text of a subcommand, as printed, with its wrapping undone."""
    import argparse

    from forgec.cli import build_parser

    parser: argparse.ArgumentParser = build_parser(words[0])
    for word in words:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = actions[0].choices[word]
    return " ".join(parser.format_help().split())


def test_the_persona_labels_help_lists_exactly_the_rows_labels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from forgec.commands.common import host_label_words
    from forgec.commands.mcp import label_words
    from forgec.ir import capabilities as rows
    from forgec.ir.shapes import Shape

    # a row added to the table shows in help with nothing else edited
    added = rows.Capability(
        "probe.row",
        "A row only this test has.",
        Shape({}, limit=1024),
        rows.OpMarks("Read", "R1"),
        {"type": "object"},
        targets=rows.TALON,
        label="probe.label:own",
    )
    monkeypatch.setattr(rows, "ROWS", (*rows.ROWS, added))
    for words, expected in (
        (("mcp", "serve"), label_words()),
        (("run",), host_label_words()),
        (("tools", "run"), host_label_words()),
    ):
        text = _help_of(*words)
        listed = text.split("the labels: ", 1)[1].split(" --", 1)[0]
        assert listed == expected, words
        assert "probe.label:own" in listed.split(", ")
    assert label_words().split(", ") == [*rows.label_list(), "tool.create"]


def test_a_command_registers_only_its_own_parser() -> None:
    # `forgec check x` builds the check parser alone: the other commands' modules (and their
    # parsers) are start-up a check does not need.
    loaded = _modules_after(["check", str(CLEAN)])
    commands = sorted(m for m in loaded if m.startswith("forgec.commands."))
    assert commands == ["forgec.commands.check", "forgec.commands.common", "forgec.commands.needs"]


# A plain check imports only what it uses: hashlib for folding's
# digests, difflib for a "did you mean", base64 for decoding a secret candidate only when needed.
@pytest.mark.parametrize("path", [CLEAN, EXAMPLES / "memory-capture.talostool"], ids=str)
def test_a_plain_check_imports_only_what_it_uses(path: Path) -> None:
    loaded = _modules_after(["check", str(path)])
    assert "forgec.passes" in loaded
    lazy = ("hashlib", "_hashlib", "difflib", "base64")
    assert sorted(m for m in loaded if m.split(".")[0] in lazy) == []


@pytest.mark.parametrize("args", [[], ["--help"], ["chek", "x"], ["--version"]])
def test_without_a_known_command_the_whole_parser_answers(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with contextlib.suppress(SystemExit):
        main(args)
    shown = capsys.readouterr()
    text = shown.out + shown.err
    if args != ["--version"]:
        assert "tools" in text and "lsp" in text  # every command is listed


def _collector_after(args: list[str]) -> str:
    code = (
        "import gc, sys, runpy\n"
        f"sys.argv = ['forgec', *{args!r}]\n"
        "try:\n"
        "    runpy.run_module('forgec', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.isenabled(), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return proc.stderr.split()[-1]


def test_only_a_check_process_runs_without_the_cyclic_collector() -> None:
    import gc

    from forgec.cli import COLLECTOR_OFF

    assert COLLECTOR_OFF == ("check",)
    assert _collector_after(["check", str(CLEAN)]) == "False"
    assert _collector_after(["inspect", str(CLEAN)]) == "True"
    # a walk of many files collects from its second file on: garbage never grows with a folder
    assert _collector_after(["check", str(CLEAN), str(CLEAN)]) == "True"
    assert main(["check", str(CLEAN)]) == 0  # in-process: the host's collector is its own
    assert gc.isenabled()
