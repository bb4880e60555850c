"""Every text forgec writes for a person spells control, bidi and line-separator characters as
escapes (SPEC §14), and the escape changes nothing the text means: generated strings through
the JSON writer (`forgec.runtime.jsontext`, behind compile, fmt --to talostool, lower, inspect
and check JSON) and the `.forge` formatter, each round-tripped (the CLI attack is in
tests/attacks/test_review_text.py)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import manifests

from forgec.frontend.canonical import dumps_canonical
from forgec.frontend.dsl import load_forge
from forgec.frontend.dsl_format import format_forge, quote
from forgec.ir.text_rules import ESCAPED_ON_OUTPUT, ESCAPED_ON_OUTPUT_CHARS
from forgec.runtime import jsontext

# the table's characters, then anything else: the search leans on what it must escape
_TABLE = st.sampled_from(
    sorted(c for c in ESCAPED_ON_OUTPUT_CHARS if not 0xD800 <= ord(c) <= 0xDFFF)
)
TEXT = st.lists(st.one_of(_TABLE, st.characters(exclude_categories=("Cs",))), max_size=40).map(
    "".join
)


def _raw(text: str) -> list[str]:
    return [c for c in text if c in ESCAPED_ON_OUTPUT_CHARS and c != "\n"]


@given(TEXT, st.booleans())
def test_json_text_holds_no_raw_unsafe_character_and_means_the_same(s: str, indent: bool) -> None:
    value = {"k" + s: [s, {"v": s}]}
    text = jsontext.dumps_text(value, indent=indent)
    assert _raw(text) == []
    assert json.loads(text) == value
    assert jsontext.dumps_text(json.loads(text), indent=indent) == text  # a fixpoint


@given(TEXT, st.booleans())
def test_a_forge_string_literal_holds_no_raw_unsafe_character(s: str, template: bool) -> None:
    assert _raw(quote(s, template=template)) == []


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(manifests(), TEXT)
def test_forge_text_escapes_and_round_trips(manifest: dict, s: str) -> None:
    manifest["flow"]["nodes"][0]["odd"] = {s: s}
    text = format_forge(manifest)
    assert _raw(text.replace("\n", "")) == []
    loaded = load_forge(text, path="t.forge")
    assert loaded.value is not None, [d.message for d in loaded.diagnostics]
    assert dumps_canonical(loaded.value) == dumps_canonical(manifest)


def test_the_table_includes_what_the_issue_named() -> None:
    for ch in "\u2066\u2067\u2068\u2069\u202e\u009b\x1b\x7f\u2028":
        assert any(lo <= ord(ch) <= hi for lo, hi in ESCAPED_ON_OUTPUT)
