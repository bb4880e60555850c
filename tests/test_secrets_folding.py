"""Secrets after constant folding, the normalisations and the categories of issue 10
(measurement 6), through the checker as a user meets it (`forgec.api.check` and the CLI).

Every secret here is spelled in pieces or disguised, so no single string of the file matches a
rule as written; each test also checks the look-alike that must stay clean.
"""

from __future__ import annotations

import base64
import random
import string
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from manifests import manifest_with_nodes, minimal_manifest

from forgec.api import check
from forgec.passes.secrets import scan_text

_rng = random.Random(10)
B62 = string.ascii_letters + string.digits


def rnd(n: int, alphabet: str = B62) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


# assembled at run time so this file itself holds no token a scanner would flag
GH_BODY = rnd(36)
GH_TOKEN = "gh" + "p_" + GH_BODY


def secrets_of(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    report = check(orjson.dumps(manifest))
    return [(d.path, d.message) for d in report.diagnostics if d.code == "FORGE_SECRET_FOUND"]


def _ret(nid: str = "r", ref: str = "h") -> dict[str, Any]:
    return {"id": nid, "type": "return", "value": {"v": {"$ref": ref}}}


def test_a_token_formed_by_a_set_and_a_template_is_found_at_the_step() -> None:
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "p", "value": "gh" + "p_", "next": "b"},
            {
                "id": "b",
                "type": "set",
                "target": "h",
                "value": {"$template": "token {{p}}" + GH_BODY},
                "next": "r",
            },
            _ret(),
        ]
    )
    found = secrets_of(m)
    assert [path for path, _ in found] == ["/flow/nodes/1"]  # SPEC §14: the step that forms it
    message = found[0][1]
    assert "GitHub personal access token" in message and "step `b`" in message
    assert "`/flow/nodes/1/value`" in message  # and the template that spells it
    assert GH_BODY not in message


def test_folding_follows_chains_objects_state_and_any_branch() -> None:
    half = len(GH_BODY) // 2
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "cfg", "value": {"pre": "gh" + "p_"}, "next": "b"},
            {
                "id": "b",
                "type": "set",
                "target": "state.head",
                "value": {"$template": "{{cfg.pre}}" + GH_BODY[:half]},
                "next": "c",
            },
            {
                "id": "c",
                "type": "if",
                "condition": {"op": "truthy", "left": {"$ref": "input.x"}},
                "then": "d",
                "else": "e",
            },
            {"id": "d", "type": "set", "target": "tail", "value": "nothing-here", "next": "f"},
            {"id": "e", "type": "set", "target": "tail", "value": GH_BODY[half:], "next": "f"},
            {
                "id": "f",
                "type": "capability",
                "capability": "tasks.create",
                "input": {"title": {"$template": "{{state.head}}{{tail}}"}},
                "target": "t",
                "next": "r",
            },
            _ret(ref="t"),
        ]
    )
    m["state"] = {"fields": {"head": {"type": "string"}}, "maxBytes": 4096}
    found = secrets_of(m)
    assert [path for path, _ in found] == ["/flow/nodes/5"]
    assert "`/flow/nodes/5/input/title`" in found[0][1]


def test_a_password_assembled_under_a_secret_name_is_found_by_name() -> None:
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "p1", "value": "Hunter", "next": "b"},
            {
                "id": "b",
                "type": "set",
                "target": "password",
                "value": {"$template": "{{p1}}2-xyz!"},
                "next": "r",
            },
            _ret(ref="password"),
        ]
    )
    assert [path for path, _ in secrets_of(m)] == ["/flow/nodes/1"]


def test_a_credential_header_built_from_constants_is_found() -> None:
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "k", "value": GH_TOKEN[:10], "next": "b"},
            {
                "id": "b",
                "type": "capability",
                "capability": "net.http",
                "input": {
                    "method": "GET",
                    "url": "https://api.github.com/user",
                    "headers": {"Authorization": {"$template": "Bearer {{k}}" + GH_TOKEN[10:]}},
                },
                "target": "resp",
                "next": "r",
            },
            _ret(ref="resp"),
        ],
        network={"mode": "allowlist", "hosts": ["api.github.com"]},
    )
    found = secrets_of(m)
    assert [p for p, _ in found] == ["/flow/nodes/1"]
    assert "`/flow/nodes/1/input/headers/Authorization`" in found[0][1]


