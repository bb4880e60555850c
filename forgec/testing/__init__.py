"""Testing a tool as you test code (SPEC §22): tests files, the case runner, coverage of the
Program, staged runs and snapshots of compiled output.

    from forgec.testing import load_tests, run_case, Coverage
    tests = load_tests("examples/task-triage.tests.toml")   # checks the file and its tool
    if tests.ok:
        for case in tests.cases:
            outcome = run_case(tests.program, case)          # a fresh in-memory host per case
            print(outcome.name, outcome.outcome, [f.message for f in outcome.failures])

`forgec test`, the pytest plugin (`forgec.pytest_plugin`), paired runs, `tools review` and the
verdict's witness all call `run_case`; docs/testing.md is the tutorial.
"""

from __future__ import annotations

from forgec.testing.cases import Case, Mock, TestFile, cases_from_json, load_tests, tool_beside
from forgec.testing.coverage import Coverage
from forgec.testing.runner import (
    Call,
    CaseHost,
    CaseResult,
    Effect,
    Failure,
    match,
    run_case,
    run_input,
    seeded_host,
)

__all__ = [
    "Call",
    "Case",
    "CaseHost",
    "CaseResult",
    "Coverage",
    "Effect",
    "Failure",
    "Mock",
    "TestFile",
    "cases_from_json",
    "load_tests",
    "match",
    "run_case",
    "run_input",
    "seeded_host",
    "tool_beside",
]
