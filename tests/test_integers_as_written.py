"""Integers as written (SPEC §16, issue 17 measurement 4): every integer of the JSON text or
the `.forge` text outside ±(2^53 − 1) is `FORGE_MANIFEST_STRUCTURE` at its path, however long
— 2^64 and more included, which a parser turns into a float or refuses — and one inside it is
not. Through the real API and the real CLI, in both layouts the loader reads differently
(forgec's own indented layout takes the fast path, a compact one the slow path)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import example

from forgec.api import check

SAFE = 2**53 - 1
PLACES = ["/flow/nodes/0/input/extra", "/inputSchema/properties/n/default", "/version"]


def with_integer(token: str, place: str, *, indented: bool) -> str:
    m = example("note-updater")
    m["inputSchema"]["properties"]["n"] = {"type": "integer", "default": 1}
    marker = "__INTEGER__"
    if place == "/version":
        m["version"] = marker
    elif place == "/inputSchema/properties/n/default":
        m["inputSchema"]["properties"]["n"]["default"] = marker
    else:
        m["flow"]["nodes"][0]["input"]["extra"] = marker
    text = json.dumps(m, indent=2, ensure_ascii=False) if indented else json.dumps(m)
    return text.replace(f'"{marker}"', token)


def integer_errors(text: str) -> list[str]:
    report = check(text.encode())
    return [
        d.path
        for d in report.diagnostics
        if d.code == "FORGE_MANIFEST_STRUCTURE" and "is outside ±(2^53 − 1)" in d.message
    ]


big = st.one_of(
    st.integers(min_value=SAFE + 1, max_value=2**70),
    st.integers(min_value=64, max_value=4000).map(lambda n: 10**n + 7),
    st.sampled_from([2**53, 2**63, 2**64 - 1, 2**64, 2**64 + 1, 10**308, 10**309]),
)


@settings(deadline=None)  # a whole check each; a loaded machine is slow
@given(big, st.booleans(), st.sampled_from(PLACES[:2]), st.booleans())
def test_every_unsafe_integer_is_refused_at_its_path(
    n: int, negative: bool, place: str, indented: bool
) -> None:
    token = ("-" if negative else "") + _digits(n)
    assert integer_errors(with_integer(token, place, indented=indented)) == [place]


@settings(deadline=None)  # a whole check each; a loaded machine is slow
@given(st.integers(min_value=-SAFE, max_value=SAFE), st.sampled_from(PLACES[:2]), st.booleans())
def test_a_safe_integer_is_not(n: int, place: str, indented: bool) -> None:
    assert integer_errors(with_integer(str(n), place, indented=indented)) == []


@settings(deadline=None)  # a whole check each; a loaded machine is slow
@given(st.integers(min_value=2**64, max_value=2**80) | st.just(10**500), st.booleans())
def test_past_64_bits_even_a_field_with_its_own_range_says_so(n: int, indented: bool) -> None:
    # `version` 2^53 is FORGE_VERSION (its own range); past 64 bits the parsed value could not
    # tell it from a float, so the loader refuses it as written, at its path
    assert integer_errors(with_integer(_digits(n), "/version", indented=indented)) == ["/version"]


def test_an_integer_past_a_double_is_refused_not_called_bad_json() -> None:
    report = check(with_integer("1" + "0" * 400, PLACES[0], indented=False).encode())
    errors = [(d.code, d.path) for d in report.diagnostics if d.is_error]
    assert errors == [("FORGE_MANIFEST_STRUCTURE", PLACES[0])]
    assert "(401 digits)" in report.diagnostics[0].message


def test_digits_inside_strings_and_fractions_are_not_integers() -> None:
    m = example("note-updater")
    m["description"] = "order " + "9" * 40
    text = orjson.dumps(m).decode().replace('"limit":1', '"limit":1,"f":1.' + "9" * 40)
    assert integer_errors(text) == []


def test_the_cli_and_a_forge_text_say_the_same(tmp_path: Path) -> None:
    forge = (Path(__file__).resolve().parent.parent / "examples" / "note-updater.forge").read_text()
    bad = forge.replace("limit: 1}", "limit: 1, extra: 1" + "0" * 5000 + "}")
    assert bad != forge
    path = tmp_path / "long.forge"
    path.write_text(bad)
    proc = subprocess.run(
        [sys.executable, "-m", "forgec", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "FORGE_MANIFEST_STRUCTURE" in proc.stdout and "(5,001 digits) is outside" in proc.stdout
    js = tmp_path / "long.talostool"
    js.write_text(with_integer("2" + "0" * 30, PLACES[0], indented=False))
    proc = subprocess.run(
        [sys.executable, "-m", "forgec", "check", "--format", "json", str(js)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found: Any = json.loads(proc.stdout)
    diags = found["files"][0]["diagnostics"] if "files" in found else found["diagnostics"]
    assert [d["path"] for d in diags if "is outside" in d["message"]] == [PLACES[0]]


def _digits(n: int) -> str:
    import sys as _sys

    old = _sys.get_int_max_str_digits()
    _sys.set_int_max_str_digits(0)
    try:
        return str(n)
    finally:
        _sys.set_int_max_str_digits(old)


def test_tool_create_refuses_an_integer_past_64_bits_at_its_path(tmp_path: Path) -> None:
    """Through the real `mcp` client: the server re-writes the manifest object it received, and
    orjson cannot write such an integer; it must still be refused as written, not crash."""
    from test_check_budget import run_mcp

    m = example("note-updater")
    m["flow"]["nodes"][0]["input"]["extra"] = 2**64

    async def body(session: Any) -> Any:
        return await session.call_tool("tool_create", {"manifest": m, "target": "talos"})

    result = run_mcp(tmp_path / "tools.db", tmp_path, body, budget="60")
    assert result.is_error
    found = [
        (d["code"], d["path"])
        for d in result.structured_content["report"]["diagnostics"]
        if "is outside ±(2^53 − 1)" in d["message"]
    ]
    assert found == [("FORGE_MANIFEST_STRUCTURE", PLACES[0])]
