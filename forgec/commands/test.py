"""`forgec test [PATH...] [--format text|json|junit] [--coverage] [--threshold N] [--update]
[--against FILE|ID@VERSION] [--target]`: run every case of every tests file (SPEC §22).

Each file is read and checked (with its tool) first; a file with problems prints them as
`check` prints diagnostics and makes the exit status 2. Each case runs on a fresh in-memory
host in this one process (a case costs about a check, not a process start). With `--coverage`
the Program's coverage of each tool is printed; `--threshold N` fails a tool below N %. The
snapshot of compiled output (`__snapshots__/NAME.facts.json`) is written the first time (and
with `--update`), else compared, a difference printed as §14's three-part diff.

Exit status: 0 every case passed; 1 a case failed or erred, coverage below the threshold, or
a snapshot differs; 2 bad usage or a tests file with errors.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from forgec.commands.common import add_format, add_target


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "test",
        help="run a tool's test cases (NAME.tests.toml)",
        description="Run every case of every NAME.tests.toml found (folders are walked); "
        "check snapshots of compiled output; report coverage of the Program.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        default=["."],
        help="tests files, tool files (their tests file) or folders (default: .)",
    )
    add_format(p, "text", "json", "junit")
    add_target(p)
    p.add_argument("--coverage", action="store_true", help="report coverage of the Program")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="N",
        help="fail a tool whose coverage is below N %% (implies --coverage)",
    )
    p.add_argument("--update", action="store_true", help="rewrite the snapshots of compiled output")
    p.add_argument(
        "--against",
        metavar="FILE|ID@VERSION",
        default=None,
        help="run every case on this other version too and report what differs",
    )
    p.add_argument(
        "--store", metavar="FILE", default=None, help="the tool store for --against ID@VERSION"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from forgec.commands import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError
    from forgec.testing.finding import FindError, find_tests

    if args.threshold is not None and not 0 <= args.threshold <= 100:
        raise UsageError("--threshold is a percentage, 0 to 100")
    try:
        files = find_tests(args.paths)
    except FindError as exc:
        raise UsageError(str(exc)) from None
    started = time.perf_counter()
    outcome = run_files(files, args)
    outcome["elapsedMs"] = round((time.perf_counter() - started) * 1000, 1)
    files_data = outcome.pop("_files")
    if args.format == "json":
        from forgec.commands.common import emit_json

        emit_json(outcome)
    elif args.format == "junit":
        sys.stdout.write(junit(outcome))
    else:
        sys.stdout.write(text(outcome, files_data=files_data))
    if outcome["summary"]["badFiles"]:
        return EXIT_USAGE
    return EXIT_ERRORS if outcome["summary"]["failing"] else EXIT_OK


def run_files(files: list[str], args: argparse.Namespace) -> dict[str, Any]:
    from forgec.testing import Coverage, load_tests, run_case

    coverage_on = bool(args.coverage or args.threshold is not None)
    other = _against(args) if args.against else None
    out_files: list[dict[str, Any]] = []
    keep: list[Any] = []
    passed = failed = errors = bad = 0
    total_items = total_covered = 0
    failing = False
    for path in files:
        try:
            tf = load_tests(path, target=args.target)
        except OSError as exc:
            from forgec.commands import UsageError

            raise UsageError(f"{path}: cannot read: {exc}") from None
        entry: dict[str, Any] = {
            "path": path,
            "tool": tf.tool_path,
            "ok": tf.ok,
            "diagnostics": [d.to_json() for d in tf.diagnostics],
            "cases": [],
            "coverage": None,
            "snapshot": None,
            "against": None,
        }
        keep.append(tf)
        out_files.append(entry)
        if not tf.ok:
            bad += 1
            continue
        coverage = Coverage.of(tf.report.manifest, set(tf.report.facts.reachable))
        results = []
        for case in tf.cases:
            result = run_case(tf.program, case)
            result.file = path
            results.append(result)
            coverage.add(result)
            if result.outcome == "pass":
                passed += 1
            elif result.outcome == "fail":
                failed += 1
            else:
                errors += 1
        entry["cases"] = [r.to_json() for r in results]
        if coverage_on:
            entry["coverage"] = coverage.to_json()
            total_items += len(coverage.items)
            total_covered += len(coverage.items) - len(coverage.missed)
        entry["snapshot"] = _snapshot(tf, update=args.update)
        if entry["snapshot"]["status"] == "differs":
            failing = True
        if other is not None:
            entry["against"] = _paired(tf, other)
            if entry["against"]["differing"]:
                failing = True
    total: dict[str, Any] | None = None
    if coverage_on:
        percent = 100.0 * total_covered / total_items if total_items else 100.0
        total = {"percent": round(percent, 1), "items": total_items, "covered": total_covered}
        if args.threshold is not None:
            total["threshold"] = args.threshold
            if percent < args.threshold:
                total["belowThreshold"] = True
                failing = True
    failing = failing or failed > 0 or errors > 0
    return {
        "coverage": total,
        "files": out_files,
        "summary": {
            "passed": passed,
            "failed": failed,
            "errors": errors,
            "files": len(files),
            "badFiles": bad,
            "failing": failing,
        },
        "_files": keep,
    }


# --- snapshots -------------------------------------------------------------------------------


def _snapshot(tf: Any, *, update: bool) -> dict[str, Any]:
    import orjson

    from forgec.testing.facts import changed_sections, dumps_facts, facts_of, snapshot_path

    path = snapshot_path(tf.path)
    facts = facts_of(tf.report, tf.program)
    old: Any = None
    if path.is_file():
        from forgec.testing.reading import read_snapshot

        try:
            old = orjson.loads(read_snapshot(path))
        except (orjson.JSONDecodeError, OSError):
            old = None
    if old is not None and not update:
        if old == orjson.loads(orjson.dumps(facts)):
            return {"path": str(path), "status": "same"}
        sections = changed_sections(old, facts)
        return {
            "path": str(path),
            "status": "differs",
            "sections": sections,
            "diff": _three_part(old, tf),
            "lines": _section_lines(old, facts, sections),
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_facts(facts), encoding="utf-8")
    return {"path": str(path), "status": "updated" if old is not None else "written"}


def _section_lines(old: dict[str, Any], new: dict[str, Any], sections: list[str]) -> list[str]:
    from forgec.testing.facts import section_diff

    lines: list[str] = []
    for name in sections:
        lines += section_diff(old.get(name), new.get(name), name)[:60]
    return lines


class _Side:
    """What the consent diff reads of a stored version, for a snapshot or a file."""

    def __init__(self, report: Any, label: str) -> None:
        from forgec.store.effects import effects_from_report

        self.tool_id = str((report.manifest or {}).get("id"))
        self.manifest = report.manifest
        self.effects = effects_from_report(report, report.target)
        self.hash = label
        self.author = "person"
        self.version = (report.manifest or {}).get("version")
        self.proposal = None


def _three_part(old: dict[str, Any], tf: Any) -> dict[str, Any] | None:
    """§14's diff from the snapshot's manifest to the tool's (None: the snapshot's manifest
    does not check any more)."""
    import orjson

    from forgec.api import check
    from forgec.store.diff import diff_stored

    manifest = old.get("manifest")
    if not isinstance(manifest, dict):
        return None
    old_report = check(orjson.dumps(manifest), path=None, target=tf.target)
    if not old_report.ok:
        return None
    before = _Side(old_report, "snapshot")
    after = _Side(tf.report, "now")
    return diff_stored(before, after, old_ir=old_report.ir, new_ir=tf.report.ir)


# --- paired runs -----------------------------------------------------------------------------


def _against(args: argparse.Namespace) -> Any:
    """(report, Program, name) of the --against version: a file, or ID@VERSION of the store."""
    from pathlib import Path

    from forgec.api import check
    from forgec.backend import lower_report
    from forgec.commands import UsageError
    from forgec.commands.common import read_source, target_of

    spec = args.against
    if "@" in spec and not Path(spec).exists():
        tool, _, version = spec.rpartition("@")
        if not version.isdigit():
            raise UsageError(f"--against {spec}: ID@VERSION takes a version number")
        from forgec.store import Store, StoreError

        try:
            with Store(args.store) as store:
                stored = store.get(tool, int(version))
        except (StoreError, OSError) as exc:
            raise UsageError(f"--against {spec}: {exc}") from None
        from forgec.runtime import Program

        report = check(
            orjson_dumps(stored.manifest), path=None, target=getattr(stored, "target", "talos")
        )
        return report, Program.from_json(stored.program), f"v{version}"
    data = read_source(spec)
    report = check(data, path=spec, target=target_of(args, spec))
    if not report.ok:
        raise UsageError(f"--against {spec}: the tool has {len(report.errors)} error(s)")
    return report, lower_report(report), spec


def orjson_dumps(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value)


def _paired(tf: Any, other: Any) -> dict[str, Any]:
    """Every case on both versions; each case whose status, output or effects differ."""
    from forgec.testing.paired import paired

    report, program, name = other
    out: dict[str, Any] = {
        "other": name,
        "differing": paired(tf.cases, tf.program, program),
        "verdict": None,
    }
    from forgec.store.verdict import verdict

    v = verdict(report, tf.report, was=name, cases=tf.cases)  # each case: host, mocks, model
    out["verdict"] = v.to_json() if v is not None else None
    return out


# --- text and JUnit --------------------------------------------------------------------------


def text(outcome: dict[str, Any], *, files_data: list[Any]) -> str:
    from forgec.render.safe import safe_text
    from forgec.render.text import render_diagnostic
    from forgec.runtime.jsontext import dumps_text

    lines: list[str] = []
    for entry, tf in zip(outcome["files"], files_data, strict=True):
        lines.append(safe_text(entry["path"]))
        if entry["diagnostics"]:
            source = tf.source_map.text if tf.source_map is not None else None
            for d in tf.diagnostics:
                lines.append(render_diagnostic(d, path=tf.path, source=source))
            if tf.report is not None and not tf.report.ok:
                from forgec.render.text import render_report

                lines.append(render_report(tf.report))  # the tool's own errors, as check shows
            continue
        for case in entry["cases"]:
            word = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}[case["outcome"]]
            lines.append(safe_text(f"  {word:<5} {case['name']}  ({case['elapsedMs']:.1f} ms)"))
            for error in case["errors"]:
                lines.append(safe_text(f"        error: {error}"))
            for f in case["failures"]:
                at = f" (node `{f['node']}`)" if f["node"] else ""
                lines.append(safe_text(f"        {f['what']}{at}: {f['message']}"))
                if f["what"] in ("effects", "compensations", "flows") and f["expected"] is not None:
                    lines.append(safe_text(f"          expected: {dumps_text(f['expected'])}"))
                    lines.append(safe_text(f"          actual:   {dumps_text(f['actual'])}"))
        cov = entry["coverage"]
        if cov is not None:
            lines.append(
                safe_text(
                    f"  coverage {cov['percent']:.1f} % ({cov['covered']}/{cov['items']})"
                    + (f"; missed: {', '.join(cov['missed'])}" if cov["missed"] else "")
                )
            )
        snap = entry["snapshot"]
        if snap is not None and snap["status"] != "same":
            lines.append(safe_text(f"  snapshot {snap['path']}: {snap['status']}"))
            if snap["status"] == "differs":
                lines.append(
                    safe_text("    the compiled output changed: " + ", ".join(snap["sections"]))
                )
                if snap.get("diff") is not None:
                    from forgec.render.diff import render_diff

                    lines.append(render_diff(snap["diff"], indent="    "))
                lines += ["    " + safe_text(line) for line in snap["lines"]]
                lines.append("    run `forgec test --update` to accept it")
        paired = entry["against"]
        if paired is not None:
            if paired.get("verdict"):
                from forgec.render.diff import render_verdict

                lines.append(render_verdict(paired["verdict"]))
            if not paired["differing"]:
                lines.append(safe_text(f"  against {paired['other']}: every case does the same"))
            for d in paired["differing"]:
                lines.append(safe_text(f"  against {paired['other']}: {d['case']} differs"))
                for w in d["differences"]:
                    lines.append(
                        safe_text(
                            f"    {w['what']}: this {dumps_text(w['new'])}, "
                            f"{paired['other']} {dumps_text(w['old'])}"
                        )
                    )
    total = outcome.get("coverage")
    if total is not None:
        line = f"coverage of the Program: {total['percent']:.1f} % ({total['covered']}/{total['items']})"
        if "threshold" in total:
            line += (
                f", below the threshold of {total['threshold']:g} %"
                if total.get("belowThreshold")
                else f", threshold {total['threshold']:g} % met"
            )
        lines.append(line)
    s = outcome["summary"]
    tail = (
        f"{s['passed']} passed, {s['failed']} failed, {s['errors']} error(s) in "
        f"{s['files']} file(s)"
    )
    if s["badFiles"]:
        tail += f"; {s['badFiles']} file(s) with problems"
    lines.append(f"{tail} ({outcome['elapsedMs']:.0f} ms)")
    return "\n".join(lines) + "\n"


def junit(outcome: dict[str, Any]) -> str:
    """JUnit XML: one testsuite per tests file, one testcase per case."""
    import xml.etree.ElementTree as ET

    from forgec.render.safe import safe_text

    def clean(value: object) -> str:
        return safe_text(str(value))

    root = ET.Element("testsuites", name="forgec test")
    for entry in outcome["files"]:
        cases = entry["cases"]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=clean(entry["path"]),
            tests=str(len(cases) or 1),
            failures=str(sum(c["outcome"] == "fail" for c in cases)),
            errors=str(sum(c["outcome"] == "error" for c in cases) + (not entry["ok"])),
        )
        if not entry["ok"]:
            item = ET.SubElement(
                suite, "testcase", name="(tests file)", classname=clean(entry["path"])
            )
            problem = ET.SubElement(item, "error", message="the tests file has errors")
            problem.text = clean(
                "\n".join(
                    f"{d['code']}: {d['message']} at {d['path']}" for d in entry["diagnostics"]
                )
            )
            continue
        for case in cases:
            item = ET.SubElement(
                suite,
                "testcase",
                name=clean(case["name"]),
                classname=clean(entry["path"]),
                time=f"{case['elapsedMs'] / 1000:.4f}",
            )
            if case["outcome"] == "error":
                err = ET.SubElement(item, "error", message=clean(case["errors"][0]))
                err.text = clean("\n".join(case["errors"]))
            elif case["outcome"] == "fail":
                fail = ET.SubElement(item, "failure", message=clean(case["failures"][0]["message"]))
                fail.text = clean("\n".join(f["message"] for f in case["failures"]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
