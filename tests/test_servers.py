"""`forgec lsp` and `forgec mcp serve` as a person meets them in a terminal (SPEC §20): Ctrl-C
(SIGINT) and SIGTERM end them at once, even while they wait on standard input; on a terminal
they say in one line on stderr what they serve; `forgec lsp --stdio` is accepted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# On a loaded 2-core machine a Python process may take seconds to start; ending must not wait
# for input (before the fix it never ended until standard input closed).
END_BUDGET_S = 10.0


def _server(kind: str, tmp_path: Path) -> list[str]:
    if kind == "lsp":
        pytest.importorskip("pygls")
        return [sys.executable, "-m", "forgec", "lsp", "--stdio"]
    pytest.importorskip("mcp")
    return [
        sys.executable, "-m", "forgec", "mcp", "serve",
        "--store", str(tmp_path / "tools.db"), "--db", str(tmp_path / "host.db"),
    ]  # fmt: skip


def _lsp_message(body: dict) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def _ping(kind: str, proc: subprocess.Popen[bytes]) -> None:
    """Wait until the server answers `initialize` (it is serving, reading standard input)."""
    assert proc.stdin is not None and proc.stdout is not None
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    if kind == "lsp":
        request["params"] = {"processId": None, "rootUri": None, "capabilities": {}}
        proc.stdin.write(_lsp_message(request))
    else:
        request["params"] = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, "the server ended before answering"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("kind", ["lsp", "mcp"])
def test_a_signal_ends_the_server_at_once(kind: str, sig: int, tmp_path: Path) -> None:
    if kind == "mcp":
        subprocess.run(
            [sys.executable, "-m", "forgec", "tools", "install", "--store",
             str(tmp_path / "tools.db"), str(Path(__file__).parent.parent / "examples" / "memory-capture.talostool")],
            check=True, capture_output=True,
        )  # fmt: skip
    proc = subprocess.Popen(
        _server(kind, tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _ping(kind, proc)
        proc.send_signal(sig)
        start = time.monotonic()
        proc.wait(timeout=END_BUDGET_S)  # standard input is still open: only the signal ends it
        assert time.monotonic() - start < END_BUDGET_S
        assert proc.returncode != 0
        assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("kind", ["lsp", "mcp"])
def test_a_terminal_gets_a_one_line_banner(kind: str, tmp_path: Path) -> None:
    import pty

    # an existing store: a new one is announced first (its own line, tested apart)
    if kind == "mcp":
        subprocess.run(
            [sys.executable, "-m", "forgec", "tools", "install", "--store",
             str(tmp_path / "tools.db"), str(Path(__file__).parent.parent / "examples" / "memory-capture.talostool")],
            check=True, capture_output=True,
        )  # fmt: skip
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        _server(kind, tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=secondary
    )
    os.close(secondary)
    try:
        seen = b""
        deadline = time.monotonic() + 60
        while b"\n" not in seen and time.monotonic() < deadline:
            try:
                chunk = os.read(primary, 1024)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        banner = seen.decode(errors="replace").splitlines()[0] if seen else ""
        assert ("language server" if kind == "lsp" else "MCP server") in banner, seen
        assert "Ctrl-C" in banner
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=END_BUDGET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)


def test_no_banner_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        _server("lsp", tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _ping("lsp", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=END_BUDGET_S)
    assert proc.stderr is not None
    assert b"language server" not in proc.stderr.read()
