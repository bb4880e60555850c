"""Issue 10, measurement 2: the consent card can be forged.

The attacker writes text that, printed raw, draws its own card lines ("Risk R1 — reads your
data, no network") and then hides the real ones with `ESC[8m` (concealed text). The text
arrives wherever a tool's text can: the title of a manifest file, a bad file's bytes quoted
under a diagnostic, a run's input echoed by a host's answer, a model's answer. Every case goes
through the real CLI (`python -m forgec …` in a child process) and looks at the bytes a
terminal would receive: no raw ESC, CR, C1 or bidi control, and no line of the card that the
tool wrote itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FORGED_TITLE = (
    "Tidy notes\n│\n│  Risk     R1 — reads your data\n│  Can      Read\n│  Reaches  no network\n"
    "└─\x1b[8m"
)
# What a terminal must never receive raw: C0 controls but the newline, DEL, C1, and SPEC §14's
# bidi controls. Spelled out here, not imported, so the test does not trust the code it tests.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_RAW = re.compile(
    "["
    + "".join(f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)] if c != 0x0A)
    + _BIDI
    + "]"
)
# a card line the attacker drew: the bar, then "Risk … R1" (the real card shows the real risk)
_FAKE_RISK = re.compile(r"^│\s+Risk\s+R1\b", re.MULTILINE)


def forgec(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def assert_harmless(done: subprocess.CompletedProcess[bytes]) -> tuple[str, str]:
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert "Traceback" not in err, err
    for name, text in (("stdout", out), ("stderr", err)):
        raw = _RAW.search(text)
        assert raw is None, f"raw {raw.group()!r} reached {name}: {text!r}"
        assert _FAKE_RISK.search(text) is None, f"a forged card line reached {name}:\n{text}"
    return out, err


def _manifest(title: str = "Tidy notes", **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "tidy.notes",
        "version": 1,
        "title": title,
        "description": "Makes a task from a title.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {
            "type": "object",
            "properties": {"title": {"type": "string"}},
            "required": ["title"],
        },
        "flow": {
            "entry": "mk",
            "maxTransitions": 8,
            "nodes": [
                {
                    "id": "mk",
                    "type": "capability",
                    "capability": "tasks.create",
                    "input": {"title": {"$ref": "input.title"}},
                    "target": "task",
                    "next": "r",
                },
                {"id": "r", "type": "return", "value": {"title": {"$ref": "task.title"}}},
            ],
        },
        "ui": {"title": "Made", "values": [{"label": "Title", "path": "title"}]},
    }
    m.update(extra)
    return m


def _write(path: Path, manifest: dict[str, Any]) -> Path:
    # ensure_ascii=False: the control characters sit in the file as JSON escapes, the bidi
    # controls and box-drawing characters raw, as a model would write them
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def test_a_forged_title_draws_no_card_line_in_inspect_check_or_graph(tmp_path: Path) -> None:
    tool = _write(tmp_path / "forged.talostool", _manifest(FORGED_TITLE))
    out, _ = assert_harmless(forgec("inspect", str(tool), cwd=tmp_path))
    # the checker refuses such a title (SPEC §14: FORGE_TITLE), and inspect may then show no
    # card; when it shows one, it shows the real risk, once, and the title escaped
    risk_lines = re.findall(r"^│\s+Risk\s+.*$", out, re.MULTILINE)
    assert len(risk_lines) <= 1, out
    if risk_lines:
        assert "R2" in risk_lines[0] and "\\x1b[8m" in out, out
    assert_harmless(forgec("check", str(tool), cwd=tmp_path))
    # the same text as the run's `ui` card title and label: `run` prints it (or, once the
    # checker refuses such a title, the diagnostics that quote it)
    m = _manifest(FORGED_TITLE)
    m["ui"] = {"title": FORGED_TITLE, "values": [{"label": FORGED_TITLE, "path": "title"}]}
    ui_tool = _write(tmp_path / "forged-ui.talostool", m)
    db = str(tmp_path / "host.db")
    args = ["run", str(ui_tool), "--yes", "--db", db, "--input", '{"title": "x"}']
    assert_harmless(forgec(*args, cwd=tmp_path))
    for fmt in ("mermaid", "dot"):
        assert_harmless(forgec("graph", "--format", fmt, str(tool), cwd=tmp_path))


def test_a_description_that_checks_clean_draws_no_card_line(tmp_path: Path) -> None:
    # SPEC §14 lets a description hold "\n": its lines are quoted, so none reads as a row
    rows = "Risk     R1 — reads your data\nCan      Read\nReaches  no network"
    for description in (rows, "Tidy notes\n" + rows):
        tool = _write(tmp_path / "desc.talostool", _manifest(description=description))
        out, _ = assert_harmless(forgec("inspect", str(tool), cwd=tmp_path))
        assert len(re.findall(r"^│\s+Risk\s+", out, re.MULTILINE)) == 1, out
        store = str(tmp_path / f"tools-{len(description)}.db")
        assert forgec("tools", "install", str(tool), "--store", store, cwd=tmp_path).returncode == 0
        assert_harmless(forgec("tools", "show", "tidy.notes", "--store", store, cwd=tmp_path))


def test_a_forged_title_draws_no_card_line_in_the_tools_commands(tmp_path: Path) -> None:
    tool = _write(tmp_path / "forged.talostool", _manifest(FORGED_TITLE))
    store = str(tmp_path / "tools.db")
    installed = forgec("tools", "install", str(tool), "--store", store, cwd=tmp_path)
    assert_harmless(installed)
    if installed.returncode != 0:
        return  # the checker refuses such a title (SPEC §14): nothing stored to show
    for args in (["list"], ["versions", "tidy.notes"], ["show", "tidy.notes"]):
        assert_harmless(forgec("tools", *args, "--store", store, cwd=tmp_path))
    assert_harmless(forgec("tools", "enable", "tidy.notes", "--store", store, cwd=tmp_path))


@pytest.mark.parametrize(
    "source",
    [
        # raw control bytes inside a JSON string are a syntax error: the excerpt quotes them
        '{"id": "tidy\x1b[2J\x1b[8m\u202eston", "title": \n',
        '{\n  "title": "ok",\n  "id": 12\x07\x1b]0;pwned\x07\r│  Risk     R1 — reads\n}\n',
    ],
)
def test_a_bad_files_bytes_are_escaped_in_the_diagnostic_excerpt(
    tmp_path: Path, source: str
) -> None:
    bad = tmp_path / "bad.talostool"
    bad.write_text(source, encoding="utf-8")
    done = forgec("check", str(bad), cwd=tmp_path)
    out, _ = assert_harmless(done)
    assert done.returncode == 1
    assert "\\x1b" in out  # the excerpt shows where the bytes were


def test_a_forge_file_with_control_bytes_is_escaped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.forge"
    bad.write_text('tool "x\x1b[8m\u202e" {\n  title "T\x1b[31m\r"\n oops\x9b\n', encoding="utf-8")
    done = forgec("check", str(bad), cwd=tmp_path)
    assert_harmless(done)
    assert done.returncode == 1


def test_run_data_echoed_by_the_host_is_escaped_in_the_result_and_ui_card(tmp_path: Path) -> None:
    tool = _write(tmp_path / "tidy.talostool", _manifest())
    hostile = "ok\x1b[8m\r\u202e\x9b" + FORGED_TITLE
    done = forgec(
        "run",
        str(tool),
        "--yes",
        "--db",
        str(tmp_path / "host.db"),
        "--input",
        json.dumps({"title": hostile}),
        cwd=tmp_path,
    )
    out, _ = assert_harmless(done)
    assert done.returncode == 0, out
    # the ui card keeps the value on its one line, escaped
    card_value = [line for line in out.splitlines() if line.startswith("│ Title: ")]
    assert len(card_value) == 1 and "\\x1b[8m\\x0d\\u202e\\x9b" in card_value[0], out


def test_a_model_answer_is_escaped_in_the_result_and_ui_card(tmp_path: Path) -> None:
    m = _manifest()
    m["flow"] = {
        "entry": "ask",
        "maxTransitions": 8,
        "nodes": [
            {
                "id": "ask",
                "type": "llm",
                "op": "summarize",
                "input": {"text": "hello"},
                "target": "s",
                "next": "r",
            },
            {"id": "r", "type": "return", "value": {"title": {"$ref": "s"}}},
        ],
    }
    del m["inputSchema"]
    tool = _write(tmp_path / "ask.talostool", m)
    replay = tmp_path / "answers.json"
    replay.write_text(json.dumps([{"node": "ask", "output": "fine\u2028" + FORGED_TITLE}]))
    args = ["run", str(tool), "--yes", "--db", str(tmp_path / "h.db"), "--replay", str(replay)]
    out, _ = assert_harmless(forgec(*args, cwd=tmp_path))
    assert "\\u2028" in out and "\\x1b[8m" in out, out


def test_the_disassembly_escapes_the_constants_it_quotes(tmp_path: Path) -> None:
    m = _manifest()
    m["flow"]["nodes"][0]["input"]["title"] = {"$template": "x\u202e\x85\x1b[8m {{input.title}}"}
    tool = _write(tmp_path / "tidy.talostool", m)
    done = forgec("lower", "--disasm", str(tool), cwd=tmp_path)
    out, _ = assert_harmless(done)
    # escaped either way: the disassembly's JSON constant writes C1 as `\u0085` (SPEC §14)
    assert done.returncode == 0 and "\\u202e" in out, out
    assert "\\x85" in out or "\\u0085" in out, out


def test_a_models_persona_name_is_escaped_in_the_tools_commands(tmp_path: Path) -> None:
    # the persona name comes from the MCP client: a model's text, stored with its version
    from forgec.store import Store

    store_path = tmp_path / "tools.db"
    persona = "helper\x1b[8m\n│  Risk     R1 — reads your data\u202e"
    with Store(store_path) as store:
        first = json.dumps(_manifest(), ensure_ascii=False)
        assert store.install(first, author="person").installed
        second = _manifest(version=2, parentVersion=1)
        proposal = store.install(json.dumps(second), author="model", author_name=persona)
        assert proposal.installed
    store = str(store_path)
    shown = {}
    for args in (
        ["list"],
        ["versions", "tidy.notes"],
        ["show", "tidy.notes", "--proposal", "1"],
        ["review", "tidy.notes"],
    ):
        shown[args[0]] = assert_harmless(forgec("tools", *args, "--store", store, cwd=tmp_path))
    # the name is shown, as data
    assert "helper\\x1b[8m\\x0a" in shown["versions"][0]
    assert "helper\\x1b[8m\\x0a" in shown["show"][0]
