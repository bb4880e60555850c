"""The installed-tools store: versions, refusals, rollback, consent, crash safety, bad files."""

from __future__ import annotations

import copy
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes
from strategies import json_values, scalars

from forgec.store import ConsentRequired, Store, StoreError, ToolNotFound, content_hash

TESTS = Path(__file__).parent


def open_store(path: Path, **kw: Any) -> Store:
    """The real store: the real check, lowering and marks (the child process uses it too)."""
    return Store(path, **kw)


# -- manifests ---------------------------------------------------------------------------------


def _ret() -> dict[str, Any]:
    return {"id": "done", "type": "return", "value": {"$ref": "found"}}


def tool(version: int, parent: int | None, *caps: str, tool_id: str = "demo.tool") -> bytes:
    nodes: list[dict[str, Any]] = []
    for i, cap in enumerate(caps):
        inputs = {
            "tasks.list": {"limit": 5},
            "tasks.create": {"title": "x"},
            "memory.create": {"text": "x"},
            "net.http": {"method": "GET", "url": "https://api.example.com/x"},
        }
        nodes.append(
            {
                "id": f"s{i}",
                "type": "capability",
                "capability": cap,
                "input": inputs[cap],
                "target": "found",
                "next": f"s{i + 1}" if i + 1 < len(caps) else "done",
            }
        )
    nodes.append(_ret() if caps else {"id": "done", "type": "return", "value": 1})
    network: dict[str, Any] = (
        {"mode": "allowlist", "hosts": ["api.example.com"]}
        if "net.http" in caps
        else {"mode": "forbidden"}
    )
    m = manifest_with_nodes(
        nodes, id=tool_id, version=version, parentVersion=parent, network=network
    )
    return orjson.dumps(m)


def target_for(*caps: str) -> str:
    return "talon" if "net.http" in caps else "talos"


def install(store: Store, version: int, parent: int | None, *caps: str, **kw: Any) -> Any:
    return store.install(tool(version, parent, *caps, **kw), target=target_for(*caps))


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_store(tmp_path / "tools.db") as s:
        yield s


# -- install and versions ----------------------------------------------------------------------


def test_install_keeps_version_off_with_hash_manifest_and_program(store: Store) -> None:
    result = install(store, 1, None, "tasks.list")
    assert result.installed == ("demo.tool", 1)
    assert result.to_json()["installed"] == {"id": "demo.tool", "version": 1}
    [summary] = store.tools()
    assert summary.to_json() == {
        "name": "dynamic:demo.tool",
        "id": "demo.tool",
        "version": 1,
        "enabled": False,
        "risk": "R1",
        "powers": ["Read"],
    }
    stored = store.get("dynamic:demo.tool")
    assert stored.manifest["version"] == 1 and stored.program
    assert stored.marks.risk == "R1"
    from forgec import __version__

    assert stored.hash == content_hash(
        stored.manifest,
        stored.program,
        __version__,
        target=stored.target,
        marks=stored.marks.to_json(),
        effects=stored.effects,
    )
    assert stored.hash.startswith("sha256:") and len(stored.hash) == 71


def test_hash_depends_on_manifest_program_target_and_version() -> None:
    m, p = {"id": "a"}, {"ops": [1]}
    kw: dict[str, Any] = {"target": "talos", "marks": {"risk": "R1"}, "effects": {}}
    base = content_hash(m, p, "0.1.0", **kw)
    assert base == content_hash(copy.deepcopy(m), copy.deepcopy(p), "0.1.0", **kw)
    assert base != content_hash({"id": "b"}, p, "0.1.0", **kw)
    assert base != content_hash(m, {"ops": [2]}, "0.1.0", **kw)
    assert base != content_hash(m, p, "0.1.1", **kw)
    assert base != content_hash(m, p, "0.1.0", **{**kw, "target": "talon"})
    assert base != content_hash(m, p, "0.1.0", **{**kw, "marks": {"risk": "R0"}})
    assert base != content_hash(m, p, "0.1.0", **kw, author="model")


def test_check_errors_install_nothing_and_list_every_issue(store: Store) -> None:
    bad = orjson.loads(tool(1, None, "tasks.list"))
    bad["id"] = "Bad Id"
    bad["title"] = ""
    result = store.install(orjson.dumps(bad))
    assert result.installed is None
    codes = {d.code for d in result.report.diagnostics}
    assert {"FORGE_ID", "FORGE_TITLE"} <= codes
    assert store.tools() == []


