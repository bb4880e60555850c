"""SPEC §14 in the store: authors, proposals, consent bound to the hash and to effects,
integrity on every read, the schema-1 upgrade, and listing in one query."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from manifests import manifest_with_nodes
from test_store import install, open_store, tool

from forgec.store import ConsentRequired, Store, StoreDamaged, StoreError, ToolNotFound
from forgec.store import effects as fx
from forgec.store.integrity import legacy_hash


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_store(tmp_path / "tools.db") as s:
        yield s


def _source(version: int, parent: int | None, **overrides: Any) -> bytes:
    return orjson.loads(tool(version, parent, "tasks.create")) | overrides  # type: ignore[no-any-return]


def _bytes(m: dict[str, Any]) -> bytes:
    return orjson.dumps(m)


def _set_status(version: int, parent: int | None) -> bytes:
    """Same powers and risk as `tasks.create` (Write, R2) — a different operation."""
    nodes = [
        {
            "id": "s0",
            "type": "capability",
            "capability": "tasks.setStatus",
            "input": {"id": "t1", "status": "cancelled"},
            "target": "found",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"$ref": "found"}},
    ]
    return _bytes(manifest_with_nodes(nodes, id="demo.tool", version=version, parentVersion=parent))


# -- authors and proposals ---------------------------------------------------------------------


def test_a_models_first_version_is_installed_off_and_says_who_wrote_it(store: Store) -> None:
    result = store.install(tool(1, None, "tasks.list"), author="model", author_name="scout")
    assert result.status == "installed"
    stored = store.get("demo.tool")
    assert (stored.author, stored.author_name, stored.current, stored.enabled) == (
        "model",
        "scout",
        True,
        False,
    )
    assert stored.author_words == "a model (persona scout)"
    [info] = store.versions("demo.tool")
    assert info.to_json()["author"] == "model" and info.to_json()["status"] == "current"


def test_a_models_version_of_an_existing_tool_is_a_proposal(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    result = store.install(tool(2, 1, "tasks.list", "tasks.create"), author="model")
    assert result.ok and result.status == "proposed"
    summary = store.tool("demo.tool")
    assert (summary.version, summary.enabled, summary.proposed) == (1, True, (1,))
    assert summary.latest_version == 1  # a proposal is not a version of the lineage
    assert [
        (v.to_json()["status"], v.to_json()["version"], v.proposal)
        for v in store.versions("demo.tool")
    ] == [("current", 1, None), ("proposed", None, 1)]
    # a proposal while the tool is off leaves it off, too
    store.disable("demo.tool")
    store.install(tool(3, 2, "tasks.list"), author="model")
    assert store.tool("demo.tool").version == 1
    assert store.proposals("demo.tool") == [1, 2]


def test_accept_makes_a_proposal_current_and_off_and_reject_keeps_it(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    store.install(tool(2, 1, "tasks.list"), author="model")
    store.install(tool(3, 2, "tasks.list"), author="model")
    store.reject("demo.tool", 1)
    with pytest.raises(StoreError, match="was rejected"):
        store.accept("demo.tool", 1)
    accepted = store.accept("demo.tool", 2)  # it becomes v2: the lineage's next number
    assert accepted.current and not accepted.enabled and accepted.version == 2
    assert (accepted.manifest["version"], accepted.manifest["parentVersion"]) == (2, 1)
    assert store.tool("demo.tool").version == 2 and not store.tool("demo.tool").enabled
    with pytest.raises(ToolNotFound, match="no proposal 7"):
        store.accept("demo.tool", 7)
    statuses = {v.label: v.status for v in store.versions("demo.tool")}
    assert statuses == {"v1": "previous", "proposal 1": "rejected", "v2": "current"}
    # rollback never lands on a rejected version
    assert store.rollback("demo.tool") == 1


def test_refusals_coach_a_person_and_a_model_is_never_refused_on_numbers(store: Store) -> None:
    install(store, 1, None, "tasks.list")
    install(store, 2, 1, "tasks.list")
    person = store.install(tool(2, 1, "tasks.list"))
    said_to_person = " ".join(f"{d.message} {d.hint}" for d in person.report.diagnostics)
    assert "use version 3 with parentVersion 2" in said_to_person
    # the store numbers a model's version: its own numbers are neither checked nor used
    for numbers in ((2, 1), (1, None), (7, 5)):
        model = store.install(tool(*numbers, "tasks.list"), author="model")
        assert model.ok and not model.report.diagnostics, numbers
    assert store.proposals("demo.tool") == [1, 2, 3]


# -- consent bound to effects and the hash -----------------------------------------------------


def test_same_marks_but_a_new_operation_asks_again(store: Store) -> None:
    store.install(tool(1, None, "tasks.create"))
    store.enable("demo.tool", consent=True)
    store.install(_set_status(2, 1))
    assert store.get("demo.tool").marks.powers == ("Write",)
    status = store.consent_status("demo.tool")
    assert status.needed and status.reason == "changed"
    assert status.growth == {"operations": ["tasks.setStatus"]}
    with pytest.raises(ConsentRequired, match=r"not the version you agreed to \(v1\)"):
        store.enable("demo.tool")


def test_a_persons_version_within_the_effects_still_asks(store: Store) -> None:
    store.install(tool(1, None, "tasks.list", "tasks.create"))
    store.enable("demo.tool", consent=True)
    store.install(tool(2, 1, "tasks.create"))
    with pytest.raises(ConsentRequired):
        store.enable("demo.tool")
    assert not store.has_consent("demo.tool")


def test_a_new_trigger_asks_again(store: Store) -> None:
    store.install(tool(1, None, "tasks.create"))
    store.enable("demo.tool", consent=True)
    m = orjson.loads(tool(2, 1, "tasks.create"))
    m["triggers"] = [{"type": "schedule", "cron": "0 9 * * 1"}]
    store.install(_bytes(m))
    assert store.consent_status("demo.tool").growth == {"triggers": ["schedule 0 9 * * 1"]}


def test_a_models_version_never_inherits_consent(store: Store) -> None:
    install(store, 1, None, "tasks.list", "tasks.create")
    store.enable("demo.tool", consent=True)
    store.install(tool(2, 1, "tasks.list"), author="model")  # does less than v1
    assert store.accept("demo.tool", 1).version == 2
    status = store.consent_status("demo.tool")
    assert status.needed and status.reason == "changed" and status.basis == 1
    with pytest.raises(ConsentRequired, match="written by a model"):
        store.enable("demo.tool")
    store.enable("demo.tool", consent=True)  # a person's explicit yes
    assert store.has_consent("demo.tool")


def test_consent_is_bound_to_the_hash(store: Store, tmp_path: Path) -> None:
    install(store, 1, None, "tasks.list")
    store.enable("demo.tool", consent=True)
    conn = sqlite3.connect(tmp_path / "tools.db")
    with conn:  # the consent says it was given for other content
        conn.execute("UPDATE consents SET hash = 'sha256:' || hex(randomblob(32))")
    conn.close()
    assert not store.has_consent("demo.tool")
    assert store.consent_status("demo.tool").reason == "first"


def test_effects_growth_reads_flows_and_models() -> None:
    old = {"operations": [["memory.access", "*"]], "flows": [["input", "egress:net.http"]]}
    new = {
        "operations": [["memory.access", "delete"], ["net.http", "net.http"]],
        "flows": [["input", "egress:net.http"], ["private:notes.list", "egress:net.http"]],
        "model": {"privacy": "remote-allowed", "effort": "high"},
    }
    assert fx.growth(new, old) == {
        "operations": ["net.http"],
        "flows": ["private:notes.list → egress:net.http"],
        "model": ["a model step (remote-allowed, high)"],
    }
    local = {"model": {"privacy": "local-only", "effort": "low"}}
    assert fx.growth({"model": {"privacy": None, "effort": "low"}}, local) == {
        "model": ["privacy local-only -> any model"]
    }
    assert fx.growth(old, new) == {"operations": ["memory.access (any operation)"]}


def test_effects_take_the_flows_fact_when_the_checker_has_it(store: Store) -> None:
    from forgec.api import check

    report = check(tool(1, None, "tasks.list"))

    @attrs.frozen
    class Flow:
        source: str
        sink: str

    # the flows helper's fact, as it will be: a tuple of objects with string attributes
    facts = SimpleNamespace(
        **{f.name: getattr(report.facts, f.name) for f in attrs.fields(type(report.facts))},
        flows=(
            Flow("private:tasks.list", "egress:api.example.com"),
            Flow("external:news.example.com", "write:notes.create"),
            Flow("private:tasks.list", "output"),  # back to the caller: not a consent effect
            Flow("input", "egress:api.example.com"),
        ),
    )
    effects = fx.effects_from_report(attrs.evolve(report, facts=facts), "talos")
    assert effects["flows"] == [
        ["external:news.example.com", "write:notes.create"],
        ["private:tasks.list", "egress:api.example.com"],
    ]
    assert effects["operations"] == [["tasks.list", "tasks.list"]]


# -- integrity ---------------------------------------------------------------------------------


def test_enabled_versions_leaves_out_what_is_changed_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "tools.db"
    with open_store(db) as s:
        for name in ("aa.tool", "bb.tool", "cc.tool"):
            install(s, 1, None, "tasks.list", tool_id=name)
            s.enable(name, consent=True)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE versions SET manifest = replace(manifest, 'Demo', 'Evil')"
            " WHERE tool_id = 'bb.tool'"
        )
        conn.execute("UPDATE tools SET current_version = 4 WHERE id = 'cc.tool'")
    conn.close()
    problems: list[str] = []
    with open_store(db) as s:
        assert [v.tool_id for v in s.enabled_versions(on_problem=problems.append)] == ["aa.tool"]
        assert [v.tool_id for v in s.enabled_versions()] == ["aa.tool"]
        with pytest.raises(StoreDamaged, match="changed outside forgec"):
            s.get("bb.tool")
        with pytest.raises(StoreDamaged):
            s.tools()
        s.disable("bb.tool")  # turning a changed tool off is always allowed
    assert problems == [
        "dynamic:bb.tool left out: the stored version of dynamic:bb.tool v1 was changed "
        "outside forgec",
        "dynamic:cc.tool left out: the tool store is damaged: the current version v4 of "
        "dynamic:cc.tool is missing",
    ]


def test_listing_is_one_query_whatever_the_number_of_tools(tmp_path: Path) -> None:
    with open_store(tmp_path / "tools.db") as s:
        for i in range(40):
            install(s, 1, None, "tasks.list", tool_id=f"tool.{i:03d}")
            s.enable(f"tool.{i:03d}", consent=True)
        statements: list[str] = []
        s._conn.set_trace_callback(statements.append)
        assert len(s.enabled_versions()) == 40
        assert len(s.tools()) == 40
        s._conn.set_trace_callback(None)
    assert len(statements) == 2, statements


# -- schema 1 -> 2 -----------------------------------------------------------------------------

# the schema-1 tables exactly as forgec created them (before authors, proposals and effects)
SCHEMA_1 = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE tools (
    id TEXT PRIMARY KEY,
    current_version INTEGER NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE versions (
    tool_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    parent_version INTEGER,
    target TEXT NOT NULL,
    manifest TEXT NOT NULL,
    program TEXT NOT NULL,
    marks TEXT NOT NULL,
    hash TEXT NOT NULL,
    forgec_version TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    PRIMARY KEY (tool_id, version)
);
CREATE TABLE consents (
    tool_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('granted', 'carried')),
    carried_from INTEGER,
    marks TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (tool_id, version),
    FOREIGN KEY (tool_id, version) REFERENCES versions (tool_id, version)
);
INSERT INTO meta VALUES ('format', 'forgec.store'), ('schema', '1');
"""


