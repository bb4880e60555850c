"""The reference `Host`: the bridge every capability call of a run crosses.

For each call, in this order, before anything is touched:
1. the capability must have a row (`forgec.ir.capabilities`) and a registered handler
   (`forgec.host.handlers`; each `forgec/host/<tool>.py` registers its own);
2. a Talon host tool must be granted by the persona's capability labels (`RUN_LABEL_DENIED`),
   by the rows' one rule (`grants`) — checked here even though the listing already hid it,
   because a caller may bypass the listing;
3. computed values above a host cap are lowered to it (SPEC §12), then the input must pass the
   row's shape: its size limit and the very check `forgec check` runs on literals
   (`RUN_CAPABILITY_FAILED`); a handler never checks again what the shape says;
4. the handler runs on the host (SQLite, HTTP, the delegation registries) with one `HostCall`.

Compensation derives the undo from the step's own input and result (SPEC §5 pairs): a created
task is cancelled, a status or a note's content is put back from `previousStatus`/`previous`, a
created schedule is deleted and an updated/cancelled/deleted one restored from `previous`, and a
memory item written or deleted gets its prior value back (recorded by the bridge at call time,
since the SPEC's `memory.access` results carry no prior value).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import forgec.catalog  # noqa: F401  (registers the cron, SQL and URL rules the rows' shapes name)
from forgec.host import delegation, personal_data
from forgec.host import handler_errors as v
from forgec.host import row_labels as rowlabels
from forgec.host.config import HostConfig
from forgec.host.credentials import CredentialStore
from forgec.host.db import DatabaseError, connect
from forgec.host.handlers import HANDLERS, HostCall
from forgec.host.models import ModelRouter
from forgec.ir import capabilities as rows
from forgec.ir.hooks import hook_of
from forgec.runtime import sources_and_sinks
from forgec.runtime.host import CallContext, HostError
from forgec.runtime.undo import undo_input


def _register_handlers() -> None:
    """Import every module of `forgec.host`: importing a tool module registers its handler
    (`@handles`, `forgec.host.handlers`), so a new host tool is a new file here and never an
    edit of this one (they are all imported by the host anyway)."""
    import importlib
    import pkgutil

    import forgec.host as package

    for found in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{found.name}")


_register_handlers()

# Talon host tools → the label each needs (channel.send's depends on the channel)
TALON_LABELS: dict[str, str] = {
    row.name: row.label for row in rows.rows_of("talon") if row.label is not None
}
TALON_TOOLS = tuple(TALON_LABELS)

# memory.access undo records kept per (tool, node): more than a run can make (256 transitions)
JOURNAL_DEPTH = 512

# compensation pairs (SPEC §5): step capability → the capability that undoes it
UNDO: dict[str, str] = {row.name: row.undo for row in rows.ROWS if row.undo is not None}
TALOS_UNDO = {name: undo for name, undo in UNDO.items() if "talos" in rows.BY_NAME[name].targets}

# host caps (SPEC §12): a computed value above is lowered to the cap (a literal is an error)
CAPS: dict[tuple[str, str], float] = {
    (row.name, field): cap for row in rows.ROWS for field, cap in row.caps.items()
}


def label_needed(capability: str, input: Any) -> str | None:
    """The label a call needs (None for TALOS capabilities)."""
    row = rows.BY_NAME.get(capability)
    return row.label_needed(input) if row is not None else None


def grants(labels: frozenset[str] | set[str] | tuple[str, ...], needed: str) -> bool:
    """Whether `labels` hold the label `needed` (the rows' one rule)."""
    return rows.label_grants(labels, needed)


def visible_tools(labels: frozenset[str] | set[str] | tuple[str, ...]) -> list[str]:
    """The Talon host tools the labels grant some call of (a listing hides the rest)."""
    return [tool for tool in TALON_TOOLS if rows.grants(labels, tool)]


def apply_caps(capability: str, input: Any) -> Any:
    """The input with computed values above a host cap lowered to it (SPEC §12); an omitted
    input is the empty object for a tool whose shape takes no field (`persona.list`)."""
    row = rows.BY_NAME.get(capability)
    if row is None:
        return input
    if input is None and not row.shape.fields:
        return {}
    if not isinstance(input, Mapping):
        return input
    out = None
    for field, cap in row.caps.items():
        value = input.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
            out = dict(input) if out is None else out
            out[field] = int(cap) if float(cap).is_integer() else cap
    return input if out is None else out


def input_problems(capability: str, input: Any) -> list[str]:
    """Every problem with a run-time input, by the row's shape: the check `forgec check` runs
    on literals, here on the whole evaluated input (size included)."""
    row = rows.BY_NAME[capability]
    return [
        (("/" + "/".join(map(str, p.path)) + ": ") if p.path else "") + p.message
        for p in row.shape.check(input, frozenset(), runtime=True)
    ]


class ReferenceHost:
    """TALOS on SQLite plus the Talon host tools, behind the persona's labels.

    It keeps flow labels (SPEC §15): with every row a call writes and beside the state
    (`forgec.host.row_labels`)."""

    keeps_labels = True

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
        self.staged_folder: Path | None = None
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
        # the depth of the A2A task this host's calls are made for (the daemon sets it on the
        # host of a turn that runs one); a send is one deeper, bounded (SPEC §19)
        self.a2a_depth = 0
        self.conn = connect(self.db_path)
        # one connection, callers possibly on several threads (an MCP server): one at a time
        self._lock = threading.RLock()
        # (tool, node) → stack of (key, item before) for memory.access compensation
        self._memory_journal: dict[tuple[str, str], list[tuple[str, dict[str, Any] | None]]] = {}
        delegation.resume_queued(self.db_path, self.conn, self.persona_handlers)

    # --- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self.conn.close()
        if self.staged_folder is not None:  # a staged run's copy (forgec.host.staged)
            import shutil

            shutil.rmtree(self.staged_folder, ignore_errors=True)
            self.staged_folder = None

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
        """Steps 1–3 of the bridge: known, granted, valid per the row's shape (size included)."""
        row = rows.BY_NAME.get(capability)
        if row is None or capability not in HANDLERS:
            v.fail(f"unknown capability {capability!r}")
        if not rows.grants(self.labels, capability, input):
            raise HostError(
                "RUN_LABEL_DENIED",
                f"{capability} needs the capability label {row.label_needed(input)!r}, which "
                f"persona {self.persona!r} does not hold",
            )
        size = v.compact_size(input)
        if size > row.input_limit:
            v.fail(
                f"{capability}: the input is {size} bytes, over the {row.input_limit}-byte limit"
            )
        problems = input_problems(capability, input)
        if problems:
            v.fail(f"{capability}: {'; '.join(problems)}")

    @contextmanager
    def _boundary(self, code: str, what: str) -> Iterator[None]:
        """Every error that leaves the host passes here: a `HostError` keeps its code with its
        message scrubbed of every secret the credential store holds (credentials and every key
        the host read); anything else (a library's exception, whose text may quote a header)
        becomes a scrubbed `HostError` too. Results leave through `scrub_value` the same way."""
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
        reason = sources_and_sinks.call_denied(rules, capability, input, context)
        if reason is not None:
            raise HostError("RUN_FLOW_DENIED", f"{capability} at `{context.node_id}`: {reason}")

    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        with self._boundary("RUN_CAPABILITY_FAILED", capability):
            result = self._call(capability, input, context)
            with self._lock:
                rowlabels.keep(
                    self.conn,
                    capability,
                    input,
                    result,
                    context.all_labels(),
                    context.read_labels,
                    context.column_labels,
                )
            return self.credentials.scrub_value(result)

    def _call(self, capability: str, input: Any, context: CallContext) -> Any:
        input = apply_caps(capability, input)
        self.check_call(capability, input)
        self.check_flow(capability, input, context)
        registered = HANDLERS[capability]
        call = HostCall(capability, input, context, self)
        try:
            if registered.own_connection:
                return registered.handler(call)
            with self._lock:
                return registered.handler(call)
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            v.fail(f"{capability}: database error: {exc}", transient=busy)
        except DatabaseError as exc:
            v.fail(f"{capability}: {exc}")

    def delegation_context(
        self, context: CallContext | None = None
    ) -> delegation.DelegationContext:
        """What a delegating handler needs of the host: persona, thread, database, a model."""

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
            key=self.credentials.key,
            scrub=self.credentials.scrub_value,
            config=self.config,
            a2a_depth=self.a2a_depth,
        )

    def record_memory_undo(
        self, context: CallContext, undo: tuple[str, dict[str, Any] | None]
    ) -> None:
        """Keep the item as it was before a memory.access write or delete, for compensation."""
        stack = self._memory_journal.setdefault((context.tool_id, context.node_id), [])
        stack.append(undo)
        del stack[:-JOURNAL_DEPTH]  # a long-lived host must not grow without bound

    def take_memory_undo(
        self, context: CallContext, key: Any
    ) -> tuple[str, dict[str, Any] | None] | None:
        """The latest record kept for `key` by this step (removed), None when there is none."""
        stack = self._memory_journal.get((context.tool_id, context.node_id)) or []
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == key:
                return stack.pop(i)
        return None

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
            answer = self.router.answer(op, input, requirements, output_schema, context)
            return self.credentials.scrub_value(answer)

    def has_credential(self, credential_id: str) -> bool:
        return self.credentials.has(credential_id)

    def credential_hint(self, credential_id: str) -> str:
        """How to supply a missing credential (the VM adds it to `RUN_CREDENTIAL_MISSING`)."""
        from forgec.host.credentials import how_to_supply

        return how_to_supply(credential_id)

    def load_state(self, tool_id: str) -> dict[str, Any] | None:
        with self._lock:
            return personal_data.load_state(self.conn, tool_id)

    def load_state_labels(self, tool_id: str) -> dict[str, list[str]]:
        with self._lock:
            return rowlabels.load_state_labels(self.conn, tool_id)

    def save_state(
        self, tool_id: str, state: dict[str, Any], labels: Mapping[str, Any] | None = None
    ) -> None:
        try:
            with self._lock:
                personal_data.save_state(self.conn, tool_id, state, labels)
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
            return self.credentials.scrub_value(
                self._compensate(capability, step_capability, step_input, step_result, context)
            )

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
                v.fail(f"{step_capability}: the step's result does not say what to put back")
            return self._call(capability, undo, context)
        # the Talon pairs undo through the host directly (the row's `undo` hook, registered
        # beside its handler), behind the same label
        hook = hook_of("undo", step_capability)
        if hook is None:
            v.fail(f"{step_capability} has no undo hook on this host")
        self.check_call(capability, inp)
        with self._lock:
            return hook(HostCall(step_capability, inp, context, self), res)
