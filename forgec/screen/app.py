"""The ASGI app: routes, templates and static files, behind `security.Guard`.

Templates are Jinja2 with autoescape on for every template, and one `finalize` hook: every
value a template prints goes through `forgec.render.safe.safe_text` first (control and bidi
characters shown escaped, SPEC §14), then through HTML escaping. A template cannot forget
either: there is no other way for a value to reach the page (nothing is marked safe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from forgec.render.safe import safe_text
from forgec.screen.security import Guard, Secrets

HERE = Path(__file__).resolve().parent


class Lines(str):
    """Text a template lays out over several lines (a description, a JSON body): its newlines
    are kept; every other control or bidi character is still escaped."""

    __slots__ = ()


class Source(Lines):
    """A source file for the paste box: its newlines and tabs kept (a tab is layout in a text
    box, and a `.forge` file may indent with it); everything else as `Lines`."""

    __slots__ = ()


@attrs.define
class ScreenConfig:
    store: Path | None = None
    host_config: Path | None = None
    keys: Secrets = attrs.field(factory=Secrets)
    check_budget: float = 5.0  # seconds (SPEC §16), `forgec screen --check-budget`


def _finalize(value: Any) -> Any:
    if value is None:
        return ""
    if hasattr(value, "__html__"):  # Jinja's own HTML (a macro's output), never tool text
        return value
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, Source):
        return "\t".join(safe_text(part, keep_newlines=True) for part in value.split("\t"))
    return safe_text(value, keep_newlines=isinstance(value, Lines))


def make_templates() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["Lines"] = Lines
    return env


def build_app(config: ScreenConfig) -> Guard:
    from forgec.screen import api, pages

    templates = make_templates()
    routes = [
        *pages.routes(config, templates),
        *api.routes(config),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.config = config
    return Guard(app, config.keys)


def route_table(guard: Guard) -> list[Route]:
    """The app's routes (tests hold every change to the CSRF rule)."""
    app: Any = guard.app
    return [r for r in app.routes if isinstance(r, Route)]
