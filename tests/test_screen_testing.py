"""The screen's part of SPEC §22, through the real `forgec screen` server: the review page runs
the current version's cases on a proposal and shows what differs (the same JSON as `forgec
tools review`), and "Try it (changes nothing)" runs the tool on the real host database with
every write held back — its rows byte-identical afterwards."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
from manifests import manifest_with_nodes
from test_screen import Screen, forgec
from test_tool_tests_stored import CASE, _proposal_manifest

from forgec.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

FILER = manifest_with_nodes(
    [
        {
            "id": "file",
            "type": "capability",
            "capability": "tasks.create",
            "input": {"title": {"$ref": "input.title"}},
            "target": "made",
            "next": "list",
        },
        {
            "id": "list",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"status": "open"},
            "target": "open",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"open": {"$ref": "open.items"}}},
    ],
    id="filer",
    title="Filer",
    description="Files a task with the given title and lists the open ones.",
    inputSchema={
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
    },
)


def rows(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(conn.execute("SELECT * FROM tasks").fetchall(), key=repr)
    finally:
        conn.close()


def test_review_runs_the_cases_and_try_it_changes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "tools.db"
    for name in ("task-triage.forge", "task-triage.tests.toml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    assert (
        forgec(
            "tools", "install", str(tmp_path / "task-triage.forge"), "--store", str(store)
        ).returncode
        == 0
    )
    with Store(store) as s:
        made = s.install(
            orjson.dumps(_proposal_manifest()), target="talos", author="model", tests=[CASE]
        )
        assert made.status == "proposed"
    filer = tmp_path / "filer.talostool"
    filer.write_bytes(orjson.dumps(FILER))
    assert forgec("tools", "install", str(filer), "--store", str(store)).returncode == 0
    # the real host data: one task, made by a real run
    db = tmp_path / "host.db"
    config = tmp_path / "host.toml"
    config.write_text(f'db = "{db}"\n', encoding="utf-8")
    real = forgec("run", str(filer), "--db", str(db), "--yes", "--input", '{"title": "Real"}')
    assert real.returncode == 0, real.stderr
    before = rows(db)

    screen = Screen(store, "--host-config", str(config))
    try:
        with screen.client() as c:
            page = c.get("/tools/task-triage/review/1").text
            assert (
                "Tests: v1&#39;s cases run on proposal 1" in page
                or "Tests: v1's cases run on proposal 1" in page
            )
            assert "an urgent task is filed as urgent" in page
            assert "Urgent: Server down" in page
            api = c.get("/api/tools/task-triage/review/1/tests").json()
            cli = forgec(
                "tools", "review", "task-triage", "--store", str(store), "--format", "json"
            )
            assert api == orjson.loads(cli.stdout)["tests"]

            token = screen.csrf(c, "/tools/filer/run")
            assert "Try it (changes nothing)" in c.get("/tools/filer/run").text
            tried = c.post(
                "/tools/filer/try",
                data={"csrf": token, "in.title": "Tried"},
                headers={"Origin": screen.origin},
            )
            assert tried.status_code == 200, tried.text
            assert "tried, nothing changed" in tried.text
            assert "tasks.create" in tried.text
            result = c.post(
                "/api/tools/filer/try",
                content=b'{"title": "Tried"}',
                headers={"Origin": screen.origin, "X-CSRF-Token": token},
            ).json()
            assert result["status"] == "ok"
            assert [s["capability"] for s in result["staged"]] == ["tasks.create"]
            # a later step read the held-back write, and the real row
            assert sorted(t["title"] for t in result["output"]["open"]) == ["Real", "Tried"]
    finally:
        screen.stop()
    assert rows(db) == before
