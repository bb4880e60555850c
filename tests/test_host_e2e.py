"""Whole runs on the reference host: real manifests checked, lowered and run by the VM against
a real SQLite file (and a loopback HTTP server), with compensations undoing a failed run."""

from __future__ import annotations

import copy
import http.server
import json
import sqlite3
from pathlib import Path

import pytest
from loopback import serving, tls_server_context
from manifests import example

import forgec
from forgec.host import HostOptions, open_host
from forgec.host.config import ChannelConfig, HostConfig
from forgec.runtime import run


def _run(manifest: dict, inp, host, target: str = "talon"):
    program = forgec.lower(manifest, target=target)
    return run(program, inp, host=host, consent=lambda request: True)


def _labels(manifest: dict, target: str = "talon") -> tuple[str, ...]:
    report = forgec.check(json.dumps(manifest), target=target)
    return tuple(report.marks.labels)


def test_thread_facts_example(tmp_path: Path) -> None:
    m = example("talon-thread-facts")
    opts = HostOptions(
        db=tmp_path / "h.db", default_labels=_labels(m), config=HostConfig(thread="th")
    )
    with open_host(opts) as host:
        result = _run(m, {"facts": ["likes tea", "lives in Lyon"]}, host)
    assert result.ok, result.to_json()
    values = [i["value"] for i in result.to_json()["output"]["items"]]
    assert values == ["likes tea", "lives in Lyon"]


def test_failed_run_undoes_memory_writes(tmp_path: Path) -> None:
    m = example("talon-thread-facts")
    bad = copy.deepcopy(m)
    # make the run fail after the loop: the writes must be undone, in reverse order
    bad["flow"]["nodes"][0]["next"] = "boom"
    bad["flow"]["nodes"].append(
        {"id": "boom", "type": "fail", "code": "STOP_HERE", "message": "stop after writing"}
    )
    bad["flow"]["nodes"] = [n for n in bad["flow"]["nodes"] if n["id"] not in ("list", "done")]
    bad["outputSchema"] = {"type": "object"}
    bad["ui"] = {"title": "x", "values": []}
    db = tmp_path / "h.db"
    with open_host(
        HostOptions(db=db, default_labels=_labels(bad), config=HostConfig(thread="th"))
    ) as host:
        host.call(
            "memory.access",
            {"operation": "write", "key": "fact-0", "value": "old"},
            forgec.runtime.CallContext(tool_id="seed", tool_version=1, node_id="seed"),
        )
        result = _run(bad, {"facts": ["a", "b", "c"]}, host)
    out = result.to_json()
    assert out["status"] == "failed" and out["error"]["code"] == "STOP_HERE"
    assert [c["status"] for c in out["compensations"]] == ["undone"] * 3
    rows = sqlite3.connect(db).execute("SELECT key, value FROM memory_items").fetchall()
    assert rows == [("fact-0", "old")]  # fact-0 restored, fact-1/2 removed


def test_failed_run_cancels_created_task(tmp_path: Path) -> None:
    manifest = {
        "schema": "talos.local-tool.v1",
        "id": "make-then-fail",
        "version": 1,
        "title": "Make then fail",
        "description": "Creates a task, then fails.",
        "createdAt": "2026-11-02T09:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "flow": {
            "entry": "make",
            "maxTransitions": 10,
            "nodes": [
                {
                    "id": "make",
                    "type": "capability",
                    "capability": "tasks.create",
                    "input": {"title": "Temporary"},
                    "target": "task",
                    "compensation": "tasks.setStatus",
                    "next": "stop",
                },
                {"id": "stop", "type": "fail", "code": "NOPE", "message": "failing on purpose"},
            ],
        },
    }
    db = tmp_path / "h.db"
    with open_host(HostOptions(db=db)) as host:
        result = _run(manifest, {}, host, target="talos")
    out = result.to_json()
    assert out["status"] == "failed" and out["compensations"][0]["status"] == "undone"
    assert sqlite3.connect(db).execute("SELECT title, status FROM tasks").fetchall() == [
        ("Temporary", "cancelled")
    ]


