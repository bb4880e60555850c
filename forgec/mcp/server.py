"""`forgec mcp serve`: the host's MCP face over stdio, on the official `mcp` SDK (low-level server).

The low-level `mcp.server.Server` is used rather than `MCPServer` because the tool list is
dynamic and every tool has an explicit `inputSchema`, `outputSchema`, annotations and `_meta`
derived from its marks (`forgec.mcp.listing`). docs/mcp.md lists exactly what is sent.

**The listing is cached, keyed on the store's `PRAGMA data_version`** (`forgec.mcp.watch`): it is
rebuilt with one read of the enabled versions only when some connection — this server's
`tool_create`, `forgec tools enable` in another process — committed to the store. The probe runs
before every request, so a call never sees a stale list, and every 0.5 s in a background task,
which sends `notifications/tools/list_changed` (2025 protocol: on the session; 2026-07-28: on
every `subscriptions/listen` stream) whenever the tools listed, or their definitions, changed.

A `tools/call` goes through, in order:
1. **visibility, again** — the cached listing (current as of this request) decides; a tool that
   would not be listed for this persona (unknown, off, or needing a label not granted) is refused;
2. **input** — validated against the listed `inputSchema` (JSON Schema);
3. **checks without effect** (`forgec.mcp.prechecks`) — credentials present, literal URLs' hosts
   against the host's allowlist, the bridge's label and parameter checks for a host tool;
4. **consent, last** — an R4 tool asks every time: through MCP elicitation when the client
   supports it, else only when the consent policy file allows it, else refused. A forged tool
   below R4 needs the consent recorded when a person turned it on;
5. **run** — on the reference host, in a worker thread (`forgec.mcp.results` shapes the answer).

**Session labels** (SPEC §21): each client session keeps one `AgentContext` — the labels of every
result the server returned in it. A later host-tool call carries them as data and control
through `forgec.host.agentcall` (the bridge's one deny check: `[flows] deny`, the consent
policy's `flows`), and a forged tool's run starts with them on `input`. A host-tool call the
rules refuse has had no effect: where the client can ask, the person's answer replaces the deny
for that one call. The server sees only its own results, never the rest of the client's
context: the labels are a lower bound on what steered the call. `--session-labels off`.

Refusals and failed runs are tool results with `isError: true` and a message a model can act
on, never protocol errors. Nothing is written to stdout but protocol messages; warnings go to
stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import orjson

from forgec.host.agentcall import AgentContext, forged_output_labels
from forgec.ir.capabilities import TOOL_CREATE_LABEL
from forgec.mcp.listing import (
    ToolEntry,
    create_entry,
    forged_entry,
    forged_visible,
    host_entries,
)
from forgec.mcp.policy import ConsentPolicy

# the host's MCP face is the seed's `__talond_host_tools` (SPEC §13); a client that shows a
# title shows "forgec"
SERVER_NAME = "__talond_host_tools"
SERVER_TITLE = "forgec"
POLL_INTERVAL_S = 0.5  # how soon a change made by another process is announced


@attrs.frozen
class ServeOptions:
    store: Path | None = None
    labels: tuple[str, ...] = ()  # granted persona labels; () grants nothing
    host_config: Path | None = None
    db: Path | None = None
    policy: ConsentPolicy = attrs.field(factory=ConsentPolicy)
    templates: Path | None = None  # the folder holding `tool-instructions/`; None: the defaults
    # seconds a `tool_create` check may take, in a worker process (SPEC §16; forgec.budget)
    check_budget: float = 5.0
    # SPEC §21: keep a context of labels per session (`--session-labels off`: none)
    session_labels: bool = True


@attrs.define
class Visible:
    entry: ToolEntry
    stored: Any = None  # StoredVersion for a forged tool
    _validator: Any = None  # built on the first call, kept with the listing
    _program: Any = None

    def check_input(self, value: Any) -> str | None:
        if self._validator is None:
            from jsonschema import Draft7Validator

            self._validator = Draft7Validator(self.entry.input_schema)
        return _first_error(self._validator, value)

    def program(self) -> Any:
        if self._program is None:
            from forgec.runtime import Program

            self._program = Program.from_json(self.stored.program)
        return self._program


@attrs.frozen
class Listing:
    """One snapshot of what this persona sees, with the wire form built once."""

    stamp: int  # the store's data_version it was read at (-1: unknown, never reused)
    visible: dict[str, Visible]
    tools: list[Any]  # mcp_types.Tool, in listing order
    signature: bytes  # the tools' wire form: a change here is a `list_changed`
    # consent records looked up during this snapshot: a new record is a commit, which bumps
    # data_version and so starts a new snapshot — the cache can never outlive a change
    consent: dict[tuple[str, int], bool] = attrs.field(factory=dict)


HostFactory = Callable[[ServeOptions], Any]
IDLE_HOSTS = 4  # hosts kept open between calls; more are opened when calls overlap


class HostPool:
    """Reference hosts reused across calls: opening one (config, database, schema) costs about
    a millisecond, as much as the rest of a small call. A host is lent to one call at a time, so
    a slow call (an HTTP request) never holds up another; a call that raised returns its host
    closed, never to the pool. Used from worker threads."""

    def __init__(self, open_host: Callable[[], Any]) -> None:
        import threading

        self._open = open_host
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    def take(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._open()

    def give(self, host: Any, *, reusable: bool = True) -> None:
        with self._lock:
            if reusable and not self._closed and len(self._idle) < IDLE_HOSTS:
                self._idle.append(host)
                return
        _close(host)

    @contextmanager
    def lend(self) -> Iterator[Any]:
        host = self.take()
        try:
            yield host
        except BaseException:
            self.give(host, reusable=False)
            raise
        self.give(host)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for host in idle:
            _close(host)


def _warn(message: str) -> None:
    print(f"forgec mcp: {message}", file=sys.stderr, flush=True)


class ForgeServer:
    """The state and logic of one server; `build_server` wires it to the SDK."""

    def __init__(self, options: ServeOptions, *, host_factory: HostFactory | None = None) -> None:
        from forgec.mcp.watch import StoreWatch
        from forgec.store import Store

        self.options = options
        self.host_factory = host_factory or open_reference_host
        self.hosts = HostPool(lambda: self.host_factory(self.options))
        # multi-round consent tokens: token → (digest of tool + arguments, expiry)
        self._pending: dict[str, tuple[str, float]] = {}
        # one connection for the server's reads (listing, consent records), used on the loop
        self._reader = Store(options.store)
        self._watch = StoreWatch(self._reader.path)
        self._listing: Listing | None = None
        self._announced: bytes | None = None
        self._fixed = self._fixed_visible()
        # SPEC §21: the labels of every result this server returned to its client. `serve`
        # speaks stdio: one process serves one client, so the process is the session (a
        # 2026-07-28 client keeps no protocol session at all; the SDK's per-request session
        # and connection objects are not the client's session)
        self._session = AgentContext()

    def context(self, ctx: Any) -> AgentContext | None:
        """The session's label context (None: `--session-labels off`)."""
        return self._session if self.options.session_labels else None

    def close(self) -> None:
        self.hosts.close()
        self._watch.close()
        self._reader.close()

    def _store(self) -> Any:
        import functools

        from forgec.budget import check_with_budget
        from forgec.store import Store

        # the check of a model's manifest runs in a worker process within the budget: a
        # hostile input costs that worker, never this server (SPEC §16)
        checker = functools.partial(check_with_budget, budget_s=self.options.check_budget)
        return Store(self.options.store, checker=checker)

    # -- what is visible ------------------------------------------------------------------

    def _fixed_visible(self) -> dict[str, Visible]:
        """The host tools and `tool_create` the labels grant (nothing from the store)."""
        labels = self.options.labels
        out = {entry.name: Visible(entry) for entry in host_entries(labels)}
        if TOOL_CREATE_LABEL in labels:
            entry = create_entry()
            out[entry.name] = Visible(entry)
        return out

    def listing(self) -> Listing:
        """The current listing: the cached one unless the store changed since it was read."""
        stamp = self._watch.stamp()
        current = self._listing
        if current is not None and stamp == current.stamp and stamp != -1:
            return current
        self._listing = self._read_listing(stamp, current)
        return self._listing

    def _read_listing(self, stamp: int, previous: Listing | None) -> Listing:
        from forgec.store import StoreError

        labels = self.options.labels
        # listed in this order: host tools, forged tools, tool_create
        out = {name: v for name, v in self._fixed.items() if v.entry.kind == "host"}
        try:
            # a tampered or damaged version is left out, and the person running the server told
            enabled = self._reader.enabled_versions(on_problem=_warn)
        except StoreError as exc:
            _warn(f"cannot read the tool store, keeping the last listing: {exc}")
            if previous is not None:
                return attrs.evolve(previous, stamp=-1, consent={})
            enabled = []
        for stored in enabled:
            if not forged_visible(stored.marks, labels):
                continue
            old = previous.visible.get(_mcp(stored)) if previous is not None else None
            if old is not None and old.stored is not None and old.stored.hash == stored.hash:
                out[old.entry.name] = old  # unchanged: keep its validator and Program
                continue
            forged = forged_entry(
                stored.manifest, stored.marks, digest=stored.hash, ui=stored.program.get("ui")
            )
            if forged is None:
                _warn(f"{stored.name}: its MCP name would be over 128 characters; not listed")
                continue
            out[forged.name] = Visible(forged, stored)
        out.update(self._fixed)
        tools = [_tool(v.entry) for v in out.values()]
        wire = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]
        return Listing(stamp=stamp, visible=out, tools=tools, signature=orjson.dumps(wire))

    def visible(self) -> dict[str, Visible]:
        return self.listing().visible

    def lookup(self, name: str) -> Visible | None:
        """Call-time check: the tool as it is listed now, or None (refused)."""
        return self.listing().visible.get(name)

    def changed_since_announced(self) -> bool:
        """Whether the listing differs from the one clients last heard of (and mark it heard)."""
        signature = self.listing().signature
        if self._announced is None:
            self._announced = signature
            return False
        if signature == self._announced:
            return False
        self._announced = signature
        return True

    def instructions(self) -> str | None:
        from forgec.mcp.instructions import collect_instructions, default_folder

        folder = (
            self.options.templates / "tool-instructions"
            if self.options.templates is not None
            else default_folder()
        )
        names = [v.entry.internal for v in self.visible().values()]
        text, warnings = collect_instructions(folder, names)
        for warning in warnings:
            _warn(warning)
        return text

    # -- calls ----------------------------------------------------------------------------

    async def call(self, ctx: Any, name: str, arguments: dict[str, Any] | None) -> Any:
        args = arguments or {}
        visible = self.lookup(name)
        if visible is None:
            return _refusal(
                f"`{name}` is not available: there is no such tool, it is off, or this "
                "persona's capability labels do not grant it"
            )
        problem = visible.check_input(args)
        if problem is not None:
            return _refusal(f"invalid input for `{name}`: {problem}")
        if visible.entry.kind == "create":
            # off the event loop: every other request is answered while this one checks
            return await _in_thread(self._tool_create, args)
        if visible.entry.kind == "host":
            return await self._host_call(ctx, visible.entry, args)
        return await self._forged_call(ctx, visible, args)

    async def _forged_call(self, ctx: Any, visible: Visible, args: dict[str, Any]) -> Any:
        import mcp_types as types

        from forgec.mcp.results import forged_failed, forged_ok
        from forgec.runtime import RunResult

        stored, entry = visible.stored, visible.entry
        tool_input = args.get("input") if entry.wraps_input else args
        asks = stored.marks.always_asks
        if not asks and not self._has_consent(stored):
            return _refusal(
                f"{stored.name} v{stored.version} has no recorded consent; a person must turn "
                f"it on with `forgec tools enable {stored.tool_id}`"
            )
        program = visible.program()
        session = self.context(ctx)
        labels = _Labels(
            session.labels() if session is not None else frozenset(),
            self.options.policy.flows_allowed(
                (stored.name, entry.name), version=stored.version, hash=stored.hash
            ),
        )
        try:
            if asks:
                result = await self._asked_run(ctx, visible, program, tool_input, labels)
            else:
                # nobody is asked: one trip to a worker thread opens the host, checks, runs
                result = await _in_thread(self._checked_run, stored, program, tool_input, labels)
        except Exception as exc:  # the host could not be opened (bad db, config): say so
            return _refusal(f"{stored.name} could not run: {exc}")
        if isinstance(result, str):
            return _refusal(result)
        if not isinstance(result, RunResult):
            return result  # consent refused, or its 2026-07-28 `input_required` round
        if session is not None:
            # what the run returned enters the client's context (a failed run: its message)
            session.join(forged_output_labels(result, stored.marks))
        out = result.to_json()
        if result.ok:
            fields = forged_ok(out, wraps_output=entry.wraps_output, ui=entry.ui)
        else:
            fields = forged_failed(stored.name, out)
        return types.CallToolResult(**fields)

    def _checked_run(self, stored: Any, program: Any, tool_input: Any, labels: _Labels) -> Any:
        """In a worker: the run result, or the message of a check that refused it."""
        with self.hosts.lend() as host:
            problem = _forged_problem(stored, host)
            if problem is not None:
                return problem
            return _run(stored, program, tool_input, host, labels)

    async def _asked_run(
        self, ctx: Any, visible: Visible, program: Any, tool_input: Any, labels: _Labels
    ) -> Any:
        """An R4 tool: every check first, then the question, then the run — one host."""
        stored = visible.stored
        host = await _in_thread(self.hosts.take)
        try:
            problem = await _in_thread(_forged_problem, stored, host)
            if problem is not None:
                result: Any = problem
            else:
                refusal = await self._forged_consent(ctx, visible.entry, stored)
                if refusal is not None:
                    result = refusal
                else:
                    result = await _in_thread(_run, stored, program, tool_input, host, labels)
        except BaseException:  # cancelled while asking, or the host broke: never reuse it
            self.hosts.give(host, reusable=False)
            raise
        self.hosts.give(host)
        return result

    def _has_consent(self, stored: Any) -> bool:
        from forgec.store import StoreError

        known = self.listing().consent
        key = (stored.tool_id, stored.version)
        if key not in known:
            try:
                known[key] = bool(self._reader.has_consent(stored.tool_id, stored.version))
            except StoreError:
                return False  # not cached: the next call asks the store again
        return known[key]

    async def _forged_consent(self, ctx: Any, entry: ToolEntry, stored: Any) -> Any:
        """An R4 tool: the policy file, else ask. None when it may run."""
        names = (stored.name, entry.name)
        if self.options.policy.allows(names, version=stored.version, hash=stored.hash):
            return None
        return await self._ask(ctx, entry, f"{stored.name} v{stored.version}", stored)

    async def _ask(
        self, ctx: Any, entry: ToolEntry, who: str, stored: Any = None, flow: str | None = None
    ) -> Any:
        """R4 (or, with FLOW, a call the `[flows] deny` rules refused): ask through
        elicitation, or refuse. Returns None when the person said yes."""
        from forgec.render.consent import always_asks_banner

        # the real reason it asks (R4, or its data flows for an R3 tool), never "R4" for both
        why = (always_asks_banner(stored.marks) if stored is not None else None) or (
            "This tool is R4: it will ask before every run."
        )
        if not _can_elicit(ctx):
            return _refusal(
                f"{who} asks a person before every run ({why}), but this MCP client cannot "
                "ask (it does not support elicitation). Run it from the command line, or allow "
                "it in a consent policy file (`forgec mcp serve --consent-policy FILE`)."
            )
        from forgec.render.consent import render_consent_card

        card = (
            render_consent_card(stored.manifest, stored.marks)
            if stored is not None
            else f"{entry.title}: {entry.description}"
        )
        message = f"Allow this run of {who}? {why}\n\n{card}"
        if flow is not None:
            message = (
                f"Allow this call of {who}? The host's flow rules refuse it: {flow}. What this "
                "session read earlier would reach it.\n\n"
                f"{entry.title}: {entry.description}"
            )
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

    async def _host_call(self, ctx: Any, entry: ToolEntry, args: dict[str, Any]) -> Any:
        import mcp_types as types

        try:
            host = await _in_thread(self.hosts.take)
        except Exception as exc:
            return _refusal(f"`{entry.name}` could not run: {exc}")
        try:
            problem = await _in_thread(_host_problem, entry, args, host)
            if problem is not None:
                return _refusal(problem)
            # the row's risk decides, as for a forged tool: R4 asks every time; an R3 tool
            # (subagent_invoke, persona_send) runs on the persona's labels alone
            asked = False
            if _host_risk(entry) == "R4":
                names = (entry.name, entry.internal)
                if not self.options.policy.allows(names):
                    refusal = await self._ask(ctx, entry, f"`{entry.name}`")
                    if refusal is not None:
                        return refusal
                    asked = True
            session = self.context(ctx)
            allowed = self.options.policy.flows_allowed((entry.name, entry.internal))
            try:
                try:
                    result, labels = await _in_thread(
                        _call_host_tool, entry, args, host, session, allowed
                    )
                except Exception as exc:
                    # (a 2026-07-28 client answers one question per call: an R4 tool it was
                    # just asked about keeps the deny)
                    ask = _can_elicit(ctx) and not (asked and _modern(ctx))
                    if getattr(exc, "code", None) != "RUN_FLOW_DENIED" or not ask:
                        raise
                    # the call had no effect: the person's answer replaces the deny
                    why = getattr(exc, "message", None) or str(exc)
                    refusal = await self._ask(ctx, entry, f"`{entry.name}`", flow=why)
                    if refusal is not None:
                        return refusal
                    rules = getattr(getattr(host, "config", None), "flow_deny", ())
                    allowed = allowed | frozenset(rules)
                    result, labels = await _in_thread(
                        _call_host_tool, entry, args, host, session, allowed
                    )
            except Exception as exc:
                code = getattr(exc, "code", None)
                message = getattr(exc, "message", None) or str(exc)
                return _refusal(f"`{entry.name}` failed: {code + ': ' if code else ''}{message}")
        finally:
            # a host tool's failure is a HostError from the bridge, not a broken host
            self.hosts.give(host)
        if session is not None:
            # on the event loop, before the client sees the result: a later call it makes
            # after reading this one carries these labels (calls run in worker threads)
            session.join(labels)
        structured = result if isinstance(result, dict) else {"result": result}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_dumps(structured))],
            structured_content=structured,
        )

    def _tool_create(self, args: dict[str, Any]) -> Any:
        has_manifest, has_source = "manifest" in args, "source" in args
        if has_manifest == has_source:
            return _refusal("tool_create takes exactly one of `manifest` (object) or `source`")
        target = args.get("target", "talon")
        tests = args.get("tests")
        if tests is not None and not isinstance(tests, list):
            return _refusal("tool_create's `tests` is a list of test cases")
        source: str | bytes
        if has_manifest:
            source = _manifest_text(args["manifest"])
            path = None
        else:
            source = str(args["source"])  # as sent: the loader judges a lone surrogate
            path = "tool_create.forge"
        from forgec.store import StoreError

        try:
            with self._store() as store:
                # a model's version: of a new id it is v1, off; of an id that has versions
                # it is a proposal only a person can accept (SPEC §14); either way the store
                # numbers it and the answer below does not depend on which
                result = store.install(
                    source,
                    path=path,
                    target=target,
                    author="model",
                    author_name=getattr(self.options, "persona", None),
                    tests=tests,
                )
        except StoreError as exc:
            return _refusal(f"tool_create failed: {exc}")
        return _created_answer(result.report)