def _schema_1_store(db: Path, *, tamper: bool = False) -> None:
    """A store as forgec wrote it before authors and effects: v1 consented, v2 current."""
    from forgec import __version__
    from forgec.api import check
    from forgec.backend import lower_report

    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_1)
    for version, parent in ((1, None), (2, 1)):
        report = check(tool(version, parent, "tasks.list"))
        manifest = orjson.dumps(report.manifest).decode()
        program = orjson.dumps(lower_report(report).to_json()).decode()
        digest = legacy_hash(manifest, program, __version__)
        if tamper and version == 2:
            program = program.replace('"limit":5', '"limit":50')
        conn.execute(
            "INSERT INTO versions VALUES (?, ?, ?, 'talos', ?, ?, ?, ?, ?, '2026-01-01T00:00:00Z')",
            (
                "demo.tool",
                version,
                parent,
                manifest,
                program,
                orjson.dumps(report.marks.to_json()).decode(),
                digest,
                __version__,
            ),
        )
    conn.execute(
        "INSERT INTO tools VALUES ('demo.tool', 2, 1, '2026-01-01T00:00:00Z',"
        " '2026-01-01T00:00:00Z')"
    )
    conn.execute(
        "INSERT INTO consents VALUES ('demo.tool', 1, 'granted', NULL, '{}',"
        " '2026-01-01T00:00:00Z')"
    )
    conn.execute(
        "INSERT INTO consents VALUES ('demo.tool', 2, 'carried', 1, '{}', '2026-01-01T00:00:00Z')"
    )
    conn.commit()
    conn.close()


