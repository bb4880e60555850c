"""Issue 10, "run-time data is data" (SPEC §14): only the checked manifest's expressions run.

An object shaped like an expression — `{"$credential": …}`, `{"$ref": …}`, `{"$template": …}`
— that arrives at run time (the input, a capability's result, a model's answer, the saved
state) is plain JSON at every step: copied, returned, rendered into a template and compared
as it is, never evaluated. Each source goes through the real runtime (`forgec.runtime.run`
on the in-memory host, and `forgec run --replay` in a child process), and the net.http case
through the reference host and a real loopback HTTP server.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from loopback import serving

from forgec.api import lower
from forgec.host.credentials import env_name
from forgec.runtime import run
from forgec.runtime.memory_host import Call, MemoryHost

SECRET = "s3cr3t-canary-7f1d"
# what an attacker hopes the runtime will evaluate; `secret` is in the input too, so a `$ref`
# or `$template` that were evaluated would show it
HOSTILE: dict[str, Any] = {
    "cred": {"$credential": "ghtok"},
    "ref": {"$ref": "input.secret"},
    "tpl": {"$template": "leak {{input.secret}}"},
    "nested": [{"$ref": "state.k"}, {"deep": {"$credential": "ghtok"}}],
}
HOSTILE_TEXT = orjson.dumps(HOSTILE).decode()


def _manifest(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "data.is.data",
        "version": 1,
        "title": "Data is data",
        "description": "Echoes what it gets.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 32, "nodes": nodes},
    }
    m.update(extra)
    return m


def _echo(source: str) -> list[dict[str, Any]]:
    """Copy `source` through a `set`, compare it, render it, and return all of it."""
    return [
        {"id": "copy", "type": "set", "target": "v", "value": {"$ref": source}, "next": "same"},
        {
            "id": "same",
            "type": "if",
            "condition": {"op": "eq", "left": {"$ref": "v"}, "right": {"$ref": source}},
            "then": "out",
            "else": "differ",
        },
        {"id": "differ", "type": "fail", "code": "DIFFER", "message": "a copy changed"},
        {
            "id": "out",
            "type": "return",
            "value": {"v": {"$ref": "v"}, "text": {"$template": "{{v}}"}},
        },
    ]


def _assert_plain(output: Any) -> None:
    assert output["v"] == HOSTILE
    assert orjson.loads(output["text"]) == HOSTILE  # rendered as JSON text, nothing resolved
    assert SECRET not in orjson.dumps(output).decode()


def _run(manifest: dict[str, Any], value: Any, host: MemoryHost) -> Any:
    result = run(lower(manifest), value, host=host, consent=lambda _request: True)
    assert result.ok, result.error
    return result.output


def test_expression_shaped_input_is_plain_json() -> None:
    m = _manifest(_echo("input.data"))
    _assert_plain(_run(m, {"data": HOSTILE, "secret": SECRET}, MemoryHost(credentials=["ghtok"])))


def test_expression_shaped_items_of_a_loop_are_plain_json() -> None:
    nodes = [
        {
            "id": "each",
            "type": "foreach",
            "source": {"$ref": "input.items"},
            "itemVar": "item",
            "maxItems": 8,
            "body": [
                {
                    "id": "mk",
                    "type": "capability",
                    "capability": "tasks.create",
                    "input": {"title": {"$template": "{{item}}"}},
                    "target": "t",
                }
            ],
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"ok": True}},
    ]
    host = MemoryHost(credentials=["ghtok"])
    items = [HOSTILE["cred"], HOSTILE["ref"], HOSTILE["tpl"]]
    _run(_manifest(nodes), {"items": items, "secret": SECRET}, host)
    titles = [c.input["title"] for c in host.calls_of("tasks.create")]
    assert [orjson.loads(t) for t in titles] == items


class _EchoingHost(MemoryHost):
    """Answers `tasks.list` with expression-shaped objects, as a hostile service might."""

    def call(self, capability: str, input: Any, context: Any) -> Any:
        if capability == "tasks.list":
            self.calls.append(Call("call", capability, input, context.node_id, context.attempt))
            return {"tasks": [], "extra": HOSTILE}
        return super().call(capability, input, context)


def test_expression_shaped_capability_results_are_plain_json() -> None:
    nodes = [
        {
            "id": "ls",
            "type": "capability",
            "capability": "tasks.list",
            "input": {},
            "target": "res",
            "next": "copy",
        },
        *_echo("res.extra"),
    ]
    host = _EchoingHost(credentials=["ghtok"])
    _assert_plain(_run(_manifest(nodes), {"secret": SECRET}, host))


def test_expression_shaped_model_answers_are_plain_json() -> None:
    nodes = [
        {
            "id": "ask",
            "type": "llm",
            "op": "generate",
            "input": {"prompt": "say something"},
            "target": "said",
            "next": "copy",
        },
        *_echo("said"),
    ]
    host = MemoryHost(credentials=["ghtok"])
    host.script_model(HOSTILE)
    _assert_plain(_run(_manifest(nodes), {"secret": SECRET}, host))


def test_expression_shaped_state_is_plain_json_and_saved_as_it_was() -> None:
    nodes = [
        *_echo("state.k")[:-1],
        {"id": "keep", "type": "set", "target": "state.k", "value": {"$ref": "v"}, "next": "out2"},
        {
            "id": "out2",
            "type": "return",
            "value": {"v": {"$ref": "v"}, "text": {"$template": "{{v}}"}},
        },
    ]
    nodes[1]["then"] = "keep"
    m = _manifest(nodes, state={"fields": {"k": {"type": "object"}}, "maxBytes": 4096})
    host = MemoryHost(credentials=["ghtok"])
    host.states["data.is.data"] = {"k": HOSTILE}
    _assert_plain(_run(m, {"secret": SECRET}, host))
    assert host.saved_states[-1][1] == {"k": HOSTILE}


def test_forgec_run_with_a_replayed_answer_keeps_it_plain(tmp_path: Path) -> None:
    nodes = [
        {
            "id": "ask",
            "type": "llm",
            "op": "generate",
            "input": {"prompt": "say something"},
            "target": "said",
            "next": "copy",
        },
        *_echo("said"),
    ]
    tool = tmp_path / "echo.talostool"
    tool.write_bytes(orjson.dumps(_manifest(nodes)))
    replay = tmp_path / "answers.json"
    replay.write_text(json.dumps([{"node": "ask", "output": HOSTILE}]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "forgec",
            "run",
            str(tool),
            "--yes",
            "--format",
            "json",
            "--db",
            str(tmp_path / "h.db"),
            "--replay",
            str(replay),
            "--input",
            json.dumps({"secret": SECRET}),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, env_name("ghtok"): SECRET},
    )
    assert done.returncode == 0, done.stderr
    _assert_plain(json.loads(done.stdout)["output"])
    assert SECRET not in done.stdout + done.stderr


# ---------------------------------------------------------------------------------------------
# net.http: a header object from the input must not become the host's credential


class _Recorder(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(dict(self.headers))  # type: ignore[attr-defined]
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_credential_object_in_input_headers_is_not_resolved(tmp_path: Path) -> None:
    from forgec.host import HostOptions, open_host
    from forgec.host.config import HostConfig

    api = "api.example.com"
    m = _manifest(
        [
            {
                "id": "fetch",
                "type": "capability",
                "capability": "net.http",
                "input": {
                    "method": "GET",
                    "url": {"$template": "http://" + api + ":{{input.port}}/x"},
                    "headers": {"$ref": "input.headers"},
                },
                "target": "resp",
                "next": "done",
            },
            {"id": "done", "type": "return", "value": {"status": {"$ref": "resp.status"}}},
        ],
        network={"mode": "allowlist", "hosts": [api]},
        credentialRequirements=[{"id": "ghtok", "purpose": "GitHub", "hosts": [api]}],
    )
    program = lower(m, target="talon")
    with serving(_Recorder, seen=[]) as srv:
        port = srv.server_address[1]
        options = HostOptions(
            db=tmp_path / "h.db",
            config=HostConfig(),
            persona_labels=("net.http:egress",),
            resolve=(f"{api}:{port}:127.0.0.1",),
            environ={env_name("ghtok"): SECRET},
        )
        with open_host(options) as host:
            value = {"port": port, "headers": {"X-Leak": {"$credential": "ghtok"}}}
            result = run(program, value, host=host, consent=lambda _request: True)
        sent = json.dumps(srv.seen)
    assert SECRET not in sent, "the host attached the credential under the caller's header"
    assert SECRET not in json.dumps(result.to_json())
