"""The HTML pages: Tools, Import, a tool (versions, cards, diff, enable, review), Run.

Every change is a POST made through `action`, which checks this run's CSRF token in the form
before the handler sees anything (the Origin was checked by `security.Guard`); every POST
answers with a redirect or a page, never with a change a GET could make. Store work runs in a
worker thread on a `Store` opened for that request: what the CLI or the MCP server changed shows
on the next load, and the event loop keeps answering.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Awaitable, Callable
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from jinja2 import Environment
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from forgec.screen import views
from forgec.screen.app import ScreenConfig
from forgec.screen.checking import check_off_loop
from forgec.screen.diffing import which
from forgec.screen.security import MAX_BODY, same

Handler = Callable[[Request], Awaitable[Response]]


class Page:
    """The pages of one screen: its config and templates."""

    def __init__(self, config: ScreenConfig, templates: Environment) -> None:
        self.config = config
        self.templates = templates

    # -- plumbing -------------------------------------------------------------------------

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(template).render(csrf=self.config.keys.csrf, **context)
        return HTMLResponse(html, status_code=status)

    def error(self, message: str, status: int = 400) -> HTMLResponse:
        return self.render("error.html", status=status, message=message)

    async def in_store(self, fn: Callable[[Any], Any]) -> Any:
        """FN(store) in a worker thread, on a Store opened for this call."""
        from forgec.store import Store

        def work() -> Any:
            with Store(self.config.store) as store:
                return fn(store)

        return await anyio.to_thread.run_sync(work)

    # -- Tools ----------------------------------------------------------------------------

    async def tools(self, request: Request) -> Response:
        q = request.query_params
        query = q.get("q", "")[:200]
        waiting = q.get("waiting") in ("1", "on")
        risk = q.get("risk", "")
        data = await self.in_store(
            lambda s: views.tools_page(s, query=query, waiting=waiting, risk=risk)
        )
        return self.render("tools.html", **data)

    # -- Import ---------------------------------------------------------------------------

    async def import_form(self, request: Request) -> Response:
        return self.render("import.html", result=None, source="", name="")

    async def import_check(self, request: Request, form: FormData) -> Response:
        got = await _source_of(form)
        if isinstance(got, str):
            return self.render("import.html", status=400, result=None, problem=got, source="")
        source, name = got
        target = _target(form)
        report = await check_off_loop(
            source, path=name, target=target, budget=self.config.check_budget
        )
        result = views.report_view(report, source)
        return self.render(
            "import.html",
            result=result,
            source=views.source_text(source),
            exact=base64.b64encode(source).decode("ascii"),
            name=name or "",
            target=target,
        )

    async def install(self, request: Request, form: FormData) -> Response:
        got = await _source_of(form)
        if isinstance(got, str):
            return self.render("import.html", status=400, result=None, problem=got, source="")
        source, name = got
        target = _target(form)
        report = await check_off_loop(
            source, path=name, target=target, budget=self.config.check_budget
        )
        installed = await anyio.to_thread.run_sync(
            lambda: views.install_checked(self.config.store, report, source, name, target)
        )
        if installed.installed is None:
            result = views.report_view(installed.report, source)
            return self.render(
                "import.html",
                status=422,
                result=result,
                source=views.source_text(source),
                exact=base64.b64encode(source).decode("ascii"),
                name=name or "",
                target=target,
                problem="not installed: see the issues below",
            )
        tool_id, version = installed.installed
        return _see(f"/tools/{quote(tool_id)}?done=installed&v={version}")

    # -- a tool ---------------------------------------------------------------------------

    async def tool(self, request: Request) -> Response:
        tool_id = request.path_params["tool"]
        data = await self.in_store(lambda s: views.tool_page(s, tool_id))
        return self.render("tool.html", done=request.query_params.get("done"), **data)

    async def diff(self, request: Request) -> Response:
        tool_id = request.path_params["tool"]
        a, b = which(request.query_params.get("a")), which(request.query_params.get("b"))
        if a is None or b is None:
            return self.error("choose the two versions to compare")
        data = await self.in_store(lambda s: views.diff_page(s, tool_id, a, b))
        return self.render("diff.html", **data)

    async def enable_form(self, request: Request) -> Response:
        tool_id = request.path_params["tool"]
        data = await self.in_store(lambda s: views.enable_page(s, tool_id))
        return self.render("enable.html", **data)

    async def enable(self, request: Request, form: FormData) -> Response:
        tool_id = request.path_params["tool"]
        shown = str(form.get("hash", ""))
        if form.get("confirm") != "yes":
            return self.error("not turned on: the confirm box was not ticked", 422)
        outcome = await self.in_store(lambda s: views.enable_shown(s, tool_id, shown))
        if outcome is not None:  # what was shown is no longer what is current
            return self.render(
                "enable.html",
                status=409,
                changed=outcome,
                **(await self.in_store(lambda s: views.enable_page(s, tool_id))),
            )
        return _see(f"/tools/{quote(tool_id)}?done=enabled")

    async def disable(self, request: Request, form: FormData) -> Response:
        tool_id = request.path_params["tool"]
        await self.in_store(lambda s: s.disable(tool_id))
        return _see(f"/tools/{quote(tool_id)}?done=disabled")

    async def rollback(self, request: Request, form: FormData) -> Response:
        tool_id = request.path_params["tool"]
        await self.in_store(lambda s: s.rollback(tool_id))
        return _see(f"/tools/{quote(tool_id)}?done=rolledback")

    async def review(self, request: Request) -> Response:
        tool_id = request.path_params["tool"]
        version = int(request.path_params["version"])
        data = await self.in_store(lambda s: views.review_page(s, tool_id, version))
        return self.render("review.html", **data)

    async def accept(self, request: Request, form: FormData) -> Response:
        tool_id = request.path_params["tool"]
        version = int(request.path_params["version"])
        await self.in_store(lambda s: s.accept(tool_id, version))
        return _see(f"/tools/{quote(tool_id)}?done=accepted")

    async def reject(self, request: Request, form: FormData) -> Response:
        tool_id = request.path_params["tool"]
        version = int(request.path_params["version"])
        await self.in_store(lambda s: s.reject(tool_id, version))
        return _see(f"/tools/{quote(tool_id)}?done=rejected")

    # -- Run ------------------------------------------------------------------------------

    async def run_form(self, request: Request) -> Response:
        tool_id = request.path_params["tool"]
        data = await self.in_store(lambda s: views.run_page(s, tool_id))
        return self.render("run.html", **data)

    async def run(self, request: Request, form: FormData) -> Response:
        tool_id = request.path_params["tool"]
        data = await self.in_store(lambda s: views.run_page(s, tool_id))
        tool_input, problem = views.input_from_form(data["fields"], form)
        if problem is not None:
            return self.render("run.html", status=422, problem=problem, **data)
        if not data["enabled"]:
            return self.render("run.html", status=409, problem="the tool is off", **data)
        confirmed = form.get("confirm") == "yes" and same(str(form.get("hash", "")), data["hash"])
        if data["asks"] and not confirmed:
            # the R4 ask, in the page: the card, and one button that runs exactly this version
            return self.render("ask.html", input_json=views.json_ascii(tool_input), **data)
        result = await anyio.to_thread.run_sync(
            lambda: views.run_current(
                self.config.store, self.config.host_config, tool_id, data["hash"], tool_input
            )
        )
        return self.render("result.html", result=result, **data)


async def _no_icon(request: Request) -> Response:
    return Response(status_code=204)


def _see(location: str) -> Response:
    return RedirectResponse(location, status_code=303)


def _target(form: FormData) -> str:
    return "talon" if form.get("target") == "talon" else "talos"


async def _source_of(form: FormData) -> tuple[bytes, str | None] | str:
    """The file's bytes and a path for messages (which also chooses the form: `.forge` or a
    manifest), from an upload or the paste box; else a one-line problem."""
    upload = form.get("file")
    if isinstance(upload, UploadFile) and upload.filename:
        from forgec.frontend.reading import read_tool_stream

        base = PurePath(upload.filename.replace("\\", "/")).name or "upload"
        # the one bounded reader (SPEC §24): at most the form's limit + 1 bytes
        data = read_tool_stream(upload.file, path=base)
        return data, base
    exact = form.get("source_b64")  # the install form: the very bytes that were checked
    if isinstance(exact, str) and exact:
        try:
            data = base64.b64decode(exact, validate=True)
        except ValueError:
            return "the checked source did not come back intact: check it again"
        name = form.get("name")
        return data, (PurePath(name).name if isinstance(name, str) and name else None)
    text = form.get("source")
    if isinstance(text, str) and text.strip():
        # a textarea submits its lines with CRLF whatever the person typed
        text = text.replace("\r\n", "\n")
        kind = form.get("kind")
        name = form.get("name")
        if isinstance(name, str) and name.endswith((".forge", ".talostool")):
            return text.encode("utf-8", "surrogatepass"), PurePath(name).name
        path = {"forge": "pasted.forge", "talostool": "pasted.talostool"}.get(str(kind))
        return text.encode("utf-8", "surrogatepass"), path
    return "choose a file or paste a .talostool or .forge source"


def action(page: Page, fn: Callable[[Request, FormData], Awaitable[Response]]) -> Handler:
    """A POST route: the form is read (bounded), its `csrf` field must be this run's token,
    then FN runs; store refusals become the error page."""

    @functools.wraps(fn)
    async def handler(request: Request) -> Response:
        async with request.form(max_files=1, max_fields=200, max_part_size=MAX_BODY) as form:
            if not same(str(form.get("csrf", "")), page.config.keys.csrf):
                return page.error("refused: missing or wrong CSRF token (reload the page)", 403)
            return await fn(request, form)

    handler.screen_action = True  # type: ignore[attr-defined]
    return guarded(page, handler)


def guarded(page: Page, fn: Handler) -> Handler:
    """FN with the store's one-line refusals shown as a page (never a traceback)."""

    @functools.wraps(fn)
    async def handler(request: Request) -> Response:
        from forgec.store import StoreDamaged, StoreError, ToolNotFound

        try:
            return await fn(request)
        except ToolNotFound as exc:
            return page.error(str(exc), 404)
        except StoreDamaged as exc:
            return page.error(str(exc), 409)
        except StoreError as exc:
            return page.error(str(exc), 409)

    return handler


