"""The consent diff (SPEC §14, `forgec.store.diff`): its promises as properties.

- diff(a, b) is empty exactly when the two canonical manifests are equal (the version numbers
  aside, which its header shows), and diff(a, a) says "No change.";
- any change to a reachable step's input appears in `behaviour`, field by field, at that step;
- every string it holds is safe text (no control or bidi character raw), values in `.forge`
  notation;
- its JSON has the one shape the CLI and the Tool Forge screen share.
"""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import AWKWARD_TEXT, manifests
from test_store import open_store, tool

from forgec.api import check
from forgec.frontend.canonical import canonical_manifest
from forgec.ir.text_rules import CONTROL_OR_BIDI_RE
from forgec.render.diff import render_diff
from forgec.runtime.jsontext import dumps_text
from forgec.store import effects as fx
from forgec.store.diff import NO_CHANGE, ONLY_TEXT, diff_stored, diff_versions, is_empty


def _version(m: dict[str, Any], number: int = 1) -> tuple[Any, Any]:
    """(a StoredVersion stand-in, its checked IR) without a store: what diff_stored reads."""
    report = check(orjson.dumps(m))
    assert report.ok, [d.message for d in report.diagnostics if d.is_error]
    stored = SimpleNamespace(
        tool_id=m["id"],
        version=number,
        hash=f"sha256:{number}",
        author="person",
        manifest=canonical_manifest(report.manifest),
        effects=fx.effects_from_report(report, "talos"),
    )
    return stored, report.ir


def _diff(a: Any, b: Any) -> dict[str, Any]:
    """The diff of two manifests, or of two `_version`s already checked."""
    (old, old_ir) = _version(a, 1) if isinstance(a, dict) else a
    (new, new_ir) = _version(b, 2) if isinstance(b, dict) else b
    return diff_stored(old, new, old_ir=old_ir, new_ir=new_ir)


def _same_manifest(a: dict[str, Any], b: dict[str, Any]) -> bool:
    strip = ("version", "parentVersion")
    ca = {k: v for k, v in canonical_manifest(a).items() if k not in strip}
    cb = {k: v for k, v in canonical_manifest(b).items() if k not in strip}
    return dumps_text(ca) == dumps_text(cb)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _assert_safe(diff: dict[str, Any]) -> None:
    for text in _strings(diff):
        assert not CONTROL_OR_BIDI_RE.search(text), text


# drawing manifests is most of the cost (the diff of two is about a millisecond): slow on a
# loaded machine, never a reason to fail
SLOW = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


@settings(SLOW, max_examples=50)  # two manifests per example
@given(a=manifests(), b=manifests())
def test_empty_exactly_when_the_manifests_are_equal(a: dict[str, Any], b: dict[str, Any]) -> None:
    b = dict(b, id=a["id"], version=a["version"])
    va, vb = _version(a), _version(b)
    diff = _diff(va, vb)
    assert is_empty(diff) is _same_manifest(a, b)
    assert (diff["summary"] == NO_CHANGE) is is_empty(diff)
    _assert_safe(diff)
    assert _diff(va, va)["summary"] == NO_CHANGE
    back = _diff(vb, va)  # the other way round: what was gained is lost
    assert back["effects"] == {"gained": diff["effects"]["lost"], "lost": diff["effects"]["gained"]}
    assert is_empty(back) is is_empty(diff)


def _capability_steps(m: dict[str, Any]) -> list[dict[str, Any]]:
    """Every capability step (loop bodies included): all reachable in `manifests()`."""
    out = []
    for node in m["flow"]["nodes"]:
        for step in [node, *node.get("body", [])]:
            if step["type"] == "capability":
                out.append(step)
    return out


@SLOW
@given(m=manifests(), data=st.data())
def test_any_change_to_a_steps_input_is_in_behaviour(m: dict[str, Any], data: Any) -> None:
    steps = _capability_steps(m)
    if not steps:
        m["flow"]["nodes"][0:0] = [
            {
                "id": "probe",
                "type": "capability",
                "capability": "tasks.list",
                "input": {"query": "x", "limit": 3},
                "target": "probed",
                "next": m["flow"]["entry"],
            }
        ]
        m["flow"]["entry"] = "probe"
        steps = _capability_steps(m)
    changed = copy.deepcopy(m)
    step = data.draw(st.sampled_from(_capability_steps(changed)))
    field = data.draw(st.sampled_from(sorted(step["input"])))
    old = step["input"][field]
    if isinstance(old, int):
        step["input"][field] = old % 3 + 1 if old % 3 + 1 != old else old + 1
    else:
        step["input"][field] = data.draw(AWKWARD_TEXT.filter(lambda s: s != old and s.strip()))
    diff = _diff(m, changed)
    [entry] = [b for b in diff["behaviour"] if b["node"] == step["id"]]
    assert entry["change"] == "changed" and entry["what"] == f"input.{field}"
    assert entry["old"] != entry["new"]
    assert diff["summary"] not in (NO_CHANGE, ONLY_TEXT)
    _assert_safe(diff)