def test_a_schema_1_store_is_upgraded_in_place(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _schema_1_store(db)
    with open_store(db) as s:
        versions = s.versions("demo.tool")
        assert [(v.author, v.status, v.problem) for v in versions] == [
            ("person", "previous", None),
            ("person", "current", None),
        ]
        # v1's consent is bound to its new hash; v2's was only carried (the old rule): not one
        assert s.has_consent("demo.tool", 1) and not s.has_consent("demo.tool")
        assert s.consent_status("demo.tool").reason == "changed"
        assert s.get("demo.tool").effects["operations"] == [["tasks.list", "tasks.list"]]
        assert [v.tool_id for v in s.enabled_versions()] == ["demo.tool"]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("4",)
    conn.close()


def test_a_row_changed_before_the_upgrade_is_not_blessed_by_it(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _schema_1_store(db, tamper=True)
    with open_store(db) as s:
        with pytest.raises(StoreDamaged, match=r"dynamic:demo\.tool v2 was changed outside"):
            s.get("demo.tool")
        assert s.get("demo.tool", 1).version == 1
        assert not any(v.version == 2 for v in s.enabled_versions())


# -- the person's commands ---------------------------------------------------------------------


def _cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    from forgec.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_review_json_and_list_show_the_waiting_proposal(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "tools.db"
    with open_store(db) as s:
        s.install(tool(1, None, "tasks.create"))
        s.enable("demo.tool", consent=True)
        s.install(_set_status(2, 1), author="model", author_name="scout")
    store = ["--store", str(db)]
    code, out, _ = _cli(capsys, "tools", "list", *store)
    assert code == 0 and "(proposal 1 waiting)" in out and "tools review" in out
    code, out, _ = _cli(capsys, "tools", "review", "demo.tool", *store, "--format", "json")
    assert code == 0
    review = orjson.loads(out)
    assert review["current"]["version"] == 1 and review["current"]["status"] == "current"
    assert review["proposal"]["proposal"] == 1 and review["proposal"]["status"] == "proposed"
    assert review["proposal"]["version"] is None
    assert review["proposal"]["card"]["author"] == "a model (persona scout)"
    assert review["proposal"]["consent"]["reason"] == "changed"
    assert review["diff"]["effects"] == {
        "gained": [{"kind": "operation", "text": "tasks.setStatus"}],
        "lost": [{"kind": "operation", "text": "tasks.create"}],
    }
    assert review["diff"]["to"] == {
        "version": None,
        "hash": review["proposal"]["hash"],
        "author": "model",
    }
    code, out, err = _cli(capsys, "tools", "show", "demo.tool", "--proposal", "1", *store)
    assert code == 0 and "Author   a model (persona scout)" in out
    assert "proposed by a model, not current" in out
    code, _, err = _cli(capsys, "tools", "accept", "demo.tool", "2", *store)
    assert code == 2 and "no proposal 2" in err
    code, _, err = _cli(capsys, "tools", "review", "demo.tool", "--proposal", "7", *store)
    assert code == 2 and err.startswith("forgec: error: dynamic:demo.tool has no proposal 7")


def test_enable_names_the_new_operation_of_a_persons_upgrade(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "tools.db"
    with open_store(db) as s:
        s.install(tool(1, None, "tasks.create"))
        s.enable("demo.tool", consent=True)
        s.install(_set_status(2, 1))
    code, out, err = _cli(capsys, "tools", "enable", "demo.tool", "--store", str(db))
    assert code == 1 and "nothing" not in out + err
    assert "What changed from v1 (a person) to v2 (a person)" in err
    assert "+ operation: tasks.setStatus" in err


_CAPS = st.sampled_from(["memory.access", "tasks.list", "net.http"])
_OPS = st.sampled_from(["read", "delete", "*", "tasks.list"])
_EFFECTS = st.fixed_dictionaries(
    {
        "operations": st.lists(st.tuples(_CAPS, _OPS).map(list), max_size=4),
        "hosts": st.lists(st.sampled_from(["a.example.com", "b.example.com"]), max_size=2),
        "flows": st.lists(
            st.tuples(st.sampled_from(["input", "private:notes.list"]), st.just("egress")).map(
                list
            ),
            max_size=2,
        ),
    }
)


def _covers(old: dict[str, Any], item: list[str], key: str) -> bool:
    return item in old[key] or (key == "operations" and [item[0], "*"] in old[key])


@given(new=_EFFECTS, old=_EFFECTS)
def test_nothing_grows_exactly_when_every_effect_is_covered(
    new: dict[str, Any], old: dict[str, Any]
) -> None:
    subset = all(_covers(old, i, k) for k in ("operations", "hosts", "flows") for i in new[k])
    assert (fx.growth(new, old) == {}) is subset
    assert fx.growth(new, new) == {}


def test_a_schema_2_store_moves_its_proposals_out_of_the_version_numbers(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    with open_store(db) as s:
        install(s, 1, None, "tasks.list")
    conn = sqlite3.connect(db)
    with conn:  # as schema 2 kept them: proposals under the numbers a model wrote
        for version, status in ((2, "proposed"), (3, "rejected"), (2147483647, "proposed")):
            conn.execute(
                "INSERT INTO versions SELECT tool_id, ?, 1, target, manifest, program, marks,"
                " hash, forgec_version, installed_at, author, NULL, ?, effects FROM versions"
                " WHERE version = 1",
                (version, status),
            )
        conn.execute("ALTER TABLE tools DROP COLUMN last_proposal")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    conn.close()
    with open_store(db) as s:
        assert s.proposals("demo.tool") == [1, 3]  # waiting; 2 was the rejected one
        assert s.get_proposal("demo.tool", 2).status == "rejected"
        assert s.tool("demo.tool").latest_version == 1
        assert install(s, 2, 1, "tasks.list").installed == ("demo.tool", 2)
        s.install(tool(9, 8, "tasks.list"), author="model")
        assert s.proposals("demo.tool") == [1, 3, 4]