def _created_answer(report: Any) -> Any:
    """What `tool_create` tells the model: a function of its own manifest's check alone.

    The store numbers a model's version and never refuses it on numbers (forgec.store.core),
    so whether the id exists, which versions it has, and whether this became a first version
    or a proposal change nothing here: the answer names no stored version number and is the
    same for an id the model cannot list whether or not it exists (SPEC §14)."""
    import mcp_types as types

    checked = report.to_json()
    tool_id = report.manifest.get("id") if isinstance(report.manifest, dict) else None
    name = f"dynamic:{tool_id}" if report.ok and isinstance(tool_id, str) else None
    if name is not None:
        summary = (
            f"{name} stored for a person to review, OFF: it changes nothing until a person "
            "reads it and turns it on"
        )
    else:
        issues = [
            f"- {d['code']} at {d['path'] or '/'}: {d['message']}"
            for d in checked["diagnostics"]
            if d["severity"] == "error"
        ]
        summary = "not stored; every issue:\n" + "\n".join(issues)
    structured = {
        "ok": name is not None,
        "name": name,
        "status": "waiting" if name is not None else None,
        "enabled": False,
        "report": checked,
    }
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=summary)],
        structured_content=structured,
        is_error=name is None,
    )


def _host_risk(entry: ToolEntry) -> str:
    """The worst-case risk of a host tool, from its row (R4 for anything without one)."""
    from forgec.ir.capabilities import BY_NAME

    row = BY_NAME.get(entry.internal)
    return row.marks.risk if row is not None else "R4"


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


