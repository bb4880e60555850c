"""Numbers and answers a model cannot exploit (SPEC §14; issue 18, measurements 6 and 7), as
properties searched over whole histories, not the named attacks alone.

- Whatever a model sends, in any order with a person's installs, accepts and rejects, the
  person's next version (latest + 1, parent the latest) always installs, and the lineage's
  numbers only grow, never reused.
- What the store tells a model about its version is a function of the model's manifest alone:
  the same report, for the same manifest, against a store that has the id (with any history)
  and against one that does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store import open_store, tool

from forgec.ir.rules import VERSION_LIMIT

NUMBER = st.one_of(st.integers(1, 5), st.just(VERSION_LIMIT - 1), st.integers(1, VERSION_LIMIT - 1))
MODEL_NUMBERS = st.tuples(NUMBER, st.one_of(st.none(), NUMBER)).filter(
    lambda vp: vp[1] is None or vp[1] < vp[0]
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("model"), MODEL_NUMBERS),
        st.tuples(st.just("person"), st.none()),
        st.tuples(st.just("accept"), st.integers(0, 3)),
        st.tuples(st.just("reject"), st.integers(0, 3)),
    ),
    max_size=8,
)
SLOW = settings(
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    deadline=None,
    max_examples=25,  # each example is a store on disk and a few checks
)


def _latest(store: Any) -> int:
    return int(store.tool("demo.tool").latest_version)


@SLOW
@given(ops=OPS)
def test_the_persons_next_version_always_installs(tmp_path_factory: Any, ops: Any) -> None:
    db = tmp_path_factory.mktemp("numbers") / "tools.db"
    with open_store(db) as store:
        assert store.install(tool(1, None, "tasks.list")).ok
        seen = [1]
        for op, arg in ops:
            if op == "model":
                assert store.install(tool(*arg, "tasks.list"), author="model").ok
            elif op == "person":
                top = _latest(store)
                result = store.install(tool(top + 1, top, "tasks.list"))
                assert result.installed == ("demo.tool", top + 1), result.report.diagnostics
            elif (waiting := store.proposals("demo.tool")) and arg < len(waiting):
                if op == "accept":
                    assert store.accept("demo.tool", waiting[arg]).version == _latest(store)
                else:
                    store.reject("demo.tool", waiting[arg])
            seen.append(_latest(store))
        # the lineage only grows, one at a time, and the person can always go on
        assert seen == sorted(seen) and _latest(store) <= 1 + len(ops)
        top = _latest(store)
        assert store.install(tool(top + 1, top, "tasks.list")).ok
        lineage = [v.version for v in store.versions("demo.tool") if v.proposal is None]
        assert lineage == list(range(1, top + 2))


@SLOW
@given(history=OPS, probe=MODEL_NUMBERS, broken=st.booleans())
def test_a_model_is_told_the_same_whether_or_not_the_id_exists(
    tmp_path_factory: Any, history: Any, probe: Any, broken: bool
) -> None:
    held = tmp_path_factory.mktemp("held") / "tools.db"
    empty = tmp_path_factory.mktemp("empty") / "tools.db"
    manifest = orjson.loads(tool(*probe, "tasks.list"))
    if broken:
        manifest["flow"]["entry"] = "nowhere"
    source = orjson.dumps(manifest)
    with open_store(held) as store:
        store.install(tool(1, None, "tasks.list"))
        for op, arg in history:
            if op == "model":
                store.install(tool(*arg, "tasks.list"), author="model")
            elif op == "person":
                top = _latest(store)
                store.install(tool(top + 1, top, "tasks.list"))
        with_id = store.install(source, author="model")
    with open_store(empty) as store:
        without = store.install(source, author="model")
    assert with_id.ok is without.ok is (not broken)
    assert with_id.report.to_json() == without.report.to_json()


def test_numbers_are_shown_as_the_store_names_them(tmp_path: Path) -> None:
    with open_store(tmp_path / "tools.db") as store:
        store.install(tool(1, None, "tasks.list"))
        store.install(tool(VERSION_LIMIT - 1, 1, "tasks.list"), author="model")
        [info] = [v for v in store.versions("demo.tool") if v.proposal is not None]
    assert info.label == "proposal 1"
    assert info.to_json()["version"] is None and info.to_json()["proposal"] == 1
