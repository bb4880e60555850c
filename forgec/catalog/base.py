"""A target (`talos`, `talon`) is a `Catalog`: a mapping from the internal dotted name to the
capability's row (`forgec.ir.capabilities`, where every fact is spelled once: marks, input
shape and limit, undo pair, schemas). The row is the only capability object; the catalog only
says which rows a target has.

`suggest` turns an unknown capability name into the likely one (MCP names such as
`memory_access` map to their dotted internal names; otherwise the closest name by `difflib`).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from forgec.ir.capabilities import Capability, StepMarks
from forgec.ir.readable import Readable
from forgec.ir.shapes import InputProblem

__all__ = ["Catalog", "InputProblem", "StepMarks", "suggest"]


@attrs.frozen(repr=False, eq=False)
class Catalog(Readable):
    name: str
    capabilities: Mapping[str, Capability]

    def get(self, name: str) -> Capability | None:
        return self.capabilities.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.capabilities

    def by_mcp_name(self, mcp_name: str) -> Capability | None:
        """The Talon host tool exposed under an MCP name (`memory_access`), if any."""
        for spec in self.capabilities.values():
            if spec.mcp_name == mcp_name:
                return spec
        return None


def _squash(name: str) -> str:
    """A name with case and separators removed: `Tasks_Set-Status` ~ `tasks.setStatus`."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _same_name(catalog: Catalog, name: str) -> str | None:
    """The catalog's name for `name` written as an MCP name or with other case/separators."""
    spec = catalog.by_mcp_name(name)
    if spec is not None:
        return spec.name
    squashed = _squash(name)
    if not squashed:
        return None
    for known, known_spec in catalog.capabilities.items():
        if squashed in (_squash(known), _squash(known_spec.mcp_name or "")):
            return known
    return None


def suggest(catalog: Catalog, name: str) -> str | None:
    """The capability a person probably meant by an unknown `name`, or None.

    Order: an MCP name of the catalog (`background_agent` → `subagent.background`); the same
    name up to case and separators (`tasks_create`, `Tasks.SetStatus`); the closest by difflib.
    """
    if not isinstance(name, str) or not name or name in catalog.capabilities:
        return None
    same = _same_name(catalog, name)
    if same is not None:
        return same
    from forgec.ir.suggest import closest

    return closest(name, catalog.capabilities)


def likely_capability(catalog: Catalog, name: str) -> str | None:
    """The capability of this catalog an unknown `name` most likely means (the fix), or None."""
    if not isinstance(name, str) or not name:
        return None
    return _same_name(catalog, name) or suggest(catalog, name)


def unknown_capability_hint(catalog: Catalog, name: str) -> str | None:
    """The hint for FORGE_CAPABILITY_UNKNOWN: the likely name here, or the target that has it."""
    if not isinstance(name, str) or not name:
        return None
    same = _same_name(catalog, name)
    if same is not None:
        return f"did you mean `{same}`?"
    from forgec.catalog import TARGETS, get_catalog

    for target in TARGETS:
        if target != catalog.name:
            found = _same_name(get_catalog(target), name)
            if found is not None:
                return f"`{found}` is a capability of the `{target}` target (`--target {target}`)"
    guess = suggest(catalog, name)
    return f"did you mean `{guess}`?" if guess is not None else None
