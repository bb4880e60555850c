"""Paired runs (SPEC §22): the same cases on two versions, and what differs.

`forgec test --against`, `forgec tools review` and the screen's review page all call
`paired_report`: every case runs on both Programs (fresh in-memory hosts, the case's mocks
and model answers), and each case whose status, output or effects differ is listed with both
sides. The cases are also checked as written against the version they belong to
(`outcome`), so a reviewer sees whether they still pass.
"""

from __future__ import annotations

from typing import Any

from forgec.testing.cases import Case, cases_from_json
from forgec.testing.runner import run_case


def differences(new: Any, old: Any) -> list[dict[str, Any]]:
    """What differs between two runs of one case (`CaseResult`s): status, output, effects."""
    out: list[dict[str, Any]] = []
    if new.result.status != old.result.status:
        out.append({"what": "status", "new": new.result.status, "old": old.result.status})
    if new.result.output != old.result.output:
        out.append({"what": "output", "new": new.result.output, "old": old.result.output})
    new_fx = [{"capability": e.capability, "input": e.input} for e in new.effects]
    old_fx = [{"capability": e.capability, "input": e.input} for e in old.effects]
    if new_fx != old_fx:
        out.append({"what": "effects", "new": new_fx, "old": old_fx})
    return out


def paired(cases: list[Case], new_program: Any, old_program: Any) -> list[dict[str, Any]]:
    """Each case whose runs on NEW and OLD differ: `{"case", "differences": [...]}`."""
    out = []
    for case in cases:
        new = run_case(new_program, case, check=False)
        old = run_case(old_program, case, check=False)
        found = differences(new, old)
        if found:
            out.append({"case": case.name, "differences": found})
    return out


def paired_report(
    cases_json: list[Any] | None, new_program: Any, old_program: Any
) -> dict[str, Any] | None:
    """The review's tests section: the OLD version's cases (JSON, as stored) run on NEW and on
    OLD. None without cases. `problems`: why a case cannot run on NEW as written (a mock for
    a step NEW no longer has, …): each is a difference a reviewer reads too."""
    if not cases_json:
        return None
    cases, diagnostics = cases_from_json(cases_json, old_program)
    _, on_new = cases_from_json(cases_json, new_program)
    known = {(d.code, d.path, d.message) for d in diagnostics}
    problems = [
        {"code": d.code, "path": d.path, "message": d.message}
        for d in on_new
        if (d.code, d.path, d.message) not in known
    ]
    outcomes = []
    for case in cases:
        result = run_case(new_program, case)
        outcomes.append(
            {
                "case": case.name,
                "outcome": result.outcome,
                "failures": [f.message for f in result.failures] + result.errors,
            }
        )
    return {
        "cases": len(cases),
        "differing": paired(cases, new_program, old_program),
        "onNew": outcomes,
        "problems": problems,
    }


def paired_lines(report: dict[str, Any] | None, *, new: str, old: str) -> list[str]:
    """The tests section as text lines (every string escaped by the caller's `safe_text`)."""
    from forgec.runtime.jsontext import dumps_text

    if report is None:
        return [f"Tests: {old} has no test cases to run on {new}."]
    lines = [f"Tests: {old}'s {report['cases']} case(s), run on {new} (in-memory host):"]
    if not report["differing"]:
        lines.append(f"  every case does the same on {new} as on {old}")
    for entry in report["differing"]:
        lines.append(f"  {entry['case']}: differs")
        for d in entry["differences"]:
            lines.append(
                f"    {d['what']}: {old} {dumps_text(d['old'])} → {new} {dumps_text(d['new'])}"
            )
    failing = [o for o in report["onNew"] if o["outcome"] != "pass"]
    for o in failing:
        lines.append(f"  {o['case']}: {o['outcome']} on {new}: {'; '.join(o['failures'][:3])}")
    for p in report["problems"]:
        lines.append(f"  {p['path']}: {p['message']}")
    for own in report.get("proposalCases", []):
        lines.append(f"  {new}'s own case {own['case']}: {own['outcome']}")
    return lines


def review_tests(store: Any, current: Any, proposal: Any) -> dict[str, Any] | None:
    """SPEC §22 (`tools review`, the screen): the current version's test cases run on the
    proposal and on the current version (in-memory host), what differs, and the proposal's
    own cases' outcomes. STORE is a `forgec.store.Store`; CURRENT and PROPOSAL its
    `StoredVersion`s."""
    from forgec.runtime import Program

    new_program = Program.from_json(proposal.program)
    old_program = Program.from_json(current.program)
    report = paired_report(store.tests_of(current), new_program, old_program)
    own = store.tests_of(proposal)
    if own:
        cases, _ = cases_from_json(own, new_program)
        report = report or {"cases": 0, "differing": [], "onNew": [], "problems": []}
        report["proposalCases"] = [
            {"case": c.name, "outcome": run_case(new_program, c).outcome} for c in cases
        ]
    return report