def test_values_are_in_forge_notation_and_control_characters_are_escaped() -> None:
    a = orjson.loads(tool(1, None, "tasks.create"))
    b = copy.deepcopy(a)
    [node] = [n for n in b["flow"]["nodes"] if n.get("capability") == "tasks.create"]
    node["input"]["title"] = "hi\x1b[2J\u202e\u009b"
    diff = _diff(a, b)
    [entry] = [e for e in diff["behaviour"] if e["what"] == "input.title"]
    assert "\x1b" not in entry["new"] and "\u202e" not in entry["new"]
    assert "\\u001b" in entry["new"] and "\\u202e" in entry["new"]
    assert "\\x9b" in entry["new"] or "\\u009b" in entry["new"]
    assert not CONTROL_OR_BIDI_RE.search(render_diff(diff).replace("\n", ""))


def test_only_text_changed_is_said_in_those_words() -> None:
    a = orjson.loads(tool(1, None, "tasks.list"))
    b = dict(a, title="A new title", description="Said otherwise.")
    diff = _diff(a, b)
    assert diff["summary"] == ONLY_TEXT
    assert [t["field"] for t in diff["text"]] == ["title", "description"]
    assert "  Only text changed." in render_diff(diff)


def test_the_json_shape_shared_with_the_screen(tmp_path: Path) -> None:
    with open_store(tmp_path / "tools.db") as store:
        store.install(tool(1, None, "tasks.list"))
        store.install(tool(2, 1, "tasks.list", "tasks.create"))
        store.install(tool(3, 2, "tasks.list"), author="model")  # proposal 1
        diff = diff_versions(store, "demo.tool", 1, 2)
        first = diff_versions(store, "demo.tool", None, 1)
        proposal = diff_versions(store, "demo.tool", 2, "p1")
    assert set(diff) == {"id", "from", "to", "effects", "behaviour", "text", "summary", "verdict"}
    assert set(diff["from"]) == set(diff["to"]) == {"version", "hash", "author"}
    assert set(diff["effects"]) == {"gained", "lost"}
    assert diff["effects"]["gained"] == [{"kind": "operation", "text": "tasks.create"}]
    for entry in diff["behaviour"]:
        assert set(entry) == {"change", "node", "what", "old", "new", "text"}
        assert entry["change"] in ("added", "removed", "changed")
    assert first["from"] is None and first["summary"].startswith("First consent")
    assert proposal["to"]["version"] is None and proposal["to"]["author"] == "model"
    assert proposal["effects"]["lost"] == [{"kind": "operation", "text": "tasks.create"}]


@pytest.mark.parametrize("argv", [("1", "x"), ("p", "1"), ("1", "p0x")])
def test_tools_diff_refuses_what_is_not_a_version(tmp_path: Path, capsys: Any, argv: Any) -> None:
    from forgec.cli import main

    with open_store(tmp_path / "tools.db") as store:
        store.install(tool(1, None, "tasks.list"))
    code = main(["tools", "diff", "demo.tool", *argv, "--store", str(tmp_path / "tools.db")])
    err = capsys.readouterr().err
    assert code == 2 and "is not a version (N) or a proposal (pN)" in err
    assert err.count("\n") == 1


def test_every_node_type_has_a_row() -> None:
    from forgec.ir.rules import NODE_TYPE_NAMES
    from forgec.store.diff import NODE_TABLE

    assert set(NODE_TABLE) == set(NODE_TYPE_NAMES)


def test_a_renamed_step_is_matched_by_its_place_and_a_moved_one_by_its_id() -> None:
    a = orjson.loads(tool(1, None, "tasks.list", "tasks.create"))
    b = copy.deepcopy(a)
    first = b["flow"]["nodes"][0]
    first["id"], b["flow"]["entry"] = "fetch", "fetch"
    diff = _diff(a, b)
    whats = {(e["change"], e["node"], e["what"]) for e in diff["behaviour"]}
    assert ("changed", "fetch", "id") in whats  # not a step removed and another added
    assert not any(e["change"] in ("added", "removed") for e in diff["behaviour"])
    assert ("changed", None, "entry") in whats
