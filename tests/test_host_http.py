"""`net.http` against a real HTTP server on 127.0.0.1, reached under real DNS names through the
curl-style `--resolve` override: allowlists on every hop, credentials that never leave their
hosts (checked on what the server received), oversized and slow responses."""

from __future__ import annotations

import gzip
import http.server
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import serving, tls_server_context

from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.host.credentials import env_name
from forgec.host.http import parse_resolve
from forgec.runtime.host import CallContext, HostError

API = "api.example.com"
EVIL = "evil.example.net"
SECRET = "Bearer s3cr3t-value-123"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _record(self, body: bytes = b"") -> None:
        self.server.seen.append(  # type: ignore[attr-defined]
            {
                "method": self.command,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "body": body.decode("utf-8", "replace"),
            }
        )

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, val in (headers or {}).items():
            self.send_header(k, val)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self._record(body)
        if self.path == "/post-see-other":
            self._send(303, b"", {"Location": "/ok"})
        else:
            self._send(201, b"created:" + body, {"Content-Type": "text/plain; charset=utf-8"})

    def do_GET(self) -> None:
        self._record()
        port = self.server.server_address[1]
        if self.path == "/ok":
            self._send(
                200,
                json.dumps({"hello": "world"}).encode(),
                {"Content-Type": "application/json", "X-Custom": "Yes"},
            )
        elif self.path == "/to-evil":
            scheme = self.server.scheme  # type: ignore[attr-defined]
            self._send(302, b"", {"Location": f"{scheme}://{EVIL}:{port}/steal"})
        elif self.path == "/to-internal":
            self._send(302, b"", {"Location": f"http://internal.example.org:{port}/steal"})
        elif self.path == "/to-http":
            self._send(302, b"", {"Location": f"http://{API}:{port}/ok"})
        elif self.path == "/to-same":
            self._send(301, b"", {"Location": "/ok"})
        elif self.path == "/loop":
            self._send(302, b"", {"Location": "/loop"})
        elif self.path == "/to-ftp":
            self._send(302, b"", {"Location": "ftp://api.example.com/file"})
        elif self.path == "/steal":
            self._send(200, b"stolen?")
        elif self.path == "/big":
            self._send(200, b"x" * (300 * 1024))
        elif self.path == "/bomb":
            self._send(200, gzip.compress(b"\0" * (8 * 1024 * 1024)), {"Content-Encoding": "gzip"})
        elif self.path == "/gz":
            self._send(
                200,
                gzip.compress("héllo".encode()),
                {"Content-Encoding": "gzip", "Content-Type": "text/plain; charset=utf-8"},
            )
        elif self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        else:
            self._send(404, b"not found")


@pytest.fixture(scope="module")
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    with serving(_Handler, seen=[], scheme="http") as srv:
        yield srv


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory) -> Iterator[http.server.ThreadingHTTPServer]:
    """The same server behind TLS for api.example.com and evil.example.net: credentials travel
    only over https (SPEC §14), so their tests run here."""
    pytest.importorskip("cryptography")
    context, ca_file = tls_server_context(tmp_path_factory.mktemp("tls"), (API, EVIL))
    with serving(_Handler, tls=context, seen=[], scheme="https", ca_file=ca_file) as srv:
        yield srv


@pytest.fixture
def seen(server) -> list[dict]:
    server.seen.clear()
    return server.seen


@pytest.fixture
def tls_seen(tls_server) -> list[dict]:
    tls_server.seen.clear()
    return tls_server.seen


def _host(
    tmp_path: Path,
    server,
    *,
    allow: tuple[str, ...] = (),
    env: dict | None = None,
    credentials: Path | None = None,
    labels=("net.http:egress",),
):
    port = server.server_address[1]
    return open_host(
        HostOptions(
            db=tmp_path / "h.db",
            config=HostConfig(allow_hosts=allow, ca_file=getattr(server, "ca_file", None)),
            persona_labels=labels,
            resolve=(f"{API}:{port}:127.0.0.1", f"{EVIL}:{port}:127.0.0.1"),
            environ=env if env is not None else {env_name("api-key"): SECRET},
            credentials=credentials,
        )
    )


def _ctx(hosts=(API,), cred_hosts=(API,)) -> CallContext:
    return CallContext(
        tool_id="t",
        tool_version=1,
        node_id="fetch",
        allowed_hosts=hosts,
        credential_hosts={"api-key": cred_hosts},
        # what the VM sets for a manifest whose headers hold the credential literally
        credential_headers={"Authorization": "api-key"},
    )


def _url(server, host: str, path: str) -> str:
    return f"{server.scheme}://{host}:{server.server_address[1]}{path}"


