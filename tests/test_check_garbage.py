"""A check leaves no reference cycle behind: what it built is freed when its report is dropped.

Reference counting frees an acyclic structure the moment its last reference goes; anything
on a cycle waits for the cyclic collector, which then has to traverse it. A check builds about a
thousand objects (the JSON value, the IR, the facts), so one cycle through them (a recursive
closure, a deferred computation that holds the pass context) kept them all alive until a
collection and made every collection traverse them: about 200 µs of a 1.2 ms first check of
`benchmarks/bench_check.py`'s manifest (docs/performance.md). These tests check, for the
corpus, the examples (both forms), random valid tools and mutated manifests, that a check and
what its readers ask of the report afterwards (the canonical manifest, the deferred flow facts)
leave nothing for the collector.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import full_manifest, minimal_manifest, mutate
from strategies import json_values, manifests, scalars

import forgec

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(
    [
        *(ROOT / "tests/corpus").glob("*.talostool"),
        *(ROOT / "examples").glob("*.talostool"),
        *(ROOT / "examples").glob("*.forge"),
    ]
)
# values that reach the secret screen's walk, the builder's expressions and the flow analysis
JSON = json_values(
    scalars(floats=None, text=st.sampled_from(["password", "Zq8vLw2p!xR4", "a" * 24, "x"])),
    keys=st.sampled_from(["$ref", "$template", "$credential", "password", "headers", "a"]),
    max_size=3,
    max_leaves=6,
)


def _check_and_read(source: bytes | str, path: str | None = None) -> Callable[[], None]:
    def run() -> None:
        report = forgec.check(source, path=path)
        _ = report.manifest
        if report.facts is not None:
            _ = report.facts.flows

    return run


def _cycles_left_by(run: Callable[[], None]) -> int:
    """How many objects only cycles held after a second RUN (the first may import modules and
    compile patterns: that is not the check's).

    Everything alive before the first run is frozen (`gc.freeze`) for the measurement, so a
    collection traverses only what the two runs made, not the test process's whole heap (which
    costs about 0.1 s a collection alone and several times that late in a full suite: nine tenths
    of this file's time). What it can miss is a cycle through an object older than both runs that
    the second run alone drops; the two runs are the same check, so what the first run leaves
    (a cache entry, a "last report") is young and is counted as before."""
    gc.freeze()
    try:
        run()
        gc.collect()
        gc.disable()
        try:
            run()
            return gc.collect()  # what is unreachable now was only held by cycles
        finally:
            gc.enable()
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_checking_a_file_leaves_no_cycle(path: Path) -> None:
    assert _cycles_left_by(_check_and_read(path.read_bytes(), str(path))) == 0


@settings(max_examples=40, deadline=None)
@given(manifests())
def test_checking_a_random_tool_leaves_no_cycle(raw: dict[str, Any]) -> None:
    assert _cycles_left_by(_check_and_read(orjson.dumps(raw))) == 0


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from([full_manifest(), minimal_manifest()]),
    st.integers(0, 10_000),
    st.sampled_from(["replace", "delete", "add"]),
    JSON,
)
def test_checking_a_mutated_manifest_leaves_no_cycle(
    base: Any, where: int, action: str, new: Any
) -> None:
    raw = mutate(base, where, action, new)
    try:
        data = orjson.dumps(raw)
    except TypeError:
        return  # not JSON any more: not a document a check can be given
    assert _cycles_left_by(_check_and_read(data)) == 0
