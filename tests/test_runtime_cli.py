"""`forgec lower` and `forgec run` on the command line: output, consent, input, exit codes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from manifests import EXAMPLES, example

from forgec.cli import main

WEEKLY = str(EXAMPLES / "weekly-review.talostool")
TODAY = '{"today": "2026-01-05"}'


def cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_lower_prints_the_program_json(capsys: Any) -> None:
    code, out, _ = cli(capsys, "lower", WEEKLY)
    data = orjson.loads(out)
    assert code == 0 and data["format"] == "forgec.program.v1" and data["id"] == "weekly-review"
    assert data["ui"]["title"] == "Weekly review" and data["marks"]["risk"] == "R2"


def test_lower_disasm_lists_one_op_per_line_with_node_and_line(capsys: Any) -> None:
    code, out, _ = cli(capsys, "lower", "--disasm", WEEKLY)
    assert code == 0
    assert "   0  enter          fetch" in out and "; fetch (capability) line " in out


def test_lower_refuses_a_tool_with_errors(capsys: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.talostool"
    bad.write_text('{"schema": "talos.local-tool.v1"}')
    code, out, err = cli(capsys, "lower", str(bad))
    assert code == 1 and out == "" and "FORGE_MANIFEST_STRUCTURE" in err


NOTE_ID = re.compile(r"note_[0-9a-f]{32}")


def test_run_text_shows_output_and_the_ui_card(capsys: Any, snapshot: Any) -> None:
    code, out, _ = cli(capsys, "run", "--yes", "--input", TODAY, WEEKLY)
    assert code == 0
    assert NOTE_ID.sub("note_<id>", out) == snapshot


def test_run_json_is_the_spec_result(capsys: Any) -> None:
    code, out, _ = cli(capsys, "run", "--yes", "--format", "json", "--input", TODAY, WEEKLY)
    assert code == 0
    result = orjson.loads(out)
    assert NOTE_ID.fullmatch(result["output"]["noteId"])
    result["output"]["noteId"] = "note_<id>"
    assert result == {
        "status": "ok",
        "output": {"noteId": "note_<id>"},
        "error": None,
        "transitions": 5,
        "compensations": [],
    }


def test_run_without_yes_and_no_terminal_refuses(capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    code, out, _ = cli(capsys, "run", "--format", "json", "--input", TODAY, WEEKLY)
    result = orjson.loads(out)
    assert code == 1 and result["error"]["code"] == "RUN_CONSENT_DENIED"
    assert "--yes" in result["error"]["message"]


def test_run_failure_exits_1_and_says_why(capsys: Any) -> None:
    code, out, _ = cli(capsys, "run", "--yes", "--input", '{"today": 5}', WEEKLY)
    assert code == 1
    assert "error: RUN_INPUT_INVALID: input.today must be string" in out


@pytest.mark.parametrize("value", ["{nope", "@/no/such/file.json"])
def test_bad_input_is_a_usage_error(capsys: Any, value: str) -> None:
    code, _, err = cli(capsys, "run", "--yes", "--input", value, WEEKLY)
    assert code == 2 and "forgec: error:" in err


def test_input_from_a_file(capsys: Any, tmp_path: Path) -> None:
    given = tmp_path / "in.json"
    given.write_text(TODAY)
    code, out, _ = cli(capsys, "run", "--yes", "--format", "json", "--input", f"@{given}", WEEKLY)
    assert code == 0 and NOTE_ID.fullmatch(orjson.loads(out)["output"]["noteId"])


def test_run_text_lists_compensations(capsys: Any, tmp_path: Path) -> None:
    tool = example("weekly-review")
    tool["flow"]["nodes"] = [
        {
            "id": "mk",
            "type": "capability",
            "capability": "tasks.create",
            "input": {"title": "x"},
            "compensation": "tasks.setStatus",
            "next": "stop",
        },
        {"id": "stop", "type": "fail", "code": "GIVE_UP", "message": "changed my mind"},
    ]
    tool["flow"]["entry"] = "mk"
    tool.pop("ui", None)
    tool.pop("outputSchema", None)
    path = tmp_path / "undo.talostool"
    path.write_bytes(orjson.dumps(tool))
    code, out, _ = cli(capsys, "run", "--yes", "--input", TODAY, str(path))
    assert code == 1, out
    assert "error: GIVE_UP at node 'stop' (line " in out
    assert "mk" in out and "tasks.create" in out and "undone" in out


def sample(schema: Any) -> Any:
    """A small value valid for a SPEC §2.2 schema (required properties only)."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties", {})
        return {k: sample(props.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        return [sample(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "x" * max(1, schema.get("minLength", 1))


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.talostool")), ids=lambda p: p.stem)
def test_every_example_runs_to_a_spec_result(capsys: Any, path: Path) -> None:
    tool = orjson.loads(path.read_bytes())
    target = "talon" if path.name.startswith("talon-") else "talos"
    given = orjson.dumps(sample(tool.get("inputSchema"))).decode()
    code, out, err = cli(
        capsys, "run", "--yes", "--target", target, "--format", "json", "--input", given, str(path)
    )
    result = orjson.loads(out)
    assert set(result) == {"status", "output", "error", "transitions", "compensations"}
    assert code == (0 if result["status"] == "ok" else 1), err
    if result["error"] is not None:
        assert result["error"]["code"] != "RUN_INPUT_INVALID", result["error"]
        assert result["transitions"] == 0 or result["error"]["node"]


class _Terminal:
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer


@pytest.mark.parametrize(("answer", "status"), [("y\n", "ok"), ("\n", "failed")])
def test_run_asks_on_a_terminal_showing_the_consent_card(
    capsys: Any, monkeypatch: Any, answer: str, status: str
) -> None:
    import sys

    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = cli(capsys, "run", "--format", "json", "--input", TODAY, WEEKLY)
    assert "dynamic:weekly-review" in err and "Run dynamic:weekly-review? [y/N]" in err
    result = orjson.loads(out)
    assert result["status"] == status
    if status == "failed":
        assert code == 1 and result["error"]["code"] == "RUN_CONSENT_DENIED"
