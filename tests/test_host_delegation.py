"""Delegation tools: sub-agents (built-in and registered), durable background tasks, personas
loaded from a folder and the durable A2A queue; nothing registered is a clear error."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")
LABELS = ("subagent.invoke", "subagent.background", "persona.send:*", "memory.access:thread")


@pytest.fixture
def personas(tmp_path: Path) -> Path:
    root = tmp_path / "personas"
    for name, first, skills in (
        ("assistant", "# Everyday assistant", ["chat"]),
        ("researcher", "# Deep research and web search specialist", ["web-research", "summarize"]),
        ("writer", "Plain first line", []),
    ):
        folder = root / name
        (folder / "prompts").mkdir(parents=True)
        (folder / "persona.md").write_text(f"{first}\n\nMore text.\n")
        if skills:
            (folder / "skills.txt").write_text("\n".join(skills) + "\n")
    (root / "researcher" / "labels.txt").write_text("net.http:egress\n")
    (root / "not-a-persona").mkdir()
    return root


def _open(tmp_path: Path, personas: Path | None = None, **kw):
    cfg_kw = {"persona": "assistant", "thread": "th", "personas_dir": personas}
    cfg_kw.update(kw.pop("config", {}))
    cfg = HostConfig(**cfg_kw)
    return open_host(HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=LABELS, **kw))


def _poll(fn, *, until, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if until(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


# --- personas --------------------------------------------------------------------------------


def test_persona_list_excludes_the_caller(tmp_path: Path, personas: Path) -> None:
    with _open(tmp_path, personas) as h:
        cards = h.call("persona.list", {}, CTX)
    assert cards == [
        {
            "name": "researcher",
            "description": "Deep research and web search specialist",
            "skills": ["web-research", "summarize"],
        },
        {"name": "writer", "description": "Plain first line", "skills": []},
    ]


def test_persona_folder_labels_are_the_default(tmp_path: Path, personas: Path) -> None:
    cfg = HostConfig(persona="researcher", personas_dir=personas)
    with open_host(
        HostOptions(db=tmp_path / "h.db", config=cfg, default_labels=("db.query:own",))
    ) as h:
        assert h.labels == frozenset({"net.http:egress"})
    with open_host(
        HostOptions(
            db=tmp_path / "h.db",
            config=HostConfig(persona="nobody"),
            default_labels=("db.query:own",),
        )
    ) as h:
        assert h.labels == frozenset({"db.query:own"})


# --- sub-agents ------------------------------------------------------------------------------


def test_unknown_subagent_lists_the_registered(tmp_path: Path) -> None:
    with _open(tmp_path) as h, pytest.raises(HostError) as info:
        h.call("subagent.invoke", {"name": "ghost"}, CTX)
    assert "ghost" in info.value.message and "memory-retriever" in info.value.message


def test_registered_subagent_result_is_wrapped(tmp_path: Path) -> None:
    seen = {}

    def echo(inp, ctx):
        seen.update(inp=inp, persona=ctx.persona, thread=ctx.thread)
        return {"echo": inp["x"] * 2}

    with _open(tmp_path, subagents={"echo": echo}) as h:
        res = h.call("subagent.invoke", {"name": "echo", "input": {"x": 21}}, CTX)
    assert res == {"result": {"echo": 42}}
    assert seen == {"inp": {"x": 21}, "persona": "assistant", "thread": "th"}


def test_a_built_in_name_keeps_its_shape_whoever_registers_it(tmp_path: Path) -> None:
    # `check` promised the tool's author the built-in's input shape: an embedder's function
    # under that name gets only inputs of that shape, checked before it runs
    seen: list[object] = []

    def mine(inp, ctx):
        seen.append(inp)
        return {"items": []}

    with _open(tmp_path, subagents={"memory-retriever": mine}) as h:
        with pytest.raises(HostError) as info:
            h.call("subagent.invoke", {"name": "memory-retriever", "input": {"q": "x"}}, CTX)
        assert "`query`" in info.value.message and seen == []
        h.call("subagent.invoke", {"name": "memory-retriever", "input": {"query": "x"}}, CTX)
    assert seen == [{"query": "x"}]


def test_memory_retriever_ranks_the_threads_items(tmp_path: Path) -> None:
    with _open(tmp_path) as h:
        for key, value in (
            ("pet", "the cat is called Miso"),
            ("food", "cat likes tuna; cat!"),
            ("car", "blue car"),
        ):
            h.call("memory.access", {"operation": "write", "key": key, "value": value}, CTX)
        res = h.call(
            "subagent.invoke", {"name": "memory-retriever", "input": {"query": "cat"}}, CTX
        )["result"]
    assert [i["key"] for i in res["items"]] == ["food", "pet"]
    with _open(tmp_path, config={"thread": "elsewhere"}) as h:  # another thread's items: none
        res = h.call(
            "subagent.invoke", {"name": "memory-retriever", "input": {"query": "cat"}}, CTX
        )["result"]
    assert res == {"items": []}


def test_file_searcher(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("nothing here\n")
    (root / "sub" / "b.md").write_text("intro\nforgec runs forged tools; forgec checks them\n")
    (root / "c.txt").write_text("one mention of forgec\n")
    (root / "bin.dat").write_bytes(b"\0forgec forgec forgec")
    with _open(tmp_path) as h, pytest.raises(HostError, match="no roots"):
        h.call("subagent.invoke", {"name": "file-searcher", "input": {"query": "forgec"}}, CTX)
    with _open(tmp_path, config={"file_searcher_roots": (root,)}) as h:
        res = h.call(
            "subagent.invoke", {"name": "file-searcher", "input": {"query": "forgec"}}, CTX
        )["result"]
    assert [Path(r["path"]).name for r in res["results"]] == ["b.md", "c.txt"]
    assert res["results"][0]["line"] == 2 and "forged tools" in res["results"][0]["snippet"]


def test_model_subagents_use_the_configured_provider(tmp_path: Path) -> None:
    with _open(tmp_path) as h:
        h.call("memory.access", {"operation": "write", "key": "a", "value": "x"}, CTX)
        with pytest.raises(HostError) as info:
            h.call("subagent.invoke", {"name": "memory-groomer"}, CTX)
        assert info.value.code == "RUN_MODEL_FAILED" and "--replay" in info.value.message
    replay = tmp_path / "answers.json"
    replay.write_text(
        json.dumps(
            [
                {"op": "rank", "output": {"delete": ["a", "not-a-key"]}},
                {"op": "summarize", "output": {"summary": "They said hello."}},
            ]
        )
    )
    with _open(tmp_path, replay=replay) as h:
        res = h.call("subagent.invoke", {"name": "memory-groomer"}, CTX)["result"]
        assert res == {"deleted": ["a"], "remaining": 0}
        assert h.call("memory.access", {"operation": "list"}, CTX) == {"items": []}
        res = h.call(
            "subagent.invoke", {"name": "session-summarizer", "input": {"text": "hello"}}, CTX
        )["result"]
        assert res == {"summary": "They said hello.", "messages": 1}


def test_spark_coder_needs_openai_api_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with _open(tmp_path) as h, pytest.raises(HostError) as info:
        h.call("subagent.invoke", {"name": "spark-coder", "input": {"task": "x"}}, CTX)
    assert "OPENAI_API_KEY" in info.value.message


# --- background tasks ------------------------------------------------------------------------


def test_background_without_runner_waits_for_the_daemon(tmp_path: Path, personas: Path) -> None:
    with _open(tmp_path, personas) as h:
        spawned = h.call("subagent.background", {"action": "spawn", "prompt": "go"}, CTX)
        assert spawned["status"] == "queued"  # `forgec talond` takes it (tests/test_talond*)
        status = h.call(
            "subagent.background", {"action": "status", "taskId": spawned["taskId"]}, CTX
        )
        assert status["status"] == "queued"
        # wrapped as every delegation answer is (SPEC §13), so it fits the outputSchema
        profiles = h.call("subagent.background", {"action": "profiles"}, CTX)["result"]
        assert [p["name"] for p in profiles] == ["assistant", "researcher", "writer"]


def test_background_task_lifecycle_is_durable(tmp_path: Path, personas: Path) -> None:
    jobs = []

    def runner(job, ctx):
        jobs.append(job)
        if job["prompt"] == "fail":
            raise RuntimeError("the agent crashed")
        return {"answer": job["prompt"].upper()}

    with _open(tmp_path, personas, background_runner=runner) as h:
        spawned = h.call(
            "subagent.background",
            {"action": "spawn", "prompt": "hello", "profile": "researcher", "timeoutMinutes": 3},
            CTX,
        )
        assert spawned["status"] == "running" and spawned["taskId"].startswith("bg_")
        tid = spawned["taskId"]

        def status():
            return h.call("subagent.background", {"action": "status", "taskId": tid}, CTX)

        assert _poll(status, until=lambda s: s["status"] == "completed")["status"] == "completed"
        failing = h.call("subagent.background", {"action": "spawn", "prompt": "fail"}, CTX)
        bad = _poll(
            lambda: h.call(
                "subagent.background", {"action": "result", "taskId": failing["taskId"]}, CTX
            ),
            until=lambda s: s["status"] != "running",
        )
        assert bad["status"] == "failed" and "crashed" in bad["error"]
        with pytest.raises(HostError):
            h.call(
                "subagent.background", {"action": "spawn", "prompt": "x", "profile": "nobody"}, CTX
            )
    assert jobs[0]["timeoutMinutes"] == 15 and jobs[0]["profile"]["name"] == "researcher"
    with _open(tmp_path, personas) as h:  # a restart: the row is still there
        res = h.call("subagent.background", {"action": "result", "taskId": tid}, CTX)
    assert res["status"] == "completed" and res["result"] == {"answer": "HELLO"}
    raw = sqlite3.connect(tmp_path / "h.db")
    posted = [
        r[0]
        for r in raw.execute(
            "SELECT markdown FROM messages WHERE thread_id = 'th' AND channel_id = 'background'"
        )
    ]
    assert any(tid in m and "completed" in m for m in posted)


def test_background_cancel(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    def runner(job, ctx):
        release.wait(5)
        return "late"

    with _open(tmp_path, background_runner=runner) as h:
        tid = h.call("subagent.background", {"action": "spawn", "prompt": "p"}, CTX)["taskId"]
        res = h.call("subagent.background", {"action": "cancel", "taskId": tid}, CTX)
        assert res["status"] == "failed" and res["error"] == "cancelled"
        release.set()
        time.sleep(0.1)
        final = h.call("subagent.background", {"action": "result", "taskId": tid}, CTX)
        assert final["status"] == "failed"  # the late result does not resurrect it
        with pytest.raises(HostError, match="taskId"):
            h.call("subagent.background", {"action": "status"}, CTX)


# --- A2A -------------------------------------------------------------------------------------


def test_persona_send_without_a_handler_queues_for_the_daemon(
    tmp_path: Path, personas: Path
) -> None:
    with _open(tmp_path, personas) as h:
        sent = h.call("persona.send", {"target_persona": "researcher", "message": "hi"}, CTX)
        assert sent["status"] == "queued"  # `forgec talond` runs it (tests/test_talond*)
        with pytest.raises(HostError, match="unknown persona"):
            h.call("persona.send", {"target_persona": "ghost", "message": "hi"}, CTX)
        with pytest.raises(HostError, match="itself"):
            h.call("persona.send", {"target_persona": "assistant", "message": "hi"}, CTX)


def test_a2a_round_trip(tmp_path: Path, personas: Path) -> None:
    def researcher(message: str, sender: str):
        if message == "explode":
            raise ValueError("cannot do that")
        return {"from": sender, "answer": message[::-1]}

    with _open(tmp_path, personas, persona_handlers={"researcher": researcher}) as h:
        reply = h.call(
            "persona.send",
            {"target_persona": "researcher", "message": "abc", "await_reply": True},
            CTX,
        )
        assert reply["status"] == "completed"
        assert reply["result"] == {"from": "assistant", "answer": "cba"}
        queued = h.call("persona.send", {"target_persona": "researcher", "message": "xyz"}, CTX)
        assert queued["status"] == "queued"
        done = h.call("persona.task_status", {"task_id": queued["taskId"], "wait_ms": 3000}, CTX)
        assert done["status"] == "completed" and done["result"]["answer"] == "zyx"
        failed = h.call(
            "persona.send",
            {"target_persona": "researcher", "message": "explode", "await_reply": True},
            CTX,
        )
        assert failed["status"] == "failed" and "cannot do that" in failed["error"]
    cfg = HostConfig(persona="writer", personas_dir=personas)
    opts = HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=LABELS)
    with open_host(opts) as h, pytest.raises(HostError, match="no A2A task"):
        h.call("persona.task_status", {"task_id": queued["taskId"]}, CTX)  # another persona's


def test_registered_subagent_failure_is_a_run_error(tmp_path: Path) -> None:
    def broken(inp, ctx):
        raise KeyError("oops")

    def opaque(inp, ctx):
        return object()

    with _open(tmp_path, subagents={"broken": broken, "opaque": opaque}) as h:
        for name in ("broken", "opaque"):
            with pytest.raises(HostError) as info:
                h.call("subagent.invoke", {"name": name}, CTX)
            assert info.value.code == "RUN_CAPABILITY_FAILED" and name in info.value.message


def test_labels_given_as_text(tmp_path: Path) -> None:
    opts = HostOptions(db=tmp_path / "h.db", persona_labels="persona.send:*, subagent.invoke")
    with open_host(opts) as h:
        assert h.labels == frozenset({"persona.send:*", "subagent.invoke"})


def test_queued_a2a_tasks_resume_after_a_restart(tmp_path: Path, personas: Path) -> None:
    with _open(tmp_path, personas) as h:  # no handler here: enqueue as another process would
        h.conn.execute(
            "INSERT INTO a2a_tasks (id, from_persona, target_persona, message, status,"
            " created_at, updated_at) VALUES ('a2a_x', 'assistant', 'researcher', 'ping',"
            " 'queued', 'now', 'now')"
        )
    handlers = {"researcher": lambda message, sender: f"{message} → pong"}
    with _open(tmp_path, personas, persona_handlers=handlers) as h:
        done = h.call("persona.task_status", {"task_id": "a2a_x", "wait_ms": 3000}, CTX)
    assert done == {
        "taskId": "a2a_x",
        "status": "completed",
        "targetPersona": "researcher",
        "result": "ping → pong",
    }
