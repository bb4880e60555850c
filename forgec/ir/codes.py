"""The one registry of diagnostic and run-time codes.

Every code forgec can emit is here, with its severity, a one-line summary (the SARIF rule's
short description) and a one-paragraph doc — what it checks, why, and an example — that
`forgec explain CODE` prints. A test asserts that every code emitted anywhere is registered and
that every registered check code is triggered by some test.
"""

from __future__ import annotations

import attrs

from forgec.ir.diagnostics import Severity
from forgec.ir.readable import HashedByValue
from forgec.ir.rules import NODE_ID_PATTERN, TOOL_ID_PATTERN


@attrs.frozen(repr=False, eq=False)
class CodeDoc(HashedByValue):
    code: str
    severity: Severity
    summary: str
    doc: str
    # "check" (compile time), "run" (run time), "server" (around a check), "test" (a tests file)
    kind: str = "check"


E, W = Severity.ERROR, Severity.WARNING

_ENTRIES: list[tuple[str, Severity, str, str]] = [
    (
        "FORGE_RETRY_BOUNDS",
        E,
        "Retry attempts are not between 1 and 3.",
        "Checks `retry.attempts` on a capability step: an integer from 1 to 3. A retry multiplies "
        "the effects a step may have on the outside world, so the bound is small and fixed. "
        'Example: `"retry": {"attempts": 5, "backoffMs": 100}` is refused; use 1–3.',
    ),
    (
        "FORGE_RETRY_BACKOFF",
        E,
        "The wait between attempts is not between 0 and 5000 ms.",
        "Checks `retry.backoffMs`: an integer from 0 to 5000. A run must finish in bounded time, "
        "and three attempts with at most five seconds between them keep it so. Example: "
        '`"backoffMs": 60000` is refused.',
    ),
    (
        "FORGE_CAPABILITY_UNKNOWN",
        E,
        "A step names a capability the target does not have.",
        "Checks that every capability step (and nothing else) names a capability of the chosen "
        "target's catalog (`--target talos|talon`). Unknown names are usually typos or MCP-style "
        'names; the hint suggests the closest known name. Example: `"capability": '
        '"memory_access"` on talon → did you mean `memory.access`?',
    ),
    (
        "FORGE_NETWORK_NOT_DECLARED",
        E,
        "A network step's host is not in the allowlist.",
        "Under `network.mode: allowlist`, a step that needs the network (`net.http`) with a "
        "literal URL must name a host listed in `network.hosts` exactly (no subdomain matching). "
        "Applies to every step, reachable or not, so a later edit cannot wake an undeclared "
        'request. Example: URL `https://api.example.org/x` with hosts `["example.org"]`.',
    ),
    (
        "FORGE_INVALID_COMPENSATION",
        E,
        "A step that cannot be undone claims a compensation.",
        "Only the capabilities with an undo pair (tasks.create, tasks.setStatus, notes.update, "
        "schedule.manage, memory.access) may name a `compensation`. Claiming one elsewhere would "
        'promise a rollback that cannot happen. Example: `notes.create` with `"compensation": '
        '"notes.update"`.',
    ),
    (
        "FORGE_COMPENSATION_UNKNOWN",
        E,
        "The compensation names an unknown capability.",
        "A step's `compensation` must be a capability of the target's catalog. Example: "
        '`"compensation": "tasks.delete"` (there is no such capability).',
    ),
    (
        "FORGE_COMPENSATION_MISMATCH",
        E,
        "The compensation does not undo the step's capability.",
        "A compensation must be the capability that undoes the step: `tasks.create` ⟲ "
        "`tasks.setStatus`, `tasks.setStatus` ⟲ `tasks.setStatus`, `notes.update` ⟲ "
        "`notes.update`, `schedule.manage` ⟲ `schedule.manage`, `memory.access` ⟲ "
        '`memory.access`. Example: `tasks.create` with `"compensation": "notes.update"`.',
    ),
    (
        "FORGE_LLM_STRUCTURED_OUTPUT_MISSING_SCHEMA",
        E,
        "A model step asks for structured output without an output schema.",
        "An `llm` step whose effective `structuredOutput` (its `requirements`, else "
        "`modelDefaults`) is true must give an `outputSchema`; otherwise nothing constrains what "
        "the model returns. Example: `modelDefaults.structuredOutput: true` and an `llm` step "
        "without `outputSchema`.",
    ),
    (
        "FORGE_TRANSITION_BOUNDS",
        E,
        "flow.maxTransitions is out of range.",
        "`flow.maxTransitions` must be an integer from 1 to 256: every run is bounded. Example: "
        '`"maxTransitions": 1000`.',
    ),
    (
        "FORGE_NODE_BOUNDS",
        E,
        "The flow has no nodes, or more than 64.",
        "A flow has 1 to 64 nodes, loop body nodes included, so a reviewer can read it whole. "
        'Example: `"nodes": []`.',
    ),
    (
        "FORGE_NODE_ID",
        E,
        "A node has an invalid id.",
        f"A node id matches `^{NODE_ID_PATTERN}$`; ids appear in edges, diagnostics and "
        'run errors, so they must be plain. Example: `"id": "1st step"`.',
    ),
    (
        "FORGE_NODE_DUPLICATE",
        E,
        "Two nodes share an id.",
        "Node ids are unique across the whole flow, loop bodies included (one namespace), or an "
        'edge would be ambiguous. Example: two nodes with `"id": "save"`.',
    ),
    (
        "FORGE_FOREACH_BOUNDS",
        E,
        "A loop's bound on items is out of range.",
        "`foreach.maxItems` must be an integer from 1 to 100. The bound is checked before the "
        "first iteration at run time, never by silently dropping items. Example: "
        '`"maxItems": 500`.',
    ),
    (
        "FORGE_INLINE_BOUNDS",
        E,
        "A loop's body has no steps or more than 16.",
        'A `foreach` body holds 1 to 16 nodes. Example: `"body": []`.',
    ),
    (
        "FORGE_ENTRY_MISSING",
        E,
        "The entry node does not exist.",
        '`flow.entry` must name a top-level node. Example: `"entry": "start"` with no node '
        "`start`.",
    ),
    (
        "FORGE_EDGE_MISSING",
        E,
        "A node leads to a node that does not exist.",
        "Every `next`, `then` and `else` names a node in the same scope: top-level nodes lead to "
        'top-level nodes, body nodes to nodes of the same body. Example: `"next": "sve"` '
        "(the hint suggests `save`).",
    ),
    (
        "FORGE_CYCLE",
        E,
        "The flow loops back on itself.",
        "Flows are acyclic; repetition is a bounded `foreach`. Any cycle, reachable or not, at "
        "the top level or in a body, is refused, and the message prints the whole path, e.g. "
        "`a -> b -> a`.",
    ),
    (
        "FORGE_UNREACHABLE_NODE",
        W,
        "A node cannot be reached from the entry.",
        "A warning: a node no path from the entry (or from its body's first node) reaches. The "
        "tool still installs; unreachable steps do not count towards marks. Example: a node "
        "nothing points to.",
    ),
    (
        "FORGE_MANIFEST_STRUCTURE",
        E,
        "A field is missing, unknown, or of the wrong type.",
        "The manifest must be UTF-8 JSON (no byte order mark, nesting at most 64 levels) with no "
        "duplicate keys, and follow `talos.local-tool.v1` exactly: required fields present, no "
        "unknown fields, the right JSON types (`true` is not a number, `1.0` not an integer), "
        'constants and enums as listed, schemas in the supported subset. Example: `"titel": '
        '"x"` → unknown field `titel`.',
    ),
    (
        "FORGE_MANIFEST_TOO_LARGE",
        E,
        "The manifest is larger than 64 KiB.",
        "A manifest is at most 65,536 bytes (for `.forge`, of the compiled manifest's compact "
        "JSON). Nothing else is parsed when it is larger.",
    ),
    (
        "FORGE_ID",
        E,
        "The id is not a 3–64 character lowercase slug.",
        f"`id` matches `^{TOOL_ID_PATTERN}$`; the tool is named `dynamic:<id>`. Example: "
        '`"id": "My Tool"`.',
    ),
    (
        "FORGE_VERSION",
        E,
        "The version is not a positive integer.",
        "`version` is an integer from 1 to 2^31−1; `parentVersion` is null or an integer ≥ 1 "
        'below `version`. Example: `"version": 0`, `"version": true`, `"version": 1.0`.',
    ),
    (
        "FORGE_TITLE",
        E,
        "The title is empty or longer than 120 characters.",
        "`title` holds 1–120 Unicode code points; it is shown on the consent card.",
    ),
    (
        "FORGE_DESCRIPTION",
        E,
        "The description is empty or longer than 1000 characters.",
        "`description` holds 1–1000 code points; the model reads it to decide when to call the "
        "tool.",
    ),
    (
        "FORGE_NETWORK_CONTRADICTION",
        E,
        "The network is forbidden, yet hosts are listed.",
        '`{"mode": "forbidden"}` takes no host. A non-empty `hosts` beside it says two '
        'things at once. Example: `{"mode": "forbidden", "hosts": ["example.org"]}`.',
    ),
    (
        "FORGE_DOMAIN_INVALID",
        E,
        "A listed host is not an exact DNS name.",
        "Hosts in `network.hosts` and credential `hosts` are exact lowercase DNS names of at least "
        "two labels: no wildcard, IP literal, port, scheme, trailing dot or non-punycode "
        'characters. Example: `"*.example.org"`, `"10.0.0.1"`, `"example.org:443"`.',
    ),
    (
        "FORGE_CREDENTIAL_ID",
        E,
        "A credential has an invalid id.",
        f"A credential id follows the tool id rule `^{TOOL_ID_PATTERN}$`. Example: "
        '`"id": "API KEY"`.',
    ),
    (
        "FORGE_CREDENTIAL_SCOPE",
        E,
        "A credential may reach a host the network list does not allow, or travel over plain http.",
        "Every host of a credential must be in the network allowlist, so a key can only travel to "
        'a host the tool may reach. Example: credential hosts `["api.example.org"]` with '
        "network forbidden. A step that sends a credential to a literal `http:` URL is refused "
        "too: a credential is only attached to an https request (a computed http URL is "
        "refused at run time with RUN_NETWORK_DENIED).",
    ),
    (
        "FORGE_SECRET_FOUND",
        E,
        "The manifest contains what looks like a secret.",
        "Keys, tokens, private keys, passwords in URLs and JWTs belong in the credential store, "
        "never in the file: a manifest is shared, reviewed and often written by a model. The "
        "message names the kind of secret and where it is, without echoing it. Placeholders "
        "(`<your-key>`, `${API_KEY}`), UUIDs and named hashes are not flagged.",
    ),
    (
        "FORGE_OUTBOUND_FORBIDDEN",
        E,
        "A reachable step needs the network, and it is forbidden.",
        "With `network.mode: forbidden`, no reachable step may need the network. Example: a "
        "`net.http` step in a tool whose network is forbidden.",
    ),
    (
        "FORGE_REF_UNSAFE",
        E,
        "A reference to a value is not a safe path.",
        "`$ref` paths, `{{...}}` template placeholders and `ui` paths follow `ROOT(.NAME|[INDEX])*` "
        "with plain names, never `__proto__`, `prototype` or `constructor`; `$credential` may "
        'only stand in a `net.http` step\'s headers. Example: `{"$ref": "input.__proto__"}`.',
    ),
    (
        "FORGE_TARGET_UNSAFE",
        E,
        "A step writes to a variable name that is not allowed.",
        "A target is a plain name that is not reserved (`input`, `state`, `output`, `result`, "
        "`error`, `env`, `secrets`, `credentials`, `self`, `this`, `prototype`, `constructor`), "
        'or `state.FIELD` for a declared state field. Example: `"target": "input"`.',
    ),
    (
        "FORGE_VAR_UNSAFE",
        E,
        "A loop variable has a name that is not allowed.",
        "`itemVar` and `indexVar` are plain, non-reserved names and differ from each other. "
        'Example: `"itemVar": "state"`.',
    ),
    (
        "FORGEC_REF_UNDEFINED",
        E,
        "A reference reads a variable no path has written.",
        "Definite assignment over the reachable flow: a `$ref` or template root that is not "
        "`input`, a declared `state` field or a loop variable in scope must be written on every "
        'path before it is read. Here no path writes it. Example: `{"$ref": "total"}` before '
        "any step targets `total`.",
    ),
    (
        "FORGEC_REF_MAYBE_UNDEFINED",
        W,
        "A reference reads a variable only some paths write.",
        "A warning: some path reaches the read without writing the variable (one branch of an "
        "`if`, or only inside a loop body whose list may be empty). At run time the read fails "
        "with `RUN_REF_MISSING` on such a path.",
    ),
    (
        "FORGEC_TRANSITIONS_MAY_EXCEED",
        W,
        "The worst-case run takes more transitions than allowed.",
        "A warning: the longest possible run (each node counts one, loop bodies once per item up "
        "to `maxItems`) exceeds `maxTransitions`; such a run stops with `RUN_TRANSITION_LIMIT`.",
    ),
    (
        "FORGEC_FLOW_PRIVATE_EGRESS",
        W,
        "Private data may leave the device.",
        "A warning from the data-flow analysis (SPEC §15): a value carrying a private label "
        "(the result of `tasks.*`, `notes.*`, `memory.*`, `db.query`, `schedule.manage`, "
        "`persona.*`, `subagent.*`, or the tool's `state`) reaches an egress sink — a "
        "`net.http` request (per host when the URL is literal), `channel.send`, `persona.send` "
        "or a sub-agent — by data or by deciding whether the send happens. The message shows "
        "the path; `forgec inspect` lists every flow. Example: `notes.list` → template → "
        "`net.http` POST to `api.example.com`.",
    ),
    (
        "FORGEC_FLOW_UNTRUSTED_CONTROL",
        W,
        "Outside text may steer a change or a send.",
        "A warning from the data-flow analysis (SPEC §15): a value from outside the device (a "
        "`net.http` response, label `external:<host>`, also after a model step read it) "
        "reaches a write (`tasks.*` changes, `notes.create`/`update`, `memory.create`, "
        "`memory.access` write/delete, `schedule.manage` changes) or an egress sink, by data or "
        "by an `if`/`foreach` that decides the step. Text someone else wrote can then choose "
        "what the tool changes (prompt injection). Example: a web page summarised by a model "
        "whose answer decides which task `tasks.setStatus` cancels.",
    ),
    (
        "FORGEC_CREDENTIAL_UNDECLARED",
        E,
        "A `$credential` names no declared credential.",
        '`{"$credential": "ID"}` must name an entry of `credentialRequirements`, so the '
        'consent card lists every key the tool uses. Example: `"Authorization": '
        '{"$credential": "github"}` with no `github` credential declared.',
    ),
    (
        "FORGEC_CAPABILITY_INPUT",
        E,
        "A literal capability input is wrong for the capability.",
        "Every literal field of a step's input is checked against the capability: unknown "
        "fields, types, ranges, enums, lengths, required fields, cron expressions, SQL (a single "
        "plain SELECT on allowed tables), URL schemes, mutually exclusive fields and the input "
        "size limit; a `subagent.invoke` step's `input` against the named built-in sub-agent's "
        "own shape. Expression fields are checked at run time. Example: `tasks.create` with "
        '`{"titel": "x"}`.',
    ),
    (
        "FORGEC_SUBAGENT_UNKNOWN",
        W,
        "A sub-agent step names no built-in sub-agent.",
        "A literal `subagent.invoke` `name` that is not one of the built-in sub-agents (the "
        "message lists them) cannot have its `input` checked: an embedder may register more sub-agents, so it is a "
        "warning, and the host refuses the call at run time unless it has one by that name. "
        "Usually a typo; the hint names the closest built-in. Example: "
        '`{"name": "memory-retreiver"}` → did you mean `memory-retriever`?',
    ),
]

