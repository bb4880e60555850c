"""Capability targets. `get_catalog("talos")` is the seed's table; `"talon"` adds host tools."""

from __future__ import annotations

from forgec.catalog.base import (
    Catalog,
    InputProblem,
    StepMarks,
    suggest,
    unknown_capability_hint,
)
from forgec.ir.shapes import register_url_host, register_validator

TARGETS = ("talos", "talon")


# the row fields that name their rule (`validate="cron"`): the rules live here, beside the
# libraries they need; each imports its library only when a value is checked
def _cron(value: str) -> list[str]:
    from forgec.catalog.cron import check_cron

    return check_cron(value)


def _sql(value: str) -> list[str]:
    from forgec.catalog.sql import check_select

    return check_select(value)


def _url(value: str) -> list[str]:
    from forgec.catalog.urls import check_url

    return check_url(value)


def _url_host(value: str) -> str | None:
    from forgec.catalog.urls import url_host

    return url_host(value)


register_validator("cron", _cron)
register_validator("sql", _sql)
register_validator("url", _url)
register_url_host(_url_host)


def get_catalog(target: str) -> Catalog:
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (expected one of: {', '.join(TARGETS)})")
    from forgec.catalog.targets import CATALOGS

    return CATALOGS[target]


__all__ = [
    "TARGETS",
    "Catalog",
    "InputProblem",
    "StepMarks",
    "get_catalog",
    "suggest",
    "unknown_capability_hint",
]
