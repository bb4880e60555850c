"""`forgec graph`: Mermaid snapshots (read by people) and DOT that Graphviz accepts."""

from __future__ import annotations

import subprocess

import pytest
from manifests import EXAMPLES, example

from forgec.catalog import get_catalog
from forgec.render.graph import to_dot, to_mermaid

# Graphviz is installed by .ci/run: in CI a missing `dot` is a failure, not a skip; on a
# developer's machine without it the rendering tests are skipped with the reason
# (tests/conftest.py's `graphviz_dot`).
NEEDS_DOT = pytest.mark.usefixtures("graphviz_dot")

NAMES = sorted(p.stem for p in EXAMPLES.glob("*.talostool"))


def _catalog(name: str):
    return get_catalog("talon" if name.startswith("talon-") else "talos")


@pytest.mark.parametrize("name", ["weekly-review", "talon-status-check", "task-triage"])
def test_mermaid_snapshot(name: str, snapshot) -> None:
    assert to_mermaid(example(name), catalog=_catalog(name)) == snapshot


@NEEDS_DOT
@pytest.mark.parametrize("name", NAMES)
def test_dot_renders_with_graphviz(name: str) -> None:
    source = to_dot(example(name), catalog=_catalog(name))
    done = subprocess.run(
        ["dot", "-Tsvg"], input=source.encode(), capture_output=True, timeout=20, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"<svg" in done.stdout


def _broken() -> dict:
    return {
        "id": "broken",
        "flow": {
            "entry": "a",
            "nodes": [
                {"id": "a", "type": "capability", "capability": "net.http",
                 "input": {"method": "GET", "url": {"$ref": "input.url"}}, "next": "gone"},
                {"id": 'q"uote\\', "type": "return", "value": 1},
                {"id": "loop", "type": "foreach", "source": [], "itemVar": "x",
                 "body": [{"id": "b", "type": "set", "target": "y", "value": 1}], "next": "a"},
                "not a node",
            ],
        },
    }  # fmt: skip


def test_unreachable_missing_and_risk_are_shown() -> None:
    mermaid = to_mermaid(_broken(), catalog=get_catalog("talon"))
    assert "Network · R4" in mermaid
    assert "class n1,n2,n2_0 unreachable" in mermaid
    assert "missing: gone" in mermaid
    assert "n2 -->|body| n2_0" in mermaid
    assert "n2_0 -. repeat .-> n2" in mermaid
    dot = to_dot(_broken(), catalog=get_catalog("talos"))
    assert "unknown capability" in dot
    assert "cluster_n2" in dot


@NEEDS_DOT
def test_dot_of_a_broken_flow_with_odd_ids_still_renders() -> None:
    done = subprocess.run(
        ["dot", "-Tsvg"], input=to_dot(_broken()).encode(), capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()


@NEEDS_DOT
def test_cli_graph_dot_of_a_forge_file_renders() -> None:
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "forgec", "graph", str(EXAMPLES / "talon-db-digest.forge"),
         "--format", "dot", "--target", "talon"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Read · R2" in done.stdout  # db.query's risk, from the talon catalog
    svg = subprocess.run(["dot", "-Tsvg"], input=done.stdout.encode(), capture_output=True)
    assert svg.returncode == 0
