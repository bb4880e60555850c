"""The one table of SPEC §15's sources and sinks, read by the flow pass, the VM and the hosts.

It lives in the runtime (like the opcode table) because the VM and the reference hosts need it
and the runtime must not import the compiler; `forgec.passes.flows` imports it from here.

Labels (strings a value carries):
- `input` — the caller's input; `private:<capability>` — the result of a capability that reads
  the person's data; `private:state` — the tool's saved state; `external:<host>` (`external:*`
  when the host is not known) — a `net.http` response; `model` — a model step's answer.
- untrusted = any `external:*` label (text someone outside the device wrote);
  `external:talon` is text other people write into Talon: rows of `messages` and `threads`,
  and what `persona.*` and `subagent.*` return.

Stores (SPEC §15 "Labels persist"): the host tables a capability writes and reads. A write
keeps the labels of the data written (and of what decided it) with the row; a later read
carries them. The flow pass treats each table as one cell (a fixpoint over the tool's own
writes); the reference hosts keep the labels per row.

Sinks (strings naming where a value goes):
- `egress:<host>` / `egress:*` — a `net.http` request (url, headers, body) to that host;
  `egress:<capability>` for `channel.send`, `persona.send`, `subagent.invoke`,
  `subagent.background`;
- `write:<capability>` — a change to the person's data;
- `output` — the run's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from forgec.ir.capabilities import OUTSIDE_COLUMNS, ROWS, Capability, named_query_tables
from forgec.ir.shapes import url_host

INPUT = "input"
MODEL = "model"
STATE = "private:state"
OUTPUT = "output"

# the capability → class tables, derived from the rows (`forgec.ir.capabilities`)
_PRIVATE_NAMES = frozenset(row.name for row in ROWS if row.source == "private")
WRITE_CAPABILITIES = frozenset(
    row.name for row in ROWS if row.sink == "write" and row.writing is None
)
# capability → (the input field that selects the operation, the operations that write)
WRITE_WHEN: dict[str, tuple[str, frozenset[str]]] = {
    row.name: (row.selector, row.writing)
    for row in ROWS
    if row.sink == "write" and row.writing is not None and row.selector is not None
}


def _host_field(row: Capability) -> str | None:
    """The input field whose URL's host names a call's source (`external:<host>`) and sink
    (`egress:<host>`): the one URL destination (its `validate` is "url") of a row that reads
    from outside or sends; None for any other row."""
    if row.source != "external" and row.sink != "egress":
        return None
    urls = [d for d in row.destinations if row.url_destination(d)]
    if len(urls) > 1:
        raise ValueError(f"{row.name}: one URL destination names its host, not {urls}")
    return urls[0] if urls else None


# capability → the input field whose URL host names its source and sink (`net.http`: `url`)
URL_FIELDS: dict[str, str] = {
    row.name: field for row in ROWS if (field := _host_field(row)) is not None
}
# the capabilities whose results come from outside (`external:<host>`, `external:*`)
_EXTERNAL_NAMES = frozenset(row.name for row in ROWS if row.source == "external")
# the sends named by their URL's host (`egress:<host>`), and those named by the capability
_HOST_EGRESS = frozenset(
    row.name for row in ROWS if row.sink == "egress" and row.name in URL_FIELDS
)
EGRESS_CAPABILITIES = frozenset(
    row.name for row in ROWS if row.sink == "egress" and row.name not in URL_FIELDS
)
TALON = "external:talon"
_TALON_SET = frozenset({TALON})
# the capabilities whose answers are also other people's text (`external:talon`), and the
# fields of those answers the host decides (SPEC §21 "origin per field")
_OUTSIDE_TEXT = frozenset(row.name for row in ROWS if row.outside_text)
_HOST_FIELDS = {row.name: frozenset(row.host_fields) for row in ROWS if row.outside_text}
# the capabilities whose result's origin labels depend on the call (`origin_labels`): the one
# labelled by its URL's host, and those whose answers may hold outside text per field
ORIGIN_BY_CALL = frozenset(row.name for row in ROWS if row.source == "external" or row.outside_text)
# SPEC §21 "destinations": capability → the input fields naming where data goes / what changes,
# and those that are URLs (their destination is the host alone)
DESTINATIONS: dict[str, tuple[str, ...]] = {row.name: row.destinations for row in ROWS}
URL_DESTINATIONS: dict[str, frozenset[str]] = {
    row.name: frozenset(d for d in row.destinations if row.url_destination(d)) for row in ROWS
}

# capability → the host table its writes go to (memory.access and schedule.manage only when
# their operation writes, as WRITE_WHEN says)
STORE_WRITES: dict[str, tuple[str, ...]] = {row.name: row.stores for row in ROWS if row.stores}
# capability → the host table its result reads (db.query: the tables its SQL reads)
STORE_READS: dict[str, str] = {row.name: row.reads for row in ROWS if row.reads is not None}
# capability → the input field holding the SELECT whose tables its result reads (db.query)
QUERY_FIELDS: dict[str, str] = {row.name: row.reads_sql for row in ROWS if row.reads_sql}
# the tables db.query may read, and those holding text people wrote (SPEC §21: which
# columns, `OUTSIDE_COLUMNS`, is the rows' table)
UNTRUSTED_TABLES = frozenset(OUTSIDE_COLUMNS)
# table → the result field that names a row (in a result, or in each of its `items` /
# `schedules`): how a host finds the rows a call wrote or read
ROW_KEYS = {
    "tasks": "id",
    "notes": "id",
    "memories": "id",
    "memory_items": "key",
    "schedules": "scheduleId",
    "messages": "messageId",
    "a2a_tasks": "taskId",
    "background_tasks": "taskId",
}
_LISTS = ("items", "schedules")

# `[flows] deny` rules of the reference host: `<label kind>-><sink kind>`; `destination` is
# the finer sink of SPEC §21: a destination argument's own data (control does not count)
DESTINATION = "destination"
DENY_RULES = (
    "private->egress",
    "untrusted->write",
    "untrusted->egress",
    "untrusted->destination",
)


def is_private(label: str) -> bool:
    return label.startswith("private:")


def is_untrusted(label: str) -> bool:
    return label.startswith("external:")


def source_label(capability: str, host: str | None) -> str | None:
    """The label a capability's result carries by where it came from (None: no source)."""
    if capability in _EXTERNAL_NAMES:
        return f"external:{host or '*'}"
    if capability in _PRIVATE_NAMES:
        return f"private:{capability}"
    return None