def _first_error(validator: Any, value: Any) -> str | None:
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at {where})"


def _manifest_text(value: Any) -> bytes:
    """The JSON text of a manifest a client sent as an object, with every integer as sent:
    orjson cannot write one past 64 bits, so such a manifest is written by the standard
    library, and the loader then refuses the integer at its path (SPEC §16)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        import json

        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode(
            "utf-8", "surrogatepass"
        )


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


def _mcp(stored: Any) -> str:
    from forgec.mcp.names import mcp_name

    return mcp_name(stored.tool_id)


def _close(host: Any) -> None:
    close = getattr(host, "close", None)
    if close is not None:
        close()


def _forged_problem(stored: Any, host: Any) -> str | None:
    from forgec.mcp.prechecks import forged_problem

    return forged_problem(stored, host)


def _host_problem(entry: ToolEntry, args: dict[str, Any], host: Any) -> str | None:
    from forgec.mcp.prechecks import host_call_problem

    return host_call_problem(entry.internal, entry.name, args, host)


@attrs.frozen
class _Labels:
    """What a forged run of a session starts with (SPEC §21): the session's labels on
    `input`, and the flows the consent policy allows the tool."""

    input: frozenset[str]
    allowed: frozenset[str]


def _run(stored: Any, program: Any, tool_input: Any, host: Any, labels: _Labels) -> Any:
    from forgec.store.running import run_stored

    # consent was settled before (recorded, elicited or allowed by policy)
    return run_stored(
        stored,
        tool_input,
        host=host,
        consent=lambda request: True,
        program=program,
        input_labels=labels.input,
        allowed_flows=labels.allowed,
    )


def _call_host_tool(
    entry: ToolEntry,
    args: dict[str, Any],
    host: Any,
    session: AgentContext | None,
    allowed_flows: frozenset[str],
) -> tuple[Any, frozenset[str]]:
    """One host-tool call of a session, through the bridge's call API for a model's own calls
    (`forgec.host.agentcall`): the session's labels ride it. Returns the result and its
    labels, which the caller joins to the session."""
    from forgec.host.agentcall import call_as_agent

    direct = getattr(host, "call_tool", None)
    if direct is not None:
        return direct(entry.internal, args), frozenset()
    # a direct call has no manifest: the host config's allowlist is the only one, and
    # an empty one allows no host (deny by default)
    outcome = call_as_agent(
        host,
        entry.internal,
        args,
        session if session is not None else AgentContext(),
        caller="mcp",
        name=entry.name,
        allowed_flows=allowed_flows,
    )
    return outcome.result, outcome.labels


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
        _meta=entry.meta,
    )


class Announcer:
    """Tells every connected client that the tool list changed.

    2025 protocol (handshake era): `notifications/tools/list_changed` on the session, captured
    when the client said `initialized` (or on its first request). 2026-07-28: the event goes on
    the subscription bus and reaches each open `subscriptions/listen` stream that asked for it.
    """

    def __init__(self) -> None:
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._sessions: list[Any] = []

    def remember(self, ctx: Any) -> None:
        if _modern(ctx):
            return  # no standalone stream at 2026-07-28: the bus carries the event
        session = getattr(ctx, "session", None)
        if session is not None and all(s is not session for s in self._sessions):
            self._sessions.append(session)

    async def announce(self) -> None:
        from mcp.server.subscriptions import ToolsListChanged

        await self.bus.publish(ToolsListChanged())
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # a closed session: forget it
                self._sessions.remove(session)


async def watch_store(forge: ForgeServer, announcer: Announcer, interval: float) -> None:
    """Poll the store's data_version; announce when what is listed changed."""
    import anyio

    forge.changed_since_announced()  # the listing clients start from
    while True:
        await anyio.sleep(interval)
        try:
            changed = forge.changed_since_announced()
        except Exception as exc:  # a store gone bad must not end the server
            _warn(f"cannot read the tool store: {exc}")
            continue
        if changed:
            await announcer.announce()


