"""Issue 10, measurement 6: secrets hide in plain sight.

Each manifest below carries a credential no single string of it spells as a rule expects: a
GitHub token assembled by a `set` and a `$template`, one cut by zero-width characters or soft
hyphens, percent-encoded or base64-encoded, and the new categories (.netrc, `curl -u`, Docker
`auths`, a signing secret, a legacy Vault token, a Twilio API key SID, a bare base64 key, `pw`
and `passcode` names). Through the real CLI, `forgec tools install` must refuse every one
(FORGE_SECRET_FOUND, exit 1, nothing stored) and never print the secret back.
"""

from __future__ import annotations

import base64
import random
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

_rng = random.Random(6)
BODY = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
TOKEN = "gh" + "p_" + BODY  # assembled so this file holds no token
HEX = "".join(_rng.choice("0123456789abcdef") for _ in range(32))


def _manifest(**extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "innocent.tool",
        "version": 1,
        "title": "Innocent tool",
        "description": "Nothing to see.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "flow": {
            "entry": "done",
            "maxTransitions": 8,
            "nodes": [{"id": "done", "type": "return", "value": {"ok": True}}],
        },
    }
    m.update(extra)
    return m


def _split_token() -> dict[str, Any]:
    return _manifest(
        flow={
            "entry": "a",
            "maxTransitions": 8,
            "nodes": [
                {"id": "a", "type": "set", "target": "p", "value": "gh" + "p_", "next": "b"},
                {
                    "id": "b",
                    "type": "set",
                    "target": "h",
                    "value": {"$template": "token {{p}}" + BODY},
                    "next": "done",
                },
                {"id": "done", "type": "return", "value": {"h": {"$ref": "h"}}},
            ],
        }
    )


def _default(name: str, value: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {name: {"type": "string", "default": value}}}
    return _manifest(inputSchema=schema)


HIDDEN: dict[str, tuple[dict[str, Any], str]] = {
    "set-and-template": (_split_token(), BODY),
    "zero-width": (_manifest(description="see " + TOKEN[:12] + "\u200b" + TOKEN[12:]), BODY[10:]),
    "soft-hyphen": (_manifest(description=TOKEN[:20] + "\u00ad" + TOKEN[20:]), BODY[18:]),
    "percent": (_manifest(description="?t=" + "".join(f"%{ord(c):02x}" for c in TOKEN)), BODY),
    "base64": (_manifest(description=base64.b64encode(TOKEN.encode()).decode()), BODY),
    "netrc": (_manifest(description="machine h.example login al password Qz8#kLm2vX"), "Qz8#"),
    "curl-u": (_manifest(description="curl -u al:Qz8kLm2vXw https://h.example"), "Qz8kLm2vXw"),
    "docker-auths": (
        _manifest(
            inputSchema={
                "type": "object",
                "properties": {
                    "auths": {
                        "type": "object",
                        "default": {
                            "r.example": {"auth": base64.b64encode(b"al:Qz8kLm2v").decode()}
                        },
                    }
                },
            }
        ),
        "Qz8kLm2v",
    ),
    "signing-secret": (_default("slack_signing_secret", HEX), HEX),
    "vault-legacy": (_manifest(description="token s.Xq3Lm9PzR2Tk8WbN4vYc1HdJ"), "Xq3Lm9Pz"),
    "twilio-sk": (_manifest(description="SK" + HEX), HEX),
    "bare-base64": (_default("blob", "q8Zx/4Kp+2Lm9Tv3Wb7Nc1Hy6Jd0Rf5Ug8Ea2Sk4Mo="), "q8Zx/4Kp"),
    "pw": (_default("pw", "Hunter2-xyz"), "Hunter2"),
    "passcode": (_default("passcode", "Tr0ub4dor&3"), "Tr0ub4dor"),
}


def forgec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("case", list(HIDDEN))
def test_a_hidden_secret_is_refused_at_install(tmp_path: Path, case: str) -> None:
    manifest, secret_part = HIDDEN[case]
    tool = tmp_path / "innocent.talostool"
    tool.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    store = str(tmp_path / "tools.db")
    done = forgec("tools", "install", str(tool), "--store", store)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FORGE_SECRET_FOUND" in done.stdout
    assert secret_part not in done.stdout + done.stderr  # the excerpt masks it too
    listed = forgec("tools", "list", "--store", store)
    assert "innocent" not in listed.stdout


def test_the_same_tool_without_the_secret_installs(tmp_path: Path) -> None:
    tool = tmp_path / "innocent.talostool"
    tool.write_bytes(orjson.dumps(_manifest(), option=orjson.OPT_INDENT_2))
    done = forgec("tools", "install", str(tool), "--store", str(tmp_path / "tools.db"))
    assert done.returncode == 0, done.stdout + done.stderr
