"""`net.http` over real TLS on 127.0.0.1 through the `--resolve` override: the certificate is
checked against the name in the URL (SNI and hostname), never against the loopback address.
The test makes its own CA and a leaf certificate for api.example.com."""

from __future__ import annotations

import http.server
import ssl
from pathlib import Path

import pytest
from loopback import serving, tls_certificates

from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.runtime.host import CallContext, HostError

crypto = pytest.importorskip("cryptography")

NAME = "api.example.com"
OTHER = "other.example.com"


class _Hello(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("Host"))  # type: ignore[attr-defined]
        body = b"over tls"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    ca_file, cert_file, key_file = tls_certificates(folder, (NAME,))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_file, key_file)
    with serving(_Hello, tls=ctx, hosts=[]) as srv:
        yield srv, ca_file


def _call(tmp_path: Path, srv, ca_file: Path | None, host: str):
    port = srv.server_address[1]
    opts = HostOptions(
        db=tmp_path / "h.db",
        config=HostConfig(ca_file=ca_file),
        persona_labels=("net.http:egress",),
        resolve=(f"{NAME}:{port}:127.0.0.1", f"{OTHER}:{port}:127.0.0.1"),
    )
    ctx = CallContext(tool_id="t", tool_version=1, node_id="n", allowed_hosts=(NAME, OTHER))
    with open_host(opts) as h:
        return h.call(
            "net.http", {"method": "GET", "url": f"https://{host}:{port}/x", "timeoutMs": 5000}, ctx
        )


def test_https_with_the_override_checks_the_real_name(tmp_path: Path, tls) -> None:
    srv, ca_file = tls
    res = _call(tmp_path, srv, ca_file, NAME)
    assert res["status"] == 200 and res["body"] == "over tls"
    assert srv.hosts[-1] == f"{NAME}:{srv.server_address[1]}"


def test_https_certificate_for_another_name_is_refused(tmp_path: Path, tls) -> None:
    srv, ca_file = tls
    with pytest.raises(HostError) as info:
        _call(tmp_path, srv, ca_file, OTHER)  # same server, but the cert names api.example.com
    assert info.value.code == "RUN_CAPABILITY_FAILED"


def test_https_untrusted_ca_is_refused(tmp_path: Path, tls) -> None:
    srv, _ = tls
    with pytest.raises(HostError) as info:
        _call(tmp_path, srv, None, NAME)
    assert info.value.code == "RUN_CAPABILITY_FAILED"