def source_labels(capability: str, host: str | None) -> frozenset[str]:
    """Every label a capability's result carries by where it came from (not counting the
    stored labels of the rows it reads): `persona.*` and `subagent.*` answers are also text
    other people wrote (`external:talon`)."""
    label = source_label(capability, host)
    if label is None:
        return frozenset()
    if capability in _OUTSIDE_TEXT:
        return frozenset({label, TALON})
    return frozenset({label})


def result_origin(capability: str, result: Any) -> frozenset[str]:
    """SPEC §21 "origin per field": `external:talon` when the answer of a capability whose
    answers are other people's text holds a field the host does not decide (a delegated
    task's `result`, `error`); nothing for an answer of host facts alone (`taskId`, `status`)."""
    if capability not in _OUTSIDE_TEXT:
        return frozenset()
    if type(result) is dict and _HOST_FIELDS[capability].issuperset(result):
        return frozenset()
    return _TALON_SET


def origin_labels(capability: str, input: Any, result: Any) -> frozenset[str]:
    """The labels a call's result carries by where it came from, at run time: its source
    label (`net.http` by the URL's host) and the outside text among its fields."""
    label = source_label(capability, call_host(capability, input))
    out = result_origin(capability, result)
    return out | {label} if label is not None else out


def tables_written(capability: str, operation: Any, known: bool = True) -> tuple[str, ...]:
    """The tables a call writes, given its operation field (`known` False: computed, so a
    capability that may write counts as writing)."""
    tables = STORE_WRITES.get(capability, ())
    rule = WRITE_WHEN.get(capability)
    if tables and rule is not None and known and operation not in rule[1]:
        return ()
    return tables