_RUN: list[tuple[str, str, str]] = [
    (
        "RUN_INPUT_INVALID",
        "The input does not match the tool's inputSchema.",
        "The run's input is validated against `inputSchema` before anything runs.",
    ),
    (
        "RUN_INPUT_TOO_LARGE",
        "The input is larger than 64 KiB.",
        "The input, as compact UTF-8 JSON, is at most 65,536 bytes.",
    ),
    (
        "RUN_CONSENT_DENIED",
        "Consent was not given.",
        "A run asks its consent callback first; R4 tools ask every time. On the command line "
        "pass `--yes` when no terminal can ask.",
    ),
    (
        "RUN_CREDENTIAL_MISSING",
        "A declared credential is not available.",
        "Every credential the tool declares is checked present before the first step. The "
        'reference host reads credentials from `--credentials FILE` (TOML `github = "..."`, '
        "or a JSON object in a .json file; `[credentials] file` in the host config) and from "
        "`FORGEC_CREDENTIAL_<ID>` variables (the id upper-cased, `.` and `-` as `_`).",
    ),
    (
        "RUN_TRANSITION_LIMIT",
        "The run took more transitions than allowed.",
        "Every node entered is one transition; the cap is `min(maxTransitions, 256)`.",
    ),
    (
        "RUN_LOOP_BOUND",
        "A loop's list has more items than its maxItems.",
        "Checked before the first iteration: no item is silently dropped.",
    ),
    (
        "RUN_TYPE",
        "A value has the wrong type for its use.",
        "For example `gt` on a number and a string, or a `foreach` source that is not a list.",
    ),
    (
        "RUN_REF_MISSING",
        "A reference names a path that does not exist.",
        "A `$ref` or template placeholder read a missing variable, key or index.",
    ),
    (
        "RUN_CAPABILITY_FAILED",
        "A capability call failed.",
        "The host refused the input or the call failed (after any retries).",
    ),
    ("RUN_RESULT_TOO_LARGE", "A capability result is larger than 256 KiB.", ""),
    (
        "RUN_LABEL_DENIED",
        "The persona's labels do not grant this capability.",
        "Checked at the host bridge on every call, even when the listing was bypassed.",
    ),
    (
        "RUN_FLOW_DENIED",
        "The host refused a call by the labels of its data.",
        "The reference host's `[flows] deny` rules (`private->egress`, `untrusted->write`, "
        "`untrusted->egress`) refuse a call whose arguments or deciding conditions carry such "
        "labels, before the call has any effect.",
    ),
    (
        "RUN_NETWORK_DENIED",
        "A request's host is not allowed.",
        "The first request and every redirect must go to a host on the manifest's allowlist "
        "(and the host's own, when it has one).",
    ),
    (
        "RUN_PRIVACY",
        "No model satisfies the step's privacy requirement.",
        "`local-only` steps never reach a remote model.",
    ),
    (
        "RUN_MODEL_FAILED",
        "The model step failed.",
        "No provider is configured, the provider failed, or the answer did not match the "
        "step's output schema.",
    ),
    ("RUN_OUTPUT_INVALID", "The output does not match the tool's outputSchema.", ""),
    ("RUN_OUTPUT_TOO_LARGE", "The output is larger than 256 KiB.", ""),
    (
        "RUN_STATE_TOO_LARGE",
        "The new state is larger than state.maxBytes.",
        "State is written only on success, atomically; an oversized state fails the run.",
    ),
    (
        "RUN_VALUE_TOO_LARGE",
        "A value built by the run is larger than 256 KiB.",
        "Templates, list and object literals are measured while they are built (compact "
        "JSON, a shared part counted each time it appears), so no value, and no run, grows "
        "without bound.",
    ),
    (
        "RUN_STATE_INVALID",
        "The tool's state does not satisfy state.fields.",
        "Checked on the state as loaded (with field defaults) and before it is saved; an "
        "invalid state is never persisted.",
    ),
]

