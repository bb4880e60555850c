"""Model providers: the OpenAI-compatible client against a real tiny chat-completions server on
127.0.0.1 (structured output requested and validated), privacy routing, the replay provider and
the error when nothing is configured."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import serving

from forgec.host import HostOptions, open_host
from forgec.host.config import ConfigError, ModelConfig, parse_config
from forgec.host.models import ModelRouter, OpenAIProvider, ReplayProvider, is_loopback_url
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="classify")
SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["urgent", "later"]}},
    "required": ["label"],
    "additionalProperties": False,
}


class _Chat(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {
                "path": self.path,
                "body": body,  # type: ignore[attr-defined]
                "auth": self.headers.get("Authorization"),
            }
        )
        user = body["messages"][-1]["content"]
        if "boom" in user:
            status, reply = 503, {"error": "overloaded"}
        elif "badjson" in user:
            status, reply = 200, _completion("not json at all")
        elif "wrongshape" in user:
            status, reply = 200, _completion(json.dumps({"label": "someday"}))
        elif body["model"] == "spark":
            ops = {"operations": [{"op": "write", "path": "hello.py", "content": "print(1)\n"}]}
            status, reply = 200, _completion(json.dumps(ops))
        elif "response_format" in body:
            status, reply = 200, _completion(json.dumps({"label": "urgent"}))
        else:
            status, reply = 200, _completion("  A short summary.  ")
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _completion(content: str) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }


@pytest.fixture(scope="module")
def chat() -> Iterator[http.server.ThreadingHTTPServer]:
    with serving(_Chat, requests=[]) as srv:
        yield srv


def _base(chat) -> str:
    return f"http://127.0.0.1:{chat.server_address[1]}/v1"


def test_structured_output_round_trip(chat) -> None:
    chat.requests.clear()
    provider = OpenAIProvider(_base(chat), "tiny", api_key="k-123")
    assert provider.local
    router = ModelRouter([provider])
    out = router.answer(
        "classify", {"text": "server down!"}, {"privacy": "local-only"}, SCHEMA, CTX
    )
    assert out == {"label": "urgent"}
    req = chat.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer k-123"
    fmt = req["body"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    assert req["body"]["model"] == "tiny"
    assert json.loads(req["body"]["messages"][-1]["content"]) == {"text": "server down!"}
    text = router.answer("summarize", {"text": "long"}, {}, None, CTX)
    assert text == "A short summary."
    assert "response_format" not in chat.requests[-1]["body"]


def test_model_failures(chat) -> None:
    router = ModelRouter([OpenAIProvider(_base(chat), "tiny")])
    with pytest.raises(HostError) as info:
        router.answer("classify", {"t": "boom"}, {}, SCHEMA, CTX)
    assert info.value.code == "RUN_MODEL_FAILED" and info.value.transient
    for trigger in ("badjson", "wrongshape"):
        with pytest.raises(HostError) as info:
            router.answer("classify", {"t": trigger}, {}, SCHEMA, CTX)
        assert info.value.code == "RUN_MODEL_FAILED" and not info.value.transient
    dead = ModelRouter([OpenAIProvider("http://127.0.0.1:9/v1", "tiny", timeout_ms=500)])
    with pytest.raises(HostError) as info:
        dead.answer("generate", {}, {}, None, CTX)
    assert info.value.code == "RUN_MODEL_FAILED"


def test_privacy_routing(chat) -> None:
    chat.requests.clear()
    remote = OpenAIProvider(_base(chat), "tiny", local=False, name="remote-api")
    assert not OpenAIProvider("https://api.openai.com/v1", "m").local
    router = ModelRouter([remote])
    with pytest.raises(HostError) as info:
        router.answer("classify", {"x": 1}, {"privacy": "local-only"}, SCHEMA, CTX)
    assert info.value.code == "RUN_PRIVACY" and "remote-api" in info.value.message
    assert chat.requests == []  # nothing was sent anywhere
    assert router.answer("classify", {"x": 1}, {"privacy": "remote-allowed"}, SCHEMA, CTX)
    local = OpenAIProvider(_base(chat), "tiny-local")
    both = ModelRouter([remote, local])
    both.answer("classify", {"x": 1}, {"privacy": "local-preferred"}, SCHEMA, CTX)
    assert chat.requests[-1]["body"]["model"] == "tiny-local"
    both.answer("classify", {"x": 1}, {"privacy": "remote-allowed"}, SCHEMA, CTX)
    assert chat.requests[-1]["body"]["model"] == "tiny"


def test_loopback_detection() -> None:
    for url in (
        "http://localhost:8080/v1",
        "http://127.0.0.1/v1",
        "http://[::1]:1/v1",
        "http://127.9.9.9/v1",
    ):
        assert is_loopback_url(url), url
    for url in ("https://api.openai.com/v1", "http://10.0.0.1/v1", "http://localhost.evil.com/"):
        assert not is_loopback_url(url), url


def test_replay_provider(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(
        json.dumps(
            [
                {"node": "other", "output": {"label": "later"}},
                {"op": "classify", "output": {"label": "urgent"}},
                {"op": "summarize", "input": {"text": "b"}, "output": "summary of b"},
                {"op": "classify", "output": {"label": "nonsense"}},
            ]
        )
    )
    router = ModelRouter([ReplayProvider(path)])
    assert router.answer("classify", {}, {"privacy": "local-only"}, SCHEMA, CTX) == {
        "label": "urgent"
    }
    with pytest.raises(HostError):  # input does not match
        router.answer("summarize", {"text": "a"}, {}, None, CTX)
    assert router.answer("summarize", {"text": "b"}, {}, None, CTX) == "summary of b"
    with pytest.raises(HostError) as info:  # recorded answer fails the schema
        router.answer("classify", {}, {}, SCHEMA, CTX)
    assert info.value.code == "RUN_MODEL_FAILED"
    ctx_other = CallContext(tool_id="t", tool_version=1, node_id="other")
    assert router.answer("rank", {}, {}, None, ctx_other) == {"label": "later"}
    with pytest.raises(HostError, match="no unused answer"):
        router.answer("rank", {}, {}, None, ctx_other)


def test_nothing_configured_says_how(tmp_path: Path) -> None:
    with open_host(HostOptions(db=tmp_path / "h.db")) as h, pytest.raises(HostError) as info:
        h.model("summarize", {"text": "x"}, {}, None, CTX)
    assert info.value.code == "RUN_MODEL_FAILED"
    assert "[model]" in info.value.message and "--replay" in info.value.message


def test_host_uses_replay_option_and_config_model(tmp_path: Path, chat) -> None:
    replay = tmp_path / "r.json"
    replay.write_text(json.dumps({"answers": [{"output": {"label": "later"}}]}))
    with open_host(HostOptions(db=tmp_path / "h.db", replay=replay)) as h:
        assert h.model("classify", {}, {}, SCHEMA, CTX) == {"label": "later"}
    with pytest.raises(ConfigError):
        open_host(HostOptions(db=tmp_path / "h.db", replay=tmp_path / "missing.json"))
    cfg = parse_config(
        {"model": {"base_url": _base(chat), "model": "tiny", "api_key_env": "MY_KEY"}},
        base=tmp_path,
    )
    assert cfg.model == ModelConfig(base_url=_base(chat), model="tiny", api_key_env="MY_KEY")
    chat.requests.clear()
    with open_host(HostOptions(db=tmp_path / "h.db", config=cfg, environ={"MY_KEY": "abc"})) as h:
        assert h.model("classify", {}, {"privacy": "local-only"}, SCHEMA, CTX) == {
            "label": "urgent"
        }
    assert chat.requests[-1]["auth"] == "Bearer abc"


def test_spark_coder_with_a_key_calls_its_endpoint(tmp_path: Path, chat, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    cfg = parse_config(
        {"subagents": {"spark_coder": {"base_url": _base(chat), "model": "spark"}}}, base=tmp_path
    )
    chat.requests.clear()
    opts = HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=("subagent.invoke",))
    with open_host(opts) as h:
        res = h.call("subagent.invoke", {"name": "spark-coder", "input": {"task": "say 1"}}, CTX)
    assert res == {
        "result": {"operations": [{"op": "write", "path": "hello.py", "content": "print(1)\n"}]}
    }
    assert chat.requests[-1]["auth"] == "Bearer sk-test-key"
    assert chat.requests[-1]["body"]["response_format"]["type"] == "json_schema"


class _Says:
    """A provider that answers whatever it was given (a test's, a future provider's)."""

    name = "says"
    local = True

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def complete(self, *args: object) -> object:
        return self.answer


@pytest.mark.parametrize(
    ("answer", "ok"), [({"label": "urgent"}, True), ({"label": "nonsense"}, False), ("x", False)]
)
def test_every_providers_answer_is_checked_at_the_one_place(answer: object, ok: bool) -> None:
    """`model_answer` checks the output schema for every provider, so one that never checks
    (this one) is still held to it — through the router as through a test case's host."""
    from forgec.runtime.memory_host import MemoryHost
    from forgec.testing.runner import CaseHost

    router = ModelRouter([_Says(answer)])
    case = CaseHost(MemoryHost(), model=[{"op": "classify", "output": answer}])
    for ask in (router.answer, case.model):
        if ok:
            assert ask("classify", {}, {}, SCHEMA, CTX) == answer
        else:
            with pytest.raises(HostError, match="does not match the output schema"):
                ask("classify", {}, {}, SCHEMA, CTX)


def test_no_module_checks_a_models_answer_but_model_answer() -> None:
    import ast

    root = Path(__file__).resolve().parents[1] / "forgec"
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or fn.name == "model_answer":
                continue
            for call in ast.walk(fn):
                name = getattr(getattr(call, "func", None), "id", None)
                if isinstance(call, ast.Call) and name == "validate_output":
                    found.append(f"{path.name}:{call.lineno} in {fn.name}")
    assert found == []