def routes(config: ScreenConfig, templates: Environment) -> list[Route]:
    from forgec.screen.testing import try_page

    p = Page(config, templates)
    tool = "/tools/{tool:str}"
    return [
        Route("/", guarded(p, p.tools), methods=["GET"]),
        Route("/favicon.ico", _no_icon, methods=["GET"]),
        Route("/import", guarded(p, p.import_form), methods=["GET"]),
        Route("/import", action(p, p.import_check), methods=["POST"]),
        Route("/install", action(p, p.install), methods=["POST"]),
        Route(tool, guarded(p, p.tool), methods=["GET"]),
        Route(tool + "/diff", guarded(p, p.diff), methods=["GET"]),
        Route(tool + "/enable", guarded(p, p.enable_form), methods=["GET"]),
        Route(tool + "/enable", action(p, p.enable), methods=["POST"]),
        Route(tool + "/disable", action(p, p.disable), methods=["POST"]),
        Route(tool + "/rollback", action(p, p.rollback), methods=["POST"]),
        # N is a proposal's number (SPEC §14: a model's versions hold no lineage number)
        Route(tool + "/review/{version:int}", guarded(p, p.review), methods=["GET"]),
        Route(tool + "/accept/{version:int}", action(p, p.accept), methods=["POST"]),
        Route(tool + "/reject/{version:int}", action(p, p.reject), methods=["POST"]),
        Route(tool + "/run", guarded(p, p.run_form), methods=["GET"]),
        Route(tool + "/run", action(p, p.run), methods=["POST"]),
        Route(tool + "/try", action(p, functools.partial(try_page, p)), methods=["POST"]),
    ]
