"""`forgec mcp serve`: the host's MCP face over stdio, on the official `mcp` SDK (low-level server).

The low-level `mcp.server.Server` is used rather than `MCPServer` because the tool list is
dynamic (it is read from the store on every `tools/list`, so a tool turned on or off with the
CLI shows up at once) and every tool has an explicit `inputSchema`, `outputSchema` and
annotations derived from its marks (`forgec.mcp.listing`).

A `tools/call` goes through, in order:
1. **visibility, again** — the same function that built the listing decides; a tool that would
   not be listed for this persona (unknown, off, or needing a label not granted) is refused;
2. **input** — validated against the listed `inputSchema` (JSON Schema) before anything else;
3. **consent** — an R4 tool asks every time: through MCP elicitation when the client supports
   it, else only when the consent policy file allows it, else refused with a clear message.
   A forged tool below R4 needs the consent recorded when a person turned it on;
4. **run** — on the reference host, in a worker thread (the host opens its own SQLite
   connection there), and the answer is `structuredContent` plus the same JSON as text.

Refusals and failed runs are tool results with `isError: true` and a message a model can act
on, never protocol errors; a failed run's `structuredContent` is the SPEC §8 run result.
Nothing is written to stdout but protocol messages; warnings go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

from forgec.mcp.listing import (
    TOOL_CREATE_LABEL,
    ToolEntry,
    create_entry,
    forged_entry,
    forged_visible,
    host_entries,
)
from forgec.mcp.names import PREFIX, id_from_mcp_name
from forgec.mcp.policy import ConsentPolicy

SERVER_NAME = "forgec"


@attrs.frozen
class ServeOptions:
    store: Path | None = None
    labels: tuple[str, ...] = ()  # granted persona labels; () grants nothing
    host_config: Path | None = None
    db: Path | None = None
    policy: ConsentPolicy = attrs.field(factory=ConsentPolicy)
    templates: Path | None = None  # the folder holding `tool-instructions/`


@attrs.frozen
class Visible:
    entry: ToolEntry
    stored: Any = None  # StoredVersion for a forged tool


HostFactory = Callable[[ServeOptions], Any]


def _warn(message: str) -> None:
    print(f"forgec mcp: {message}", file=sys.stderr, flush=True)


class ForgeServer:
    """The state and logic of one server; `build_server` wires it to the SDK."""

    def __init__(self, options: ServeOptions, *, host_factory: HostFactory | None = None) -> None:
        self.options = options
        self.host_factory = host_factory or open_reference_host
        # multi-round consent tokens: token → (digest of tool + arguments, expiry)
        self._pending: dict[str, tuple[str, float]] = {}

    def _store(self) -> Any:
        from forgec.store import Store

        return Store(self.options.store)

    # -- what is visible ------------------------------------------------------------------

    def _fixed_visible(self) -> dict[str, Visible]:
        """The host tools and `tool_create` the labels grant (nothing from the store)."""
        labels = self.options.labels
        out = {entry.name: Visible(entry) for entry in host_entries(labels)}
        if TOOL_CREATE_LABEL in labels:
            entry = create_entry()
            out[entry.name] = Visible(entry)
        return out

    def visible(self) -> dict[str, Visible]:
        labels = self.options.labels
        fixed = self._fixed_visible()
        # listed in this order: host tools, forged tools, tool_create
        out = {name: v for name, v in fixed.items() if v.entry.kind == "host"}
        with self._store() as store:
            for stored in store.enabled_versions():
                if not forged_visible(stored.marks, labels):
                    continue
                forged = forged_entry(stored.manifest, stored.marks)
                if forged is None:
                    _warn(f"{stored.name}: its MCP name would be over 128 characters; not listed")
                    continue
                out[forged.name] = Visible(forged, stored)
        out.update(fixed)
        return out

    def lookup(self, name: str) -> Visible | None:
        """Call-time check: the tool as it would be listed now, or None (refused)."""
        tool_id = id_from_mcp_name(name)
        if tool_id is None:
            if not name.startswith(PREFIX):  # a host tool or tool_create: no store to read
                return self._fixed_visible().get(name)
            return self.visible().get(name)
        labels = self.options.labels
        from forgec.store import StoreError

        with self._store() as store:
            try:
                stored = store.get(tool_id)
            except StoreError:
                return None
            if not stored.enabled or not forged_visible(stored.marks, labels):
                return None
            entry = forged_entry(stored.manifest, stored.marks)
            return Visible(entry, stored) if entry is not None else None

    def instructions(self) -> str | None:
        from forgec.mcp.instructions import collect_instructions

        folder = (self.options.templates or Path("templates")) / "tool-instructions"
        try:
            names = [v.entry.internal for v in self.visible().values()]
        except Exception as exc:  # the server still starts; calls will report the problem
            _warn(f"cannot read the tool store: {exc}")
            return None
        text, warnings = collect_instructions(folder, names)
        for warning in warnings:
            _warn(warning)
        return text

    # -- calls ----------------------------------------------------------------------------

    async def call(self, ctx: Any, name: str, arguments: dict[str, Any] | None) -> Any:
        import mcp_types as types

        args = arguments or {}
        visible = self.lookup(name)
        if visible is None:
            return _refusal(
                f"`{name}` is not available: there is no such tool, it is off, or this "
                "persona's capability labels do not grant it"
            )
        problem = _validate(visible.entry.input_schema, args)
        if problem is not None:
            return _refusal(f"invalid input for `{name}`: {problem}")
        if visible.entry.kind == "create":
            return self._tool_create(args)
        if visible.entry.kind == "host":
            return await self._host_call(ctx, visible.entry, args)
        stored = visible.stored
        refusal = await self._forged_consent(ctx, visible.entry, stored)
        if refusal is not None:
            return refusal
        tool_input = args.get("input") if visible.entry.wraps_input else args
        try:
            result = await _in_thread(self._run_forged, stored, tool_input)
        except Exception as exc:  # the host could not be opened (bad db, config): say so
            return _refusal(f"{stored.name} could not run: {exc}")
        out = result.to_json()
        if result.ok:
            output = out["output"]
            structured = (
                {"result": output}
                if visible.entry.wraps_output or not isinstance(output, dict)
                else output
            )
            run_meta = {k: out[k] for k in ("transitions", "compensations")}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=_dumps(structured))],
                structured_content=structured,
                meta={"forgec/run": run_meta},  # type: ignore[call-arg]
            )
        error = out["error"] or {}
        where = f" at node `{error.get('node')}`" if error.get("node") else ""
        return types.CallToolResult(
            content=[
                types.TextContent(
                    type="text",
                    text=f"{stored.name} failed{where}: {error.get('code')}: "
                    f"{error.get('message')}\n{_dumps(out)}",
                )
            ],
            structured_content=out,
            is_error=True,
        )

    async def _forged_consent(self, ctx: Any, entry: ToolEntry, stored: Any) -> Any:
        if stored.marks.always_asks:
            names = (stored.name, entry.name)
            if self.options.policy.allows(names, version=stored.version, hash=stored.hash):
                return None
            return await self._ask(ctx, entry, f"{stored.name} v{stored.version}", stored)
        with self._store() as store:
            if store.has_consent(stored.tool_id, stored.version):
                return None
        return _refusal(
            f"{stored.name} v{stored.version} has no recorded consent; a person must turn it "
            f"on with `forgec tools enable {stored.tool_id}`"
        )

    async def _ask(self, ctx: Any, entry: ToolEntry, who: str, stored: Any = None) -> Any:
        """R4: ask through elicitation, or refuse. Returns None when the person said yes."""
        if not _can_elicit(ctx):
            return _refusal(
                f"{who} is R4 and asks a person before every run, but this MCP client cannot "
                "ask (it does not support elicitation). Run it from the command line, or allow "
                "it in a consent policy file (`forgec mcp serve --consent-policy FILE`)."
            )
        from forgec.render.consent import render_consent_card

        card = (
            render_consent_card(stored.manifest, stored.marks)
            if stored is not None
            else f"{entry.title}: {entry.description}"
        )
        message = f"Allow this run of {who}? It is R4 and asks every time.\n\n{card}"
        schema = {
            "type": "object",
            "properties": {
                "allow": {
                    "type": "boolean",
                    "title": f"Run {who} now",
                    "description": "Allow this one run",
                }
            },
            "required": ["allow"],
        }
        if _modern(ctx):
            return self._ask_multi_round(ctx, who, message, schema)
        try:
            answer = await ctx.session.elicit_form(message, schema, ctx.request_id)
        except Exception as exc:
            return _refusal(f"{who} was not run: asking for consent failed ({exc})")
        return _answer(answer, who)

    def _ask_multi_round(self, ctx: Any, who: str, message: str, schema: dict[str, Any]) -> Any:
        """MCP 2026-07-28: no server-to-client request mid-call. The first call returns an
        `input_required` result carrying the elicitation and a single-use token; the client
        asks the person and calls again with the answer and the token. A token is bound to the
        tool and arguments it was minted for, expires, and is forgotten once used, so one yes
        is never replayed for another run."""
        import secrets
        import time

        import mcp_types as types

        raw = ctx.params or {}
        binding = _binding(raw)
        now = time.monotonic()
        for token, (_, expires) in list(self._pending.items()):
            if expires < now:
                del self._pending[token]
        echoed = raw.get("requestState")
        if isinstance(echoed, str) and echoed in self._pending:
            bound, _ = self._pending.pop(echoed)
            if bound != binding:
                return _refusal(f"{who} was not run: the consent answer is for another call")
            responses = raw.get("inputResponses") or {}
            try:
                answer = types.ElicitResult.model_validate(responses.get(CONSENT_KEY))
            except Exception:
                return _refusal(f"{who} was not run: no consent answer came back")
            return _answer(answer, who)
        token = secrets.token_urlsafe(24)
        self._pending[token] = (binding, now + CONSENT_TTL_S)
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
        )
        return types.InputRequiredResult(input_requests={CONSENT_KEY: request}, request_state=token)

    def _run_forged(self, stored: Any, tool_input: Any) -> Any:
        from forgec.store.running import run_stored

        host = self.host_factory(self.options)
        try:
            # consent was settled above (recorded, elicited or allowed by policy)
            return run_stored(stored, tool_input, host=host, consent=lambda request: True)
        finally:
            close = getattr(host, "close", None)
            if close is not None:
                close()

    async def _host_call(self, ctx: Any, entry: ToolEntry, args: dict[str, Any]) -> Any:
        import mcp_types as types

        if entry.annotations.open_world or _host_risk(entry) == "R4":
            names = (entry.name, entry.internal)
            if not self.options.policy.allows(names):
                refusal = await self._ask(ctx, entry, f"`{entry.name}`")
                if refusal is not None:
                    return refusal
        try:
            result = await _in_thread(self._call_host_tool, entry, args)
        except Exception as exc:
            code = getattr(exc, "code", None)
            message = getattr(exc, "message", None) or str(exc)
            return _refusal(f"`{entry.name}` failed: {code + ': ' if code else ''}{message}")
        structured = result if isinstance(result, dict) else {"result": result}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_dumps(structured))],
            structured_content=structured,
        )

    def _call_host_tool(self, entry: ToolEntry, args: dict[str, Any]) -> Any:
        from forgec.runtime.host import CallContext

        host = self.host_factory(self.options)
        try:
            direct = getattr(host, "call_tool", None)
            if direct is not None:
                return direct(entry.internal, args)
            # a direct call has no manifest: the host config's allowlist is the only one, and
            # an empty one allows no host (deny by default)
            config = getattr(host, "config", None)
            allowed = tuple(getattr(config, "allow_hosts", ()) or ())
            context = CallContext(
                tool_id="mcp", tool_version=1, node_id=entry.name, allowed_hosts=allowed
            )
            return host.call(entry.internal, args, context)
        finally:
            close = getattr(host, "close", None)
            if close is not None:
                close()

    def _tool_create(self, args: dict[str, Any]) -> Any:
        import mcp_types as types

        has_manifest, has_source = "manifest" in args, "source" in args
        if has_manifest == has_source:
            return _refusal("tool_create takes exactly one of `manifest` (object) or `source`")
        target = args.get("target", "talon")
        if has_manifest:
            source: bytes = orjson.dumps(args["manifest"])
            path = None
        else:
            source = str(args["source"]).encode()
            path = "tool_create.forge"
        from forgec.store import StoreError

        try:
            with self._store() as store:
                # a model's version: of a new id it is installed off; of an id that has
                # versions it is a proposal that only a person can accept (SPEC §14)
                result = store.install(
                    source,
                    path=path,
                    target=target,
                    author="model",
                    author_name=getattr(self.options, "persona", None),
                )
        except StoreError as exc:
            return _refusal(f"tool_create failed: {exc}")
        report = result.to_json()
        name = f"dynamic:{result.installed[0]}" if result.installed else None
        version = result.installed[1] if result.installed else None
        structured = {
            "ok": result.installed is not None,
            "name": name,
            "version": version,
            "status": result.status,
            "enabled": False,
            "report": report,
        }
        if result.status == "proposed":
            summary = (
                f"{name} v{version} proposed, waiting for a person: it is not current and "
                "changes nothing unless a person reviews and accepts it"
            )
        elif result.installed:
            summary = (
                f"installed {name} v{version}, OFF: a person must review and turn it on "
                f"(`forgec tools enable {result.installed[0]}`)"
            )
        else:
            issues = [
                f"- {d['code']} at {d['path'] or '/'}: {d['message']}"
                for d in report["diagnostics"]
                if d["severity"] == "error"
            ]
            summary = "not installed; every issue:\n" + "\n".join(issues)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=summary)],
            structured_content=structured,
            is_error=result.installed is None,
        )


def _host_risk(entry: ToolEntry) -> str:
    from forgec.catalog import get_catalog

    spec = get_catalog("talon").get(entry.internal)
    return spec.marks({}).risk if spec is not None else "R4"


CONSENT_KEY = "forgec_consent"
CONSENT_TTL_S = 600.0


def _modern(ctx: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _binding(raw: Any) -> str:
    import hashlib

    data = orjson.dumps([raw.get("name"), raw.get("arguments")], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()


def _answer(answer: Any, who: str) -> Any:
    if answer.action == "accept" and (answer.content or {}).get("allow") is True:
        return None
    return _refusal(f"{who} was not run: the person did not consent (RUN_CONSENT_DENIED)")


def _can_elicit(ctx: Any) -> bool:
    session = getattr(ctx, "session", None)
    if session is None:
        return False
    if not _modern(ctx) and not getattr(session, "can_send_request", False):
        return False
    caps = session.client_capabilities
    elicitation = getattr(caps, "elicitation", None) if caps is not None else None
    if elicitation is None:
        return False
    # an empty `elicitation: {}` means form mode (2025-06-18); later clients name the modes
    return elicitation.form is not None or elicitation.url is None


def _validate(schema: dict[str, Any], value: Any) -> str | None:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft7Validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at {where})"


def _dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _refusal(message: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    import anyio.to_thread

    return await anyio.to_thread.run_sync(lambda: fn(*args))


def open_reference_host(options: ServeOptions) -> Any:
    """The reference host, with the persona's labels (what the bridge checks again)."""
    from forgec.store.running import open_host_for

    # the persona's labels exactly: an empty tuple grants nothing (deny by default)
    return open_host_for(
        db=options.db, host_config=options.host_config, persona_labels=options.labels
    )


def _tool(entry: ToolEntry) -> Any:
    import mcp_types as types

    a = entry.annotations
    return types.Tool(
        name=entry.name,
        title=entry.title,
        description=entry.description,
        input_schema=entry.input_schema,
        output_schema=entry.output_schema,
        annotations=types.ToolAnnotations(
            title=entry.title,
            read_only_hint=a.read_only,
            destructive_hint=a.destructive,
            idempotent_hint=a.idempotent,
            open_world_hint=a.open_world,
        ),
    )


def build_server(forge: ForgeServer) -> Any:
    import mcp_types as types
    from mcp.server import Server

    from forgec import __version__

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[_tool(v.entry) for v in forge.visible().values()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        return await forge.call(ctx, params.name, params.arguments)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=forge.instructions(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(options: ServeOptions) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(ForgeServer(options))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