# Raised around a check, not by one: a server's budgeted check (`forgec.budget`) that stopped.
_SERVER: list[tuple[str, str, str]] = [
    (
        "FORGEC_CHECK_BUDGET",
        "The check did not finish within the server's check budget.",
        "The MCP server, the language server and the Tool Forge screen check a tool off their "
        "event loop, in a worker process with a time budget (default 5 s; `--check-budget "
        "SECONDS`) and a memory cap. A check that overruns its time is stopped and reported as "
        "this error: the tool is not installed and nothing is written, and every other request "
        "is answered meanwhile. Every pass is bounded (SPEC §16: any input within the limits "
        "checks within 2 s), so this means a forgec bug or a machine far slower than expected; "
        "`forgec check FILE` on the same file shows how long it takes. Example: `tool_create` "
        "of a manifest whose check takes 8 s under a 5 s budget. Only time gives this code "
        "(SPEC §24); any other stop is `FORGEC_CHECK_STOPPED`.",
    ),
    (
        "FORGEC_CHECK_STOPPED",
        "A server's check stopped in its worker for a reason other than time.",
        "The worker that checks for the MCP server, the language server and the Tool Forge "
        "screen needed more memory than a check may use (1 GiB), crashed, or could not send its "
        "report back; the message says which. The tool is not installed. Time alone is "
        "`FORGEC_CHECK_BUDGET`. A report that cannot be sent whole (a source nested deeper than "
        "the limits) is sent as its diagnostics alone, so the same input gets the same "
        "diagnostics as `forgec check`. Example: a checker bug that raises in the worker.",
    ),
]

