"""`[tool.forgec]` / `forgec.toml` (SPEC §20): folders are checked recursively, each file with the
target its settings give, `exclude` leaves files out, `--target` overrides; the language
server reads the same settings."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgec.frontend.settings import SettingsError, clear_cache, expand, settings_for

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear_cache()


def test_check_dot_in_the_repository_checks_every_example_with_its_target() -> None:
    done = cli("check", ".", "--format", "json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    import json

    files = {f["path"] for f in json.loads(done.stdout)["files"]}
    examples = {
        str(p.relative_to(ROOT))
        for p in EXAMPLES.rglob("*")
        if p.suffix in (".forge", ".talostool")
    }
    assert files == examples  # every example, and nothing of tests/corpus (excluded)


def project(tmp_path: Path, settings: str, *, name: str = "pyproject.toml") -> Path:
    (tmp_path / name).write_text(settings, encoding="utf-8")
    (tmp_path / "tools" / "deep").mkdir(parents=True)
    shutil.copy(EXAMPLES / "talon-db-digest.forge", tmp_path / "tools" / "deep" / "digest.forge")
    shutil.copy(EXAMPLES / "weekly-review.talostool", tmp_path / "tools" / "weekly.talostool")
    (tmp_path / "tools" / "notes.txt").write_text("not a tool")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "b.forge").write_text("tool b {")
    return tmp_path


@pytest.mark.parametrize("name", ["pyproject.toml", "forgec.toml"])
def test_targets_by_glob_and_exclude(tmp_path: Path, name: str) -> None:
    table = "[tool.forgec]\n" if name == "pyproject.toml" else ""
    sub = "[tool.forgec.targets]\n" if name == "pyproject.toml" else "[targets]\n"
    root = project(
        tmp_path, f'{table}exclude = ["broken/**"]\n{sub}"tools/deep/*" = "talon"\n', name=name
    )
    done = cli("check", ".", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 files checked" in done.stderr
    # --target overrides the settings: the Talon tool fails under talos
    forced = cli("check", "--target", "talos", "tools", cwd=root)
    assert forced.returncode == 1 and "FORGE_CAPABILITY_UNKNOWN" in forced.stdout
    # a file named outright is checked even when excluded, unless --force-exclude
    assert cli("check", "broken/b.forge", cwd=root).returncode == 1
    assert cli("check", "--force-exclude", "broken/b.forge", cwd=root).returncode == 0


def test_the_nearest_settings_apply(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.forgec]\ntarget = "talos"\n')
    (root / "tools" / "deep" / "forgec.toml").write_text('target = "talon"\n')
    assert settings_for(root / "tools" / "deep" / "digest.forge").target == "talon"
    assert settings_for(root / "tools" / "weekly.talostool").target == "talos"
    assert cli("check", "tools", cwd=root).returncode == 0


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.forgec]\ntarget = "talon"\n')
    (root / "tools" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert settings_for(root / "tools" / "deep" / "digest.forge").target == "talon"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[tool.forgec]\ntarget = "tals"\n', "target must be one of talos, talon"),
        ("[tool.forgec]\ntargets = 3\n", "targets is a table"),
        ("[tool.forgec]\nexclud = []\n", "unknown key `exclud`"),
        ("[tool.forgec\n", "not valid TOML"),
    ],
)
def test_bad_settings_are_one_line(tmp_path: Path, text: str, words: str) -> None:
    root = project(tmp_path, text)
    done = cli("check", "tools", cwd=root)
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_folder_without_tools_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SettingsError):
        expand([str(tmp_path / "empty")])
    done = cli("check", str(tmp_path / "empty"))
    assert done.returncode == 2 and "no .forge or .talostool file" in done.stderr


def test_fmt_check_takes_folders(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.forgec]\nexclude = ["broken/**"]\n')
    assert cli("fmt", "--check", ".", cwd=root).returncode == 0
    (root / "tools" / "deep" / "digest.forge").write_text(
        (EXAMPLES / "talon-db-digest.forge").read_text().replace("  version 1", "version  1")
    )
    done = cli("fmt", "--check", ".", cwd=root)
    assert done.returncode == 1 and "digest.forge: not in canonical form" in done.stderr


def test_the_language_server_reads_the_same_settings(tmp_path: Path) -> None:
    pytest.importorskip("pygls")
    from forgec.lsp.server import ForgeLanguageServer

    root = project(tmp_path, '[tool.forgec.targets]\n"tools/deep/*" = "talon"\n')
    ls = ForgeLanguageServer()
    assert ls.target_for((root / "tools" / "deep" / "digest.forge").as_uri()) == "talon"
    assert ls.target_for((root / "tools" / "weekly.talostool").as_uri()) == "talos"
    assert ls.target_for("untitled:Untitled-1") == "talos"
    ls.set_target({"forgec": {"target": "talon"}})  # the client's setting overrides
    assert ls.target_for((root / "tools" / "weekly.talostool").as_uri()) == "talon"


def test_inspect_says_when_the_tool_does_not_check_under_its_target(tmp_path: Path) -> None:
    talon = EXAMPLES / "talon-status-check.forge"
    done = cli("inspect", "--target", "talos", str(talon))
    assert done.returncode == 1
    assert "does not check under --target talos" in done.stderr
    assert "it checks under --target talon" in done.stderr
    # without --target, the repository's settings pick talon: the real card, R4, no note
    done = cli("inspect", str(talon), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "R4" in done.stdout and done.stderr == ""
