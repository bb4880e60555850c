"""The JSON API: the CLI's operations, answering in the CLI's JSON shapes.

- `GET /api/tools` — `forgec tools list --format json`
- `GET /api/tools/{id}/versions` — `forgec tools versions ID --format json`
- `GET /api/tools/{id}/diff?a=N&b=M` — the consent diff (`forgec tools diff` JSON)
- `POST /api/check` — `forgec check --format json` of the body (`?path=x.forge` to name it)
- `POST /api/inspect` — `forgec inspect --format json` of the body
- `GET /api/tools/{id}/review/{n}/tests`, `POST /api/tools/{id}/try` — SPEC §22 (see
  `forgec.screen.testing`): the review's test runs, and a staged run that changes nothing

The POSTs change nothing (they check text), yet they carry the CSRF header like every POST.
Nothing here turns a tool on, accepts, rejects or rolls back: those are the pages' confirmed
forms only.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from forgec.screen.app import ScreenConfig
from forgec.screen.checking import check_off_loop


def _json(value: Any, status: int = 200) -> Response:
    from forgec.runtime.jsontext import dumps_text

    return Response(dumps_text(value, indent=True) + "\n", status, media_type="application/json")


def routes(config: ScreenConfig) -> list[Route]:
    async def in_store(fn: Any) -> Any:
        from forgec.store import Store

        def work() -> Any:
            with Store(config.store) as store:
                return fn(store)

        return await anyio.to_thread.run_sync(work)

    def refusals(fn: Any) -> Any:
        async def handler(request: Request) -> Response:
            from forgec.store import StoreDamaged, StoreError, ToolNotFound

            try:
                return await fn(request)
            except ToolNotFound as exc:
                return _json({"error": str(exc)}, 404)
            except (StoreDamaged, StoreError) as exc:
                return _json({"error": str(exc)}, 409)

        return handler

    async def tools(request: Request) -> Response:
        listed = await in_store(lambda s: [t.to_json() for t in s.tools(on_problem=lambda _: None)])
        return _json(listed)

    async def versions(request: Request) -> Response:
        tool = request.path_params["tool"]
        return _json(await in_store(lambda s: [v.to_json() for v in s.versions(tool)]))

    async def diff(request: Request) -> Response:
        from forgec.screen.diffing import consent_diff
        from forgec.store import normalize_id

        tool = normalize_id(request.path_params["tool"])
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if b is None or not b.isdigit() or (a is not None and not a.isdigit()):
            return _json({"error": "give b=N (and a=M to compare with)"}, 400)
        return _json(await in_store(lambda s: consent_diff(s, tool, int(a) if a else None, int(b))))

    async def checked(request: Request) -> Any:
        body = await request.body()  # at most MAX_BODY: the Guard refuses a larger one
        name = request.query_params.get("path")
        path = PurePath(name).name if name else None
        target = "talon" if request.query_params.get("target") == "talon" else "talos"
        return await check_off_loop(body, path=path, target=target, budget=config.check_budget)

    async def check(request: Request) -> Response:
        from forgec.answers import check_json

        return _json(check_json([await checked(request)]))

    async def inspect(request: Request) -> Response:
        from forgec.answers import inspect_json

        return _json(inspect_json(await checked(request)))

    tool = "/api/tools/{tool:str}"
    from forgec.screen.testing import routes as testing_routes

    return [
        *testing_routes(config),
        Route("/api/tools", refusals(tools), methods=["GET"]),
        Route(tool + "/versions", refusals(versions), methods=["GET"]),
        Route(tool + "/diff", refusals(diff), methods=["GET"]),
        Route("/api/check", check, methods=["POST"]),
        Route("/api/inspect", inspect, methods=["POST"]),
    ]
