"""The strict `.talostool` loader: size, encoding, syntax, duplicates, depth, and positions."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifests import full_manifest, minimal_manifest, pointers
from strategies import json_values, scalars

from forgec.frontend.jsonpos import NullSourceMap, TextSourceMap, index_positions
from forgec.frontend.manifest import MAX_MANIFEST_BYTES, load_manifest

STRUCTURE = "FORGE_MANIFEST_STRUCTURE"


def _pretty(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


def _codes(loaded) -> list[str]:  # type: ignore[no-untyped-def]
    return [d.code for d in loaded.diagnostics]


def _padded(size: int) -> bytes:
    """A valid manifest padded with trailing whitespace to exactly `size` bytes."""
    data = _pretty(minimal_manifest())
    assert len(data) <= size
    return data + b" " * (size - len(data))


# --- size -------------------------------------------------------------------------------------


def test_exactly_64_kib_is_read() -> None:
    loaded = load_manifest(_padded(MAX_MANIFEST_BYTES))
    assert loaded.diagnostics == []
    assert loaded.value == minimal_manifest()


def test_one_byte_over_64_kib_is_refused_alone_and_unparsed() -> None:
    # Broken JSON past the limit: only the size is reported, nothing is parsed.
    data = b"{" + b"x" * MAX_MANIFEST_BYTES
    loaded = load_manifest(data, path="big.talostool")
    assert _codes(loaded) == ["FORGE_MANIFEST_TOO_LARGE"]
    assert loaded.value is None
    assert "65,537" in loaded.diagnostics[0].message


def test_size_of_a_str_counts_utf8_bytes_not_characters() -> None:
    base = _pretty(minimal_manifest(description="é"))
    # Grow the description with 2-byte characters until the file passes the limit in bytes
    # while staying under it in characters.
    extra = (MAX_MANIFEST_BYTES - len(base)) // 2 + 1
    text = _pretty(minimal_manifest(description="é" * (extra + 1))).decode()
    assert len(text) < MAX_MANIFEST_BYTES < len(text.encode())
    assert _codes(load_manifest(text)) == ["FORGE_MANIFEST_TOO_LARGE"]


# --- encoding ---------------------------------------------------------------------------------


def test_byte_order_mark_is_refused_at_line_1() -> None:
    loaded = load_manifest(b"\xef\xbb\xbf" + _pretty(minimal_manifest()), path="m.talostool")
    assert _codes(loaded) == [STRUCTURE]
    d = loaded.diagnostics[0]
    assert "byte order mark" in d.message
    assert d.span is not None and (d.span.file, d.span.line, d.span.column) == ("m.talostool", 1, 1)
    assert loaded.value is None


def test_byte_order_mark_in_a_str_is_refused_too() -> None:
    loaded = load_manifest("\ufeff" + _pretty(minimal_manifest()).decode())
    assert _codes(loaded) == [STRUCTURE]


def test_invalid_utf8_names_the_byte_and_its_position() -> None:
    data = b'{\n  "title": "caf\xe9",\n  "id": "x"\n}'
    loaded = load_manifest(data)
    assert _codes(loaded) == [STRUCTURE]
    d = loaded.diagnostics[0]
    assert "not valid UTF-8" in d.message and "0xe9" in d.message
    assert d.span is not None and (d.span.line, d.span.column) == (2, 16)


def test_lone_surrogate_in_a_python_str_is_refused() -> None:
    loaded = load_manifest('{"title": "\ud800"}')
    assert _codes(loaded) == [STRUCTURE]
    assert loaded.value is None


# --- syntax -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ('{\n  "a": 1\n  "b": 2\n}', 3, 3, "unexpected character"),
        ('{\n  "a": 1,\n}', 2, 9, "trailing comma"),
        ('{"a": NaN}', 1, 7, "`NaN` is not a JSON number"),
        ('{"a": Infinity}', 1, 7, "`Infinity` is not a JSON number"),
        ('{"a": 1} {"b": 2}', 1, 10, "after the end"),
        ("", 1, 1, "empty"),
        ('{"a": "unclosed', 1, 16, "ends too early"),
        ("{'a': 1}", 1, 2, "double quotes"),
        ('{"a": 1 // note\n}', 1, 9, "comments"),
    ],
)
def test_bad_json_reports_line_and_column(text: str, line: int, column: int, words: str) -> None:
    loaded = load_manifest(text.encode(), path="bad.talostool")
    assert _codes(loaded) == [STRUCTURE]
    d = loaded.diagnostics[0]
    assert words in d.message
    assert f"line {line}, column {column}" in d.message
    assert d.span is not None and (d.span.line, d.span.column) == (line, column)
    assert loaded.value is None


def test_columns_count_characters_not_bytes() -> None:
    loaded = load_manifest('{"é": "ü", "b": @}'.encode())
    assert loaded.diagnostics[0].span is not None
    assert loaded.diagnostics[0].span.column == 17


def test_huge_integers_do_not_crash() -> None:
    # SPEC §16: an integer past 64 bits is refused as written, at its path (orjson would have
    # read it as a float, which the builder could no longer tell from `1e40`)
    loaded = load_manifest(b'{"version": ' + b"9" * 40 + b"}")
    assert _codes(loaded) == [STRUCTURE] and loaded.diagnostics[0].path == "/version"
    assert "(40 digits) is outside ±(2^53 − 1)" in loaded.diagnostics[0].message
    overflow = load_manifest(b'{"version": 1e400}')
    assert _codes(overflow) == [STRUCTURE]
    assert "too large" in overflow.diagnostics[0].message
    many_digits = load_manifest(b'{"version": ' + b"9" * 5000 + b"}")
    assert _codes(many_digits) == [STRUCTURE] and many_digits.diagnostics[0].path == "/version"


def test_top_level_scalar_is_loaded_for_the_builder_to_refuse() -> None:
    loaded = load_manifest(b"[1, 2]")
    assert loaded.diagnostics == [] and loaded.value == [1, 2]


# --- duplicate keys ---------------------------------------------------------------------------


def test_every_duplicate_key_is_listed_at_its_second_occurrence() -> None:
    text = '{\n  "a": 1,\n  "b": {"c": 1, "c": 2},\n  "a": 3,\n  "d": [{"e": 1, "e": 1}]\n}'
    loaded = load_manifest(text.encode(), path="dup.talostool")
    found = [(d.code, d.path, d.span.line, d.span.column) for d in loaded.diagnostics if d.span]
    assert found == [
        (STRUCTURE, "/b/c", 3, 17),
        (STRUCTURE, "/a", 4, 3),
        (STRUCTURE, "/d/0/e", 5, 18),
    ]
    assert all("duplicate key" in d.message for d in loaded.diagnostics)
    assert loaded.value is not None  # still checked further (last copy wins)


def test_duplicate_spelled_with_an_escape_is_caught() -> None:
    loaded = load_manifest(b'{"id": 1, "\\u0069d": 2}')
    assert [d.path for d in loaded.diagnostics] == ["/id"]


def test_escaped_colons_cannot_hide_a_duplicate() -> None:
    # The fast path compares colon counts; an escaped colon must not cancel a dropped member.
    hidden = load_manifest(b'{"a": "x\\u003a", "b": 1, "b": 2}')
    assert [d.path for d in hidden.diagnostics] == ["/b"]
    clean = load_manifest(b'{"a": "x\\u003A", "b": "y:z"}')
    assert clean.diagnostics == [] and clean.value == {"a": "x:", "b": "y:z"}


def test_same_key_in_different_objects_is_fine() -> None:
    loaded = load_manifest(b'{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}')
    assert loaded.diagnostics == []


# --- depth ------------------------------------------------------------------------------------


def _nested_objects(levels: int, inner: str = "{}") -> bytes:
    return ('{"a":' * (levels - 1) + inner + "}" * (levels - 1)).encode()


def _nested_lists(levels: int, inner: str = "[]") -> bytes:
    return ("[" * (levels - 1) + inner + "]" * (levels - 1)).encode()


@pytest.mark.parametrize("make", [_nested_objects, _nested_lists])
def test_depth_64_is_fine_and_65_is_refused(make) -> None:  # type: ignore[no-untyped-def]
    assert load_manifest(make(64)).diagnostics == []
    assert load_manifest(make(64, "[1, 2]" if make is _nested_lists else '{"x": 1}')).value
    deep = load_manifest(make(65))
    assert _codes(deep) == [STRUCTURE]
    assert "deeper than 64" in deep.diagnostics[0].message
    assert deep.value is None


def test_an_empty_container_at_level_65_is_refused_but_scalars_at_64_are_fine() -> None:
    assert load_manifest(_nested_objects(64, '{"x": [], "y": 1}')).value is None
    assert load_manifest(_nested_objects(64, '{"y": 1, "z": "s"}')).diagnostics == []
    assert load_manifest(_nested_lists(64, "[{}]")).value is None


def test_very_deep_documents_are_refused_without_recursion_errors() -> None:
    deep = load_manifest(b"[" * 30000 + b"]" * 30000)
    assert _codes(deep) == [STRUCTURE]
    assert deep.diagnostics[0].span is not None and deep.diagnostics[0].span.column == 65


# --- positions --------------------------------------------------------------------------------


def test_positions_are_lazy_and_point_at_keys_and_values() -> None:
    text = _pretty(full_manifest()).decode()
    source_map = TextSourceMap(text, "full.talostool")
    assert source_map._index is None  # nothing tokenized until a span is asked for
    span = source_map.span("/flow/nodes/0/retry/attempts")
    assert span is not None and span.file == "full.talostool"
    line = text.splitlines()[span.line - 1]
    assert line[span.column - 1 : span.end_column - 1] == "2"
    key = source_map.span("/flow/nodes/0/retry/attempts", key=True)
    assert key is not None and key.line == span.line
    assert line[key.column - 1 : key.end_column - 1] == '"attempts"'


def test_a_missing_member_resolves_to_its_nearest_parent() -> None:
    text = '{\n  "flow": {\n    "entry": "a"\n  }\n}'
    source_map = TextSourceMap(text)
    assert source_map.span("/flow/maxTransitions") == source_map.span("/flow")
    flow = source_map.span("/flow")
    assert flow is not None and (flow.line, flow.column, flow.end_line) == (2, 11, 4)
    assert source_map.span("/nope/deeper/still") == source_map.span("")


def test_pointer_escapes_and_array_items() -> None:
    text = '{"a/b": {"~x": [10, {"k": true}]}}'
    source_map = TextSourceMap(text.encode())
    item = source_map.span("/a~1b/~0x/1/k")
    assert item is not None and text[item.column - 1 : item.end_column - 1] == "true"
    first = source_map.span("/a~1b/~0x/0", key=True)  # an item has no key: its value
    assert first is not None and text[first.column - 1 : first.end_column - 1] == "10"


def test_null_source_map_has_no_positions() -> None:
    source_map = NullSourceMap("x.talostool")
    assert source_map.span("/id") is None and source_map.text is None
    assert source_map.file == "x.talostool"


JSON = json_values(
    scalars(integers=st.integers(-(10**15), 10**15)), keys=st.text(max_size=5), max_leaves=20
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON, st.sampled_from([None, 0, 2]))
def test_every_pointer_maps_to_the_text_of_its_value(value, indent) -> None:  # type: ignore[no-untyped-def]
    text = json.dumps(value, indent=indent, ensure_ascii=bool(indent))
    index = index_positions(text)
    assert index.duplicates == [] and index.too_deep is None
    for pointer in pointers(value):
        start, end = index.entries[pointer][2:]
        expected = value
        for token in pointer[1:].split("/") if pointer else []:
            token = token.replace("~1", "/").replace("~0", "~")
            expected = expected[int(token)] if isinstance(expected, list) else expected[token]
        assert json.loads(text[start:end]) == expected


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_load_reads_any_json_value_exactly(value) -> None:  # type: ignore[no-untyped-def]
    loaded = load_manifest(json.dumps(value, indent=1).encode())
    assert loaded.diagnostics == []
    assert loaded.value == value


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    loaded = load_manifest(data, path="fuzz.talostool")
    assert all(d.code in (STRUCTURE, "FORGE_MANIFEST_TOO_LARGE") for d in loaded.diagnostics)
    if loaded.value is None:
        assert loaded.diagnostics
    for d in loaded.diagnostics:
        loaded.source_map.span(d.path, key=d.key)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet='{}[]",:01 \n\\ua-tnNI', max_size=200))
def test_json_shaped_noise_never_raises(text: str) -> None:
    loaded = load_manifest(text)
    for d in loaded.diagnostics:
        loaded.source_map.span(d.path, key=d.key)


FULL_TEXT = _pretty(full_manifest())


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(FULL_TEXT) - 1), st.binary(min_size=0, max_size=3))
def test_corrupted_manifests_never_raise_and_every_diagnostic_has_a_place(
    at: int, patch: bytes
) -> None:
    from forgec.frontend.build import build_manifest

    data = FULL_TEXT[:at] + patch + FULL_TEXT[at + 1 :]
    loaded = load_manifest(data, path="m.talostool")
    found = list(loaded.diagnostics)
    if loaded.value is not None:
        found += build_manifest(loaded.value)[1]
    for d in found:
        span = d.span or loaded.source_map.span(d.path, key=d.key)
        assert span is not None and span.line >= 1 and span.column >= 1
