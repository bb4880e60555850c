"""SPEC §21 over `forgec mcp serve`, through the real `mcp` client: one label context per
session. A session that read notes (a forged tool's output) or a memory item cannot post them
to a channel under `private->egress`; a consent-policy entry allowing that flow for
`channel_send` lets it; a person's elicitation answer replaces the deny; `--session-labels off`
turns the context off; a fresh session starts clean. Every refusal has no effect (the outbox
is empty)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from manifests import manifest_with_nodes
from test_mcp_server import ROOT, _text, run_client, serve_args

from forgec.store import Store

LABELS = "channel.send:*,memory.access:thread"


def _notes_tool() -> bytes:
    nodes = [
        {
            "id": "s0",
            "type": "capability",
            "capability": "notes.list",
            "input": {"limit": 5},
            "target": "found",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"$ref": "found"}},
    ]
    return orjson.dumps(manifest_with_nodes(nodes, id="list.notes", version=1))


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    db = tmp_path / "tools.db"
    with Store(db) as s:
        s.install(_notes_tool(), target="talos")
        s.enable("list.notes", consent=True)
    return db


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "host.toml"
    path.write_text(
        '[channels.general]\nconnector = "outbox"\n\n[flows]\ndeny = ["private->egress"]\n'
    )
    return path


def _outbox(tmp_path: Path) -> list[str]:
    db = tmp_path / "h.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as raw:
        return [r[0] for r in raw.execute("SELECT content FROM messages")]


def _post(session: Any, text: str = "the notes say: 4921") -> Any:
    return session.call_tool("channel_send", {"channelId": "general", "content": text})


async def _read_notes_then_post(session: Any) -> Any:
    """The flow every policy test tries: read the notes (a forged tool), then post them."""
    await session.call_tool("dynamic_list_Dnotes", {})
    return await _post(session)


def _serve(store_path: Path, tmp_path: Path, config: Path, *extra: str) -> list[str]:
    """`mcp serve` with the test's store, host config and persona labels, then EXTRA."""
    return serve_args(
        store_path, tmp_path, "--host-config", str(config), "--persona-labels", LABELS, *extra
    )


def test_a_session_that_read_notes_cannot_post_them(
    store_path: Path, config: Path, tmp_path: Path
) -> None:
    async def body(session: Any) -> Any:
        before = await _post(session, "hello")  # nothing read yet: clean
        read = await session.call_tool("dynamic_list_Dnotes", {})
        after = await _post(session)
        return before, read, after

    args = _serve(store_path, tmp_path, config)
    before, read, after = run_client(args, body)
    assert not before.is_error and not read.is_error
    assert after.is_error and "RUN_FLOW_DENIED" in _text(after)
    assert "private->egress" in _text(after) and "private:notes.list" in _text(after)
    assert _outbox(tmp_path) == ["hello"]  # the refused call had no effect

    async def fresh(session: Any) -> Any:
        return await _post(session, "a new session starts clean")

    assert not run_client(args, fresh).is_error


def test_a_memory_item_read_in_a_session_cannot_be_posted(
    store_path: Path, config: Path, tmp_path: Path
) -> None:
    async def body(session: Any) -> Any:
        await session.call_tool(
            "memory_access", {"operation": "write", "key": "pin", "value": "4921"}
        )
        await session.call_tool("memory_access", {"operation": "read", "key": "pin"})
        return await _post(session, "4921")

    args = _serve(store_path, tmp_path, config)
    refused = run_client(args, body)
    assert refused.is_error and "private:memory.access" in _text(refused)
    assert _outbox(tmp_path) == []


def test_a_policy_entry_allows_the_flow_for_that_tool(
    store_path: Path, config: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ntool = "channel_send"\nflows = ["private->egress"]\n')

    args = _serve(store_path, tmp_path, config, "--consent-policy", str(policy))
    sent = run_client(args, _read_notes_then_post)
    assert not sent.is_error, _text(sent)
    assert _outbox(tmp_path) == ["the notes say: 4921"]


def test_session_labels_off_carries_nothing(store_path: Path, config: Path, tmp_path: Path) -> None:
    args = _serve(store_path, tmp_path, config, "--session-labels", "off")
    assert not run_client(args, _read_notes_then_post).is_error
    assert _outbox(tmp_path) == ["the notes say: 4921"]


@pytest.mark.parametrize("allow", [True, False])
def test_the_persons_answer_replaces_the_deny(
    store_path: Path, config: Path, tmp_path: Path, allow: bool
) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": allow})

    args = _serve(store_path, tmp_path, config)
    result = run_client(args, _read_notes_then_post, elicitation=answer)
    assert len(asked) == 1 and "private->egress" in asked[0]
    assert result.is_error is (not allow)
    assert _outbox(tmp_path) == (["the notes say: 4921"] if allow else [])


def _serve_exits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", "mcp", "serve", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("policy", "needle"),
    [
        ('[[allow]]\ntool = "chanel_send"\nflows = ["private->egress"]\n', "unknown tool"),
        ('[[allow]]\ntool = "channel_send"\nflows = ["private->egres"]\n', "unknown flow"),
        ('[[allow]]\ntool = "dynamic:list.note"\n', "does not hold"),
    ],
)
def test_a_typo_in_the_policy_is_a_one_line_error_at_start(
    store_path: Path, tmp_path: Path, policy: str, needle: str
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(policy)
    done = _serve_exits(*serve_args(store_path, tmp_path, "--consent-policy", str(path)))
    assert done.returncode == 2
    assert needle in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_typo_in_the_host_configs_labels_is_a_one_line_error_at_start(
    store_path: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[persona]\nlabels = ["chanel.send:*"]\n')
    done = _serve_exits(*serve_args(store_path, tmp_path, "--host-config", str(bad)))
    assert done.returncode == 2 and "unknown label 'chanel.send:*'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("allow", [None, True, False])
def test_a_2026_client_session_carries_labels_and_answers_in_a_round(
    store_path: Path, config: Path, tmp_path: Path, allow: bool | None
) -> None:
    """A 2026-07-28 client (no server-to-client request mid-call): the session's context is kept
    across its calls, and the person's answer comes back as an `input_required` round."""
    import mcp_types as types
    from mcp_client import run_client

    asked: list[str] = []

    async def answer(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": allow})

    args = _serve(store_path, tmp_path, config)
    command = [sys.executable, "-m", "forgec", "mcp", "serve", *args]

    async def main(c: Any) -> Any:
        assert c.protocol_version == "2026-07-28"
        return await _read_notes_then_post(c)

    result = run_client(
        command,
        main,
        env={"PYTHONPATH": str(ROOT)},
        timeout=60,
        elicitation_callback=answer if allow is not None else None,
    )
    assert len(asked) == (0 if allow is None else 1)
    assert result.is_error is (not allow)
    if allow is None:
        assert "RUN_FLOW_DENIED" in _text(result)
    assert _outbox(tmp_path) == (["the notes say: 4921"] if allow else [])
