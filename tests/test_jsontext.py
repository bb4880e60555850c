"""forgec's own JSON text: the same bytes, numbers and loader messages under any orjson release.

These tests pin exact bytes and words. CI runs them on the newest orjson and on the oldest one
pyproject allows (`.ci/run`), so a release that renders a float or words an error differently
fails here instead of changing a content hash or a user-facing message.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from manifests import manifest_with_nodes

from forgec.frontend.canonical import dumps_canonical
from forgec.frontend.manifest import load_manifest
from forgec.runtime.jsontext import dumps, format_float
from forgec.store import content_hash
from forgec.store.integrity import legacy_hash

FLOATS = [
    (0.1, "0.1"),
    (1.5, "1.5"),
    (100.0, "100.0"),
    (-0.0, "-0.0"),
    (0.0, "0.0"),
    (1e15, "1000000000000000.0"),
    (1e16, "1e16"),
    (1e20, "1e20"),
    (1.2345678901234568e16, "1.2345678901234568e16"),
    (9007199254740992.0, "9007199254740992.0"),
    (0.0001, "0.0001"),
    (1e-5, "0.00001"),
    (2.5e-5, "0.000025"),
    (1e-6, "1e-6"),
    (1.25e-10, "1.25e-10"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e308"),
    (-1.5e300, "-1.5e300"),
    (float("nan"), "null"),
    (float("inf"), "null"),
]


@pytest.mark.parametrize(("value", "text"), FLOATS, ids=[t for _, t in FLOATS])
def test_floats_have_one_rendering(value: float, text: str) -> None:
    assert format_float(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_reads_back_and_is_valid_json(x: float) -> None:
    text = format_float(x)
    assert float(text) == x and str(float(text)) == str(x)  # same double, same sign of zero
    assert re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?(e-?[1-9][0-9]*)?", text), text
    assert orjson.loads(text) == x
    assert dumps([x, {"k": x}]) == f'[{text},{{"k":{text}}}]'.encode()


def test_digits_inside_strings_are_left_alone() -> None:
    value = {"1e+20": "1e+20 1.50 2E5", "n": 1e20, "s": 'a"1.0e+5"\\', "i": 10**18}
    assert dumps(value) == (
        b'{"1e+20":"1e+20 1.50 2E5","n":1e20,"s":"a\\"1.0e+5\\"\\\\","i":1000000000000000000}'
    )


def _float_manifest() -> dict[str, Any]:
    return manifest_with_nodes(
        [{"id": "r", "type": "return", "value": {"big": 1e20, "tiny": 2.5e-7, "x": 0.1}}]
    )


def test_canonical_talostool_text_is_pinned() -> None:
    text = dumps_canonical(_float_manifest())
    assert '"big": 1e20,\n' in text and '"tiny": 2.5e-7,\n' in text and '"x": 0.1\n' in text


def test_content_hash_is_pinned() -> None:
    # The hash of a manifest holding floats, as every forgec computes it on every orjson.
    program = {"format": "test", "consts": [1e20, 2.5e-7, -0.0, 1e-5]}
    digest = content_hash(
        _float_manifest(), program, "0.0-test", target="talos", marks={"m": 0.5}, effects={}
    )
    assert digest == PINNED_HASH
    # a schema-1 store's hashes were orjson < 3.13's text: they still verify on 3.13
    legacy = legacy_hash(orjson.dumps(_float_manifest()).decode(), orjson.dumps(program).decode(),
                         "0.0-test")  # fmt: skip
    assert legacy == PINNED_LEGACY_HASH


PINNED_HASH = "sha256:41a8e86cd3d2146b623679fab980858499743a1ed110067517ae3bc2d575f345"
PINNED_LEGACY_HASH = "sha256:639942a7574276ef02a6fce1bd9b8136d72a5f71355f9f3f6cbf8714e193b081"


def test_forge_text_and_template_output_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "floats.talostool"
    path.write_bytes(orjson.dumps(_float_manifest(), option=orjson.OPT_INDENT_2))
    fmt = subprocess.run(
        [sys.executable, "-m", "forgec", "fmt", "--to", "forge", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert fmt.returncode == 0, fmt.stderr
    assert "1e20" in fmt.stdout and "2.5e-7" in fmt.stdout and "e+" not in fmt.stdout


# --- the loader's words are forgec's, not orjson's ---------------------------------------------

SYNTAX = [
    (b"[1,]", "a trailing comma is not allowed at line 1, column 3"),
    (b'{"a": 1,\n}', "a trailing comma is not allowed at line 1, column 8"),
    (b'{"a": [1, 2,  ]}', "a trailing comma is not allowed at line 1, column 12"),
    (b"[1 2]", "unexpected character `2` (expected `,` or `]`) at line 1, column 4"),
    (b'{"a" 1}', "unexpected character `1` (expected `:` after a key) at line 1, column 6"),
    (b"{1: 2}", "unexpected character `1` (expected a key in double quotes) at line 1, column 2"),
    (b"[,1]", "unexpected character `,` (expected a value) at line 1, column 2"),
    (b'["\\ud800"]', "a `\\u` escape is a lone surrogate at line 1, column 3"),
    (b'["\\udc00\\ud800"]', "a `\\u` escape is a lone surrogate at line 1, column 3"),
    (b'["\\x41"]', "`\\x` is not a JSON escape at line 1, column 3"),
    (b'["\\u12"]', "a `\\u` escape needs four hex digits at line 1, column 3"),
    (b'["a\x01"]', "a raw control character (write it as an escape) at line 1, column 4"),
    (b"[01]", "a number starts with 0 (JSON numbers have no leading zeros) at line 1, column 2"),
    (b"[1e400]", "a number is too large to represent at line 1, column 2"),
    (b"[-Infinity]", "`-Infinity` is not a JSON number at line 1, column 2"),
    (b"[1] # note", "unexpected text after the end of the document at line 1, column 5"),
    (b"  \n ", "the document is empty at line 1, column 1"),
    (
        b'{"a": [1, {"b": ',
        "ends too early (unclosed string, object or array?) at line 1, column 17",
    ),
    (b"[tru]", "unexpected character `t` (expected a value) at line 1, column 2"),
]


@pytest.mark.parametrize(("data", "words"), SYNTAX, ids=[d.decode()[:20] for d, _ in SYNTAX])
def test_syntax_errors_are_worded_by_forgec(data: bytes, words: str) -> None:
    loaded = load_manifest(data)
    assert [d.code for d in loaded.diagnostics] == ["FORGE_MANIFEST_STRUCTURE"]
    message = loaded.diagnostics[0].message
    assert message.startswith("the manifest is not valid JSON: ") and message.endswith(words)


@pytest.mark.parametrize("depth", [65, 1000, 1025, 5000, 30_000])
def test_deep_nesting_is_refused_at_level_65_whatever_orjson_allows(depth: int) -> None:
    for data in (b"[" * depth + b"]" * depth, b"[" * depth):
        loaded = load_manifest(data)
        assert [d.code for d in loaded.diagnostics] == ["FORGE_MANIFEST_STRUCTURE"]
        d = loaded.diagnostics[0]
        assert "nests deeper than 64 levels" in d.message
        assert d.span is not None and (d.span.line, d.span.column) == (1, 65)
