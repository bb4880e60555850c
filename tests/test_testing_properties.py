"""The case runner's promises, searched for counterexamples (SPEC §22):

- a case that expects exactly what a run did passes, every time (the runner is repeatable and
  its expectations agree with the run), and changing any one expectation makes it fail (no
  expectation that cannot fail);
- `match(v, v)` finds nothing for any JSON value, and a changed leaf is always found;
- a staged run of any tool, on a real host database, leaves its rows byte-identical.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from strategies import JSON_VALUES, manifests

import forgec
from forgec.testing import Case, match, run_case, run_input


def _program(manifest: dict[str, Any]) -> Any:
    return forgec.lower(manifest, target="talos")


def _recorded(program: Any, answers: list[Any]) -> Case | None:
    seen = run_input(program, {}, host={"tasks": [{"title": "seeded"}]}, model=answers)
    if seen.outcome == "error":
        return None
    # the answers the run asked for (a model step inside a loop: once per iteration)
    kinds = {n["id"]: n["type"] for n in program.nodes}
    answers = answers[: sum(1 for node in seen.trace if kinds.get(node) == "llm")]
    r = seen.result
    expect: dict[str, Any] = {
        "status": r.status,
        "transitions": r.transitions,
        "effects": [{"capability": e.capability, "input": e.input} for e in seen.effects],
        "compensations": [c.to_json() for c in r.compensations],
        "flows": [{"source": s, "sink": k} for s, k in sorted(seen.flows)],
    }
    if r.ok:
        expect["output"] = r.output if r.output is not None else None
    else:
        expect["error"] = r.error.code
    return Case(
        name="recorded",
        input={},
        host={"tasks": [{"title": "seeded"}]},
        model=tuple(answers),
        expect=expect,
    )


@settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(manifests(), st.data())
def test_a_recorded_case_passes_and_any_changed_expectation_fails(
    manifest: dict[str, Any], data: st.DataObject
) -> None:
    program = _program(manifest)
    answers = [{"output": "an answer"}] * 256  # one per model step entered, at most
    case = _recorded(program, answers)
    if case is None:
        return
    # the outputs of model steps and seeds are the same each time: the case passes, twice
    for _ in range(2):
        result = run_case(program, case)
        assert result.outcome != "fail", [f.message for f in result.failures]
    if result.outcome == "error":
        return
    expect = dict(case.expect)
    which = data.draw(st.sampled_from(sorted(expect)))
    changed = dict(expect)
    if which == "transitions":
        changed[which] = expect[which] + 1
    elif which == "status":
        changed[which] = "failed" if expect[which] == "ok" else "ok"
    elif which == "error":
        changed[which] = "RUN_TYPE" if expect[which] != "RUN_TYPE" else "RUN_REF_MISSING"
    elif which in ("effects", "compensations", "flows"):
        changed[which] = (
            [*expect[which], {"capability": "notes.create"}]
            if which == "effects"
            else [
                *expect[which],
                {"node": "nowhere"} if which == "compensations" else {"source": "x", "sink": "y"},
            ]
        )
    else:  # output
        changed[which] = (
            {"not": ["what", "it", "said"]}
            if expect[which] != {"not": ["what", "it", "said"]}
            else 0
        )
    mutated = Case(name="mutated", input={}, host=case.host, model=case.model, expect=changed)
    assert run_case(program, mutated).outcome == "fail", which


@given(JSON_VALUES)
def test_a_value_matches_itself(value: Any) -> None:
    assert match(value, value, "v") == []


def _patterned(value: Any) -> bool:
    """Whether VALUE holds `"<any>"` or a `"<re:…>"` anywhere (they match more than one)."""
    if isinstance(value, str):
        return value == "<any>" or value.startswith("<re:")
    if isinstance(value, dict):
        return any(map(_patterned, value.values()))
    if isinstance(value, list):
        return any(map(_patterned, value))
    return False


def _part_of(want: Any, got: Any) -> bool:
    """Whether WANT is GOT with some object keys left out, at any depth (what `match` documents:
    objects by the keys WANT gives, lists item by item, 1 == 1.0, true is not 1)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and _part_of(v, got[k]) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(_part_of(w, g) for w, g in zip(want, got, strict=True))
        )
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    return type(got) not in (dict, list) and want == got


@given(JSON_VALUES, JSON_VALUES)
def test_a_changed_leaf_is_found(value: Any, other: Any) -> None:
    """A difference is found exactly where OTHER is not VALUE with keys left out (a nested
    object asks only for the keys it gives, as a top-level one does)."""
    wrapped = {"a": [value]}
    if _patterned(other):
        return
    assert (match({"a": [other]}, wrapped, "v") == []) is _part_of(other, value)


def _rows(db: Path) -> dict[str, list[Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'"
            )
        ]
        return {n: sorted(map(repr, conn.execute(f'SELECT * FROM "{n}"'))) for n in names}
    finally:
        conn.close()


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(manifests())
def test_a_staged_run_of_any_tool_leaves_the_database_as_it_was(
    tmp_path: Path, manifest: dict[str, Any]
) -> None:
    from forgec.host import HostOptions, open_host
    from forgec.host.staged import StagedHost
    from forgec.runtime import run
    from forgec.runtime.host import CallContext

    db = tmp_path / "host.db"
    with open_host(HostOptions(db=db)) as real:
        real.call(
            "tasks.create",
            {"title": "seeded"},
            CallContext(tool_id="seed", tool_version=1, node_id="seed"),
        )
    before = _rows(db)
    program = _program(manifest)
    host = StagedHost(open_host(HostOptions(db=db, staged=True)))
    try:
        run(program, {}, host=host, consent=lambda _r: True, sleep=lambda _s: None)
    finally:
        host.close()
    assert _rows(db) == before
    assert orjson.dumps(before)  # plain data


# --- where a tests file's values were written (forgec.testing.tomlpos) -------------------------

_KEYS = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)
_LEAVES = st.one_of(
    st.integers(-1000, 1000),
    st.booleans(),
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=8),
)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return orjson.dumps(value).decode()  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"


_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=8,
)


@given(st.lists(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=4), min_size=1, max_size=3))
def test_every_key_of_a_tests_file_is_found_where_it_was_written(
    cases: list[dict[str, Any]],
) -> None:
    import tomllib

    from forgec.testing.tomlpos import TomlSourceMap

    text = "".join(
        "[[case]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in case.items())
        for case in cases
    )
    assert tomllib.loads(text) == {"case": cases}
    where = TomlSourceMap(text, "x.tests.toml")
    lines = text.split("\n")

    def walk(value: Any, pointer: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                span = where.span(f"{pointer}/{k}", key=True)
                assert span is not None
                assert lines[span.line - 1][span.column - 1 :].startswith(k), (pointer, k)
                walk(v, f"{pointer}/{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                span = where.span(f"{pointer}/{i}")
                assert span is not None and span.column >= 1
                walk(v, f"{pointer}/{i}")

    for i, case in enumerate(cases):
        walk(case, f"/case/{i}")
