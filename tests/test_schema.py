"""`forgec schema`: a draft-07 JSON Schema that accepts every valid manifest and works with the
validators people use (`jsonschema`, `fastjsonschema`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import full_manifest, manifest_with_nodes, minimal_manifest, mutate

import forgec
from forgec.cli import main
from forgec.frontend.build import build_manifest
from forgec.frontend.schema import manifest_json_schema

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.talostool"))

SCHEMA = manifest_json_schema()
# Validators get their own copies: a compiler that annotates its input must not change SCHEMA.
VALIDATOR = jsonschema.Draft7Validator(copy.deepcopy(SCHEMA))
FAST = fastjsonschema.compile(copy.deepcopy(SCHEMA))


def accepts(doc: Any) -> bool:
    by_jsonschema = VALIDATOR.is_valid(doc)
    try:
        FAST(doc)
        by_fast = True
    except fastjsonschema.JsonSchemaException:
        by_fast = False
    assert by_jsonschema == by_fast, "the two validators disagree"
    return by_jsonschema


def test_schema_is_valid_draft_07() -> None:
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_every_structural_object_is_closed() -> None:
    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                # A node dispatcher is closed by the per-type branch its `allOf` selects.
                closed = node.get("additionalProperties") is False or "allOf" in node
                assert closed or path.endswith("jsonSchema/properties/properties"), path
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(SCHEMA, "")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_accepted(path: Path) -> None:
    assert accepts(orjson.loads(path.read_bytes())), [
        e.message for e in VALIDATOR.iter_errors(orjson.loads(path.read_bytes()))
    ]


def test_fixtures_are_accepted() -> None:
    assert accepts(minimal_manifest())
    assert accepts(full_manifest())


@pytest.mark.parametrize(
    "doc",
    [
        minimal_manifest(titel="x"),
        minimal_manifest(version=0),
        minimal_manifest(id="Bad Id"),
        minimal_manifest(schema="talos.local-tool.v2"),
        minimal_manifest(network={"mode": "forbidden", "hosts": ["example.org"]}),
        minimal_manifest(network={"mode": "allowlist"}),
        minimal_manifest(network={"mode": "allowlist", "hosts": ["*.example.org"]}),
        minimal_manifest(triggers=[{"type": "manual", "cron": "* * * * *"}]),
        minimal_manifest(triggers=[{"type": "schedule"}]),
        minimal_manifest(inputSchema={"type": "string", "pattern": "x"}),
        minimal_manifest(ui={"title": "t", "values": [{"label": "l", "path": "a.prototype"}]}),
        manifest_with_nodes([{"id": "a", "type": "goto"}]),
        manifest_with_nodes([{"id": "a", "type": "set", "target": "x", "value": 1}]),
        manifest_with_nodes([{"id": "a", "type": "return", "value": {"$ref": "input..x"}}]),
        manifest_with_nodes([{"id": "a", "type": "return", "value": {"$ref": "x", "y": 1}}]),
        manifest_with_nodes(
            [
                {
                    "id": "t",
                    "type": "if",
                    "condition": {"op": "truthy", "left": 1, "right": 2},
                    "then": "t",
                    "else": "t",
                }
            ]
        ),
        manifest_with_nodes(
            [
                {
                    "id": "l",
                    "type": "foreach",
                    "source": [],
                    "itemVar": "i",
                    "maxItems": 1,
                    "body": [
                        {
                            "id": "m",
                            "type": "foreach",
                            "source": [],
                            "itemVar": "j",
                            "maxItems": 1,
                            "body": [{"id": "r", "type": "return", "value": 1}],
                        }
                    ],
                    "next": "l",
                }
            ]
        ),
    ],
)
def test_shape_errors_are_refused(doc: dict[str, Any]) -> None:
    assert build_manifest(doc)[1], "the fixture should be invalid for forgec too"
    assert not accepts(doc)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 10_000),
    st.sampled_from(["replace", "delete", "add"]),
    st.none() | st.booleans() | st.integers(-3, 300) | st.text(max_size=4) | st.just([]),
)
def test_whatever_the_checker_accepts_the_schema_accepts(where: int, action: str, new: Any) -> None:
    doc = mutate(full_manifest(), where, action, new)
    if forgec.check(orjson.dumps(doc)).ok:
        assert accepts(doc)


def test_forgec_schema_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("}\n") and not out.endswith("\n\n")
    assert json.loads(out) == SCHEMA
    assert out.startswith('{\n  "$schema"')


def test_forgec_schema_writes_a_file(tmp_path: Path) -> None:
    target = tmp_path / "talostool.schema.json"
    assert main(["schema", "-o", str(target)]) == 0
    assert json.loads(target.read_text()) == SCHEMA
