"""`forgec tools …`: what a person types and sees, JSON shapes of SPEC §10, exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from test_store import tool

from forgec.cli import main


def forge(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    def write(name: str, version: int, parent: int | None, *caps: str) -> str:
        path = tmp_path / f"{name}.v{version}.talostool"
        path.write_bytes(tool(version, parent, *caps))
        return str(path)

    return {"store": str(tmp_path / "tools.db"), "db": str(tmp_path / "host.db"), "write": write}


def test_install_list_enable_run_upgrade_rollback(capsys: Any, env: dict[str, Any]) -> None:
    store = ["--store", env["store"]]
    v1 = env["write"]("t", 1, None, "tasks.list")
    code, out, _ = forge(capsys, "tools", "install", v1, *store, "--format", "json")
    assert code == 0
    report = orjson.loads(out)
    assert report["ok"] is True and report["installed"] == {"id": "demo.tool", "version": 1}
    assert set(report) == {"path", "ok", "diagnostics", "installed"}

    code, out, _ = forge(capsys, "tools", "list", *store, "--format", "json")
    assert orjson.loads(out) == [
        {
            "name": "dynamic:demo.tool",
            "id": "demo.tool",
            "version": 1,
            "enabled": False,
            "risk": "R1",
            "powers": ["Read"],
        }
    ]

    # off: run is refused
    code, _, err = forge(capsys, "tools", "run", "demo.tool", *store, "--db", env["db"])
    assert code == 1 and "is off" in err

    # no terminal and no --yes: refused, and it says how to consent
    code, _, err = forge(capsys, "tools", "enable", "dynamic:demo.tool", *store)
    assert code == 1 and "pass --yes" in err and "Demo tool" in err
    code, out, _ = forge(capsys, "tools", "enable", "demo.tool", *store, "--yes")
    assert code == 0 and "dynamic:demo.tool v1 is on" in out

    code, out, _ = forge(
        capsys, "tools", "run", "demo.tool", *store, "--db", env["db"], "--format", "json"
    )
    assert code == 0, out
    assert orjson.loads(out) == {
        "status": "ok",
        "output": {"items": []},
        "error": None,
        "transitions": 2,
        "compensations": [],
    }

    # an upgrade that grows: off after install, consent asked again with what grew
    v2 = env["write"]("t", 2, 1, "tasks.list", "tasks.create")
    assert forge(capsys, "tools", "install", v2, *store)[0] == 0
    code, _, err = forge(capsys, "tools", "enable", "demo.tool", *store)
    assert code == 1
    assert "What changed from v1 (a person) to v2 (a person)" in err
    assert "+ operation: tasks.create" in err
    assert forge(capsys, "tools", "enable", "demo.tool", *store, "--yes")[0] == 0

    # an upgrade that does less asks too: consent is bound to the hash only
    v3 = env["write"]("t", 3, 2, "tasks.list")
    assert forge(capsys, "tools", "install", v3, *store)[0] == 0
    code, out, err = forge(capsys, "tools", "enable", "demo.tool", *store)
    assert code == 1 and "- operation: tasks.create" in err and "consent not given" in err
    assert forge(capsys, "tools", "enable", "demo.tool", *store, "--yes")[0] == 0

    code, out, _ = forge(capsys, "tools", "versions", "demo.tool", *store, "--format", "json")
    versions = orjson.loads(out)
    assert [(v["version"], v["parentVersion"], v["current"]) for v in versions] == [
        (1, None, False),
        (2, 1, False),
        (3, 2, True),
    ]
    assert all(v["hash"].startswith("sha256:") for v in versions)
    assert len({v["hash"] for v in versions}) == 3

    code, out, _ = forge(capsys, "tools", "rollback", "demo.tool", *store)
    assert code == 0 and "v2 is current again, and the tool is off" in out
    code, out, _ = forge(capsys, "tools", "list", *store, "--format", "json")
    assert orjson.loads(out)[0]["version"] == 2 and orjson.loads(out)[0]["enabled"] is False

    # the number 3 is taken forever
    code, out, _ = forge(capsys, "tools", "install", v3, *store, "--format", "json")
    assert code == 1 and orjson.loads(out)["installed"] is None


def test_refusals_and_exit_codes(capsys: Any, env: dict[str, Any], tmp_path: Path) -> None:
    store = ["--store", env["store"]]
    v1 = env["write"]("t", 1, None, "tasks.list")
    assert forge(capsys, "tools", "install", v1, *store)[0] == 0
    code, _, err = forge(capsys, "tools", "rollback", "demo.tool", *store)
    assert code == 1 and "first version" in err and "Traceback" not in err
    code, _, err = forge(capsys, "tools", "show", "nope.tool", *store)
    assert code == 2 and "no tool dynamic:nope.tool" in err
    code, _, err = forge(capsys, "tools", "install", str(tmp_path / "missing.talostool"), *store)
    assert code == 2 and "no such file" in err
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"garbage" * 200)
    code, _, err = forge(capsys, "tools", "list", "--store", str(junk))
    assert code == 2 and "not a forgec tool store" in err

    bad = orjson.loads(tool(2, None, "tasks.list"))
    bad["title"] = ""
    path = tmp_path / "bad.talostool"
    path.write_bytes(orjson.dumps(bad))
    code, out, err = forge(capsys, "tools", "install", str(path), *store)
    assert code == 1
    assert "FORGE_TITLE" in out and "FORGE_VERSION" in out  # every issue, store's included
    assert "not installed: 2 errors" in err


def test_text_output_a_person_reads(capsys: Any, env: dict[str, Any], snapshot: Any) -> None:
    store = ["--store", env["store"]]
    forge(capsys, "tools", "install", env["write"]("t", 1, None, "tasks.list"), *store)
    forge(capsys, "tools", "enable", "demo.tool", *store, "--yes")
    forge(
        capsys, "tools", "install", env["write"]("t", 2, 1, "tasks.list", "memory.create"), *store
    )
    _, listing, _ = forge(capsys, "tools", "list", *store)
    _, shown, _ = forge(capsys, "tools", "show", "demo.tool", *store)
    hash_line = next(line for line in shown.splitlines() if "sha256:" in line)
    shown = shown.replace(hash_line.split(", ")[-1], "sha256:<hash>")
    assert listing == snapshot(name="list")
    assert shown == snapshot(name="show")


def test_r4_tool_asks_every_run_from_the_cli(capsys: Any, env: dict[str, Any]) -> None:
    store = ["--store", env["store"]]
    v1 = env["write"]("web", 1, None, "net.http")
    assert forge(capsys, "tools", "install", v1, *store, "--target", "talon")[0] == 0
    code, out, err = forge(capsys, "tools", "enable", "demo.tool", *store, "--yes")
    assert code == 0 and "This tool is R4" in err and "asks before every run" in err
    code, out, _ = forge(capsys, "tools", "show", "demo.tool", *store, "--format", "json")
    shown = orjson.loads(out)
    assert shown["card"]["alwaysAsks"] is True and shown["enabled"] is True
    assert shown["consent"]["needed"] is True and shown["consent"]["reason"] == "always"
    # enabled, yet a run without --yes is refused: R4 consent is never remembered
    code, out, _ = forge(
        capsys, "tools", "run", "demo.tool", *store, "--db", env["db"], "--format", "json"
    )
    assert code == 1
    error = orjson.loads(out)["error"]
    assert error["code"] == "RUN_CONSENT_DENIED" and "--yes" in error["message"]
