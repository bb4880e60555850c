"""Capability targets. `get_catalog("talos")` is the seed's table; `"talon"` adds host tools."""

from __future__ import annotations

from forgec.catalog.base import (
    CapabilitySpec,
    Catalog,
    InputProblem,
    StepMarks,
    suggest,
    unknown_capability_hint,
)

TARGETS = ("talos", "talon")


def get_catalog(target: str) -> Catalog:
    if target == "talos":
        from forgec.catalog.talos import CATALOG as talos

        return talos
    if target == "talon":
        from forgec.catalog.talon import CATALOG as talon

        return talon
    raise ValueError(f"unknown target {target!r} (expected one of: {', '.join(TARGETS)})")


__all__ = [
    "TARGETS",
    "CapabilitySpec",
    "Catalog",
    "InputProblem",
    "StepMarks",
    "get_catalog",
    "suggest",
    "unknown_capability_hint",
]