def tables_read(capability: str, input: Any) -> tuple[str, ...]:
    """The tables a call's result reads (a query's: those its SQL names; every table it may
    read when the SQL is not known)."""
    field = QUERY_FIELDS.get(capability)
    if field is not None:
        return query_tables(input.get(field) if isinstance(input, Mapping) else None)
    table = STORE_READS.get(capability)
    return (table,) if table is not None else ()


def tables_may_read(capability: str) -> tuple[str, ...]:
    """Every table a call of the capability may read, whatever its input."""
    return tables_read(capability, None)


def query_tables(sql: Any) -> tuple[str, ...]:
    """The tables a `db.query` may read, by a word match of its SQL text (the rows' rule)."""
    return named_query_tables(sql)


def row_keys(table: str, result: Any) -> list[str]:
    """The keys of the rows of `table` a result names (see `ROW_KEYS`)."""
    field = ROW_KEYS.get(table)
    if field is None or type(result) is not dict:
        return []
    out: list[str] = []
    key = result.get(field)
    if type(key) is str:
        out.append(key)
    for name in _LISTS:
        items = result.get(name)
        if type(items) is list:
            out.extend(i[field] for i in items if type(i) is dict and type(i.get(field)) is str)
    return out


def call_tables_written(capability: str, input: Any) -> tuple[str, ...]:
    """The tables an actual call writes (its operation read from the evaluated input)."""
    rule = WRITE_WHEN.get(capability)
    operation = input.get(rule[0]) if rule and type(input) is dict else None
    return tables_written(capability, operation)


def sink_of(capability: str, operation: Any, host: str | None) -> str | None:
    """The sink a call is, given its operation field's value (None when it has none) and,
    for a send named by its URL (`url_field`: `net.http`), its host (None when unknown)."""
    if capability in _HOST_EGRESS:
        return f"egress:{host or '*'}"
    if capability in EGRESS_CAPABILITIES:
        return f"egress:{capability}"
    if capability in WRITE_CAPABILITIES:
        return f"write:{capability}"
    rule = WRITE_WHEN.get(capability)
    if rule is not None and operation in rule[1]:
        return f"write:{capability}"
    return None


def static_sink(capability: str, fields: Mapping[str, Any], host: str | None) -> str | None:
    """`sink_of` at compile time: `fields` are the literal input fields; when the operation
    field is not among them (computed), a capability that may write counts as writing."""
    rule = WRITE_WHEN.get(capability)
    if rule is not None and rule[0] not in fields:
        return f"write:{capability}"
    return sink_of(capability, fields.get(rule[0]) if rule else None, host)


def sink_kind(sink: str) -> str:
    return sink.split(":", 1)[0]


def denied(rules: Iterable[str], sink: str | None, labels: Iterable[str]) -> str | None:
    """Why a call to `sink` carrying `labels` is refused by `rules`, or None."""
    if sink is None:
        return None
    kind = sink_kind(sink)
    for rule in rules:
        what, _, where = rule.partition("->")
        if where != kind:
            continue
        test = is_private if what == "private" else is_untrusted if what == "untrusted" else None
        if test is None:
            continue
        for label in sorted(set(labels)):
            if test(label):
                return f"the host's [flows] rule {rule!r} refuses {label} reaching {sink}"
    return None


