"""`MemoryHost`: an in-memory `Host` for tests, benchmarks and embedders trying things out.

It implements the TALOS capabilities of SPEC §5 over plain dicts (tasks, notes, memories) with
the same inputs and results as the reference host, checks every input again at the bridge
with the capability's row, the same shape `check` and the reference host run (unknown or
ill-typed field, size limit → `RUN_CAPABILITY_FAILED`), and undoes steps the way
the undo pairs say (`tasks.create` → status `cancelled`; `tasks.setStatus` → the previous
status; `notes.update` → the previous title and body).

For tests it records every call, can be told to fail the next calls of a capability (transient
or not), answers model steps from a script, and keeps per-tool state in `states`. Ids are
sequential (`task-1`, `note-1`, `mem-1`) and the clock is injectable, so runs are repeatable.

Seeding (the documented way to give it data; `forgec test`'s `[case.host]` uses the same):

    host = MemoryHost()
    host.seed(
        tasks=[{"title": "Pay rent", "due": "2026-12-01"}],    # the rest takes its default
        notes=[{"title": "Ideas", "body": "…"}],
        memories=[{"text": "Ana prefers mornings", "tags": ["ana"]}],
        state={"my-tool": {"seen": 3}},                        # tool id → its saved state
    )

Each record is shaped as the capability rows' results say (SPEC §5: a task is `{id, title,
notes, due, status, createdAt, updatedAt}`); a field left out takes its default (a fresh
sequential id, `""` notes, `null` due, `open` status, the clock's time, no tags). A field the
shape does not have, or a value of the wrong type, raises `SeedError` naming the record and
the field: a seed the real host could never hold is refused, never stored.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import orjson

from forgec.ir.capabilities import BY_NAME, MEMORY, NOTE, TASK
from forgec.runtime import sources_and_sinks
from forgec.runtime.host import CallContext, HostError
from forgec.runtime.undo import TALOS_UNDO, undo_input

FAILED = "RUN_CAPABILITY_FAILED"

# the tables `seed` fills: name → (id prefix, the row schema a record must satisfy)
SEED_TABLES: dict[str, tuple[str, Mapping[str, Any]]] = {
    "tasks": ("task", TASK),
    "notes": ("note", NOTE),
    "memories": ("mem", MEMORY),
}


class SeedError(ValueError):
    """A seed record the host could never hold; `where` is (table, index, field | None)."""

    def __init__(self, message: str, where: tuple[str, int | None, str | None]) -> None:
        super().__init__(message)
        self.where = where


@attrs.frozen
class Call:
    """One call the host received (capability, model op, or compensation)."""

    kind: str  # call | model | compensate
    name: str  # capability or model op
    input: Any
    node: str
    attempt: int


@attrs.define
class _Injected:
    code: str
    message: str
    transient: bool
    times: int


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class MemoryHost:
    """A dict-backed host. `clock` returns the ISO timestamp written into records.

    It keeps labels (SPEC §15 "Labels persist"): every record a call writes keeps the labels
    of the call (`row_labels`), a call that reads records hands theirs back through
    `CallContext.read_labels`, and the state's labels are saved beside it (`state_labels`)."""

    keeps_labels = True

    def __init__(
        self,
        *,
        credentials: Iterable[str] = (),
        clock: Callable[[], str] = _utc_now,
        model: Callable[[str, Any, Mapping[str, Any], Any], Any] | None = None,
        model_is_local: bool = True,
        flow_deny: Iterable[str] = (),
    ) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.notes: dict[str, dict[str, Any]] = {}
        self.memories: dict[str, dict[str, Any]] = {}
        self.states: dict[str, dict[str, Any]] = {}
        self.credentials = set(credentials)
        self.clock = clock
        self.model_fn = model
        self.model_is_local = model_is_local
        self.model_answers: list[Any] = []
        self.calls: list[Call] = []
        self.saved_states: list[tuple[str, dict[str, Any]]] = []
        self._failures: dict[str, list[_Injected]] = {}
        self._seq = 0
        # SPEC §15: the host's `[flows] deny` rules, and every (label, sink) pair a call
        # carried (what the soundness property compares with the static flows; a set, so a
        # long-lived host stays bounded)
        self.flow_deny = tuple(flow_deny)
        self.flows: set[tuple[str, str]] = set()
        # (table, row key) → the labels of what was written into it; tool → field → labels
        self.row_labels: dict[tuple[str, str], frozenset[str]] = {}
        self.state_labels: dict[str, dict[str, list[str]]] = {}

    # --- test hooks ---------------------------------------------------------------------

    def fail(
        self,
        capability: str,
        *,
        code: str = FAILED,
        message: str = "injected failure",
        transient: bool = False,
        times: int = 1,
    ) -> None:
        """Make the next `times` calls of `capability` raise a `HostError` (queued in order).

        `capability` may also be `compensate:<name>` (fail an undo) or `model`.
        """
        self._failures.setdefault(capability, []).append(_Injected(code, message, transient, times))

    def seed(
        self,
        *,
        tasks: Iterable[Mapping[str, Any]] = (),
        notes: Iterable[Mapping[str, Any]] = (),
        memories: Iterable[Mapping[str, Any]] = (),
        state: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> MemoryHost:
        """Add records (fields left out take their defaults) and saved states; returns the
        host. Raises `SeedError` for a record the row's shape refuses (nothing is added)."""
        staged: list[tuple[str, dict[str, Any]]] = []
        seq = self._seq
        for table, records in (("tasks", tasks), ("notes", notes), ("memories", memories)):
            for index, record in enumerate(records):
                full, seq = _seed_record(table, index, record, seq, self.clock)
                staged.append((table, full))
        states: dict[str, dict[str, Any]] = {}
        for tool_id, value in (state or {}).items():
            if not isinstance(value, Mapping):
                raise SeedError(
                    f"the state of {tool_id!r} must be an object", ("state", None, tool_id)
                )
            states[str(tool_id)] = orjson.loads(orjson.dumps(dict(value)))
        self._seq = seq
        for table, full in staged:
            getattr(self, table)[full["id"]] = full
        self.states.update(states)
        return self

    def script_model(self, *answers: Any) -> None:
        """Answers for the next model steps, in order."""
        self.model_answers.extend(answers)

    def calls_of(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name and c.kind == "call"]

    def _maybe_fail(self, key: str) -> None:
        queue = self._failures.get(key)
        if not queue:
            return
        head = queue[0]
        head.times -= 1
        if head.times <= 0:
            queue.pop(0)
        raise HostError(head.code, head.message, transient=head.transient)

    def _next_id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}-{self._seq}"

    # --- the Host protocol ------------------------------------------------------------------

    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        self.calls.append(Call("call", capability, input, context.node_id, context.attempt))
        sink = sources_and_sinks.call_sink(capability, input)
        labels = context.all_labels()
        if sink is not None:
            self.flows.update((label, sink) for label in labels)
        reason = sources_and_sinks.call_denied(self.flow_deny, capability, input, context)
        if reason is not None:
            raise HostError("RUN_FLOW_DENIED", f"{capability} at `{context.node_id}`: {reason}")
        self._maybe_fail(capability)
        result = self._dispatch(capability, input)
        self.keep_labels(capability, input, result, context)
        return result

    def keep_labels(self, capability: str, input: Any, result: Any, context: CallContext) -> None:
        """Label the records the call wrote; hand back the labels of those it read."""
        labels = context.all_labels()
        for table in sources_and_sinks.call_tables_written(capability, input):
            for key in sources_and_sinks.row_keys(table, result):
                old = self.row_labels.get((table, key), frozenset())
                self.row_labels[(table, key)] = old | labels
        for table in sources_and_sinks.tables_read(capability, input):
            for key in sources_and_sinks.row_keys(table, result):
                context.read_labels.update(self.row_labels.get((table, key), ()))

    def _dispatch(self, capability: str, input: Any) -> Any:
        handler = _HANDLERS.get(capability)
        if handler is None:
            raise HostError(FAILED, f"the in-memory host does not provide {capability!r}")
        # the row's shape: the check `forgec check` runs on literals and the reference host at
        # its bridge (size included), so the three agree by construction
        problems = BY_NAME[capability].shape.check(input, frozenset(), runtime=True)
        if problems:
            detail = "; ".join(
                (("/" + "/".join(map(str, p.path)) + ": ") if p.path else "") + p.message
                for p in problems
            )
            raise HostError(FAILED, f"{capability}: {detail}")
        return handler(self, input)

    def model(
        self,
        op: str,
        input: Any,
        requirements: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        context: CallContext,
    ) -> Any:
        self.calls.append(Call("model", op, input, context.node_id, context.attempt))
        self._maybe_fail("model")
        if requirements.get("privacy") == "local-only" and not self.model_is_local:
            raise HostError(
                "RUN_PRIVACY", "the step needs a local model and this host has only a remote one"
            )
        if self.model_fn is not None:
            return self.model_fn(op, input, requirements, output_schema)
        if self.model_answers:
            return self.model_answers.pop(0)
        raise HostError("RUN_MODEL_FAILED", "no model is configured on this host")

    def has_credential(self, credential_id: str) -> bool:
        return credential_id in self.credentials

    def load_state(self, tool_id: str) -> dict[str, Any] | None:
        state = self.states.get(tool_id)
        return orjson.loads(orjson.dumps(state)) if state is not None else None

    def load_state_labels(self, tool_id: str) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.state_labels.get(tool_id, {}).items()}

    def save_state(
        self, tool_id: str, state: dict[str, Any], labels: Mapping[str, Any] | None = None
    ) -> None:
        self._maybe_fail("save_state")
        self.states[tool_id] = orjson.loads(orjson.dumps(state))
        self.state_labels[tool_id] = {k: list(v) for k, v in (labels or {}).items()}
        self.saved_states.append((tool_id, self.states[tool_id]))

    def compensate(
        self,
        capability: str,
        step_capability: str,
        step_input: Any,
        step_result: Any,
        context: CallContext,
    ) -> Any:
        self.calls.append(Call("compensate", step_capability, step_input, context.node_id, 1))
        self._maybe_fail(f"compensate:{step_capability}")
        result = step_result if isinstance(step_result, dict) else {}
        if TALOS_UNDO.get(step_capability) != capability:
            raise HostError(FAILED, f"{capability} cannot undo {step_capability}")
        undo = undo_input(step_capability, result)
        if undo is None:  # nothing to put back: the update's own check refuses the empty fields
            undo = {"id": result.get("id"), "title": None, "body": None}
        return self._dispatch(capability, undo)


