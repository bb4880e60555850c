"""The talon examples run for real on the reference host with the bundled host config.

`examples/host/` is what a person would try first: a TOML config with channels and a personas
folder (the scheduler's `promptFile` lives there) and recorded model answers. Each run goes
through `forgec run` on a fresh SQLite file, as a user would type it.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from forgec.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
HOST = EXAMPLES / "host"


def _run(capsys: pytest.CaptureFixture[str], db: Path, name: str, tool_input: str) -> dict:
    code = main(
        [
            "run",
            str(EXAMPLES / f"{name}.talostool"),
            "--target",
            "talon",
            "--host-config",
            str(HOST / "host.toml"),
            "--replay",
            str(HOST / "replay.json"),
            "--db",
            str(db),
            "--yes",
            "--format",
            "json",
            "--input",
            tool_input,
        ]
    )
    result = orjson.loads(capsys.readouterr().out)
    assert code == (0 if result["status"] == "ok" else 1)
    return result


def test_talon_examples_run_with_the_bundled_host(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "host.db"
    scheduled = _run(capsys, db, "talon-weekly-scheduler", "{}")
    assert scheduled["status"] == "ok", scheduled["error"]

    facts = _run(capsys, db, "talon-thread-facts", '{"facts": ["likes tea", "works remote"]}')
    assert facts["status"] == "ok", facts["error"]
    assert [item["value"] for item in facts["output"]["items"]] == ["likes tea", "works remote"]

    # the scheduler announced itself on a channel: the digest reads that message back through
    # db.query and posts a summary (answered from the recorded model reply)
    digest = _run(capsys, db, "talon-db-digest", "{}")
    assert digest["status"] == "ok", digest["error"]
    assert digest["output"]["posted"] is True


def test_labels_missing_from_the_persona_are_refused_at_the_bridge(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "run",
            str(EXAMPLES / "talon-thread-facts.talostool"),
            "--target",
            "talon",
            "--host-config",
            str(HOST / "host.toml"),
            "--persona-labels",
            "db.query:own",
            "--db",
            str(tmp_path / "host.db"),
            "--yes",
            "--format",
            "json",
            "--input",
            '{"facts": ["x"]}',
        ]
    )
    result = orjson.loads(capsys.readouterr().out)
    assert code == 1
    assert result["error"]["code"] == "RUN_LABEL_DENIED"