def test_duplicate_version_is_refused(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    again = install(store, 1, None, "tasks.list")
    assert again.installed is None
    messages = [(d.code, d.path, d.message) for d in again.report.diagnostics]
    assert any(
        c == "FORGE_VERSION" and p == "/version" and "already installed" in m
        for c, p, m in messages
    )
    assert any(p == "/parentVersion" for _, p, _ in messages)  # null, but 1 is stored
    assert [v.version for v in store.versions("demo.tool")] == [1]


def test_parent_must_name_latest_version(store: Store) -> None:
    first_wrong = install(store, 2, 1, "tasks.list")
    assert first_wrong.installed is None
    assert (
        "no version of dynamic:demo.tool is installed" in first_wrong.report.diagnostics[-1].message
    )
    install(store, 1, None, "tasks.list")
    install(store, 2, 1, "tasks.list")
    wrong = install(store, 3, 1, "tasks.list")
    assert wrong.installed is None
    [d] = [d for d in wrong.report.diagnostics if d.is_error]
    assert d.path == "/parentVersion" and "latest version of dynamic:demo.tool, 2" in d.message
    assert d.hint == "set parentVersion to 2"
    assert install(store, 3, 2, "tasks.list").installed == ("demo.tool", 3)
    assert [(v.version, v.parent_version) for v in store.versions("demo.tool")] == [
        (1, None),
        (2, 1),
        (3, 2),
    ]


def test_rollback_moves_back_turns_off_and_numbers_are_never_reused(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    with pytest.raises(StoreError, match="first version"):
        store.rollback("demo.tool")
    install(store, 2, 1, "tasks.list")
    store.enable("demo.tool", consent=True)
    assert store.tool("demo.tool").enabled
    assert store.rollback("demo.tool") == 1
    summary = store.tool("demo.tool")
    assert (summary.version, summary.enabled, summary.latest_version) == (1, False, 2)
    assert [v.to_json()["current"] for v in store.versions("demo.tool")] == [True, False]
    # version 2 is kept, so its number cannot be used again, nor can 2's parent be skipped
    reuse = install(store, 2, 1, "tasks.list")
    assert reuse.installed is None
    assert any("never reused" in d.message for d in reuse.report.diagnostics)
    assert install(store, 3, 2, "tasks.list").installed == ("demo.tool", 3)
    assert store.tool("demo.tool").version == 3


def test_enable_disable_and_unknown_tool(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    assert store.tool("demo.tool").enabled
    assert [v.tool_id for v in store.enabled_versions()] == ["demo.tool"]
    store.disable("dynamic:demo.tool")
    assert not store.tool("demo.tool").enabled
    assert store.enabled_versions() == []
    with pytest.raises(ToolNotFound, match=r"no tool dynamic:nope\.x"):
        store.enable("nope.x")
    with pytest.raises(ToolNotFound, match="is not a tool id"):
        store.versions("Bad Name")


def test_installing_a_new_version_turns_the_tool_off(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    install(store, 2, 1, "tasks.list")
    assert not store.tool("demo.tool").enabled


# -- consent -----------------------------------------------------------------------------------


def test_first_enable_needs_consent(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    status = store.consent_status("demo.tool")
    assert status.needed and status.reason == "first"
    assert status.growth == {
        "powers": ["Read"],
        "risk": ["R0 -> R1"],
        "operations": ["tasks.list"],
    }
    with pytest.raises(ConsentRequired, match="needs your consent"):
        store.enable("demo.tool")
    assert not store.tool("demo.tool").enabled
    store.enable("demo.tool", consent=True)
    assert store.has_consent("demo.tool")
    assert store.versions("demo.tool")[0].consent == "granted"


def test_an_upgrade_that_does_less_still_asks(store: Store) -> None:
    # consent is bound to the hash only (SPEC §14): no version inherits another's consent
    install(store, 1, None, "tasks.list", "tasks.create")
    store.enable("demo.tool", consent=True)
    install(store, 2, 1, "tasks.list")  # does less
    status = store.consent_status("demo.tool")
    assert status.needed and status.reason == "changed" and status.basis == 1
    with pytest.raises(ConsentRequired, match="not the version you agreed to"):
        store.enable("demo.tool")
    assert not store.has_consent("demo.tool")
    store.enable("demo.tool", consent=True)
    assert store.versions("demo.tool")[1].consent == "granted"


def test_upgrade_that_grows_asks_again_and_says_what_grew(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    install(store, 2, 1, "tasks.list", "memory.create")
    status = store.consent_status("demo.tool")
    assert status.needed and status.reason == "changed"
    assert status.growth == {
        "powers": ["Write"],
        "risk": ["R1 -> R3"],
        "operations": ["memory.create"],
    }
    with pytest.raises(ConsentRequired) as info:
        store.enable("demo.tool")
    assert info.value.status.basis == 1
    store.enable("demo.tool", consent=True)
    assert store.versions("demo.tool")[1].consent == "granted"
    # rolling back to v1 finds v1's own consent, for its very hash
    store.rollback("demo.tool")
    assert not store.consent_status("demo.tool").needed


def test_hosts_and_labels_growth_and_r4_never_remembered(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    install(store, 2, 1, "tasks.list", "net.http")
    status = store.consent_status("demo.tool")
    assert status.needed and status.always_asks and status.reason == "always"
    assert status.growth["network"] == ["api.example.com"]
    assert status.growth["labels"] == ["net.http:egress"]
    assert status.growth["powers"] == ["Network"]
    with pytest.raises(ConsentRequired, match="R4"):
        store.enable("demo.tool")
    store.enable("demo.tool", consent=True)
    assert store.tool("demo.tool").enabled
    assert store.versions("demo.tool")[1].consent is None  # no consent to run an R4 tool
    assert not store.has_consent("demo.tool")
    assert store.consent_status("demo.tool").needed  # and it asks again next time


# -- atomicity and bad files -------------------------------------------------------------------


def _child_install(db: str, source: str, target: str) -> None:
    """Run in a child process: install, but stop dead inside the transaction."""
    import time

    def hang(label: str) -> None:
        print(f"inside:{label}", flush=True)
        time.sleep(60)

    with open_store(Path(db), fault_hook=hang) as s:
        s.install(source.encode(), target=target)


def _snapshot(db: Path) -> list[Any]:
    conn = sqlite3.connect(db)
    try:
        return [
            conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
            for t in ("tools", "versions", "consents")
        ]
    finally:
        conn.close()


def test_a_crash_mid_install_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "tools.db"
    with open_store(db) as s:
        install(s, 1, None, "tasks.list")
        s.enable("demo.tool", consent=True)
    before = _snapshot(db)
    code = (
        f"import sys; sys.path.insert(0, {str(TESTS)!r}); import test_store; "
        "test_store._child_install(sys.argv[1], sys.argv[2], 'talos')"
    )
    source = tool(2, 1, "tasks.list", "tasks.create").decode()
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(db), source],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "inside:versions", child.stderr.read() if child.stderr else line
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    assert _snapshot(db) == before
    with open_store(db) as s:
        assert [v.version for v in s.versions("demo.tool")] == [1]
        assert s.tool("demo.tool").enabled
        assert install(s, 2, 1, "tasks.list").installed == ("demo.tool", 2)


def test_a_failure_inside_a_transaction_rolls_back(tmp_path: Path) -> None:
    def boom(label: str) -> None:
        if label == "tools":
            raise RuntimeError("disk on fire")

    with open_store(tmp_path / "t.db", fault_hook=boom) as s:
        with pytest.raises(RuntimeError):
            install(s, 1, None, "tasks.list")
        assert s.tools() == []
        assert s._read("SELECT count(*) FROM versions") == [(0,)]


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all, just some text\n" * 100)
    with pytest.raises(StoreError, match="not a forgec tool store"):
        Store(junk)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="SQLite database of something else"):
        Store(foreign)
    with pytest.raises(StoreError, match="is a directory"):
        Store(tmp_path)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 99, newer"):
        Store(db)


def test_store_uses_wal(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


_json = json_values(scalars(integers=st.integers(-5, 2**32), floats=None), max_size=3, max_leaves=8)
_fields = st.sampled_from(
    ["id", "version", "parentVersion", "title", "flow", "network", "inputSchema", "schema"]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200) | st.tuples(_fields, _json))
def test_install_never_raises_and_a_refusal_writes_nothing(case: Any) -> None:
    import tempfile

    if isinstance(case, bytes):
        source = case
    else:
        manifest = orjson.loads(tool(2, 1, "tasks.list"))
        manifest[case[0]] = case[1]
        source = orjson.dumps(manifest)
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "t.db") as s:
        install(s, 1, None, "tasks.list")
        before = _snapshot(Path(tmp) / "t.db")
        result = s.install(source)
        if result.installed is None:
            assert any(d.is_error for d in result.report.diagnostics)
            assert _snapshot(Path(tmp) / "t.db") == before
        else:
            assert result.report.ok


def test_a_new_version_of_an_r4_tool_starts_its_diff_where_the_person_turned_it_on(
    store: Store,
) -> None:
    install(store, 1, None, "tasks.list", "net.http")
    store.enable("demo.tool", consent=True)
    assert not store.has_consent("demo.tool")  # every run still asks
    install(store, 2, 1, "net.http")
    status = store.consent_status("demo.tool")
    assert status.needed and status.always_asks and status.basis == 1
    from forgec.store.diff import diff_versions

    diff = diff_versions(store, "demo.tool", status.basis, 2)
    assert {"kind": "operation", "text": "tasks.list"} in diff["effects"]["lost"]