class ListingMemo:
    """Serves `tools/list` from the wire form of the current snapshot.

    The SDK turns every result into its wire form and validates it against the protocol
    version's schema — for a thousand tools that alone is most of a listing's cost, paid again
    on every request for an answer that has not changed. This middleware keeps the wire dict
    the SDK produced for (snapshot, protocol version) and returns it while both stay the same;
    a new snapshot (the store's data_version moved) drops it. A request with a cursor goes
    through as usual (the list is not paginated: all of it comes in one page).
    """

    def __init__(self, forge: ForgeServer, announcer: Announcer) -> None:
        self.forge = forge
        self.announcer = announcer
        self._listing: Listing | None = None
        self._wire: dict[str, Any] = {}

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/list" or (ctx.params or {}).get("cursor") is not None:
            return await call_next(ctx)
        self.announcer.remember(ctx)
        listing = self.forge.listing()
        if listing is not self._listing:
            self._listing, self._wire = listing, {}
        version = str(ctx.protocol_version)
        cached = self._wire.get(version)
        if cached is not None:
            return cached
        result = await call_next(ctx)
        if isinstance(result, dict) and listing is self.forge.listing():
            self._wire[version] = result
        return result


def build_server(forge: ForgeServer, announcer: Announcer | None = None) -> Any:
    import mcp_types as types
    from mcp.server import Server

    from forgec import __version__

    announcer = announcer or Announcer()

    async def list_tools(ctx: Any, params: Any) -> Any:
        announcer.remember(ctx)
        return types.ListToolsResult(tools=forge.listing().tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        announcer.remember(ctx)
        return await forge.call(ctx, params.name, params.arguments)

    server = Server(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        instructions=forge.instructions(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=announcer.listen,
    )

    async def initialized(ctx: Any, params: Any) -> None:
        announcer.remember(ctx)

    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, initialized
    )
    server.middleware.append(ListingMemo(forge, announcer))  # inside the SDK's tracing
    return server


class _EscapingText:
    """The server's side of standard output: every message the SDK writes (one JSON text per
    line) goes out with each raw DEL, C1, bidi or line-separator character as a `\\u` escape
    (`forgec.runtime.jsontext.escape_unsafe_text`), whatever produced the text — a diagnostic,
    a run's output, a host's answer (SPEC §14). The one choke point of the MCP output: the SDK
    serialises with pydantic, which writes those characters raw."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        from forgec.runtime.jsontext import escape_unsafe_text

        data = escape_unsafe_text(text).encode("utf-8", "surrogatepass")
        self.raw.write(data)
        return len(text)

    def flush(self) -> None:
        self.raw.flush()


@contextlib.asynccontextmanager
async def _escaping_stdout() -> AsyncIterator[Any]:
    """Standard output for the SDK's stdio transport, through `_EscapingText`. As the SDK does
    with its own: while serving, file descriptor 1 points at standard error, so stray output of
    a handler or a child process never reaches (and never tears) the wire."""
    import anyio

    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    raw = os.fdopen(private, "wb", closefd=False)
    try:
        yield anyio.wrap_file(_EscapingText(raw))  # type: ignore[arg-type]
    finally:
        with contextlib.suppress(OSError, ValueError):
            raw.flush()
        os.dup2(private, 1)
        os.close(private)


async def serve_stdio(options: ServeOptions, *, interval: float = POLL_INTERVAL_S) -> None:
    import anyio
    from mcp.server.lowlevel.server import NotificationOptions
    from mcp.server.stdio import stdio_server

    from forgec.budget import close_workers, warm_up

    forge = ForgeServer(options)
    announcer = Announcer()
    server = build_server(forge, announcer)
    init = server.create_initialization_options(NotificationOptions(tools_changed=True))
    try:
        async with (
            _escaping_stdout() as stdout,
            stdio_server(stdout=stdout) as (read_stream, write_stream),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(watch_store, forge, announcer, interval)
            tg.start_soon(_in_thread, warm_up)  # the first tool_create need not start a worker
            await server.run(read_stream, write_stream, init)
            tg.cancel_scope.cancel()  # the client went away: stop polling
    finally:
        forge.close()
        close_workers()
