"""The screen's part of SPEC §22: a proposal's review runs the current version's test cases on
it (`testing_of`, drawn by templates/testing.html in review.html's `testing` block), and
"Try it (changes nothing)" runs the current version on the real host's data as a staged run
(`staged_current`, drawn by templates/staged.html).

JSON, the same dicts the pages draw:
- `GET /api/tools/{id}/review/{n}/tests` — `forgec tools review ID --format json`'s `tests`;
- `POST /api/tools/{id}/try` (body: the tool's input as JSON) — the staged run's result, as
  `forgec tools run ID --staged --format json` prints it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def testing_of(store: Any, current: Any, proposal: Any) -> dict[str, Any] | None:
    """The review's tests section (`forgec.testing.paired.review_tests`)."""
    from forgec.testing.paired import review_tests

    return review_tests(store, current, proposal)


def staged_current(
    store_path: Path | None, host_config: Path | None, tool: str, shown_hash: str, tool_input: Any
) -> dict[str, Any]:
    """A staged run of the current version (if it is the one the page showed): real data,
    every write and send held back and listed, nothing visible afterwards."""
    from forgec.host import ConfigError
    from forgec.host.staged import StagedHost
    from forgec.runtime import Program
    from forgec.store import Store
    from forgec.store.running import open_host_for, run_stored

    with Store(store_path) as store:
        stored = store.get(tool)
    if shown_hash and stored.hash != shown_hash:
        return {"problem": f"{stored.name} changed since the page was shown: try it again"}
    try:
        inner = open_host_for(
            host_config=host_config, default_labels=tuple(stored.marks.labels), staged=True
        )
    except ConfigError as exc:
        return {"problem": str(exc)}
    host = StagedHost(inner)
    try:
        program = Program.from_json(stored.program)
        result = run_stored(stored, tool_input, host=host, consent=lambda _r: True, program=program)
    finally:
        host.close()
    return {"json": host.result_json(result)}


def routes(config: Any) -> list[Route]:
    from forgec.screen.api import _json

    async def tests(request: Request) -> Response:
        from forgec.store import Store, StoreError, ToolNotFound

        tool = request.path_params["tool"]
        number = int(request.path_params["number"])

        def work() -> Any:
            with Store(config.store) as store:
                return testing_of(store, store.get(tool), store.get_proposal(tool, number))

        try:
            return _json(await anyio.to_thread.run_sync(work))
        except ToolNotFound as exc:
            return _json({"error": str(exc)}, 404)
        except StoreError as exc:
            return _json({"error": str(exc)}, 409)

    async def try_it(request: Request) -> Response:
        import orjson

        from forgec.store import StoreError, ToolNotFound

        tool = request.path_params["tool"]
        try:
            value = orjson.loads(await request.body() or b"{}")
        except orjson.JSONDecodeError:
            return _json({"error": "the body is the tool's input as JSON"}, 400)
        try:
            got = await anyio.to_thread.run_sync(
                lambda: staged_current(config.store, config.host_config, tool, "", value)
            )
        except ToolNotFound as exc:
            return _json({"error": str(exc)}, 404)
        except StoreError as exc:
            return _json({"error": str(exc)}, 409)
        if "problem" in got:
            return _json({"error": got["problem"]}, 409)
        return _json(got["json"])

    return [
        Route("/api/tools/{tool:str}/review/{number:int}/tests", tests, methods=["GET"]),
        Route("/api/tools/{tool:str}/try", try_it, methods=["POST"]),
    ]


async def try_page(page: Any, request: Request, form: Any) -> Response:
    """`POST /tools/{id}/try`: the run form's "Try it (changes nothing)" button."""
    from forgec.screen import views

    tool_id = request.path_params["tool"]
    data = await page.in_store(lambda s: views.run_page(s, tool_id))
    tool_input, problem = views.input_from_form(data["fields"], form)
    if problem is not None:
        return page.render("run.html", status=422, problem=problem, **data)
    result = await anyio.to_thread.run_sync(
        lambda: staged_current(
            page.config.store, page.config.host_config, tool_id, data["hash"], tool_input
        )
    )
    return page.render("staged.html", result=result, **data)
