"""The one builder of outbound HTTP clients (`forgec.host.http_client`): public httpx and
httpcore APIs only, a pinned client connects nowhere it was not pinned to, and one deadline
covers a whole request for every user of the builder (net.http, model providers, webhooks).
"""

from __future__ import annotations

import ast
import http.server
import inspect
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest
from loopback import serving

from forgec.host.http_client import make_client
from forgec.host.models import OpenAIProvider
from forgec.runtime.host import CallContext, HostError

ROOT = Path(__file__).resolve().parents[1] / "forgec"


def _private_names() -> set[str]:
    """Every `_name` (not dunder) an object of httpx's or httpcore's public classes has."""
    names: set[str] = set()
    for module in (httpx, httpcore):
        for public in module.__all__:
            obj = getattr(module, public)
            if inspect.isclass(obj):
                for klass in obj.__mro__:
                    if klass.__module__.split(".")[0] in ("httpx", "httpcore"):
                        names.update(vars(klass))
                        names.update(getattr(klass, "__slots__", ()))
                        init = vars(klass).get("__init__")
                        if init is not None and hasattr(init, "__code__"):
                            names.update(init.__code__.co_names)  # `self._x = ...` in __init__
    # (enum bookkeeping like `_value2member_map_` ends in "_": the Enum machinery, not httpx)
    return {n for n in names if n.startswith("_") and not n.startswith("__") and n[-1] != "_"}


def test_no_module_touches_a_private_attribute_of_httpx_or_httpcore() -> None:
    """`x._pool`, `client._transport`, `httpx._config`...: a private name of those libraries,
    read or written on anything but the module's own `self`/`cls`, is a finding."""
    private = _private_names()
    assert {"_pool", "_transport", "_mounts"} <= private  # the rule sees what it is about
    found: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and module.split(".")[0] in ("httpx", "httpcore") and "._" in f".{module}":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {module}")
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("httpx", "httpcore"):
                if node.attr.startswith("_"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {owner.id}.{node.attr}")
            elif node.attr in private and not (
                isinstance(owner, ast.Name) and owner.id in ("self", "cls")
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: ._{node.attr[1:]}")
    assert found == [], found


class _Seen(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self) -> None:
        """A model that trickles its answer's header lines, one every 0.3 s."""
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for i in range(40):
                self.wfile.write(f"X-Slow-{i}: {i}\r\n".encode())
                self.wfile.flush()
                time.sleep(0.3)
        except OSError:
            pass


@pytest.fixture
def server() -> Iterator[Any]:
    with serving(_Seen, seen=[]) as srv:
        yield srv


def test_a_pinned_client_connects_only_to_pinned_addresses(server: Any) -> None:
    port = server.server_address[1]
    deadline = time.monotonic() + 5
    with make_client(deadline=deadline, pins={("api.example.com", port): "127.0.0.1"}) as client:
        assert client.get(f"http://api.example.com:{port}/pinned").text == "ok"
        # a name, an address, another port: none was pinned, none is connected to
        for url in (
            f"http://localhost:{port}/name",
            f"http://127.0.0.1:{port}/address",
            f"http://api.example.com:{port + 1 if port < 65535 else port - 1}/port",
        ):
            with pytest.raises(HostError) as info:
                client.get(url)
            assert info.value.code == "RUN_NETWORK_DENIED"
    assert server.seen == ["/pinned"]


def test_a_pinned_client_sends_the_name_not_the_address(server: Any) -> None:
    seen_hosts: list[str] = []

    class Hosts(_Seen):
        def do_GET(self) -> None:
            seen_hosts.append(self.headers["Host"])
            super().do_GET()

    with serving(Hosts, seen=[]) as srv:
        port = srv.server_address[1]
        pins = {("api.example.com", port): "127.0.0.1"}
        with make_client(deadline=time.monotonic() + 5, pins=pins) as client:
            client.get(f"http://api.example.com:{port}/")
    assert seen_hosts == [f"api.example.com:{port}"]


def test_a_model_trickling_its_answer_is_cut_at_the_deadline(server: Any) -> None:
    """The builder's deadline holds for model providers too: a per-read timeout alone would
    wait 40 × 0.3 s for these header lines."""
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    provider = OpenAIProvider(base, "tiny", timeout_ms=1000)
    start = time.monotonic()
    with pytest.raises(HostError) as info:
        provider.complete(
            "generate", {"t": 1}, {}, None, CallContext(tool_id="t", tool_version=1, node_id="m")
        )
    elapsed = time.monotonic() - start
    assert info.value.code == "RUN_MODEL_FAILED" and "timed out" in info.value.message
    assert elapsed < 1.5, f"{elapsed:.2f}s against timeout_ms 1000"


def test_a_passed_deadline_sends_nothing(server: Any) -> None:
    port = server.server_address[1]
    with (
        make_client(deadline=time.monotonic() - 1) as client,
        pytest.raises(httpx.TimeoutException),
    ):
        client.get(f"http://127.0.0.1:{port}/late")
    assert server.seen == []
