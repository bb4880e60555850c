"""The round trip, proven on generated manifests: `compile(fmt(M)) == canonical(M)` and, for the
canonical text T of any manifest, `fmt(compile(T)) == T`. Compared as text (canonical JSON), so
key order, `1.0` vs `1`, escapes and unicode all count."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import JSON, KEY, manifests

from forgec.api import check
from forgec.frontend.canonical import dumps_canonical
from forgec.frontend.dsl import load_forge
from forgec.frontend.dsl_format import FormatError, format_forge

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))


def _compile(text: str) -> dict:
    loaded = load_forge(text, path="t.forge")
    assert not loaded.diagnostics, [d.message for d in loaded.diagnostics]
    assert loaded.value is not None
    return loaded.value


@SETTINGS
@given(manifests())
def test_generated_manifests_are_valid(manifest: dict) -> None:
    report = check(orjson.dumps(manifest), path="gen.talostool")
    assert report.ok, [(d.code, d.message) for d in report.errors]


@SETTINGS
@given(manifests())
def test_compile_of_fmt_is_canonical(manifest: dict) -> None:
    text = format_forge(manifest)
    assert dumps_canonical(_compile(text)) == dumps_canonical(manifest)


@SETTINGS
@given(manifests())
def test_fmt_of_compile_is_identity_on_canonical_text(manifest: dict) -> None:
    canonical_text = format_forge(manifest)
    assert format_forge(_compile(canonical_text)) == canonical_text


@SETTINGS
@given(manifests(), st.dictionaries(KEY, JSON, max_size=3))
def test_unknown_fields_and_odd_values_survive_through_raw(manifest: dict, extra: dict) -> None:
    # Invalid manifests too: whatever JSON the file holds, the text says exactly that.
    manifest = {**manifest, **{k: v for k, v in extra.items() if k not in manifest}}
    manifest["flow"]["nodes"].append({"id": 7, "type": "set", "odd": extra})
    text = format_forge(manifest)
    assert dumps_canonical(_compile(text)) == dumps_canonical(manifest)


@SETTINGS
@given(JSON)
def test_any_json_value_round_trips_in_a_value_position(value: object) -> None:
    manifest = {
        "schema": "talos.local-tool.v1",
        "execution": "declarative-flow",
        "installScope": "device",
        "credentialRequirements": [],
        "flow": {"entry": "a", "nodes": [{"id": "a", "type": "return", "value": value}]},
    }
    text = format_forge(manifest)
    assert _compile(text)["flow"]["nodes"][0]["value"] == value
    assert format_forge(_compile(text)) == text


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (1.0, "1.0"),
        (1, "1"),
        ("{{x}}", '"\\{\\{x}}"'),
        ({"$template": "a {{x}}"}, '"a {{x}}"'),
        ({"$ref": "input.days"}, "$input.days"),
        ({"$ref": "bad path"}, '{"$ref": "bad path"}'),
        ({"$credential": "github"}, "$credential(github)"),
        ({}, "{}"),
        ([], "[]"),
        ({"a b": 1, "if": 2}, '{"a b": 1, if: 2}'),
    ],
)
def test_values_are_written_as_documented(value: object, written: str) -> None:
    manifest = {
        "schema": "talos.local-tool.v1",
        "execution": "declarative-flow",
        "installScope": "device",
        "credentialRequirements": [],
        "flow": {"nodes": [{"id": "a", "type": "return", "value": value}]},
    }
    assert f"a: return {written}\n" in format_forge(manifest)


def test_a_missing_implied_field_cannot_be_decompiled() -> None:
    with pytest.raises(FormatError, match="schema"):
        format_forge({"id": "x"})
