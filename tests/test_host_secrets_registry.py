"""The host's one registry of secrets (SPEC §14 "Credentials never leave the bridge as text"):
every key the host reads is in the credential store, checked when the host opens, and the one
scrub at the boundary takes every value of it out of errors, results and what background work
writes to the host database."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forgec.host import HostOptions, open_host
from forgec.host.config import ConfigError, HostConfig, ModelConfig
from forgec.host.credentials import KEY_VARIABLES, CredentialStore, control_problem
from forgec.runtime.host import CallContext

KEY = "sk-registry-k3y-q8w2e4r6t1y9"
CTX = CallContext(tool_id="t", tool_version=1, node_id="n")


def test_every_key_variable_is_read_checked_and_scrubbed() -> None:
    assert "OPENAI_API_KEY" in KEY_VARIABLES
    store = CredentialStore({}, environ={"OPENAI_API_KEY": KEY})
    assert store.key("OPENAI_API_KEY") == KEY
    assert KEY not in repr(store)
    assert store.scrub(f"Illegal header value b'Bearer {KEY}\\r'") == (
        "Illegal header value b'Bearer [redacted]\\r'"
    )
    nested = {"a": [{"b": f"x{KEY}y"}], f"k{KEY}": 1, "n": 2}
    assert store.scrub_value(nested) == {"a": [{"b": "x[redacted]y"}], "k[redacted]": 1, "n": 2}
    with pytest.raises(ConfigError) as info:
        CredentialStore({}, environ={"OPENAI_API_KEY": KEY + "\r"})
    assert "OPENAI_API_KEY" in str(info.value) and KEY not in str(info.value)


def test_the_models_and_every_providers_key_variable_join_the_registry(tmp_path: Path) -> None:
    model = ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="MY_MODEL_KEY")
    provider = ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="OTHER_KEY")
    config = HostConfig(model=model, providers={"other": provider})
    env = {"MY_MODEL_KEY": KEY, "OTHER_KEY": KEY[::-1]}
    with open_host(HostOptions(db=tmp_path / "h.db", config=config, environ=env)) as h:
        assert h.credentials.key("MY_MODEL_KEY") == KEY
        assert h.credentials.key("OTHER_KEY") == KEY[::-1]
    for variable in ("MY_MODEL_KEY", "OTHER_KEY"):
        bad = {**env, variable: KEY + "\n"}
        with pytest.raises(ConfigError) as info:
            open_host(HostOptions(db=tmp_path / "h.db", config=config, environ=bad))
        assert variable in str(info.value) and KEY not in str(info.value)


def test_background_work_writes_no_key_to_the_database(tmp_path: Path) -> None:
    def runner(job, ctx):
        if job["prompt"] == "fail":
            raise RuntimeError(f"upstream refused Bearer {KEY}")
        return {"echo": f"the key was {KEY}"}

    opts = HostOptions(
        db=tmp_path / "h.db",
        persona_labels=("subagent.background",),
        environ={"OPENAI_API_KEY": KEY},
        background_runner=runner,
    )
    with open_host(opts) as h:
        ids = [
            h.call("subagent.background", {"action": "spawn", "prompt": p}, CTX)["taskId"]
            for p in ("fail", "echo")
        ]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            states = [
                h.call("subagent.background", {"action": "status", "taskId": t}, CTX)["status"]
                for t in ids
            ]
            if all(s in ("completed", "failed") for s in states):
                break
            time.sleep(0.05)
        assert sorted(states) == ["completed", "failed"]
    for part in tmp_path.glob("h.db*"):  # the database and its journal
        assert KEY.encode() not in part.read_bytes(), part


_secrets = st.text(min_size=4, max_size=24).filter(lambda s: control_problem(s) is None)


@given(_secrets, st.lists(st.text(max_size=12), max_size=4))
def test_no_text_keeps_a_secret_the_registry_holds(secret: str, around: list[str]) -> None:
    """Whatever surrounds it, in every spelling a library uses, the scrub takes it out."""
    store = CredentialStore({"k": secret}, environ={})
    spellings = (secret, repr(secret)[1:-1], str(secret.encode())[2:-1], json.dumps(secret)[1:-1])
    for spelling in (*spellings, quote(secret, safe="")):
        text = spelling.join(around) if len(around) > 1 else f"a{spelling}b"
        scrubbed = store.scrub(text)
        assert spelling not in scrubbed and secret not in scrubbed, (secret, text, scrubbed)


@given(st.text(min_size=1, max_size=24))
def test_a_value_with_a_control_character_is_refused_naming_the_id(value: str) -> None:
    if control_problem(value) is None:
        assert CredentialStore({"my-id": value}, environ={}).get("my-id") == value
        return
    with pytest.raises(ConfigError) as info:
        CredentialStore({"my-id": value}, environ={})
    assert "'my-id'" in str(info.value) and (len(value) < 4 or value not in str(info.value))
