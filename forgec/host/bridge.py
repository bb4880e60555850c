"""The reference `Host`: the bridge every capability call of a run crosses.

For each call, in this order, before anything is touched:
1. the capability must be one this host knows (TALOS or Talon);
2. a Talon host tool must be granted by the persona's capability labels (`RUN_LABEL_DENIED`)
   — checked here even though the listing (`visible_tools`) already hid it, because a caller
   may bypass the listing;
3. the input must fit the capability's size limit (compact UTF-8 JSON bytes) and pass the
   catalog's static check (when the catalog module is present) and the handler's own checks
   (`RUN_CAPABILITY_FAILED`);
4. the handler runs on the host (SQLite, HTTP, the delegation registries).

Compensation derives the undo from the step's own input and result (SPEC §5 pairs): a created
task is cancelled, a status or a note's content is put back from `previousStatus`/`previous`, a
created schedule is deleted and an updated/cancelled/deleted one restored from `previous`, and a
memory item written or deleted gets its prior value back (recorded by the bridge at call time,
since the SPEC's `memory.access` results carry no prior value).

Label matching: a tool's label must be held exactly, except `channel.send:<name>`, which
`channel.send:*` also grants.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from forgec.host import channels, dbquery, delegation, memory_access, schedules, talos
from forgec.host import http as nethttp
from forgec.host import validate as v
from forgec.host.config import HostConfig
from forgec.host.credentials import CredentialStore
from forgec.host.db import DatabaseError, connect
from forgec.host.models import ModelRouter
from forgec.runtime import flowlabels
from forgec.runtime.host import CallContext, HostError
from forgec.runtime.talos_facts import INPUT_LIMITS as TALOS_INPUT_LIMITS
from forgec.runtime.talos_facts import TALOS_UNDO, undo_input

# Talon host tools → the label each needs (channel.send's depends on the channel)
TALON_LABELS: dict[str, str] = {
    "schedule.manage": "schedule.manage:own",
    "channel.send": "channel.send:*",
    "memory.access": "memory.access:thread",
    "net.http": "net.http:egress",
    "db.query": "db.query:own",
    "subagent.invoke": "subagent.invoke",
    "subagent.background": "subagent.background",
    "persona.send": "persona.send:*",
    "persona.task_status": "persona.send:*",
    "persona.list": "persona.send:*",
}
TALON_TOOLS = tuple(TALON_LABELS)

# bytes of compact JSON input; used when the catalog does not say
TALON_INPUT_LIMITS = {
    "schedule.manage": 48 * 1024,
    "channel.send": 64 * 1024,
    "memory.access": 64 * 1024,
    "net.http": 64 * 1024,
    "db.query": 32 * 1024,
    "subagent.invoke": 64 * 1024,
    "subagent.background": 80 * 1024,
    "persona.send": 80 * 1024,
    "persona.task_status": 1024,
    "persona.list": 1024,
}

# memory.access undo records kept per (tool, node): more than a run can make (256 transitions)
JOURNAL_DEPTH = 512

# compensation pairs (SPEC §5): step capability → the capability that undoes it
UNDO = {
    **TALOS_UNDO,
    "schedule.manage": "schedule.manage",
    "memory.access": "memory.access",
}


def label_needed(capability: str, input: Any) -> str | None:
    """The label a call needs (None for TALOS capabilities)."""
    if capability == "channel.send":
        channel = input.get("channelId") if isinstance(input, Mapping) else None
        return f"channel.send:{channel}" if isinstance(channel, str) else "channel.send:*"
    return TALON_LABELS.get(capability)


def grants(labels: frozenset[str] | set[str] | tuple[str, ...], needed: str) -> bool:
    if needed in labels:
        return True
    return needed.startswith("channel.send:") and "channel.send:*" in labels


def visible_tools(labels: frozenset[str] | set[str] | tuple[str, ...]) -> list[str]:
    """The Talon host tools the labels grant (a listing hides the rest)."""
    out = []
    for tool in TALON_TOOLS:
        if tool == "channel.send":
            if any(label.startswith("channel.send:") for label in labels):
                out.append(tool)
        elif grants(labels, TALON_LABELS[tool]):
            out.append(tool)
    return out


# host caps the seed says a computed value is capped at (a literal above is a compile error)
CAPS = {("net.http", "timeoutMs"): 120_000, ("db.query", "limit"): 1000}


def apply_caps(capability: str, input: Any) -> Any:
    """The input with computed values above a host cap lowered to it (SPEC §12)."""
    if capability == "persona.list" and input is None:
        return {}
    if not isinstance(input, Mapping):
        return input
    out = None
    for (cap_name, field), cap in CAPS.items():
        value = input.get(field) if cap_name == capability else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
            out = dict(input) if out is None else out
            out[field] = cap
    return input if out is None else out


def _catalog_spec(capability: str) -> Any:
    """The catalog's spec for a capability, or None when the catalog is not available."""
    try:
        from forgec.catalog import get_catalog

        return get_catalog("talon").get(capability)
    except ImportError:  # the catalog is optional for an embedder of the runtime alone
        return None


