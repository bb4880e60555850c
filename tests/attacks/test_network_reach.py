"""Where net.http may go, played through the real CLI and loopback servers (issue 18,
measurements 8 and 11; SPEC §14 "Credentials only where they are protected" and "No reach into
the machine's own network").

- A declared credential was attached to an `http://` request to its own host, and check said
  "no problems". Now a literal `http:` URL in a step that sends a credential is
  FORGE_CREDENTIAL_SCOPE, a computed one is refused at run time before any connection, and a
  redirect from https to http that would carry it is refused.
- An allowlisted name that resolves to loopback (or any private, link-local or metadata
  address) was connected to. Now the host resolves the name once, checks every answer, and
  connects only to the address it checked — unless the operator mapped the host (`--resolve`)
  or set `[network] allow_private = true`. The name's DNS is played by a resolver patched into
  the CLI's process (the real `forgec.cli.main` runs, only `getaddrinfo` answers for the name).
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
from manifests import credential as declared
from manifests import http_step, probe

API = "api.example.com"
INTERNAL = "internal.example.org"
SECRET = "token n3tw0rk-r3ach-s3cr3t"


class _Api(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        if self.path == "/to-http":
            port = self.server.server_address[1]  # type: ignore[attr-defined]
            self.send_response(302)
            self.send_header("Location", f"http://{API}:{port}/ok")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"inside"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def plain() -> Iterator[Any]:
    with serving(_Api, seen=[]) as srv:
        yield srv


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("cryptography")
    context, ca_file = tls_server_context(tmp_path_factory.mktemp("tls"), (API,))
    with serving(_Api, tls=context, seen=[], ca_file=ca_file) as srv:
        yield srv


def _tool(url: Any, host: str, *, credential: bool) -> dict[str, Any]:
    headers = {"Authorization": {"$credential": "api-key"}} if credential else {"X-Probe": "1"}
    return probe(
        [
            http_step(url, headers=headers),
            {"id": "done", "type": "return", "value": {"body": {"$ref": "resp.body"}}},
        ],
        tool_id="reach-probe",
        title="Reach probe",
        description="Fetches one URL.",
        hosts=[host],
        credentials=[declared("api-key", host)] if credential else [],
        input_schema={"type": "object", "properties": {"url": {"type": "string"}}},
    )


# the real CLI, with the system resolver answering 127.0.0.1 for INTERNAL (an attacker's DNS)
_WITH_DNS = f"""
import socket, sys
real = socket.getaddrinfo
def lookup(host, port, *args, **kwargs):
    if host == {INTERNAL!r}:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
    return real(host, port, *args, **kwargs)
socket.getaddrinfo = lookup
from forgec.cli import main
sys.argv[0] = "forgec"
raise SystemExit(main(sys.argv[1:]))
"""


def _forgec(
    tmp_path: Path, command: str, tool: dict[str, Any], *args: str, config: str = ""
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "probe.talostool"
    path.write_text(json.dumps(tool))
    host_config = tmp_path / "host.toml"
    host_config.write_text(config)
    creds = tmp_path / "creds.json"
    creds.write_text(json.dumps({"api-key": SECRET}))
    extra = [] if command == "check" else [
        "--yes", "--format", "json", "--db", str(tmp_path / "h.db"),
        "--credentials", str(creds), "--host-config", str(host_config),
    ]  # fmt: skip
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")}
    return subprocess.run(
        [sys.executable, "-c", _WITH_DNS, command, str(path), "--target", "talon", *extra, *args],
        capture_output=True, text=True, timeout=60, env=environ,
    )  # fmt: skip


def _error(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 1, proc
    return dict(json.loads(proc.stdout)["error"])


# --- measurement 8 ---------------------------------------------------------------------------


def test_a_literal_http_url_with_a_credential_does_not_check(tmp_path: Path) -> None:
    proc = _forgec(tmp_path, "check", _tool(f"http://{API}/repos", API, credential=True))
    assert proc.returncode == 1, proc
    assert "FORGE_CREDENTIAL_SCOPE" in proc.stdout and "http" in proc.stdout, proc.stdout
    # the same step over https checks
    proc = _forgec(tmp_path, "check", _tool(f"https://{API}/repos", API, credential=True))
    assert proc.returncode == 0, proc


def test_a_computed_http_url_with_a_credential_is_refused_before_connecting(
    tmp_path: Path, plain: Any
) -> None:
    plain.seen.clear()
    port = plain.server_address[1]
    tool = _tool({"$ref": "input.url"}, API, credential=True)
    proc = _forgec(
        tmp_path, "run", tool, "--input", json.dumps({"url": f"http://{API}:{port}/ok"}),
        "--resolve", f"{API}:{port}:127.0.0.1",
    )  # fmt: skip
    error = _error(proc)
    assert error["code"] == "RUN_NETWORK_DENIED" and "https" in error["message"], error
    assert plain.seen == [] and SECRET not in proc.stdout + proc.stderr


def test_a_redirect_to_http_with_the_credential_is_refused(tmp_path: Path, tls: Any) -> None:
    tls.seen.clear()
    port = tls.server_address[1]
    tool = _tool({"$ref": "input.url"}, API, credential=True)
    proc = _forgec(
        tmp_path, "run", tool, "--input", json.dumps({"url": f"https://{API}:{port}/to-http"}),
        "--resolve", f"{API}:{port}:127.0.0.1",
        config=f"[network]\nca_file = {json.dumps(str(tls.ca_file))}\n",
    )  # fmt: skip
    error = _error(proc)
    assert error["code"] == "RUN_NETWORK_DENIED" and "plain http" in error["message"], error
    assert tls.seen == [("/to-http", SECRET)]  # sent over https once, never followed to http


# --- measurement 11 --------------------------------------------------------------------------


def test_a_name_resolving_to_loopback_is_refused(tmp_path: Path, plain: Any) -> None:
    plain.seen.clear()
    url = f"http://{INTERNAL}:{plain.server_address[1]}/ok"
    proc = _forgec(tmp_path, "run", _tool(url, INTERNAL, credential=False))
    error = _error(proc)
    assert error["code"] == "RUN_NETWORK_DENIED" and "127.0.0.1" in error["message"], error
    assert "loopback" in error["message"] and plain.seen == []


def test_the_operator_may_map_the_host_or_allow_private(tmp_path: Path, plain: Any) -> None:
    port = plain.server_address[1]
    tool = _tool(f"http://{INTERNAL}:{port}/ok", INTERNAL, credential=False)
    for args, config in (
        ((f"--resolve={INTERNAL}:{port}:127.0.0.1",), ""),
        ((), "[network]\nallow_private = true\n"),
    ):
        plain.seen.clear()
        proc = _forgec(tmp_path, "run", tool, *args, config=config)
        assert proc.returncode == 0, proc
        assert json.loads(proc.stdout)["output"] == {"body": "inside"}
        assert plain.seen == [("/ok", None)]
