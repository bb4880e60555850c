"""The check's shortcuts decide exactly what the long way decides.

`forgec.check` is tuned for speed (docs/performance.md): the builder records each node's reads
and which nodes hold a credential so the references pass need not walk the values again. These
tests run the passes both ways — with the recorded facts and with them removed, so every pass
walks the IR itself — on the corpus, the examples, random valid tools and mutated manifests,
and require the same diagnostics and marks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import full_manifest, manifest_with_nodes, minimal_manifest, mutate
from strategies import json_values, manifests, scalars

from forgec.catalog import get_catalog
from forgec.frontend.build import build_manifest
from forgec.frontend.manifest import load_manifest
from forgec.ir.nodes import walk_nodes
from forgec.passes import PASSES
from forgec.passes.context import PassContext
from forgec.passes.references import values_of

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "tests/corpus").glob("*.talostool")) + sorted(
    (ROOT / "examples").glob("*.talostool")
)

_MEMBER = re.compile(rb'\s*"(?:[^"\\]|\\.)*": ')  # a line that starts with an object key

JSON = json_values(
    scalars(floats=None),
    keys=st.sampled_from(["$ref", "$template", "$credential", "a", "id"]),
    max_size=3,
    max_leaves=6,
)


def _run(raw: Any, target: str, *, shortcuts: bool) -> tuple[list[tuple[str, str, str]], Any]:
    ctx = PassContext(raw=raw, catalog=get_catalog(target))
    for name, run in PASSES:
        if name != "structure" and ctx.manifest_or_none is None:
            break
        run(ctx)
        if name == "structure" and not shortcuts and ctx.manifest_or_none is not None:
            ctx.manifest_or_none = attrs.evolve(
                ctx.manifest_or_none, node_reads=None, credential_nodes=None
            )
    found = sorted((d.code, d.path, d.message) for d in ctx.diagnostics)
    return found, ctx.facts.marks


def _same_both_ways(raw: Any, target: str = "talos") -> None:
    assert _run(raw, target, shortcuts=True) == _run(raw, target, shortcuts=False)


def _recorded_reads_match_a_walk(raw: Any) -> None:
    manifest, _ = build_manifest(raw)
    if manifest.flow is None:
        return
    assert manifest.node_reads is not None and manifest.credential_nodes is not None
    for node, _loop in walk_nodes(manifest.flow.nodes):
        refs, creds = values_of(node)
        assert manifest.node_reads.get(node.pointer, []) == refs
        assert (node.pointer in manifest.credential_nodes) == bool(creds)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_and_examples_check_the_same_both_ways(path: Path) -> None:
    raw = load_manifest(path.read_bytes()).value
    if raw is None:
        return
    target = "talon" if ".talon." in path.name or path.name.startswith("talon-") else "talos"
    _same_both_ways(raw, target)
    _recorded_reads_match_a_walk(raw)


def test_a_value_left_out_of_the_ir_takes_its_reads_with_it() -> None:
    # `later` is never written: its read is reported only when the value holding it is usable
    raw = manifest_with_nodes(
        [
            {"id": "a", "type": "set", "target": "x", "value": {"$ref": "input.a"}, "next": "b"},
            {
                "id": "b",
                "type": "set",
                "target": "y",
                "value": {"ok": {"$ref": "later"}, "bad": {"$ref": "not a path!"}},
                "next": "c",
            },
            {"id": "c", "type": "set", "target": "later", "value": 1, "next": "d"},
            {"id": "d", "type": "return", "value": {"x": {"$ref": "x"}}},
        ]
    )
    _recorded_reads_match_a_walk(raw)
    found, _ = _run(raw, "talos", shortcuts=True)
    assert [code for code, _, _ in found] == ["FORGE_REF_UNSAFE"]
    _same_both_ways(raw)


def test_body_reads_belong_to_the_body_node() -> None:
    raw = manifest_with_nodes(
        [
            {
                "id": "each",
                "type": "foreach",
                "source": {"$ref": "input.items"},
                "itemVar": "item",
                "maxItems": 5,
                "body": [
                    {"id": "b1", "type": "set", "target": "t", "value": {"$ref": "item.title"}}
                ],
                "next": "done",
            },
            {"id": "done", "type": "return", "value": {"$ref": "item"}},
        ]
    )
    manifest, _ = build_manifest(raw)
    assert manifest.node_reads is not None
    assert [r.text for r in manifest.node_reads["/flow/nodes/0"]] == ["input.items"]
    assert [r.text for r in manifest.node_reads["/flow/nodes/0/body/0"]] == ["item.title"]
    found, _ = _run(raw, "talos", shortcuts=True)
    assert [(code, path) for code, path, _ in found] == [
        ("FORGEC_REF_UNDEFINED", "/flow/nodes/1/value")
    ]
    _same_both_ways(raw)


@settings(max_examples=60, deadline=None)
@given(manifests())
def test_random_valid_tools_check_the_same_both_ways(raw: dict[str, Any]) -> None:
    _recorded_reads_match_a_walk(raw)
    _same_both_ways(orjson.loads(orjson.dumps(raw)))


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([full_manifest(), minimal_manifest()]),
    st.integers(0, 10_000),
    st.sampled_from(["replace", "delete", "add"]),
    JSON,
)
def test_mutated_manifests_check_the_same_both_ways(
    base: Any, where: int, action: str, new: Any
) -> None:
    raw = mutate(base, where, action, new)
    _recorded_reads_match_a_walk(raw)
    _same_both_ways(raw)


def test_graph_order_comes_from_graphlib_and_reads_like_the_manifest() -> None:
    raw = manifest_with_nodes(
        [
            {"id": "a", "type": "if", "condition": {"op": "truthy", "left": {"$ref": "input.x"}},
             "then": "b", "else": "c"},
            {"id": "b", "type": "set", "target": "x", "value": 1, "next": "d"},
            {"id": "c", "type": "set", "target": "y", "value": 2, "next": "d"},
            {"id": "d", "type": "return", "value": {"$ref": "x"}},
            {"id": "lost", "type": "set", "target": "z", "value": 3, "next": "lost2"},
            {"id": "lost2", "type": "set", "target": "z", "value": 3, "next": "lost"},
        ]
    )  # fmt: skip
    ctx = PassContext(raw=raw, catalog=get_catalog("talos"))
    for name, run in PASSES[:3]:
        assert name in ("structure", "graph", "references")
        run(ctx)
    facts = ctx.facts
    # the unreachable cycle is reported whole; the reachable part is still ordered
    assert facts.cycles == [["lost", "lost2"]]
    assert facts.topo_order == ["a", "b", "c", "d"]
    assert facts.worst_case_path == ["a", "b", "d"]
    # with a cycle anywhere, definite assignment stands down (the cycle is the error to fix)
    assert not [d for d in ctx.diagnostics if d.code.startswith("FORGEC_REF")]


@pytest.mark.parametrize(
    "path", sorted((ROOT / "examples").glob("*.talostool")), ids=lambda p: p.name
)
def test_a_manifest_written_in_flow_order_is_ordered_as_written(path: Path) -> None:
    raw = load_manifest(path.read_bytes()).value
    ctx = PassContext(raw=raw, catalog=get_catalog("talon"))
    for _name, run in PASSES[:2]:
        run(ctx)
    nodes = raw["flow"]["nodes"]
    assert ctx.facts.topo_order == [n["id"] for n in nodes]
    for n in nodes:
        if n["type"] == "foreach":
            assert ctx.facts.body_order[n["id"]] == [b["id"] for b in n["body"]]


@settings(max_examples=60, deadline=None)
@given(manifests(), st.integers(0, 10_000), st.booleans())
def test_a_duplicate_in_a_canonically_formatted_file_is_still_found(
    raw: dict[str, Any], where: int, newline: bool
) -> None:
    # The loader skips its colon count when the text is its own re-serialisation; a duplicated
    # member line must still be caught in a file that is otherwise in that layout.
    text = orjson.dumps(raw, option=orjson.OPT_INDENT_2) + (b"\n" if newline else b"")
    assert load_manifest(text).diagnostics == []
    lines = text.split(b"\n")
    members = [i for i, line in enumerate(lines) if line.endswith(b",") and _MEMBER.match(line)]
    if not members:
        return
    i = members[where % len(members)]
    doubled = b"\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    found = load_manifest(doubled).diagnostics
    assert [d.code for d in found] == ["FORGE_MANIFEST_STRUCTURE"]
    assert "duplicate key" in found[0].message
