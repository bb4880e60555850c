"""Attacks on credentials, played through the real CLI (`forgec run`) and a loopback server
(issue 10, measurements 3 and 4; SPEC §14 "Credentials" and "Run-time data is data").

- A credential (or the model API key) ending in a line break used to make httpx raise
  "Illegal header value b'token SECRET…\\n'", and that text reached the run result. Now such a
  value is refused when the host loads it, naming the id, never the value.
- Every error text that leaves the host is scrubbed of every credential value: a canary
  credential is planted and every output channel (run JSON, text, stderr, the host database)
  is searched for it across succeeding and failing runs.
- Data is never a credential: `{"$credential": id}` arriving in the input is not attached.
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

import pytest
from loopback import serving, tls_server_context
from manifests import credential, http_step, probe

API = "api.example"
# lower-case on purpose: a host name in an error message is lower-cased, and the scrub must
# still find it there
CANARY = "canary-q7x2m9k4w1z8p3"


class _Api(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(dict(self.headers))  # type: ignore[attr-defined]
        status = 500 if self.path == "/fail" else 200
        body = b'{"ok": true}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # behind TLS: a credential is only ever attached to an https request (SPEC §14)
    pytest.importorskip("cryptography")
    context, ca_file = tls_server_context(tmp_path_factory.mktemp("tls"), (API,))
    with serving(_Api, tls=context, seen=[], ca_file=ca_file) as srv:
        yield srv


def _tool(headers: Any, url: Any) -> dict[str, Any]:
    return probe(
        [
            http_step(url, headers=headers),
            {"id": "done", "type": "return", "value": {"status": {"$ref": "resp.status"}}},
        ],
        tool_id="leak-probe",
        title="Leak probe",
        description="Calls an API with a credential.",
        hosts=[API],
        credentials=[credential("ghtok", API)],
        input_schema={"type": "object"},
    )


LITERAL = {"Authorization": {"$credential": "ghtok"}}


def _forgec(
    tmp_path: Path,
    server: Any,
    tool: dict[str, Any],
    run_input: dict[str, Any],
    *,
    secret: str,
    fmt: str = "json",
    config: str = "",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "probe.talostool"
    path.write_text(json.dumps(tool))
    creds = tmp_path / "creds.json"
    creds.write_text(json.dumps({"ghtok": secret}))
    host_config = tmp_path / "host.toml"
    host_config.write_text(f"[network]\nca_file = {json.dumps(str(server.ca_file))}\n{config}")
    port = server.server_address[1]
    command = [
        sys.executable, "-m", "forgec", "run", str(path), "--target", "talon", "--yes",
        "--format", fmt, "--input", json.dumps(run_input), "--db", str(tmp_path / "h.db"),
        "--credentials", str(creds), "--resolve", f"{API}:{port}:127.0.0.1",
        "--host-config", str(host_config),
    ]  # fmt: skip
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")}
    environ.update(env or {})
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environ)


def _assert_no_canary(tmp_path: Path, proc: subprocess.CompletedProcess[str]) -> None:
    for channel, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        assert CANARY not in text, f"the canary leaked on {channel}: {text[:400]}"
    database = tmp_path / "h.db"
    if database.exists():
        assert CANARY.encode() not in database.read_bytes(), "the canary is in the host database"


def _url(server: Any, path: str = "/ok") -> str:
    return f"https://{API}:{server.server_address[1]}{path}"


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\t", "\x00", "\x1b[8m"])
def test_a_credential_with_a_control_character_is_refused_at_load(
    tmp_path: Path, api_server: Any, ending: str
) -> None:
    api_server.seen.clear()
    proc = _forgec(
        tmp_path, api_server, _tool(LITERAL, _url(api_server)), {}, secret=f"token {CANARY}{ending}"
    )
    assert proc.returncode == 2, proc
    assert "'ghtok'" in proc.stderr and "control character" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    _assert_no_canary(tmp_path, proc)
    assert api_server.seen == []


def test_an_env_credential_with_a_line_break_is_refused_too(tmp_path: Path, api_server) -> None:
    creds_env = {"FORGEC_CREDENTIAL_GHTOK": f"token {CANARY}\n"}
    tool = _tool(LITERAL, _url(api_server))
    path = tmp_path / "probe.talostool"
    path.write_text(json.dumps(tool))
    port = api_server.server_address[1]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")} | creds_env
    proc = subprocess.run(
        [sys.executable, "-m", "forgec", "run", str(path), "--target", "talon", "--yes",
         "--db", str(tmp_path / "h.db"), "--resolve", f"{API}:{port}:127.0.0.1"],
        capture_output=True, text=True, timeout=60, env=environ,
    )  # fmt: skip
    assert proc.returncode == 2 and "FORGEC_CREDENTIAL_GHTOK" in proc.stderr, proc
    _assert_no_canary(tmp_path, proc)


def test_the_model_api_key_with_a_line_break_is_refused(tmp_path: Path, api_server) -> None:
    config = (
        f'[model]\nbase_url = "http://{API}:{api_server.server_address[1]}/v1"\n'
        'model = "m"\napi_key_env = "PROBE_API_KEY"\n'
    )
    proc = _forgec(
        tmp_path, api_server, _tool(LITERAL, _url(api_server)), {}, secret="token fine",
        config=config, env={"PROBE_API_KEY": f"sk-{CANARY}\n"},
    )  # fmt: skip
    assert proc.returncode == 2 and "model API key" in proc.stderr, proc
    _assert_no_canary(tmp_path, proc)


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("path", ["/ok", "/fail"])
def test_succeeding_and_failing_runs_never_show_the_credential(
    tmp_path: Path, api_server: Any, fmt: str, path: str
) -> None:
    api_server.seen.clear()
    secret = f"token {CANARY}"
    proc = _forgec(
        tmp_path, api_server, _tool(LITERAL, _url(api_server, path)), {}, secret=secret, fmt=fmt
    )
    assert proc.returncode == 0, proc  # a 500 is a response, not a failure
    assert [h.get("Authorization") for h in api_server.seen] == [secret]  # it was really sent
    _assert_no_canary(tmp_path, proc)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_an_error_quoting_the_credential_is_scrubbed(tmp_path: Path, api_server, fmt) -> None:
    """Whatever puts a secret's text into an error (here the caller, through a URL the host
    refuses and quotes), the one scrub at the host boundary takes it out."""
    tool = _tool({"X-Trace": "1"}, {"$ref": "input.url"})
    run_input = {"url": f"http://{CANARY}.example/"}
    proc = _forgec(tmp_path, api_server, tool, run_input, secret=CANARY, fmt=fmt)
    assert proc.returncode == 1, proc
    assert "RUN_NETWORK_DENIED" in proc.stdout and "[redacted]" in proc.stdout
    _assert_no_canary(tmp_path, proc)


@pytest.mark.parametrize(
    ("headers", "run_input"),
    [
        # the whole headers object from the caller
        ({"$ref": "input.headers"}, {"headers": {"X-Leak": {"$credential": "ghtok"}}}),
        # one header value from the caller, under the credential's usual name
        ({"Authorization": {"$ref": "input.auth"}}, {"auth": {"$credential": "ghtok"}}),
    ],
)
def test_data_is_never_a_credential(tmp_path: Path, api_server, headers, run_input) -> None:
    api_server.seen.clear()
    secret = f"token {CANARY}"
    proc = _forgec(tmp_path, api_server, _tool(headers, _url(api_server)), run_input, secret=secret)
    assert proc.returncode == 1, proc
    result = json.loads(proc.stdout)
    assert result["error"]["code"] == "RUN_CAPABILITY_FAILED"
    assert "arrived as data" in result["error"]["message"]
    assert all(CANARY not in json.dumps(h) for h in api_server.seen)  # nothing carried it
    _assert_no_canary(tmp_path, proc)


def test_mcp_results_never_show_the_credential(tmp_path: Path, api_server: Any) -> None:
    """The same scrubbed error, through `forgec mcp serve` and the real `mcp` client: the model
    reading the result (and the store file) never sees the credential."""
    from test_mcp_server import run_client, serve_args
    from test_store import open_store

    store_path = tmp_path / "tools.db"
    with open_store(store_path) as store:
        probe = _tool({"X-Trace": "1"}, {"$ref": "input.url"})
        store.install(json.dumps(probe).encode(), target="talon")
        store.enable("leak-probe", consent=True)
    creds = tmp_path / "creds.json"
    creds.write_text(json.dumps({"ghtok": CANARY}))
    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ntool = "dynamic:leak-probe"\nversion = 1\n')

    async def body(session: Any) -> Any:
        listed = await session.list_tools()
        [name] = [t.name for t in listed.tools if t.name.startswith("dynamic_")]
        return await session.call_tool(name, {"url": f"http://{CANARY}.example/"})

    config = tmp_path / "host.toml"
    config.write_text(f"[credentials]\nfile = {json.dumps(str(creds))}\n")
    args = serve_args(
        store_path, tmp_path, "--host-config", str(config), "--consent-policy", str(policy),
        "--persona-labels", "net.http:egress",
    )  # fmt: skip
    result = run_client(args, body)
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    shown = "\n".join(texts) + json.dumps(result.structured_content)
    assert result.is_error and "RUN_NETWORK_DENIED" in shown and "[redacted]" in shown, shown
    assert CANARY not in shown
    assert CANARY.encode() not in store_path.read_bytes()
    assert CANARY.encode() not in (tmp_path / "h.db").read_bytes()
