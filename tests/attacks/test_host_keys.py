"""Every key the host reads is checked and scrubbed (issue 18, measurement 5; SPEC §14
"Credentials never leave the bridge as text").

spark-coder's `OPENAI_API_KEY` used to be read from the environment at call time, past the
credential store: with a trailing CR, httpx raised "Illegal header value b'Bearer sk-…\\r'" and
that text reached `forgec run` output and the MCP `subagent_invoke` result; an endpoint that
quoted the key back (an error page, an echo) put it in the result too. Now the key is read into
the host's one registry of secrets when the host opens (a control character refuses the host,
naming the variable), and the boundary scrubs every error and every result it lets out.
Played through the real CLI, the real `mcp` client and a loopback endpoint.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from loopback import serving
from manifests import probe, step

CANARY = "sk-canary-r8t3w6q1z9x4m2p7"
ROOT = Path(__file__).resolve().parents[2]


class _Chat(http.server.BaseHTTPRequestHandler):
    """A chat-completions endpoint that quotes the caller's key back: in an error page for a
    task containing "fail", in the answer otherwise."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        auth = self.headers.get("Authorization", "")
        self.server.seen.append(auth)  # type: ignore[attr-defined]
        if "fail" in json.dumps(body):
            status, payload = 500, f"upstream rejected {auth}".encode()
        else:
            answer = {"operations": [{"op": "write", "path": "key.txt", "content": auth}]}
            reply = {"choices": [{"message": {"content": json.dumps(answer)}}]}
            status, payload = 200, json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def chat() -> Iterator[Any]:
    with serving(_Chat, seen=[]) as srv:
        yield srv


def _tool() -> dict[str, Any]:
    task = {"task": {"$ref": "input.task"}}
    return probe(
        [
            step(
                "code",
                "subagent.invoke",
                {"name": "spark-coder", "input": task},
                target="out",
                next="done",
            ),
            {"id": "done", "type": "return", "value": {"$ref": "out.result"}},
        ],
        tool_id="coder-probe",
        title="Coder probe",
        description="Asks spark-coder for a change.",
        input_schema={
            "type": "object",
            "properties": {"task": {"type": "string"}},
            "required": ["task"],
        },
    )


def _config(tmp_path: Path, chat: Any) -> Path:
    config = tmp_path / "host.toml"
    base = f"http://127.0.0.1:{chat.server_address[1]}/v1"
    config.write_text(f'[subagents.spark_coder]\nbase_url = "{base}"\nmodel = "spark"\n')
    return config


def _env(key: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FORGEC_", "OPENAI_"))}
    return environ | {"OPENAI_API_KEY": key}


def _run(tmp_path: Path, chat: Any, key: str, task: str, fmt: str) -> Any:
    path = tmp_path / "coder.talostool"
    path.write_text(json.dumps(_tool()))
    command = [
        sys.executable, "-m", "forgec", "run", str(path), "--target", "talon", "--yes",
        "--format", fmt, "--input", json.dumps({"task": task}), "--db", str(tmp_path / "h.db"),
        "--host-config", str(_config(tmp_path, chat)),
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=_env(key))


def _assert_clean(tmp_path: Path, *texts: str) -> None:
    for text in texts:
        assert CANARY not in text, text[:500]
    database = tmp_path / "h.db"
    if database.exists():
        assert CANARY.encode() not in database.read_bytes()


@pytest.mark.parametrize("ending", ["\r", "\n", "\r\n", "\t", "\x1b"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_sub_agent_key_with_a_control_character_refuses_the_host(
    tmp_path: Path, chat: Any, ending: str, fmt: str
) -> None:
    chat.seen.clear()
    proc = _run(tmp_path, chat, CANARY + ending, "add a test", fmt)
    assert proc.returncode == 2, proc
    assert "OPENAI_API_KEY" in proc.stderr and "control character" in proc.stderr, proc
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    _assert_clean(tmp_path, proc.stdout, proc.stderr)
    assert chat.seen == []  # nothing was sent


@pytest.mark.parametrize("task", ["add a test", "fail please"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_an_endpoint_quoting_the_key_back_never_shows_it(
    tmp_path: Path, chat: Any, task: str, fmt: str
) -> None:
    chat.seen.clear()
    proc = _run(tmp_path, chat, CANARY, task, fmt)
    assert chat.seen == [f"Bearer {CANARY}"], proc  # the key was really sent
    assert proc.returncode == (0 if task == "add a test" else 1), proc
    assert "[redacted]" in proc.stdout, proc.stdout
    _assert_clean(tmp_path, proc.stdout, proc.stderr)


async def _mcp(args: list[str], env: dict[str, str], body: Any) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "forgec", "mcp", "serve", *args], env=env
    )
    with anyio.fail_after(60), open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)


@pytest.mark.parametrize("task", ["add a test", "fail please"])
def test_mcp_subagent_invoke_never_shows_the_key(tmp_path: Path, chat: Any, task: str) -> None:
    chat.seen.clear()
    env = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "OPENAI_API_KEY": CANARY}
    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ntool = "subagent_invoke"\n')
    args = [
        "--consent-policy", str(policy),
        "--store", str(tmp_path / "tools.db"), "--db", str(tmp_path / "h.db"),
        "--host-config", str(_config(tmp_path, chat)), "--persona-labels", "subagent.invoke",
    ]  # fmt: skip

    async def body(session: Any) -> Any:
        return await session.call_tool(
            "subagent_invoke", {"name": "spark-coder", "input": {"task": task}}
        )

    result = anyio.run(_mcp, args, env, body)
    shown = "\n".join(getattr(c, "text", "") for c in result.content)
    shown += json.dumps(result.structured_content)
    assert chat.seen == [f"Bearer {CANARY}"], shown
    assert "[redacted]" in shown, shown
    assert result.is_error == (task != "add a test"), shown
    _assert_clean(tmp_path, shown)
    assert CANARY.encode() not in (tmp_path / "tools.db").read_bytes()
