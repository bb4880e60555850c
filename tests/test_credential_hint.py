"""`RUN_CREDENTIAL_MISSING` says how to give the credential (issue 22): the flag, the file's
format and the environment variable, and following it makes the check pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "examples" / "talon-status-check.forge"


def run(*extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "forgec", "run", str(TOOL), "--target", "talon", "--yes",
         "--input", '{"repo": "octo/cat"}', "--resolve", "api.github.com:443:127.0.0.1",
         *extra],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_the_missing_credential_error_says_how_to_supply_it(tmp_path: Path) -> None:
    done = run("--db", str(tmp_path / "host.db"))
    text = done.stdout + done.stderr
    assert "RUN_CREDENTIAL_MISSING" in text
    assert "--credentials FILE" in text and 'github = "..."' in text
    assert "FORGEC_CREDENTIAL_GITHUB" in text


def test_following_the_hint_gets_past_the_credential_check(tmp_path: Path) -> None:
    creds = tmp_path / "creds.toml"
    creds.write_text('github = "not-a-real-token"\n')
    done = run("--db", str(tmp_path / "host.db"), "--credentials", str(creds))
    assert "RUN_CREDENTIAL_MISSING" not in done.stdout + done.stderr


def test_the_explanation_says_it_too() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "forgec", "explain", "RUN_CREDENTIAL_MISSING"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert "--credentials FILE" in done.stdout and "FORGEC_CREDENTIAL_" in done.stdout