# A `NAME.tests.toml` file that cannot be run (`forgec test`, SPEC §22): exit status 2.
_TEST: list[tuple[str, str, str]] = [
    (
        "FORGEC_TEST_TOML",
        "The tests file is not valid TOML.",
        "A `NAME.tests.toml` file is read with Python's TOML parser; a syntax error (or text "
        "that is not UTF-8) is reported at its line and column and no case of the file runs. "
        'Example: `input = {title = "x"` (the inline table is not closed).',
    ),
    (
        "FORGEC_TEST_KEY",
        "A key of the tests file is unknown, missing or of the wrong type.",
        "Every table of a tests file has a fixed set of keys (SPEC §22: `[[case]]` with `name`, "
        "`input`, `host`, `mock`, `model`, `expect`, `params`); anything else is refused rather "
        "than ignored, so a misspelt expectation can never pass silently. Example: "
        "`[case.expect] outptu = {...}` → did you mean `output`?",
    ),
    (
        "FORGEC_TEST_STEP_UNKNOWN",
        "A mock or model answer names a step the tool does not have.",
        "`[[case.mock]] step` and `[[case.model]] node` must name a node of the tool under test "
        '(the hint suggests the closest id). Example: `step = "fecth"` in a tool whose step is '
        "`fetch`.",
    ),
    (
        "FORGEC_TEST_NOT_A_CAPABILITY",
        "A mock names a step that is not a capability call (or a model answer one that is "
        "not a model step).",
        "Only capability steps call the host, so only they can be mocked; only `llm` steps take "
        "model answers. Example: a `[[case.mock]]` for an `if` node.",
    ),
    (
        "FORGEC_TEST_FIXTURE",
        "A fixture the real host could never produce.",
        "Mock results are checked against the capability's result shape, an input against the "
        "tool's `inputSchema` (unless the case expects `RUN_INPUT_INVALID`), seeded records "
        "against the records the host keeps, model answers against the step's output schema "
        "and expected codes, capabilities and nodes against the tool: a test built on a value "
        "the host cannot return would pass for a world that does not exist. Example: a "
        "`tasks.list` mock returning `{items = [{title = 1}]}`.",
    ),
    (
        "FORGEC_TEST_TOOL",
        "The tool under test cannot be found or does not check.",
        "A tests file tests `NAME.forge` or `NAME.talostool` beside it (or the file its `tool` "
        "key names); the tool must check without errors under the file's target before any "
        'case runs. Example: `tool = "missing.forge"`.',
    ),
]

REGISTRY: dict[str, CodeDoc] = {
    code: CodeDoc(code, sev, summary, doc) for code, sev, summary, doc in _ENTRIES
}
REGISTRY.update(
    {code: CodeDoc(code, E, summary, doc, kind="server") for code, summary, doc in _SERVER}
)
REGISTRY.update(
    {code: CodeDoc(code, E, summary, doc or summary, kind="run") for code, summary, doc in _RUN}
)

REGISTRY.update({code: CodeDoc(code, E, summary, doc, kind="test") for code, summary, doc in _TEST})

CHECK_CODES: tuple[str, ...] = tuple(c for c, d in REGISTRY.items() if d.kind == "check")


def severity_of(code: str) -> Severity:
    return REGISTRY[code].severity
