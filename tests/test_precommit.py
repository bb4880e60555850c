"""The pre-commit hooks, run by the real `pre-commit` tool against a temporary repository.

pre-commit builds the hooks' environment from this checkout (`try-repo` takes the working tree
as it is, uncommitted changes included), so the test proves what a user's
`.pre-commit-config.yaml` would get: a clean file passes, a broken one fails with its diagnostic.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

pytest.importorskip("pre_commit")
pytestmark = pytest.mark.slow  # pre-commit builds a hook environment: .ci/run runs it


def _hooks() -> list[dict]:
    import yaml  # pre-commit depends on PyYAML

    return yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())


def test_hooks_name_the_compiler_extra_packages() -> None:
    """The hook environment gets what `forgec check` needs: the `compiler` extra's packages."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get(
        "optional-dependencies", {}
    )
    wanted = sorted(extras.get("compiler", []))
    for hook in _hooks():
        assert sorted(hook.get("additional_dependencies", [])) == wanted, hook["id"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is needed to test the pre-commit hooks")
    path = tmp_path_factory.mktemp("precommit-repo")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    shutil.copy(EXAMPLES / "task-triage.forge", path / "clean.forge")
    broken = (EXAMPLES / "task-triage.forge").read_text().replace("-> route", "-> rout")
    (path / "broken.forge").write_text(broken)
    messy = (EXAMPLES / "task-triage.forge").read_text().replace("  version 1", "version   1")
    (path / "messy.forge").write_text(messy)
    # the project's own settings reach the hooks: a Talon tool by glob, a broken file excluded
    shutil.copy(EXAMPLES / "talon-db-digest.forge", path / "talon-digest.forge")
    (path / "fixtures").mkdir()
    (path / "fixtures" / "broken.forge").write_text(broken)
    (path / "pyproject.toml").write_text(
        '[tool.forgec]\nexclude = ["fixtures/**"]\n[tool.forgec.targets]\n"talon-*" = "talon"\n'
    )
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    return path


def _try_repo(repo: Path, home: Path, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)  # the hook runs the forgec pre-commit installed, not this tree's
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), hook, "--files", *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("precommit-home")


def test_check_hook_passes_a_clean_file_and_fails_a_broken_one(repo: Path, home: Path) -> None:
    ok = _try_repo(repo, home, "forgec-check", "clean.forge")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _try_repo(repo, home, "forgec-check", "clean.forge", "broken.forge")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "broken.forge:" in bad.stdout and "FORGE_EDGE_MISSING" in bad.stdout
    assert "clean.forge:" not in bad.stdout


def test_fmt_hook_fails_a_file_that_is_not_canonical(repo: Path, home: Path) -> None:
    ok = _try_repo(repo, home, "forgec-fmt", "clean.forge")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _try_repo(repo, home, "forgec-fmt", "clean.forge", "messy.forge")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "messy.forge: not in canonical form" in bad.stdout


def test_hooks_read_the_projects_settings(repo: Path, home: Path) -> None:
    done = _try_repo(repo, home, "forgec-check", "talon-digest.forge", "fixtures/broken.forge")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FORGE_CAPABILITY_UNKNOWN" not in done.stdout  # checked as a Talon tool
    assert "FORGE_EDGE_MISSING" not in done.stdout  # the excluded file was left out
    fmt = _try_repo(repo, home, "forgec-fmt", "talon-digest.forge", "fixtures/broken.forge")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
