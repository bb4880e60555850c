"""Diagnostics carry their fixes as data (`Diagnostic.fixes`, `related`): a fix the checker
attaches, applied to the document by JSON Pointer alone, makes its diagnostic go away — so the
language server (or a model repairing its own tool) never reads the message prose."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forgec import api
from forgec.ir.pointer import split

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.talostool"))


def apply(doc: Any, fix: dict[str, Any]) -> Any:
    """The document with FIX applied (a fix's JSON form, as `--format json` prints it)."""
    doc = copy.deepcopy(doc)
    parts = split(fix["pointer"])
    if fix["kind"] == "insert":
        parent = doc
        for part in parts:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        parent[fix["field"]] = fix["value"]
        return doc
    parent = doc
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = parts[-1]
    if fix.get("key"):  # rename the member, keeping its place and value
        items = [(fix["value"] if k == last else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
    elif isinstance(parent, list):
        parent[int(last)] = fix["value"]
    else:
        parent[last] = fix["value"]
    return doc


def diagnostics(doc: Any) -> list[dict[str, Any]]:
    report = api.check(orjson.dumps(doc), target="talon")
    return [d.to_json() for d in report.diagnostics]


def _mutants(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Typos a model makes: a node field's name, a node's type, a capability's name, an
    input field's name, a missing `next`."""
    out = []
    for i, node in enumerate(doc["flow"]["nodes"]):
        for key in list(node)[1:]:
            bad = copy.deepcopy(doc)
            n = bad["flow"]["nodes"][i]
            n[key[:-1] + key[-1].upper() + "x"] = n.pop(key)
            out.append((f"field {key}", bad))
        bad = copy.deepcopy(doc)
        bad["flow"]["nodes"][i]["type"] = node["type"][:-1]
        out.append(("type", bad))
        if node["type"] == "capability":
            bad = copy.deepcopy(doc)
            bad["flow"]["nodes"][i]["capability"] = node["capability"].replace(".", "_")
            out.append(("capability", bad))
            if isinstance(node.get("input"), dict) and node["input"]:
                bad = copy.deepcopy(doc)
                inp = bad["flow"]["nodes"][i]["input"]
                first = next(iter(inp))
                inp[first + "s"] = inp.pop(first)
                out.append(("input field", bad))
        if "next" in node:
            bad = copy.deepcopy(doc)
            del bad["flow"]["nodes"][i]["next"]
            out.append(("missing next", bad))
    return out


CASES = [
    (path.name, what, bad)
    for path in EXAMPLES
    for what, bad in _mutants(orjson.loads(path.read_bytes()))
]


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES))
def test_a_fix_removes_its_diagnostic(case: tuple[str, str, dict[str, Any]]) -> None:
    _name, _what, bad = case
    for d in diagnostics(bad):
        for fix in d.get("fixes", ()):
            fixed = diagnostics(apply(bad, fix))
            assert not any(
                e["code"] == d["code"] and e["path"] == d["path"] and e["message"] == d["message"]
                for e in fixed
            ), (d, fix)


def test_the_common_typos_get_a_fix() -> None:
    fixed_kinds = set()
    for _name, what, bad in CASES:
        if any(d.get("fixes") for d in diagnostics(bad)):
            fixed_kinds.add(what.split()[0])
    assert {"field", "type", "capability", "input", "missing"} <= fixed_kinds


def test_related_places_point_at_the_other_duplicate() -> None:
    doc = orjson.loads(EXAMPLES[0].read_bytes())
    nodes = doc["flow"]["nodes"]
    nodes.append(dict(nodes[-1]))
    dup = [d for d in diagnostics(doc) if d["code"] == "FORGE_NODE_DUPLICATE"]
    assert dup and dup[0]["related"][0]["pointer"] == f"/flow/nodes/{len(nodes) - 2}/id"


def test_a_cycle_names_every_node_on_it() -> None:
    for path in EXAMPLES:
        doc = orjson.loads(path.read_bytes())
        nodes = doc["flow"]["nodes"]
        chained = [i for i, n in enumerate(nodes) if i > 0 and "next" in n and n["type"] != "if"]
        if chained and "next" in nodes[0]:
            break
    else:
        pytest.fail("no example has a chain to close into a cycle")
    nodes[chained[0]]["next"] = nodes[0]["id"]
    found = [d for d in diagnostics(doc) if d["code"] == "FORGE_CYCLE"]
    assert found and "/flow/nodes/0/id" in {r["pointer"] for r in found[0]["related"]}
