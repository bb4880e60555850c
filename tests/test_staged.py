"""Staged runs (SPEC §22) through the real command line, against a real host database and a
real loopback HTTP server: the run reads the real rows, a later step reads its own held-back
write, every write and send is listed with its input and labels, the server receives nothing,
and the database's rows are byte-identical afterwards."""

from __future__ import annotations

import http.server
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
from loopback import serving

ROOT = Path(__file__).resolve().parent.parent

TOOL = """\
tool staged-demo {
  version 1
  title "Staged demo"
  description "Files a task, lists the open ones, and posts the count to a hook."
  created "2026-12-01T09:00:00Z"
  parent null
  network allowlist ["hook.example.com"]
  input {type: "object", properties: {port: {type: "integer"}}, required: ["port"]}

  flow entry file max 8 {
    file: made = call tasks.create {title: "From the staged run"} -> list
    list: open = call tasks.list {status: "open"} -> post
    post: sent = call net.http {
      method: "POST",
      url: "http://hook.example.com:{{input.port}}/count",
      body: "{{open.items}}",
      timeoutMs: 5000
    } -> done
    done: return {open: $open.items, status: $sent.status}
  }
}
"""


def forgec(*args: str, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ)
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'"
            )
        ]
        return {
            t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables
        }
    finally:
        conn.close()


class Counting(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


def test_a_staged_run_changes_nothing_and_sends_nothing(tmp_path: Path) -> None:
    tool = tmp_path / "staged-demo.forge"
    tool.write_text(TOOL, encoding="utf-8")
    db = tmp_path / "host.db"
    # the real data: one open task, made by a real run of the example
    real = forgec(
        "run",
        str(ROOT / "examples/note-updater.forge"),
        "--db",
        str(db),
        "--yes",
        "--input",
        '{"query": "x", "line": "y"}',
    )
    assert real.returncode == 1  # NOTE_NOT_FOUND: the database exists, migrated
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO tasks (id, title, notes, status, created_at, updated_at) "
        "VALUES ('t-real', 'Real task', '', 'open', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
    )
    conn.commit()
    conn.close()
    before = rows(db)

    with serving(Counting, seen=[]) as server:
        port = server.server_address[1]
        common = [
            "run",
            str(tool),
            "--db",
            str(db),
            "--yes",
            "--target",
            "talon",
            "--resolve",
            f"hook.example.com:{port}:127.0.0.1",
            "--input",
            orjson.dumps({"port": port}).decode(),
            "--format",
            "json",
        ]
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        stopped = forgec(*common, "--staged", tmp=scratch)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        result = orjson.loads(stopped.stdout)
        assert result["status"] == "staged"
        assert result["stoppedAt"] == "post"
        assert [(s["node"], s["capability"]) for s in result["staged"]] == [
            ("file", "tasks.create"),
            ("post", "net.http"),
        ]
        post = result["staged"][1]
        assert post["input"]["url"] == f"http://hook.example.com:{port}/count"
        assert "private:tasks.list" in post["labels"]
        # the body holds both tasks: the real one, and the one this run held back
        assert "Real task" in post["input"]["body"]
        assert "From the staged run" in post["input"]["body"]

        mocks = tmp_path / "mocks.toml"
        mocks.write_text(
            '[[mock]]\nstep = "post"\nresult = {status = 202, headers = {}, body = ""}\n',
            encoding="utf-8",
        )
        done = forgec(*common, "--staged", "--mock", str(mocks), tmp=scratch)
        assert done.returncode == 0, done.stdout + done.stderr
        result = orjson.loads(done.stdout)
        assert result["status"] == "ok"
        assert result["output"]["status"] == 202
        titles = sorted(t["title"] for t in result["output"]["open"])
        assert titles == ["From the staged run", "Real task"]
        text = forgec(*common[:-2], "--staged", "--mock", str(mocks))
        assert "held back (nothing was written or sent):" in text.stdout
        assert server.seen == []  # nothing reached the server

    assert rows(db) == before  # byte-identical rows
    assert list(scratch.iterdir()) == []  # the staged copies are gone


def test_a_mock_the_host_could_not_return_is_refused(tmp_path: Path) -> None:
    tool = tmp_path / "staged-demo.forge"
    tool.write_text(TOOL, encoding="utf-8")
    mocks = tmp_path / "mocks.toml"
    mocks.write_text('[[mock]]\nstep = "post"\nresult = {status = "fine"}\n', encoding="utf-8")
    done = forgec(
        "run",
        str(tool),
        "--db",
        str(tmp_path / "h.db"),
        "--yes",
        "--target",
        "talon",
        "--input",
        '{"port": 1}',
        "--staged",
        "--mock",
        str(mocks),
    )
    assert done.returncode == 2
    assert "net.http never returns this" in done.stderr
    assert "Traceback" not in done.stderr


def test_mock_needs_staged(tmp_path: Path) -> None:
    done = forgec(
        "run",
        str(ROOT / "examples/task-triage.forge"),
        "--mock",
        str(tmp_path / "m.toml"),
    )
    assert done.returncode == 2
    assert "--mock answers held-back sends: it needs --staged" in done.stderr


def test_tools_run_staged_tries_a_stored_tool_that_is_off(tmp_path: Path) -> None:
    tool = tmp_path / "staged-demo.forge"
    tool.write_text(TOOL, encoding="utf-8")
    store = tmp_path / "tools.db"
    db = tmp_path / "host.db"
    installed = forgec("tools", "install", str(tool), "--store", str(store), "--target", "talon")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # off: a real run is refused, a staged one (which changes nothing) is not
    real = forgec("tools", "run", "staged-demo", "--store", str(store), "--db", str(db), "--yes")
    assert real.returncode == 1 and "is off" in real.stderr + real.stdout
    with serving(Counting, seen=[]) as server:
        port = server.server_address[1]
        done = forgec(
            "tools",
            "run",
            "staged-demo",
            "--store",
            str(store),
            "--db",
            str(db),
            "--yes",
            "--staged",
            "--format",
            "json",
            "--input",
            orjson.dumps({"port": port}).decode(),
            "--resolve",
            f"hook.example.com:{port}:127.0.0.1",
        )
        assert server.seen == []
    assert done.returncode == 0, done.stdout + done.stderr
    result = orjson.loads(done.stdout)
    assert result["status"] == "staged"
    assert [s["capability"] for s in result["staged"]] == ["tasks.create", "net.http"]
    assert not db.exists() or rows(db).get("tasks", []) == []