def test_templates_of_unknown_or_harmless_parts_stay_clean() -> None:
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "p", "value": "gh" + "p_", "next": "b"},
            # the rest comes from the input: nothing the checker can compute is a token
            {
                "id": "b",
                "type": "set",
                "target": "h",
                "value": {"$template": "token {{p}}{{input.rest}}"},
                "next": "c",
            },
            {"id": "c", "type": "set", "target": "n", "value": 42, "next": "d"},
            {
                "id": "d",
                "type": "set",
                "target": "msg",
                "value": {"$template": "Due in {{n}} days, see {{p}} docs"},
                "next": "r",
            },
            _ret(),
        ]
    )
    assert secrets_of(m) == []


def test_a_template_whose_own_text_holds_the_secret_is_reported_once() -> None:
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "who", "value": "me", "next": "b"},
            {
                "id": "b",
                "type": "set",
                "target": "h",
                "value": {"$template": "{{who}} " + GH_TOKEN},
                "next": "r",
            },
            _ret(),
        ]
    )
    assert [p for p, _ in secrets_of(m)] == ["/flow/nodes/1/value/$template"]


def test_the_cli_reports_a_folded_secret_and_exits_one(tmp_path: Path) -> None:
    m = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "p", "value": "gh" + "p_", "next": "b"},
            {
                "id": "b",
                "type": "set",
                "target": "h",
                "value": {"$template": "{{p}}" + GH_BODY},
                "next": "r",
            },
            _ret(),
        ]
    )
    tool = tmp_path / "split.talostool"
    tool.write_bytes(orjson.dumps(m, option=orjson.OPT_INDENT_2))
    done = subprocess.run(
        [sys.executable, "-m", "forgec", "check", str(tool)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "FORGE_SECRET_FOUND" in done.stdout and GH_BODY not in done.stdout + done.stderr


# ---------------------------------------------------------------------------------------------
# Normalisations


@pytest.mark.parametrize(
    "disguise",
    [
        lambda t: t[:9] + "\u200b" + t[9:18] + "\u200c" + t[18:27] + "\u200d" + t[27:],
        lambda t: "\u2060".join(t[i : i + 7] for i in range(0, len(t), 7)),
        lambda t: "\ufeff" + t[:12] + "\u00ad" + t[12:24] + "\u00ad" + t[24:],
        lambda t: "https://h.example/cb?t=" + "".join(f"%{ord(c):02X}" for c in t),
        lambda t: urllib.parse.quote(t[:4], safe="") + t[4:].replace("R", "%52"),
        lambda t: base64.b64encode(t.encode()).decode(),
        lambda t: "token: " + base64.urlsafe_b64encode(("id " + t).encode()).decode().rstrip("="),
    ],
    ids=[
        "zero-width",
        "word-joiner",
        "bom-soft-hyphen",
        "percent",
        "percent-some",
        "b64",
        "b64url",
    ],
)
def test_disguised_tokens_are_found_in_any_string(disguise: Any) -> None:
    text = disguise(GH_TOKEN)
    assert GH_TOKEN not in text
    assert [f.rule for f in scan_text(text)] == ["github-pat"]
    found = secrets_of(minimal_manifest(description="Notes: " + text))
    assert [p for p, _ in found] == ["/description"]


def test_invisible_characters_in_a_name_do_not_hide_it() -> None:
    m = minimal_manifest()
    m["inputSchema"] = {
        "type": "object",
        "properties": {"pass\u00adword": {"type": "string", "default": "Hunter2-xyz!"}},
    }
    assert len(secrets_of(m)) == 1


@pytest.mark.parametrize(
    "text",
    [
        "50% of the tasks, 20%-30% done",
        "https://example.com/search?q=hello%20world&page=2",
        base64.b64encode(b"just some ordinary words in a sentence here").decode(),
        "caf\u00e9 \u2014 soft\u00adhyphen\u00adated words\u200b with a zero\u200bwidth space",
    ],
)
def test_look_alikes_of_the_normalisations_stay_clean(text: str) -> None:
    assert scan_text(text) == []
    assert secrets_of(minimal_manifest(description=text)) == []


# ---------------------------------------------------------------------------------------------
# Categories of measurement 6


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


CATEGORIES = {
    "netrc": ("description", "machine api.example.com login alice password Xk9#mQ2vLp"),
    "netrc-lines": ("description", "machine api.example.com\n  login alice\n  password Xk9mQ2vLp"),
    "curl-u": ("description", "try: curl -u alice:Xk9mQ2vLpZ https://api.example.com/v1"),
    "curl-user": ("description", "curl -s --user 'bob:S3cr3t-Pw' https://api.example.com"),
    "signing-secret-text": ("description", "SLACK_SIGNING_SECRET=" + rnd(32, "0123456789abcdef")),
    "vault-legacy": ("description", "VAULT: s." + "Xq3Lm9PzR2Tk8WbN4vYc1HdJ"),
    "twilio-sk": ("description", "key SK" + rnd(32, "0123456789abcdef")),
    "bare-b64": ("description", "q8Zx/4Kp+2Lm9Tv3Wb7Nc1Hy6Jd0Rf5Ug8Ea2Sk4Mo="),
}


@pytest.mark.parametrize("name", list(CATEGORIES))
def test_new_categories_are_found(name: str) -> None:
    field, text = CATEGORIES[name]
    found = secrets_of(minimal_manifest(**{field: text}))
    assert [p for p, _ in found] == [f"/{field}"], found


@pytest.mark.parametrize(
    "properties",
    [
        {"auths": {"default": {"registry.example.com": {"auth": _b64("alice:pw12ab")}}}},
        {"slack_signing_secret": {"type": "string", "default": rnd(32, "0123456789abcdef")}},
        {"pw": {"type": "string", "default": "Hunter2-xyz"}},
        {"passcode": {"type": "string", "default": "Tr0ub4dor&3"}},
        {"blob": {"type": "string", "default": base64.b64encode(bytes(range(9, 41))).decode()}},
    ],
    ids=["docker-auths", "signing-secret", "pw", "passcode", "bare-b64"],
)
def test_new_categories_are_found_under_their_names(properties: dict[str, Any]) -> None:
    m = minimal_manifest(inputSchema={"type": "object", "properties": properties})
    assert len(secrets_of(m)) == 1


@pytest.mark.parametrize(
    "text",
    [
        "the machine learning model; login with SSO; password reset via email",
        "machine build-01 login ci password $CI_PASSWORD",
        "use curl -u $USER:$TOKEN https://api.example.com or curl -u alice: to be asked",
        "items.ToListAsync() and this.s.Configurationmanagerxyzz",
        "SKU 0123456789abcdef0123456789abcdef",
        "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
        "nextPageToken cursor " + rnd(40),
        "ACCOUNT ID AC" + rnd(32, "0123456789abcdef"),
        "pw: none, passcode: 1234",
    ],
)
def test_look_alikes_of_the_new_categories_stay_clean(text: str) -> None:
    assert scan_text(text) == [], scan_text(text)


def test_a_digest_named_as_such_is_not_a_bare_key() -> None:
    digest = base64.b64encode(bytes(range(150, 182))).decode()
    assert scan_text(digest, name="integrity") == []
    assert scan_text(digest, name="sha256") == []
    assert [f.rule for f in scan_text(digest)] == ["high-entropy-base64"]


# ---------------------------------------------------------------------------------------------
# The pass's screen stays a superset of the full walk with the new features


_PIECES = st.sampled_from(
    [
        GH_TOKEN,
        GH_TOKEN[:9],
        GH_TOKEN[9:],
        base64.b64encode(GH_TOKEN.encode()).decode(),
        "".join(f"%{ord(c):02x}" for c in GH_TOKEN[:12]),
        "\u200b",
        "\u00ad",
        "\ufeff",
        "\u2060",
        "curl -u al:Qz8kLm2vXw ",
        "machine h login u password Qz8#kLm2 ",
        "s.Xq3Lm9PzR2Tk8WbN4vYc1HdJ",
        "SK" + "0123456789abcdef" * 2,
        "q8Zx/4Kp+2Lm9Tv3Wb7Nc1Hy6Jd0Rf5Ug8Ea2Sk4Mo=",
        " ",
        "%",
        "+/",
        "pw",
        "pass",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=6).map("".join)
_NAMES_NEW = st.sampled_from(["pw", "pass\u00adword", "passcode", "auth", "title", "sha256", "x"])
_DOCS = st.recursive(
    _TEXTS,
    lambda inner: (
        st.dictionaries(st.one_of(_NAMES_NEW, _TEXTS), inner, max_size=3)
        | st.lists(inner, max_size=3)
    ),
    max_leaves=8,
)


@given(_DOCS)
def test_the_screen_still_agrees_with_the_full_walk(raw: Any) -> None:
    from forgec.passes.secrets import find_secrets, walk_secrets

    assert find_secrets(raw) == walk_secrets(raw)


@given(st.text(alphabet=st.sampled_from("ab%20\u200b\u00ad+/=Zx9_-:@"), max_size=200))
def test_normalised_findings_map_back_inside_the_string(text: str) -> None:
    for f in scan_text(text):
        assert 0 <= f.start < f.end <= len(text)