# --- seeding ---------------------------------------------------------------------------------


def _seed_record(
    table: str, index: int, record: Mapping[str, Any], seq: int, clock: Callable[[], str]
) -> tuple[dict[str, Any], int]:
    prefix, schema = SEED_TABLES[table]
    if not isinstance(record, Mapping):
        raise SeedError(f"{table}[{index}] must be a table of fields", (table, index, None))
    known = schema["properties"]
    for name in record:
        if name not in known:
            raise SeedError(
                f"{table}[{index}]: `{name}` is not a field of the record "
                f"(fields: {', '.join(known)})",
                (table, index, str(name)),
            )
    now = clock()
    full: dict[str, Any] = {}
    if "id" not in record:
        seq += 1
    defaults: dict[str, Any] = {
        "id": f"{prefix}-{seq}",
        "notes": "",
        "due": None,
        "status": "open",
        "createdAt": now,
        "updatedAt": now,
        "tags": [],
    }
    for name in known:
        if name in record:
            full[name] = record[name]
        elif name in defaults:
            full[name] = defaults[name]
        else:
            raise SeedError(
                f"{table}[{index}] needs `{name}` (it has no default)", (table, index, name)
            )
    full = orjson.loads(orjson.dumps(full))
    problem = _schema_problem(schema, full)
    if problem is not None:
        raise SeedError(f"{table}[{index}]: {problem}", (table, index, None))
    return full, seq