# capabilities that never touch the shared connection (db.query opens its own read-only one,
# net.http only the network): they run outside the lock, so a slow server or query never holds
# the other callers up (each is bounded by its own time limit anyway)
_OWN_CONNECTION = frozenset({"db.query", "net.http"})


class ReferenceHost:
    """TALOS on SQLite plus the Talon host tools, behind the persona's labels."""

    def __init__(
        self,
        *,
        db_path: Path,
        config: HostConfig,
        labels: frozenset[str],
        credentials: CredentialStore,
        router: ModelRouter,
        resolve: Mapping[tuple[str, int], str] | None = None,
        persona: str | None = None,
        thread: str | None = None,
        subagents: Mapping[str, delegation.SubagentFn] | None = None,
        persona_handlers: Mapping[str, delegation.PersonaHandler] | None = None,
        background_runner: delegation.BackgroundRunner | None = None,
    ) -> None:
        self.db_path = Path(db_path).expanduser().resolve()
        self.config = config
        self.labels = frozenset(labels)
        self.credentials = credentials
        self.router = router
        self.resolve = dict(resolve or {})
        self.persona = persona or config.persona
        self.thread = thread or config.thread
        self.personas = delegation.load_personas(config.personas_dir)
        self.subagents = {**delegation.builtin_subagents(), **(subagents or {})}
        self.persona_handlers = dict(persona_handlers or {})
        self.background_runner = background_runner
        self.conn = connect(self.db_path)
        # one connection, callers possibly on several threads (an MCP server): one at a time
        self._lock = threading.RLock()
        # (tool, node) → stack of (key, item before) for memory.access compensation
        self._memory_journal: dict[tuple[str, str], list[tuple[str, dict[str, Any] | None]]] = {}
        delegation.resume_queued(self.db_path, self.conn, self.persona_handlers)

    # --- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ReferenceHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ReferenceHost(db={str(self.db_path)!r}, persona={self.persona!r})"

    def visible_tools(self) -> list[str]:
        return visible_tools(self.labels)

    @property
    def prompts_dir(self) -> Path | None:
        persona = self.personas.get(self.persona)
        if persona is not None:
            return persona.prompts_dir
        if self.config.personas_dir is not None:
            return self.config.personas_dir / self.persona / "prompts"
        return None

    # --- the bridge --------------------------------------------------------------------------

    def check_call(self, capability: str, input: Any) -> None:
        """Steps 1–3 of the bridge: known, granted, within size, valid per the catalog."""
        if capability in talos.HANDLERS:
            limit = TALOS_INPUT_LIMITS[capability]
        elif capability in TALON_LABELS:
            needed = label_needed(capability, input)
            assert needed is not None
            if not grants(self.labels, needed):
                raise HostError(
                    "RUN_LABEL_DENIED",
                    f"{capability} needs the capability label {needed!r}, which persona "
                    f"{self.persona!r} does not hold",
                )
            limit = TALON_INPUT_LIMITS[capability]
        else:
            v.fail(f"unknown capability {capability!r}")
        spec = _catalog_spec(capability)
        limit = getattr(spec, "input_limit", None) or limit
        size = v.compact_size(input)
        if size > limit:
            v.fail(f"{capability}: the input is {size} bytes, over the {limit}-byte limit")
        if spec is not None:
            problems = spec.check_runtime_input(input)
            if problems:
                detail = "; ".join(
                    (("/" + "/".join(map(str, p.path)) + ": ") if p.path else "") + p.message
                    for p in problems
                )
                v.fail(f"{capability}: {detail}")

    @contextmanager
    def _boundary(self, code: str, what: str) -> Iterator[None]:
        """Every error that leaves the host passes here: a `HostError` keeps its code with its
        message scrubbed of every credential value and the API key; anything else (a library's
        exception, whose text may quote a header) becomes a scrubbed `HostError` too."""
        try:
            yield
        except HostError as exc:
            raise HostError(
                exc.code, self.credentials.scrub(exc.message), transient=exc.transient
            ) from None
        except Exception as exc:
            message = self.credentials.scrub(f"{what} failed: {type(exc).__name__}: {exc}")
            raise HostError(code, message) from None

    def check_flow(self, capability: str, input: Any, context: CallContext) -> None:
        """SPEC §15: the `[flows] deny` rules, on the labels the VM handed over, before the
        call has any effect (`RUN_FLOW_DENIED`)."""
        rules = self.config.flow_deny
        if not rules:
            return
        reason = flowlabels.denied(
            rules, flowlabels.call_sink(capability, input), context.all_labels()
        )
        if reason is not None:
            raise HostError("RUN_FLOW_DENIED", f"{capability} at `{context.node_id}`: {reason}")

    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        with self._boundary("RUN_CAPABILITY_FAILED", capability):
            return self._call(capability, input, context)

    def _call(self, capability: str, input: Any, context: CallContext) -> Any:
        input = apply_caps(capability, input)
        self.check_call(capability, input)
        self.check_flow(capability, input, context)
        try:
            if capability in _OWN_CONNECTION:
                return self._dispatch(capability, input, context)
            with self._lock:
                return self._dispatch(capability, input, context)
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            v.fail(f"{capability}: database error: {exc}", transient=busy)
        except DatabaseError as exc:
            v.fail(f"{capability}: {exc}")

    def _ctx(self, context: CallContext | None = None) -> delegation.DelegationContext:
        def ask(op: str, inp: Any, schema: Mapping[str, Any] | None) -> Any:
            ctx = context or CallContext(tool_id="host", tool_version=1, node_id="subagent")
            return self.router.answer(op, inp, {"privacy": "local-preferred"}, schema, ctx)

        return delegation.DelegationContext(
            persona=self.persona,
            thread=self.thread,
            db_path=self.db_path,
            model=ask,
            file_roots=self.config.file_searcher_roots,
            spark_base_url=self.config.spark_coder_base_url,
            spark_model=self.config.spark_coder_model,
        )

    def _dispatch(self, capability: str, inp: Any, context: CallContext) -> Any:
        handler = talos.HANDLERS.get(capability)
        if handler is not None:
            return handler(self.conn, inp)
        if capability == "schedule.manage":
            return schedules.manage(
                self.conn,
                inp,
                persona=self.persona,
                thread=self.thread,
                prompts_dir=self.prompts_dir,
            )
        if capability == "memory.access":
            result, undo = memory_access.access(
                self.conn, inp, persona=self.persona, thread=self.thread
            )
            if undo is not None:
                stack = self._memory_journal.setdefault((context.tool_id, context.node_id), [])
                stack.append(undo)
                del stack[:-JOURNAL_DEPTH]  # a long-lived host must not grow without bound
            return result
        if capability == "db.query":
            return dbquery.run_query(
                self.db_path,
                inp,
                persona=self.persona,
                thread=self.thread,
                time_limit_ms=self.config.db_query_time_ms,
            )
        if capability == "net.http":
            return nethttp.request(
                inp,
                context,
                credentials=self.credentials,
                host_allow=self.config.allow_hosts,
                resolve=self.resolve,
                max_redirects=self.config.max_redirects,
                ca_file=self.config.ca_file,
            )
        if capability == "channel.send":
            return channels.send(
                self.conn,
                inp,
                channels=self.config.channels,
                persona=self.persona,
                thread=self.thread,
            )
        if capability == "subagent.invoke":
            return delegation.invoke(inp, self.subagents, self._ctx(context))
        if capability == "subagent.background":
            return delegation.background(
                self.conn,
                inp,
                runner=self.background_runner,
                personas=self.personas,
                ctx=self._ctx(context),
            )
        if capability == "persona.send":
            return delegation.persona_send(
                self.conn,
                inp,
                personas=self.personas,
                handlers=self.persona_handlers,
                ctx=self._ctx(context),
                await_ms=self.config.a2a_await_ms,
            )
        if capability == "persona.task_status":
            return delegation.task_status(self.conn, inp, ctx=self._ctx(context))
        if capability == "persona.list":
            v.fields("persona.list", {} if inp is None else inp, allowed=set())
            return delegation.persona_list(self.personas, self.persona_handlers, self.persona)
        v.fail(f"unknown capability {capability!r}")

    # --- the rest of the protocol ------------------------------------------------------------

    def model(
        self,
        op: str,
        input: Any,
        requirements: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        context: CallContext,
    ) -> Any:
        with self._boundary("RUN_MODEL_FAILED", "the model step"):
            return self.router.answer(op, input, requirements, output_schema, context)

    def has_credential(self, credential_id: str) -> bool:
        return self.credentials.has(credential_id)

    def credential_hint(self, credential_id: str) -> str:
        """How to supply a missing credential (the VM adds it to `RUN_CREDENTIAL_MISSING`)."""
        from forgec.host.credentials import how_to_supply

        return how_to_supply(credential_id)

    def load_state(self, tool_id: str) -> dict[str, Any] | None:
        with self._lock:
            return talos.load_state(self.conn, tool_id)

    def save_state(self, tool_id: str, state: dict[str, Any]) -> None:
        try:
            with self._lock:
                talos.save_state(self.conn, tool_id, state)
        except sqlite3.Error as exc:
            raise HostError(
                "RUN_CAPABILITY_FAILED", f"cannot save the tool's state: {exc}", transient=True
            ) from None

    def compensate(
        self,
        capability: str,
        step_capability: str,
        step_input: Any,
        step_result: Any,
        context: CallContext,
    ) -> Any:
        with self._boundary("RUN_CAPABILITY_FAILED", capability):
            return self._compensate(capability, step_capability, step_input, step_result, context)

    def _compensate(
        self,
        capability: str,
        step_capability: str,
        step_input: Any,
        step_result: Any,
        context: CallContext,
    ) -> Any:
        if UNDO.get(step_capability) != capability:
            v.fail(f"{capability} cannot undo {step_capability}")
        res = step_result if isinstance(step_result, Mapping) else {}
        inp = step_input if isinstance(step_input, Mapping) else {}
        if step_capability in TALOS_UNDO:
            undo = undo_input(step_capability, res)
            if undo is None:
                v.fail("notes.update: the step's result has no `previous` content to restore")
            return self._call(capability, undo, context)
        # the Talon pairs undo through the host directly, behind the same label
        self.check_call(capability, inp)
        with self._lock:
            return self._undo_talon(step_capability, inp, res, context)

    def _undo_talon(
        self,
        step_capability: str,
        inp: Mapping[str, Any],
        res: Mapping[str, Any],
        context: CallContext,
    ) -> Any:
        if step_capability == "schedule.manage":
            action = inp.get("action")
            if action == "create":
                schedules.remove(self.conn, self.persona, str(res.get("scheduleId")))
                return {"scheduleId": res.get("scheduleId"), "deleted": True}
            if action in ("update", "cancel", "delete"):
                prev = res.get("previous")
                if not isinstance(prev, Mapping):
                    v.fail("schedule.manage: the step's result has no `previous` schedule")
                schedules.restore(self.conn, self.persona, dict(prev))
                return {"scheduleId": prev["scheduleId"], "restored": True}
            return {"undone": False, "reason": f"{action} changes nothing"}
        # memory.access
        stack = self._memory_journal.get((context.tool_id, context.node_id))
        if inp.get("operation") not in ("write", "delete"):
            return {"undone": False, "reason": f"{inp.get('operation')} changes nothing"}
        # the latest record for this step's key (steps are undone last first)
        index = next(
            (
                i
                for i in range(len(stack or []) - 1, -1, -1)
                if stack and stack[i][0] == res.get("key")
            ),
            None,
        )
        if stack is None or index is None:
            v.fail("memory.access: this host did not record the item's prior value; cannot undo")
        key, before = stack.pop(index)
        memory_access.put_back(self.conn, self.persona, self.thread, key, before)
        return {"key": key, "restored": before is not None, "deleted": before is None}