def destination_labels(capability: str, input: Any, context: Any) -> frozenset[str]:
    """SPEC §21: the labels a call's destination arguments carry by data (`context` is the
    call's `CallContext`: its per-argument labels). A URL destination whose host the checked
    manifest wrote literally (`context.fixed_destinations`) carries none: its labels fill
    the path or query, which are content. An input that is not an object is all destination."""
    names = DESTINATIONS.get(capability, ())
    labels = context.labels
    if not names or not labels:
        return frozenset()
    if type(input) is not dict:
        return frozenset(labels.get("*", ()))
    fixed = context.fixed_destinations
    out: set[str] = set()
    for name in names:
        if name in fixed:
            continue
        out.update(labels.get(name, ()))
    return frozenset(out)


def call_denied(rules: Iterable[str], capability: str, input: Any, context: Any) -> str | None:
    """The one run-time deny check (SPEC §15, §21), for a forged tool's step and a model's
    own call alike: why the call is refused by `rules` (less the flows the caller allowed
    for it, `context.allowed_flows`: the consent policy, a person's answer), or None.

    The coarse rules test every label of the call (its arguments' and its control labels);
    `untrusted->destination` tests the destination arguments' data labels only."""
    allowed = context.allowed_flows
    active = [r for r in rules if r not in allowed] if allowed else list(rules)
    if not active:
        return None
    sink = call_sink(capability, input)
    if sink is None:
        return None
    coarse = [r for r in active if not r.endswith("->" + DESTINATION)]
    reason = denied(coarse, sink, context.all_labels()) if coarse else None
    if reason is not None or len(coarse) == len(active):
        return reason
    fine = [r for r in active if r.endswith("->" + DESTINATION)]
    dest = destination_labels(capability, input, context)
    if not dest:
        return None
    reason = denied(fine, f"{DESTINATION}:{capability}", dest)
    if reason is None:
        return None
    names = DESTINATIONS.get(capability, ())
    where = " / ".join(f"`{n}`" for n in names if type(input) is dict and n in input)
    return f"{reason} (where the data goes or what changes: {where or 'its input'})"


def call_sink(capability: str, input: Any) -> str | None:
    """The sink an actual call is (its operation and URL read from the evaluated input)."""
    fields = input if type(input) is dict else {}
    rule = WRITE_WHEN.get(capability)
    operation = fields.get(rule[0]) if rule else None
    return sink_of(capability, operation, call_host(capability, input))


def url_field(capability: str) -> str | None:
    """The input field whose URL's host names `capability`'s source and sink (its row: the
    one URL destination of a row that reads from outside or sends), or None."""
    return URL_FIELDS.get(capability)


def call_host(capability: str, input: Any) -> str | None:
    """The host an actual call's URL field reaches, as the URL rule reads it
    (`forgec.ir.shapes.url_host`: lower-cased, punycode, the checker's and the host's one
    reading). None: the row has no such field, the input is not an object, the URL is not
    acceptable or the rule is not loaded (the label then says `*`)."""
    field = URL_FIELDS.get(capability)
    if field is None or type(input) is not dict:
        return None
    return url_host(input.get(field))


# --- words for people (the consent card, diagnostics) --------------------------------

_SOURCE_WORDS = {
    "tasks": "tasks",
    "notes": "notes",
    "memory": "memories",
    "db": "database rows",
    "schedule": "schedules",
    "persona": "persona messages",
    "subagent": "sub-agent results",
}


def describe_source(label: str) -> str:
    """`private:notes.list` → `notes (notes.list)`; `external:h` → `h`."""
    if label == STATE:
        return "saved state"
    if label.startswith("private:"):
        cap = label[len("private:") :]
        return f"{_SOURCE_WORDS.get(cap.split('.')[0], cap)} ({cap})"
    if label == TALON:
        return "Talon messages and agents"
    if label.startswith("external:"):
        host = label[len("external:") :]
        return "any web host" if host == "*" else host
    return "your input" if label == INPUT else "the model" if label == MODEL else label


def describe_sink(sink: str) -> str:
    if sink == OUTPUT:
        return "the result"
    kind, _, where = sink.partition(":")
    if kind == "egress" and where == "*":
        return "a computed URL"
    return where