def test_weekly_scheduler_example(tmp_path: Path) -> None:
    m = example("talon-weekly-scheduler")
    personas = tmp_path / "personas"
    (personas / "assistant" / "prompts").mkdir(parents=True)
    (personas / "assistant" / "persona.md").write_text("# Assistant\n")
    (personas / "assistant" / "prompts" / "weekly-check-in.md").write_text("How was the week?\n")
    cfg = HostConfig(personas_dir=personas, channels={"general": ChannelConfig("general")})
    db = tmp_path / "h.db"
    with open_host(HostOptions(db=db, config=cfg, default_labels=_labels(m))) as host:
        result = _run(m, {}, host)
    assert result.ok, result.to_json()
    sid = result.to_json()["output"]["scheduleId"]
    with open_host(HostOptions(db=db, config=cfg, default_labels=_labels(m))) as host:
        listed = host.call(
            "schedule.manage",
            {"action": "list"},
            forgec.runtime.CallContext(tool_id="x", tool_version=1, node_id="n"),
        )
    assert [s["scheduleId"] for s in listed["schedules"]] == [sid]
    # without the channel the announce step fails and the schedule is deleted again
    cfg2 = HostConfig(personas_dir=personas)
    with open_host(HostOptions(db=db, config=cfg2, default_labels=_labels(m))) as host:
        failed = _run(m, {}, host).to_json()
        assert failed["status"] == "failed" and "unknown channel" in failed["error"]["message"]
        assert failed["compensations"][0]["status"] == "undone"
    ids = [r[0] for r in sqlite3.connect(db).execute("SELECT id FROM schedules")]
    assert ids == [sid]


def test_db_digest_example_with_replayed_model(tmp_path: Path) -> None:
    m = example("talon-db-digest")
    replay = tmp_path / "answers.json"
    replay.write_text(json.dumps([{"node": "digest", "output": "- said hi"}]))
    cfg = HostConfig(
        channels={
            "team": ChannelConfig("team", connector="slack"),
            "general": ChannelConfig("general"),
        }
    )
    db = tmp_path / "h.db"
    with open_host(
        HostOptions(
            db=db, config=cfg, replay=replay, default_labels=(*_labels(m), "channel.send:general")
        )
    ) as host:
        ctx = forgec.runtime.CallContext(tool_id="x", tool_version=1, node_id="n")
        host.call("channel.send", {"channelId": "general", "content": "hi"}, ctx)
        result = _run(m, {}, host)
    out = result.to_json()
    assert out["status"] == "ok", out
    content = (
        sqlite3.connect(db)
        .execute("SELECT content FROM messages WHERE channel_id = 'team'")
        .fetchone()[0]
    )
    assert content.strip() == "*Digest*\n\n• said hi"


class _Status(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.auth.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        body = b'{"state": "success"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def status_server(tmp_path_factory):
    # behind TLS: a credential is only attached to an https request (SPEC §14)
    pytest.importorskip("cryptography")
    context, ca_file = tls_server_context(tmp_path_factory.mktemp("tls"), ("api.github.com",))
    with serving(_Status, tls=context, auth=[], ca_file=ca_file) as srv:
        yield srv


def test_http_tool_run_with_credential_and_override(tmp_path: Path, status_server) -> None:
    m = example("talon-status-check")
    port = status_server.server_address[1]
    node = m["flow"]["nodes"][0]
    node["input"]["url"] = {"$template": f"https://api.github.com:{port}/repos/{{{{input.repo}}}}"}
    opts = HostOptions(
        db=tmp_path / "h.db",
        config=HostConfig(ca_file=status_server.ca_file),
        default_labels=_labels(m),
        resolve=(f"api.github.com:{port}:127.0.0.1",),
        environ={"FORGEC_CREDENTIAL_GITHUB": "token abc"},
    )
    with open_host(opts) as host:
        out = _run(m, {"repo": "o/r"}, host).to_json()
    assert out["status"] == "ok", out
    assert out["output"] == {"httpStatus": 200, "body": '{"state": "success"}'}
    assert status_server.auth == ["token abc"]
    with open_host(
        HostOptions(db=tmp_path / "h.db", default_labels=_labels(m), environ={})
    ) as host:
        out = _run(m, {"repo": "o/r"}, host).to_json()
    assert out["error"]["code"] == "RUN_CREDENTIAL_MISSING"
