"""SARIF 2.1.0 for code-scanning tools: one run, rules from the code registry, one result each.

Results carry the physical location (file, region) when the source had text positions, and
always a logical location whose fully qualified name is the JSON Pointer. A `FORGEC_FLOW_*`
result also carries a `codeFlows` entry: its witness path (SPEC §15), node by node, each with
its own location, so a code-scanning viewer can step from where the data enters to the sink.
"""

from __future__ import annotations

from typing import Any

from forgec.ir.codes import CHECK_CODES, REGISTRY

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule(code: str) -> dict[str, Any]:
    doc = REGISTRY[code]
    return {
        "id": code,
        "name": "".join(part.capitalize() for part in code.lower().split("_")),
        "shortDescription": {"text": doc.summary},
        "fullDescription": {"text": doc.doc},
        "help": {"text": doc.doc, "markdown": doc.doc},
        "defaultConfiguration": {"level": doc.severity.value},
        "properties": {"tags": ["forgec", doc.kind]},
    }


def _location(report: Any, uri: str, pointer: str) -> dict[str, Any]:
    location: dict[str, Any] = {
        "logicalLocations": [{"fullyQualifiedName": pointer or "/", "kind": "member"}]
    }
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    span = report.source_map.span(pointer) if report.source_map is not None else None
    if span is not None:
        physical["region"] = {
            "startLine": span.line,
            "startColumn": span.column,
            "endLine": span.end_line,
            "endColumn": span.end_column,
        }
    location["physicalLocation"] = physical
    return location


def _witness(report: Any, d: Any) -> list[dict[str, Any]]:
    """The thread-flow locations of a flow diagnostic's witness path ([] for other codes)."""
    facts = getattr(report, "facts", None)
    path = getattr(facts, "flow_witness", {}).get((d.code, d.path)) if facts else None
    if not path or facts is None:
        return []
    uri = report.path or "<input>"
    out: list[dict[str, Any]] = []
    for step, node_id in enumerate(path):
        node = facts.nodes_by_id.get(node_id)
        if node is None:
            continue
        location = _location(report, uri, node.pointer)
        location["message"] = {"text": f"step {step + 1}: `{node_id}`"}
        out.append({"location": location})
    return out


def to_sarif(reports: list[Any]) -> dict[str, Any]:
    from forgec import __version__

    rule_index = {code: i for i, code in enumerate(CHECK_CODES)}
    results: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    for report in reports:
        uri = report.path or "<input>"
        artifacts.append({"location": {"uri": uri}})
        for d in report.diagnostics:
            location: dict[str, Any] = {
                "logicalLocations": [{"fullyQualifiedName": d.path or "/", "kind": "member"}]
            }
            physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
            if d.span is not None:
                physical["region"] = {
                    "startLine": d.span.line,
                    "startColumn": d.span.column,
                    "endLine": d.span.end_line,
                    "endColumn": d.span.end_column,
                }
            location["physicalLocation"] = physical
            result: dict[str, Any] = {
                "ruleId": d.code,
                "ruleIndex": rule_index[d.code],
                "level": d.severity.value,
                "message": {"text": d.message + (f" (hint: {d.hint})" if d.hint else "")},
                "locations": [location],
            }
            witness = _witness(report, d)
            if witness:
                result["codeFlows"] = [{"threadFlows": [{"locations": witness}]}]
            results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "forgec",
                        "version": __version__,
                        "rules": [_rule(code) for code in CHECK_CODES],
                    }
                },
                "artifacts": artifacts,
                "results": results,
            }
        ],
    }