def _schema_problem(schema: Mapping[str, Any], value: Any) -> str | None:
    import fastjsonschema

    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        validator = fastjsonschema.compile(dict(schema), use_formats=False)
        _VALIDATORS[id(schema)] = validator
    try:
        validator(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        return str(exc.message).replace("data.", "", 1).replace("data ", "the record ", 1)
    return None


_VALIDATORS: dict[int, Any] = {}


# --- capabilities ---------------------------------------------------------------------------


def _limit(input: dict[str, Any], default: int) -> int:
    return int(input.get("limit", default))


def _matches(query: str | None, record: dict[str, Any], text_field: str) -> bool:
    """No query, or the query inside the title or the text field (case-insensitive)."""
    if query is None:
        return True
    needle = query.lower()
    return needle in record["title"].lower() or needle in record[text_field].lower()


def _newest_first(
    records: dict[str, dict[str, Any]], keep: Callable[[dict[str, Any]], bool], limit: int
) -> dict[str, Any]:
    """A list result of the kept records (copies): newest createdAt first, then the
    later-created first (a dict's insertion order is creation order)."""
    kept = [(r["createdAt"], i, r) for i, r in enumerate(records.values()) if keep(r)]
    kept.sort(key=lambda k: (k[0], k[1]), reverse=True)
    return {"items": [dict(r) for _, _, r in kept[:limit]]}


def _tasks_list(host: MemoryHost, input: dict[str, Any]) -> Any:
    limit = _limit(input, 100)
    status, query = input.get("status"), input.get("query")
    return _newest_first(
        host.tasks,
        lambda t: (status is None or t["status"] == status) and _matches(query, t, "notes"),
        limit,
    )


def _tasks_create(host: MemoryHost, input: dict[str, Any]) -> Any:
    status = input.get("status", "open")
    due = input.get("due")
    now = host.clock()
    task = {
        "id": host._next_id("task"),
        "title": input["title"],
        "notes": input.get("notes", ""),
        "due": due,
        "status": status,
        "createdAt": now,
        "updatedAt": now,
    }
    host.tasks[task["id"]] = task
    return dict(task)


def _tasks_set_status(host: MemoryHost, input: dict[str, Any]) -> Any:
    task = host.tasks.get(input["id"])
    if task is None:
        raise HostError(FAILED, f"tasks.setStatus: no task {input['id']!r}")
    previous = task["status"]
    task["status"] = input["status"]
    task["updatedAt"] = host.clock()
    return {**task, "previousStatus": previous}


def _notes_list(host: MemoryHost, input: dict[str, Any]) -> Any:
    limit = _limit(input, 100)
    query = input.get("query")
    return _newest_first(host.notes, lambda n: _matches(query, n, "body"), limit)


def _notes_create(host: MemoryHost, input: dict[str, Any]) -> Any:
    now = host.clock()
    note = {
        "id": host._next_id("note"),
        "title": input["title"],
        "body": input["body"],
        "createdAt": now,
        "updatedAt": now,
    }
    host.notes[note["id"]] = note
    return dict(note)


def _notes_update(host: MemoryHost, input: dict[str, Any]) -> Any:
    note = host.notes.get(input["id"])
    if note is None:
        raise HostError(FAILED, f"notes.update: no note {input['id']!r}")
    previous = {"title": note["title"], "body": note["body"]}
    if "title" in input:
        note["title"] = input["title"]
    if "body" in input:
        note["body"] = input["body"]
    note["updatedAt"] = host.clock()
    return {**note, "previous": previous}


def _memory_search(host: MemoryHost, input: dict[str, Any]) -> Any:
    limit = _limit(input, 50)
    terms = [t for t in input["query"].lower().split() if t]
    scored = []
    for order, memory in enumerate(host.memories.values()):
        words = memory["text"].lower().split()
        score = sum(words.count(t) for t in terms)
        if score:
            scored.append((score, order, memory))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    return {
        "items": [
            {"id": m["id"], "text": m["text"], "score": float(score)}
            for score, _, m in scored[:limit]
        ]
    }


def _memory_create(host: MemoryHost, input: dict[str, Any]) -> Any:
    tags = input.get("tags", [])
    memory = {"id": host._next_id("mem"), "text": input["text"], "tags": list(tags)}
    memory["createdAt"] = host.clock()
    host.memories[memory["id"]] = memory
    return dict(memory)


_HANDLERS: dict[str, Callable[[MemoryHost, dict[str, Any]], Any]] = {
    "tasks.list": _tasks_list,
    "tasks.create": _tasks_create,
    "tasks.setStatus": _tasks_set_status,
    "notes.list": _notes_list,
    "notes.create": _notes_create,
    "notes.update": _notes_update,
    "memory.search": _memory_search,
    "memory.create": _memory_create,
}

# the capabilities this host carries out itself (any other needs a host that has it)
PROVIDED: frozenset[str] = frozenset(_HANDLERS)
