"""The host's time bounds (SPEC §16): db.query's time limit holds for every query, and
net.http's `timeoutMs` is one deadline for connect, headers, body and every redirect.

Each attack is one that ran far past its bound before (issue 12): a huge `printf`, `instr` over
long strings, a cross join, a server trickling header lines or body bytes, a redirect chain.
The figure a user notices is wall-clock time, so that is what the tests measure.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import serving

from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="q")
API = "slow.example"
LABELS = ("db.query:own", "memory.access:thread", "net.http:egress")


# -- db.query --------------------------------------------------------------------------------


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Any]:
    cfg = HostConfig(persona="alice", thread="t1", db_query_time_ms=500)
    with open_host(HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=LABELS)) as h:
        for i in range(60):
            h.call("memory.access", {"operation": "write", "key": f"k{i}", "value": "v"}, CTX)
        # a format string arriving as data, not in the query's text
        h.call("memory.access", {"operation": "write", "key": "fmt", "value": "%.2000000000c"}, CTX)
        # the attacks below read these rows: an empty table would end them trivially
        rows = h.call("db.query", {"sql": "SELECT count(*) AS n FROM threads"}, CTX)["rows"]
        assert rows[0]["n"] >= 1
        yield h


SLOW_QUERIES = [
    # a width SQLite would allocate 2 GB for before any progress callback
    ("SELECT printf('%.2000000000c', 'x') FROM threads LIMIT 1", "length limit"),
    ("SELECT printf('%.*c', 2000000000, 'x') FROM threads LIMIT 1", "length limit"),
    ("SELECT printf('%.*c', 2000000000.5, 'x') FROM threads LIMIT 1", "length limit"),
    ("SELECT printf('%*c', '-2000000000abc', 'x') FROM threads LIMIT 1", "length limit"),
    ("SELECT format('%2000000000d', 1) FROM threads LIMIT 1", "length limit"),
    ("SELECT printf(value, 'x') FROM memory_items WHERE key = 'fmt'", "length limit"),
    ("SELECT replace(printf('%.200000c', 'x'), 'x', 'xxxxx') FROM threads", "length limit"),
    # instr over the longest strings the length limit allows, many times over
    (
        "SELECT sum(instr(printf('%.250000c', a.key) || 'y', printf('%.120000c', b.key) || 'y'))"
        " FROM memory_items a, memory_items b",
        "time limit of 500 ms",
    ),
]


@pytest.mark.parametrize(("sql", "needle"), SLOW_QUERIES)
def test_db_query_ends_within_its_time_limit(host: Any, sql: str, needle: str) -> None:
    start = time.monotonic()
    with pytest.raises(HostError) as info:
        host.call("db.query", {"sql": sql}, CTX)
    elapsed = time.monotonic() - start
    assert info.value.code == "RUN_CAPABILITY_FAILED"
    assert needle in info.value.message
    # one C call past the deadline cannot be stopped: `instr` over the longest strings the
    # length limit allows takes about 0.5 s here; the rest of the margin is for a loaded
    # 2-core CI machine (before the fix these ran 5 to 21 s)
    assert elapsed < 0.5 + 1.5, f"{elapsed:.2f}s against a 500 ms limit"


def test_printf_within_the_limit_still_works(host: Any) -> None:
    sql = "SELECT printf('%5.2f|%-4s|%*d|%%', 3.14159, 'ab', 3, 7) AS p FROM threads LIMIT 1"
    assert host.call("db.query", {"sql": sql}, CTX)["rows"] == [{"p": " 3.14|ab  |  7|%"}]


def test_the_host_lock_is_free_while_a_query_runs(host: Any) -> None:
    """Another caller (an MCP server has several) is not held up by a slow query."""
    slow = SLOW_QUERIES[-1][0]
    started = threading.Event()

    def run_slow() -> None:
        started.set()
        with pytest.raises(HostError):
            host.call("db.query", {"sql": slow}, CTX)

    worker = threading.Thread(target=run_slow)
    worker.start()
    started.wait()
    time.sleep(0.05)
    begin = time.monotonic()
    host.call("memory.access", {"operation": "read", "key": "k1"}, CTX)
    waited = time.monotonic() - begin
    worker.join()
    assert waited < 0.3, f"a memory read waited {waited:.2f}s behind a db.query"


# -- net.http --------------------------------------------------------------------------------


class _Trickle(http.server.BaseHTTPRequestHandler):
    """`/headers`: one header line every 0.3 s; `/body`: one body byte every 0.1 s;
    `/hop/N`: a redirect to `/hop/N+1` after 0.4 s."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        try:
            if self.path == "/headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for i in range(40):
                    self.wfile.write(f"X-Slow-{i}: {i}\r\n".encode())
                    self.wfile.flush()
                    time.sleep(0.3)
            elif self.path == "/body":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.1)
            elif self.path.startswith("/hop/"):
                time.sleep(0.4)
                n = int(self.path.rsplit("/", 1)[1])
                self.send_response(302)
                self.send_header("Location", f"/hop/{n + 1}")
                self.send_header("Content-Length", "0")
                self.end_headers()
        except OSError:  # the client gave up, as it should
            pass


