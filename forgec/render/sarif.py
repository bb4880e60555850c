"""SARIF 2.1.0 for code-scanning tools: one run, rules from the code registry, one result each.

Results carry the physical location (file, region) when the source had text positions, and
always a logical location whose fully qualified name is the JSON Pointer.
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
