"""Every output a machine reads escapes what SPEC §14 says, whatever produced the text (issue
30): the MCP server's standard output and the language server's messages each pass one choke
point (`forgec.mcp.server._EscapingText`, `forgec.lsp.server._EscapingWriter`) that writes every
raw DEL, C1, bidi or line-separator character as a JSON `\\u` escape. The CLI's JSON and SARIF
go through `forgec.runtime.jsontext` (tests/test_output_escaping.py).

Generators feed arbitrary JSON values holding those characters through the real serialisers
(the MCP SDK's pydantic models, pygls' `json.dumps`) and the choke point; the attack runs through
a real `forgec mcp serve` process, read byte for byte off its standard output.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes

from forgec.ir.text_rules import ESCAPED_ON_OUTPUT_CHARS

ROOT = Path(__file__).resolve().parent.parent
_UNSAFE = sorted(c for c in ESCAPED_ON_OUTPUT_CHARS if not 0xD800 <= ord(c) <= 0xDFFF)
TEXT = st.lists(
    st.one_of(st.sampled_from(_UNSAFE), st.characters(exclude_categories=("Cs",))), max_size=30
).map("".join)
VALUES = st.recursive(
    st.one_of(TEXT, st.integers(-(2**53), 2**53), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


def _raw_unsafe(data: bytes) -> list[str]:
    text = data.decode("utf-8", "surrogatepass")
    return [c for c in text if c in ESCAPED_ON_OUTPUT_CHARS and c not in "\n\r"]


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_the_mcp_output_escapes_whatever_a_tool_result_holds(value: Any) -> None:
    from mcp import types

    from forgec.mcp.server import _EscapingText

    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(value, ensure_ascii=False))],
        structuredContent={"value": value},
        isError=False,
    )
    message = types.JSONRPCResponse(jsonrpc="2.0", id=1, result=result.model_dump(by_alias=True))
    sdk_text = message.model_dump_json(by_alias=True, exclude_unset=True)  # what the SDK writes
    out = io.BytesIO()
    _EscapingText(out).write(sdk_text + "\n")
    assert _raw_unsafe(out.getvalue()) == []
    assert json.loads(out.getvalue()) == json.loads(sdk_text)  # the same message


@settings(max_examples=200, deadline=None)
@given(VALUES, st.booleans())
def test_the_language_server_output_escapes_whatever_a_message_holds(
    value: Any, headers: bool
) -> None:
    from forgec.lsp.server import _EscapingWriter

    body = json.dumps({"jsonrpc": "2.0", "method": "x", "params": value})  # pygls' serialiser
    data = (f"Content-Length: {len(body)}\r\n\r\n{body}" if headers else body).encode("utf-8")
    sink = io.BytesIO()
    _EscapingWriter(sink, headers).write(data)
    got = sink.getvalue()
    head, _, sent = got.partition(b"\r\n\r\n") if headers else (b"", b"", got)
    assert _raw_unsafe(sent) == []
    assert json.loads(sent) == json.loads(body)
    if headers:
        assert head == b"Content-Length: %d" % len(sent)


def _mcp_exchange(tmp_path: Path, calls: list[dict[str, Any]]) -> bytes:
    """Raw JSON-RPC with a real `forgec mcp serve`: every byte it wrote on standard output."""
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *[
            {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": call}
            for i, call in enumerate(calls)
        ],
    ]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "forgec",
            "mcp",
            "serve",
            "--store",
            str(tmp_path / "tools.db"),
            "--db",
            str(tmp_path / "h.db"),
            "--persona-labels",
            "tool.create",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    out = b""
    try:
        for message in lines:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                line = proc.stdout.readline()
                while line and b'"id":%d' % message["id"] not in line.replace(b" ", b""):
                    out += line
                    line = proc.stdout.readline()
                out += line
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return out


def test_a_bidi_character_in_a_tool_create_answer_is_escaped_on_the_wire(tmp_path: Path) -> None:
    """Issue 30: a diagnostic quoting a capability name that holds U+202E, C1 and DEL reached
    the MCP client raw (pydantic writes them as they are)."""
    m = manifest_with_nodes(
        [
            {
                "id": "a",
                "type": "capability",
                "capability": "tasks.li\u202est\u0085\x7f",
                "input": {},
                "target": "x",
                "next": "done",
            },
            {"id": "done", "type": "return", "value": "ok\u2067\u2028"},
        ]
    )
    m["title"] = "Bidi \u202e title"
    out = _mcp_exchange(tmp_path, [{"name": "tool_create", "arguments": {"manifest": m}}])
    assert b"FORGE_CAPABILITY_UNKNOWN" in out, out[-2000:]
    assert _raw_unsafe(out) == []
    # the meaning is kept: the JSON escapes read back as the characters
    answer = json.loads(out.splitlines()[-1])
    assert "\u202e" in json.dumps(answer, ensure_ascii=False)


@settings(max_examples=100, deadline=None)
@given(VALUES)
def test_the_daemon_json_log_and_talond_json_escape_whatever_they_hold(value: Any) -> None:
    from forgec.commands.talond import _json_text
    from forgec.daemon.log import Log

    stream = io.StringIO()
    Log("json", stream).event("turn", result=value, note=str(value))
    for text in (stream.getvalue(), _json_text({"rows": [value]})):
        data = text.encode("utf-8", "surrogatepass")
        assert _raw_unsafe(data) == []
        for line in text.splitlines() if text.startswith('{"event"') else [text]:
            json.loads(line)
