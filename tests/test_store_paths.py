"""The measured store defects (issue 22): a mistyped `--store` never becomes a new empty store;
a damaged row is listed as damaged with the way out; `forgec tools remove` (a person's act,
never over MCP) deletes a tool or one version, so version 1 can be installed again."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "examples" / "memory-capture.talostool"


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        capture_output=True,
        text=True,
        input=stdin if stdin is not None else "",
    )


@pytest.mark.parametrize(
    "command",
    [
        ["tools", "list"],
        ["tools", "show", "memory-capture"],
        ["tools", "enable", "memory-capture", "--yes"],
        ["tools", "versions", "memory-capture"],
        ["tools", "remove", "memory-capture", "--yes"],
    ],
)
def test_a_mistyped_store_is_refused_and_not_created(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "sub" / "tols.db"
    done = cli(*command, "--store", str(typo))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no tool store there" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not typo.exists() and not typo.parent.exists()


def test_install_creates_a_store_only_in_a_folder_that_exists(tmp_path: Path) -> None:
    missing = tmp_path / "nofolder" / "tools.db"
    done = cli("tools", "install", "--store", str(missing), str(TOOL))
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert not missing.parent.exists()
    store = tmp_path / "tools.db"
    assert cli("tools", "install", "--store", str(store), str(TOOL)).returncode == 0
    assert store.exists()


def _damage(store: Path, version: int = 1) -> None:
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE versions SET manifest = manifest || ' ' WHERE version = ?", (version,))


def test_a_damaged_row_is_listed_with_the_way_out_and_remove_restores_it(tmp_path: Path) -> None:
    store = str(tmp_path / "tools.db")
    assert cli("tools", "install", "--store", store, str(TOOL)).returncode == 0
    _damage(tmp_path / "tools.db")
    listed = cli("tools", "list", "--store", store)
    assert listed.returncode == 2
    assert "no tools installed" not in listed.stdout
    assert "dynamic:memory-capture" in listed.stdout and "damaged" in listed.stdout
    assert f"forgec tools remove memory-capture --version 1 --store {store}" in listed.stdout
    as_json = cli("tools", "list", "--store", store, "--format", "json")
    assert '"damaged": true' in as_json.stdout
    # reinstalling version 1 is refused while the damaged row is there ...
    assert cli("tools", "install", "--store", store, str(TOOL)).returncode != 0
    # ... the way out the listing names works
    removed = cli("tools", "remove", "memory-capture", "--version", "1", "--yes", "--store", store)
    assert removed.returncode == 0, removed.stderr
    assert "removed dynamic:memory-capture v1" in removed.stdout
    assert cli("tools", "list", "--store", store).stdout.strip() == "no tools installed"
    again = cli("tools", "install", "--store", store, str(TOOL))
    assert again.returncode == 0, again.stderr


def test_remove_asks_a_person_and_refuses_without_one(tmp_path: Path) -> None:
    store = str(tmp_path / "tools.db")
    assert cli("tools", "install", "--store", store, str(TOOL)).returncode == 0
    done = cli("tools", "remove", "memory-capture", "--store", store, stdin="y\n")
    assert done.returncode == 1 and "pass --yes" in done.stderr  # no terminal: no answer taken
    assert "dynamic:memory-capture" in cli("tools", "list", "--store", store).stdout
    unknown = cli("tools", "remove", "nothing-here", "--yes", "--store", store)
    assert unknown.returncode == 2 and "no tool dynamic:nothing-here" in unknown.stderr


def test_removing_the_current_version_makes_the_one_before_current_and_off(tmp_path: Path) -> None:
    from forgec.store import Store

    v2 = tmp_path / "v2.talostool"
    v2.write_text(
        TOOL.read_text()
        .replace('"version": 1', '"version": 2', 1)
        .replace('"parentVersion": null', '"parentVersion": 1', 1)
    )
    with Store(tmp_path / "tools.db") as store:
        store.install(TOOL.read_bytes(), path=str(TOOL), target="talos")
        result = store.install(v2.read_bytes(), path=str(v2), target="talos")
        assert result.ok, result
        assert store.tool("memory-capture").version == 2
        assert store.remove("memory-capture", 2) == [2]
        summary = store.tool("memory-capture")
        assert summary.version == 1 and not summary.enabled
        assert store.remove("memory-capture") == [1]
        assert store.tool_ids() == []


def test_remove_is_never_offered_over_mcp() -> None:
    pytest.importorskip("mcp")
    from forgec.mcp.listing import create_entry, host_entries

    every_label = [
        "net.http", "db.query:own", "schedule.manage", "channel.send:team", "memory.access:thread",
        "tool.create", "subagent.invoke", "persona.send:researcher",
    ]  # fmt: skip
    names = [e.name for e in host_entries(every_label)] + [create_entry().name]
    assert not any("remove" in n or "delete" in n for n in names), names