def test_get_through_the_override_is_real_http(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        res = h.call("net.http", {"method": "GET", "url": _url(server, API, "/ok")}, _ctx())
    assert res["status"] == 200
    assert json.loads(res["body"]) == {"hello": "world"}
    assert (
        res["headers"]["x-custom"] == "Yes" and res["headers"]["content-type"] == "application/json"
    )
    assert all(k == k.lower() for k in res["headers"])
    assert seen[0]["headers"]["Host"] == f"{API}:{server.server_address[1]}"


def test_host_not_in_manifest_allowlist_is_denied_before_sending(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        for url in (
            _url(server, EVIL, "/ok"),
            "http://127.0.0.1/ok",
            "http://API.example.com.evil.net/",
        ):
            with pytest.raises(HostError) as info:
                h.call("net.http", {"method": "GET", "url": url}, _ctx())
            assert info.value.code == "RUN_NETWORK_DENIED"
        with pytest.raises(HostError) as info:  # an empty allowlist allows no host
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/ok")}, _ctx(hosts=()))
        assert info.value.code == "RUN_NETWORK_DENIED"
    assert seen == []


def test_only_http_and_https(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        for url in ("file:///etc/passwd", "ftp://api.example.com/x", "gopher://api.example.com/"):
            with pytest.raises(HostError) as info:
                h.call("net.http", {"method": "GET", "url": url}, _ctx())
            assert info.value.code in ("RUN_NETWORK_DENIED", "RUN_CAPABILITY_FAILED")
        with pytest.raises(HostError) as info:
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/to-ftp")}, _ctx())
        assert info.value.code == "RUN_NETWORK_DENIED"


def test_redirect_to_a_host_off_the_allowlist_is_refused(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h, pytest.raises(HostError) as info:
        h.call("net.http", {"method": "GET", "url": _url(server, API, "/to-evil")}, _ctx())
    assert info.value.code == "RUN_NETWORK_DENIED" and EVIL in info.value.message
    assert [r["path"] for r in seen] == ["/to-evil"]  # /steal never requested


def test_redirect_on_the_allowlist_is_followed(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        res = h.call("net.http", {"method": "GET", "url": _url(server, API, "/to-same")}, _ctx())
        assert res["status"] == 200 and [r["path"] for r in seen] == ["/to-same", "/ok"]
        with pytest.raises(HostError, match="redirects"):
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/loop")}, _ctx())


def test_credential_sent_to_its_host_only(tmp_path, tls_server, tls_seen) -> None:
    server, seen = tls_server, tls_seen
    headers = {"Authorization": {"$credential": "api-key"}, "X-Trace": "1"}
    with _host(tmp_path, server) as h:
        # both hosts allowed by the manifest, the credential only for API
        ctx = _ctx(hosts=(API, EVIL))
        res = h.call(
            "net.http",
            {"method": "GET", "url": _url(server, API, "/to-evil"), "headers": headers},
            ctx,
        )
        assert res["body"] == "stolen?"
        first, second = seen
        assert first["headers"]["Authorization"] == SECRET
        assert second["path"] == "/steal" and "Authorization" not in second["headers"]
        assert second["headers"]["X-Trace"] == "1"
        assert SECRET not in json.dumps(res)
        # a first request to a host the credential is not for is refused outright
        seen.clear()
        with pytest.raises(HostError) as info:
            h.call(
                "net.http",
                {"method": "GET", "url": _url(server, EVIL, "/ok"), "headers": headers},
                ctx,
            )
        assert info.value.code == "RUN_NETWORK_DENIED" and SECRET not in info.value.message
        assert seen == []
        # an undeclared credential id is refused too
        with pytest.raises(HostError):
            h.call(
                "net.http",
                {
                    "method": "GET",
                    "url": _url(server, API, "/ok"),
                    "headers": {"A": {"$credential": "other"}},
                },
                ctx,
            )


def test_credential_from_file_and_missing(tmp_path, tls_server, tls_seen) -> None:
    server, seen = tls_server, tls_seen
    cred_file = tmp_path / "creds.toml"
    cred_file.write_text('"api-key" = "Token from-file"\n')
    headers = {"Authorization": {"$credential": "api-key"}}
    with _host(tmp_path, server, env={}, credentials=cred_file) as h:
        assert h.has_credential("api-key") and not h.has_credential("nope")
        h.call(
            "net.http",
            {"method": "GET", "url": _url(server, API, "/ok"), "headers": headers},
            _ctx(),
        )
        assert seen[-1]["headers"]["Authorization"] == "Token from-file"
    with _host(tmp_path, server, env={}) as h:
        assert not h.has_credential("api-key")
        with pytest.raises(HostError) as info:
            h.call(
                "net.http",
                {"method": "GET", "url": _url(server, API, "/ok"), "headers": headers},
                _ctx(),
            )
        assert info.value.code == "RUN_CREDENTIAL_MISSING"


def test_a_credential_never_travels_over_plain_http(tmp_path, server, seen) -> None:
    """SPEC §14: the declared host, its own credential, but `http:` — refused before any
    connection, naming the credential and never its value."""
    headers = {"Authorization": {"$credential": "api-key"}}
    with _host(tmp_path, server) as h, pytest.raises(HostError) as info:
        h.call(
            "net.http",
            {"method": "GET", "url": _url(server, API, "/ok"), "headers": headers},
            _ctx(),
        )
    assert info.value.code == "RUN_NETWORK_DENIED" and "https" in info.value.message
    assert "'api-key'" in info.value.message and SECRET not in info.value.message
    assert seen == []


def test_a_redirect_to_http_with_the_credential_is_refused(tmp_path, tls_server, tls_seen) -> None:
    headers = {"Authorization": {"$credential": "api-key"}}
    with _host(tmp_path, tls_server) as h, pytest.raises(HostError) as info:
        url = _url(tls_server, API, "/to-http")
        h.call("net.http", {"method": "GET", "url": url, "headers": headers}, _ctx())
    assert info.value.code == "RUN_NETWORK_DENIED" and "plain http" in info.value.message
    assert [r["path"] for r in tls_seen] == ["/to-http"]  # the http hop was never sent


def test_host_side_allowlist_must_pass_too(tmp_path, server, seen) -> None:
    with _host(tmp_path, server, allow=("other.example.org",)) as h:
        with pytest.raises(HostError) as info:
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/ok")}, _ctx())
        assert info.value.code == "RUN_NETWORK_DENIED" and "host's" in info.value.message
    with _host(tmp_path, server, allow=(API,)) as h:
        assert (
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/ok")}, _ctx())["status"]
            == 200
        )


def test_oversized_response_is_stopped(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        for path in ("/big", "/bomb"):
            with pytest.raises(HostError) as info:
                h.call("net.http", {"method": "GET", "url": _url(server, API, path)}, _ctx())
            assert info.value.code == "RUN_RESULT_TOO_LARGE"
        res = h.call("net.http", {"method": "GET", "url": _url(server, API, "/gz")}, _ctx())
        assert res["body"] == "héllo"


def test_slow_response_times_out_within_the_bound(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        started = time.monotonic()
        with pytest.raises(HostError) as info:
            h.call(
                "net.http",
                {"method": "GET", "url": _url(server, API, "/slow"), "timeoutMs": 400},
                _ctx(),
            )
        elapsed = time.monotonic() - started
    assert info.value.code == "RUN_CAPABILITY_FAILED" and info.value.transient
    assert "timed out" in info.value.message and elapsed < 2.0


def test_post_body_and_see_other(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        res = h.call(
            "net.http",
            {"method": "POST", "url": _url(server, API, "/echo"), "body": "payload ✓"},
            _ctx(),
        )
        assert res["status"] == 201 and res["body"] == "created:payload ✓"
        res = h.call(
            "net.http",
            {"method": "POST", "url": _url(server, API, "/post-see-other"), "body": "x"},
            _ctx(),
        )
        assert res["status"] == 200 and seen[-1]["method"] == "GET"


def test_label_denied_even_with_the_listing_bypassed(tmp_path, server, seen) -> None:
    with _host(tmp_path, server, labels=("db.query:own",)) as h:
        assert "net.http" not in h.visible_tools()
        with pytest.raises(HostError) as info:
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/ok")}, _ctx())
        assert info.value.code == "RUN_LABEL_DENIED"
    assert seen == []


def test_bad_inputs(tmp_path, server, seen) -> None:
    with _host(tmp_path, server) as h:
        for inp in (
            {"method": "TRACE", "url": _url(server, API, "/ok")},
            {"method": "GET"},
            {"method": "GET", "url": _url(server, API, "/ok"), "headers": {"Host": "evil"}},
            {"method": "GET", "url": _url(server, API, "/ok"), "headers": {"X": "a\r\nB: c"}},
            {"method": "GET", "url": "http://user:pw@api.example.com/"},
        ):
            with pytest.raises(HostError):
                h.call("net.http", inp, _ctx())
    assert seen == []


def test_parse_resolve() -> None:
    assert parse_resolve(["API.example.com:443:127.0.0.1", "h.example.com:80:[::1]"]) == {
        ("api.example.com", 443): "127.0.0.1",
        ("h.example.com", 80): "::1",
    }
    for bad in ("nohost", "a:b:c", "a.com:99999:1.2.3.4", "a.com:80:"):
        with pytest.raises(ValueError):
            parse_resolve([bad])


# --- SPEC §14: no reach into the machine's own network ---------------------------------------

INTERNAL = "internal.example.org"


def _fake_dns(monkeypatch, answers: dict[str, list[str]]) -> list[str]:
    """Answer `answers` for those names (an attacker's DNS), the real resolver for the rest
    (the IP literals the connection itself passes); returns the names looked up."""
    import socket

    real = socket.getaddrinfo
    asked: list[str] = []

    def fake(host, port, *args, **kwargs):
        if host in answers:
            asked.append(host)
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port),
                )
                for a in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return asked


def _plain_host(tmp_path, **config):
    return open_host(
        HostOptions(
            db=tmp_path / "h.db",
            config=HostConfig(**config),
            persona_labels=("net.http:egress",),
            environ={},
        )
    )


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "::1", "::ffff:127.0.0.1"]
)
def test_a_name_resolving_into_the_machine_is_refused(
    tmp_path, server, seen, monkeypatch, address
) -> None:
    _fake_dns(monkeypatch, {INTERNAL: [address]})
    url = f"http://{INTERNAL}:{server.server_address[1]}/ok"
    with _plain_host(tmp_path) as h, pytest.raises(HostError) as info:
        h.call("net.http", {"method": "GET", "url": url}, _ctx(hosts=(INTERNAL,)))
    assert info.value.code == "RUN_NETWORK_DENIED" and address in info.value.message
    assert seen == []


def test_one_private_answer_among_public_ones_refuses(tmp_path, server, seen, monkeypatch) -> None:
    _fake_dns(monkeypatch, {INTERNAL: ["93.184.216.34", "127.0.0.1"]})
    url = f"http://{INTERNAL}:{server.server_address[1]}/ok"
    with _plain_host(tmp_path) as h, pytest.raises(HostError) as info:
        h.call("net.http", {"method": "GET", "url": url}, _ctx(hosts=(INTERNAL,)))
    assert info.value.code == "RUN_NETWORK_DENIED"
    assert seen == []


def test_allow_private_connects_to_the_address_it_checked(
    tmp_path, server, seen, monkeypatch
) -> None:
    asked = _fake_dns(monkeypatch, {INTERNAL: ["127.0.0.1"]})
    url = f"http://{INTERNAL}:{server.server_address[1]}/to-same"
    with _plain_host(tmp_path, allow_private=True) as h:
        res = h.call("net.http", {"method": "GET", "url": url}, _ctx(hosts=(INTERNAL,)))
    assert res["status"] == 200 and [r["path"] for r in seen] == ["/to-same", "/ok"]
    assert seen[0]["headers"]["Host"] == f"{INTERNAL}:{server.server_address[1]}"
    assert asked == [INTERNAL]  # one lookup for both hops to the same host: no second answer


def test_the_connection_goes_to_the_checked_address_not_a_second_lookup(
    tmp_path, server, seen, monkeypatch
) -> None:
    """DNS rebinding: the first answer is public, every later one is loopback. The host must
    connect to the public address it checked (which fails here: no route), never look the name
    up again and land on the loopback server."""
    import socket

    real = socket.getaddrinfo
    answers = iter(["93.184.216.34"])
    asked: list[str] = []

    def rebinding(host, port, *args, **kwargs):
        if host == INTERNAL:
            asked.append(host)
            address = next(answers, "127.0.0.1")
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = f"http://{INTERNAL}:{server.server_address[1]}/ok"
    with _plain_host(tmp_path) as h, pytest.raises(HostError):
        h.call(
            "net.http", {"method": "GET", "url": url, "timeoutMs": 1500}, _ctx(hosts=(INTERNAL,))
        )
    assert asked == [INTERNAL] and seen == []


def test_every_redirect_hop_is_checked(tmp_path, server, seen, monkeypatch) -> None:
    _fake_dns(monkeypatch, {INTERNAL: ["10.0.0.5"]})
    with _host(tmp_path, server) as h, pytest.raises(HostError) as info:
        h.call(
            "net.http",
            {"method": "GET", "url": _url(server, API, "/to-internal")},
            _ctx(hosts=(API, INTERNAL)),
        )
    assert info.value.code == "RUN_NETWORK_DENIED" and "redirect" in info.value.message
    assert "10.0.0.5" in info.value.message and [r["path"] for r in seen] == ["/to-internal"]


def test_a_mapped_host_is_the_operators_word(tmp_path, server, seen) -> None:
    # every test above reaches 127.0.0.1 through `--resolve`: the mapping is explicit
    with _host(tmp_path, server) as h:
        assert (
            h.call("net.http", {"method": "GET", "url": _url(server, API, "/ok")}, _ctx())["status"]
            == 200
        )


def test_a_header_that_is_not_a_string_is_named_as_check_names_it() -> None:
    # the host's words for a JSON type are the checker's (`forgec.ir.shapes.json_type_name`):
    # `check` says "must be a string, not an integer" for a literal, the host the same at run time
    from forgec.host.http import _headers

    with pytest.raises(HostError) as info:
        _headers({"headers": {"X-Count": 5}}, _ctx())
    assert "must be a string, not an integer" in info.value.message
