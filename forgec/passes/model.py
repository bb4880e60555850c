"""Model steps: structured output needs an output schema (SPEC §4).

A step's effective `structuredOutput` is its own `requirements.structuredOutput` when given,
else `modelDefaults.structuredOutput`. When it is true and the step has no `outputSchema`,
nothing constrains the model's answer: `FORGE_LLM_STRUCTURED_OUTPUT_MISSING_SCHEMA`. Every step
is checked, reachable or not. An `outputSchema` that is present but malformed is the structure
pass's to report, so presence is decided from the manifest as written, not from the IR (where a
bad schema may have become None).
"""

from __future__ import annotations

from typing import Any

from forgec.ir.nodes import LlmNode, Manifest, Node, nodes_of_type
from forgec.ir.pointer import join, split
from forgec.passes.context import PassContext

ABSENT = object()  # what `raw_at` returns for a pointer that leads nowhere


def llm_nodes(nodes: tuple[Node, ...]) -> list[LlmNode]:
    """Every model step, loop bodies included, in manifest order."""
    return nodes_of_type(nodes, LlmNode)


def raw_at(raw: Any, pointer: str) -> Any:
    """The JSON value at `pointer` in the document as written, or `ABSENT`."""
    value = raw
    for token in split(pointer):
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return ABSENT
    return value


def effective_structured_output(manifest: Manifest, node: LlmNode) -> tuple[bool, str | None]:
    """(whether the step asks for structured output, the setting that says so, for messages)."""
    req = node.requirements
    if req is not None and req.structured_output is not None:
        return req.structured_output, "its `requirements.structuredOutput`"
    defaults = manifest.model_defaults
    if defaults is not None and defaults.structured_output is not None:
        return defaults.structured_output, "`modelDefaults.structuredOutput`"
    return False, None


def check_model_steps(ctx: PassContext) -> None:
    manifest = ctx.manifest
    if manifest.flow is None:
        return
    for node in llm_nodes(manifest.flow.nodes):
        wanted, source = effective_structured_output(manifest, node)
        if not wanted or node.output_schema is not None:
            continue
        if raw_at(ctx.raw, join(node.pointer, "outputSchema")) is not ABSENT:
            continue  # present but malformed: reported by the structure pass
        ctx.report(
            "FORGE_LLM_STRUCTURED_OUTPUT_MISSING_SCHEMA",
            node.pointer,
            f"model step `{node.id}` asks for structured output ({source} is true) but has "
            "no `outputSchema`",
            hint="add an `outputSchema` describing the answer, or set "
            "`requirements.structuredOutput` to false on this step",
        )
