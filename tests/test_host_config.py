"""The TOML host configuration and how `open_host` layers command-line options over it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from forgec.host import ConfigError, HostOptions, load_config, open_host
from forgec.host.config import ChannelConfig
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")

FULL = """
db = "data/host.db"
thread = "thread-42"

[persona]
name = "assistant"
folder = "personas"
labels = ["memory.access:thread", "channel.send:general", "schedule.manage:own"]

[channels.general]
connector = "slack"

[channels.inbox]
connector = "outbox"
thread = "inbox-thread"

[network]
allow = ["API.example.com"]
resolve = ["api.example.com:8443:127.0.0.1"]
max_redirects = 3

[credentials]
file = "secrets.json"

[model]
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-7b-instruct"
api_key_env = "LOCAL_LLM_KEY"
timeout_ms = 30000

[subagents.file_searcher]
roots = ["notes", "/abs/docs"]

[db_query]
time_limit_ms = 500

[a2a]
await_ms = 1000
"""


def test_full_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "host.toml"
    path.write_text(FULL)
    cfg = load_config(path)
    base = tmp_path.resolve()
    assert cfg.db == base / "data" / "host.db"
    assert cfg.thread == "thread-42" and cfg.persona == "assistant"
    assert cfg.personas_dir == base / "personas"
    assert cfg.labels == ("memory.access:thread", "channel.send:general", "schedule.manage:own")
    assert cfg.channels["general"] == ChannelConfig("general", "slack")
    assert cfg.channels["inbox"].thread == "inbox-thread"
    assert cfg.allow_hosts == ("api.example.com",)
    assert cfg.resolve == ("api.example.com:8443:127.0.0.1",) and cfg.max_redirects == 3
    assert cfg.credentials_file == base / "secrets.json"
    assert cfg.model is not None and cfg.model.model == "qwen2.5-7b-instruct"
    assert cfg.file_searcher_roots == (base / "notes", Path("/abs/docs"))
    assert cfg.db_query_time_ms == 500 and cfg.a2a_await_ms == 1000


def test_docs_example_is_valid(tmp_path: Path) -> None:
    """The full example in docs/host.md must stay loadable."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "host.md").read_text()
    block = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "host.toml"
    path.write_text(block)
    cfg = load_config(path)
    assert cfg.channels and cfg.model is not None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("dbx = 'x'", "unknown key"),
        ("[persona]\nlabel = ['x']", "unknown key"),
        ("[channels.general]\nconnector = 'carrier-pigeon'", "connector"),
        ("[channels.'bad name']\nconnector = 'outbox'", "channel name"),
        ("[network]\nallow = 'api.example.com'", "list of strings"),
        ("[model]\nkind = 'openai'", "base_url"),
        ("[model]\nkind = 'replay'", "replay"),
        ("[db_query]\ntime_limit_ms = 0", "between"),
        ("thread = 1", "string"),
        ("this is not toml", "invalid TOML"),
    ],
)
def test_bad_configs_are_clear_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "host.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert needle in str(info.value) and str(path) in str(info.value)


def test_missing_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such host configuration"):
        open_host(HostOptions(host_config=tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="no such credentials"):
        open_host(HostOptions(db=tmp_path / "h.db", credentials=tmp_path / "nope.json"))
    with pytest.raises(ConfigError, match="HOST:PORT:ADDR"):
        open_host(HostOptions(db=tmp_path / "h.db", resolve=("garbage",)))
    bad = tmp_path / "creds.json"
    bad.write_text('{"a": "sk-very-secret", ')
    with pytest.raises(ConfigError) as info:
        open_host(HostOptions(db=tmp_path / "h.db", credentials=bad))
    assert "sk-very-secret" not in str(info.value)


def test_options_layer_over_the_config(tmp_path: Path) -> None:
    path = tmp_path / "host.toml"
    path.write_text(
        'db = "from-config.db"\nthread = "t-cfg"\n'
        '[persona]\nlabels = ["memory.access:thread"]\n'
        '[channels.general]\nconnector = "plain"\n'
    )
    with open_host(HostOptions(host_config=path, default_labels=("db.query:own",))) as h:
        assert h.db_path == (tmp_path / "from-config.db").resolve()
        assert h.labels == frozenset({"memory.access:thread"})  # config beats the tool's needs
        assert h.thread == "t-cfg"
        h.call("memory.access", {"operation": "write", "key": "k", "value": "v"}, CTX)
    other = tmp_path / "cli.db"
    with open_host(
        HostOptions(host_config=path, db=other, persona_labels=("channel.send:*",), thread="t-cli")
    ) as h:
        assert h.db_path == other.resolve() and h.labels == frozenset({"channel.send:*"})
        h.call("channel.send", {"channelId": "general", "content": "**hi**"}, CTX)
        with pytest.raises(HostError) as info:
            h.call("memory.access", {"operation": "list"}, CTX)
        assert info.value.code == "RUN_LABEL_DENIED"
    row = sqlite3.connect(other).execute("SELECT thread_id, content FROM messages").fetchone()
    assert row == ("t-cli", "hi\n")
    # no config, no --persona-labels: the tool's own labels (a plain `forgec run` works)
    with open_host(HostOptions(db=tmp_path / "x.db", default_labels=("db.query:own",))) as h:
        assert h.labels == frozenset({"db.query:own"})
    # an explicit empty list grants nothing (the MCP server's deny by default)
    with open_host(
        HostOptions(db=tmp_path / "x.db", persona_labels=(), default_labels=("db.query:own",))
    ) as h:
        assert h.labels == frozenset()


def test_credentials_file_formats(tmp_path: Path) -> None:
    js = tmp_path / "c.json"
    js.write_text(json.dumps({"api.key": "v1", "other": {"value": "v2"}}))
    with open_host(HostOptions(db=tmp_path / "h.db", credentials=js, environ={})) as h:
        assert h.has_credential("api.key") and h.has_credential("other")
        assert "v1" not in repr(h.credentials)
    env = {"FORGEC_CREDENTIAL_API_KEY": "from-env"}
    with open_host(HostOptions(db=tmp_path / "h.db", environ=env)) as h:
        assert h.has_credential("api.key") and h.has_credential("api-key")
        assert not h.has_credential("apikey")