@pytest.fixture(scope="module")
def trickler() -> Iterator[http.server.ThreadingHTTPServer]:
    with serving(_Trickle) as srv:
        yield srv


@pytest.mark.parametrize("path", ["/headers", "/body", "/hop/0"])
def test_net_http_timeout_is_one_deadline(tmp_path: Path, trickler: Any, path: str) -> None:
    port = trickler.server_address[1]
    options = HostOptions(
        db=tmp_path / "h.db",
        config=HostConfig(max_redirects=20),
        persona_labels=LABELS,
        resolve=(f"{API}:{port}:127.0.0.1",),
    )
    context = CallContext(tool_id="t", tool_version=1, node_id="fetch", allowed_hosts=(API,))
    request = {"method": "GET", "url": f"http://{API}:{port}{path}", "timeoutMs": 1000}
    with open_host(options) as h:
        start = time.monotonic()
        with pytest.raises(HostError) as info:
            h.call("net.http", request, context)
        elapsed = time.monotonic() - start
    assert info.value.code.startswith("RUN_")
    assert "timed out after 1000 ms" in info.value.message
    assert elapsed < 1.3, f"{elapsed:.2f}s against timeoutMs 1000"


# -- the same attacks through the real CLI, in a child under a memory limit -------------------


def _tool(capability: str, inp: dict[str, Any], hosts: list[str] | None = None) -> str:
    import json

    return json.dumps(
        {
            "schema": "talos.local-tool.v1",
            "id": "bounds-probe",
            "version": 1,
            "title": "Bounds probe",
            "description": "One slow step.",
            "createdAt": "2026-01-01T00:00:00Z",
            "parentVersion": None,
            "execution": "declarative-flow",
            "installScope": "device",
            "network": {"mode": "allowlist", "hosts": hosts} if hosts else {"mode": "forbidden"},
            "credentialRequirements": [],
            "flow": {
                "entry": "step",
                "maxTransitions": 4,
                "nodes": [
                    {
                        "id": "step",
                        "type": "capability",
                        "capability": capability,
                        "input": inp,
                        "target": "out",
                        "next": "done",
                    },
                    {"id": "done", "type": "return", "value": {"$ref": "out"}},
                ],
            },
        }
    )


def _limited() -> None:
    import resource

    limit = 1536 * 1024 * 1024  # 1.5 GB: the 2 GB printf could not even be allocated
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize(
    ("capability", "inp", "needle"),
    [
        ("db.query", {"sql": "SELECT printf('%.2000000000c', 'x') AS s"}, "length limit"),
        ("net.http", {"method": "GET", "url": "http://slow.example:{port}/headers", "timeoutMs": 1000}, "timed out"),
    ],
)  # fmt: skip
def test_cli_run_ends_cleanly_inside_its_bounds(
    tmp_path: Path, trickler: Any, capability: str, inp: dict[str, Any], needle: str
) -> None:
    import json
    import os
    import subprocess
    import sys

    port = trickler.server_address[1]
    if "url" in inp:
        inp = {**inp, "url": inp["url"].format(port=port)}
    path = tmp_path / "probe.talostool"
    path.write_text(_tool(capability, inp, [API] if capability == "net.http" else None))
    command = [
        sys.executable, "-m", "forgec", "run", str(path), "--target", "talon", "--yes",
        "--format", "json", "--db", str(tmp_path / "h.db"), "--resolve", f"{API}:{port}:127.0.0.1",
    ]  # fmt: skip
    start = time.monotonic()
    proc = subprocess.run(
        command, capture_output=True, text=True, timeout=30, preexec_fn=_limited, env=os.environ
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "RUN_CAPABILITY_FAILED" and needle in error["message"], error
    assert elapsed < 8, f"{elapsed:.1f}s (interpreter start included)"
