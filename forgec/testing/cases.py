"""Reading a `NAME.tests.toml` file (SPEC §22) into cases, or into diagnostics.

    tool = "task-triage.forge"        # optional: else NAME.forge / NAME.talostool beside it
    target = "talos"                  # optional: else [tool.forgec] for the tool's path

    [[case]]
    name = "an urgent task is filed"
    input = {title = "Server down"}
    [[case.model]]                    # the --replay record format: node?, op?, input?, output
    node = "classify"
    output = {label = "urgent"}
    [case.expect]
    status = "ok"
    output = {label = "urgent", id = "<any>"}
    effects = [{capability = "tasks.create", input = {title = "URGENT: Server down"}}]

Everything is checked before any case runs, and every problem is listed (each a diagnostic
with its line and column, codes `FORGEC_TEST_*` of `forgec.ir.codes`): the TOML, each key
(unknown ones refused, with a "did you mean"), the steps mocks and model answers name, and
each fixture against what the real host could produce — a mock's result against the
capability row's result schema, an input against `inputSchema`, seeded records against the
records the host keeps, model answers against the step's output schema.

`load_tests(path)` reads a file; `cases_from_json(list, program)` reads the same cases given as
JSON (`tool_create`'s `tests`), for a Program already lowered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from forgec.ir.diagnostics import Diagnostic, make, sort_key, suggestion
from forgec.ir.pointer import join

STATUSES = ("ok", "failed", "staged")
MOCK_ERRORS = ("transient", "permanent")
ANY = "<any>"
RE_PREFIX = "<re:"
PATTERN_MAX = 200

# every table's keys (SPEC §22); a key not here is FORGEC_TEST_KEY
TOP_KEYS = ("tool", "target", "case")
CASE_KEYS = ("name", "input", "host", "mock", "model", "expect", "params")
HOST_KEYS = ("tasks", "notes", "memories", "memory_items", "messages", "schedules", "state")
# tables the in-memory host keeps (`forgec.runtime.memory_host.SEED_TABLES`, plus state)
HELD_TABLES = ("tasks", "notes", "memories", "state")
MOCK_KEYS = ("step", "result", "error", "message")
MODEL_KEYS = ("node", "op", "input", "output")
EXPECT_KEYS = (
    "status",
    "error",
    "output",
    "effects",
    "no_effects",
    "compensations",
    "transitions",
    "flows",
    "not_flows",
)
EFFECT_KEYS = ("capability", "input")
COMPENSATION_KEYS = ("node", "capability", "status")
FLOW_KEYS = ("source", "sink")


@attrs.frozen
class Mock:
    step: str
    result: Any = None
    error: str | None = None  # transient | permanent
    message: str = "mocked failure"


@attrs.frozen
class Case:
    """One case, parameters already filled in. `pointer` is where it was written."""

    name: str
    input: Any = attrs.field(factory=dict)
    host: Mapping[str, Any] = attrs.field(factory=dict)
    mocks: tuple[Mock, ...] = ()
    model: tuple[Mapping[str, Any], ...] = ()
    expect: Mapping[str, Any] = attrs.field(factory=dict)
    pointer: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "input": self.input,
            "host": dict(self.host),
            "mock": [
                {"step": m.step, "result": m.result}
                if m.error is None
                else {"step": m.step, "error": m.error, "message": m.message}
                for m in self.mocks
            ],
            "model": [dict(m) for m in self.model],
            "expect": dict(self.expect),
        }


@attrs.define
class TestFile:
    """A tests file as read: its cases, or the diagnostics that stop it running."""

    path: str
    cases: list[Case]
    diagnostics: list[Diagnostic]
    source_map: Any = None
    tool_path: str | None = None
    target: str = "talos"
    report: Any = None  # the tool's check report (forgec.api.Report)
    program: Any = None  # the tool's Program

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def stem(self) -> str:
        return Path(self.path).name.removesuffix(".tests.toml")


# --- reading ------------------------------------------------------------------------------


def tool_beside(path: Path) -> Path | None:
    """NAME.forge, else NAME.talostool, beside NAME.tests.toml."""
    stem = path.name.removesuffix(".tests.toml")
    for suffix in (".forge", ".talostool"):
        candidate = path.with_name(stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def load_tests(
    path: str | Path, *, target: str | None = None, data: bytes | None = None
) -> TestFile:
    """Read, check and prepare one tests file (the tool is checked and lowered too).

    DATA: the file's bytes when the caller read them already (else they are read here)."""
    import tomllib

    from forgec.testing.tomlpos import TomlSourceMap

    p = Path(path)
    shown = str(path)
    tf = TestFile(path=shown, cases=[], diagnostics=[])
    if data is None:
        data = _read(p)
    from forgec.testing.reading import TEST_FILE_BYTES

    if len(data) > TEST_FILE_BYTES:
        tf.diagnostics.append(
            make(
                "FORGEC_TEST_TOML",
                "",
                f"the tests file is larger than {TEST_FILE_BYTES // 1024} KiB",
                hint="split its cases into several files",
            )
        )
        return tf
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        tf.diagnostics.append(
            make("FORGEC_TEST_TOML", "", f"the file is not UTF-8 text (byte {exc.start})")
        )
        return tf
    source_map = TomlSourceMap(text, shown)
    tf.source_map = source_map
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        tf.diagnostics.append(_toml_error(exc, text, shown))
        return tf
    doc = jsonify(doc)
    d = _Diags(source_map)
    _keys(d, doc, "", TOP_KEYS, "the tests file")
    target_value = doc.get("target")
    tool_value = doc.get("tool")
    if tool_value is not None and not isinstance(tool_value, str):
        d.add("FORGEC_TEST_KEY", "/tool", "`tool` is a path to the tool under test (a string)")
        tool_value = None
    if target_value is not None and target_value not in ("talos", "talon"):
        d.add("FORGEC_TEST_KEY", "/target", "`target` is `talos` or `talon`")
        target_value = None
    tool = (p.parent / tool_value) if tool_value else tool_beside(p)
    if tool is None or not tool.is_file():
        want = tool_value or f"{tf.stem}.forge or {tf.stem}.talostool"
        d.add(
            "FORGEC_TEST_TOOL",
            "/tool" if tool_value else "",
            f"the tool under test, {want}, is not there",
            hint='put the tests file beside its tool, or name the tool with `tool = "..."`',
        )
    else:
        tf.tool_path = str(tool)
        tf.target = target or target_value or _settings_target(tool)
        _check_tool(tf, d, tool)
    raw_cases = doc.get("case", [])
    if not isinstance(raw_cases, list):
        d.add("FORGEC_TEST_KEY", "/case", "`case` is an array of tables: write `[[case]]`")
        raw_cases = []
    if not raw_cases:  # a tests file that tests nothing would pass forever
        d.add(
            "FORGEC_TEST_KEY",
            "/case" if "case" in doc else "",
            "the file has no `[[case]]`",
            hint="each case starts with `[[case]]` and a `name`",
        )
    tf.cases = _cases(d, raw_cases, "/case", tf.program)
    tf.diagnostics.extend(d.items)
    tf.diagnostics.sort(key=sort_key)
    return tf


def cases_from_json(value: Any, program: Any) -> tuple[list[Case], list[Diagnostic]]:
    """Cases given as JSON (`tool_create`'s `tests`: a list of case objects, the TOML keys),
    checked against PROGRAM exactly as a tests file's are."""
    d = _Diags(None)
    if not isinstance(value, list):
        d.add("FORGEC_TEST_KEY", "", "`tests` is a list of cases")
        return [], d.items
    cases = _cases(d, value, "", program)
    return cases, d.items


NULL = "<null>"


def jsonify(value: Any) -> Any:
    """TOML values as JSON: a date or time becomes its ISO 8601 text, and the string
    `"<null>"` is JSON `null` (TOML has no null; a record's `due` or a result's `label` may
    be null)."""
    import datetime as dt

    if isinstance(value, dict):
        return {k: jsonify(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonify(v) for v in value]
    if value == NULL and isinstance(value, str):
        return None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value


def _read(p: Path) -> bytes:
    from forgec.testing.reading import read_test_file

    return read_test_file(p)


def _settings_target(tool: Path) -> str:
    from forgec.frontend.settings import SettingsError, settings_for

    try:
        return settings_for(tool).target_for(tool)
    except SettingsError:
        return "talos"


def _check_tool(tf: TestFile, d: _Diags, tool: Path) -> None:
    from forgec.api import check
    from forgec.backend import lower_report
    from forgec.testing.reading import read_tool

    try:
        data = read_tool(tool)
    except OSError as exc:
        d.add("FORGEC_TEST_TOOL", "", f"{tool}: cannot read: {exc.strerror or exc}")
        return
    report = check(data, path=str(tool), target=tf.target)
    tf.report = report
    if not report.ok:
        d.add(
            "FORGEC_TEST_TOOL",
            "/tool" if "tool" in (tf.source_map.entries if tf.source_map else {}) else "",
            f"the tool under test, {tool}, has {len(report.errors)} error(s) under "
            f"--target {tf.target}",
            hint=f"run `forgec check --target {tf.target} {tool}`",
        )
        return
    tf.program = lower_report(report)


def _toml_error(exc: Exception, text: str, path: str) -> Diagnostic:
    from forgec.ir.span import Span

    message = str(exc)
    found = re.search(r"\(at line (\d+), column (\d+)\)", message)
    span = None
    if found:
        line, col = int(found.group(1)), int(found.group(2))
        span = Span(path, line, col, line, col + 1)
        message = message[: found.start()].strip()
    elif "end of document" in message:
        lines = text.split("\n")
        span = Span(path, len(lines), len(lines[-1]) + 1, len(lines), len(lines[-1]) + 1)
    return make(
        "FORGEC_TEST_TOML",
        "",
        f"not valid TOML: {message}",
        span=span,
        hint="see https://toml.io for the syntax; each case starts with `[[case]]`",
    )


class _Diags:
    def __init__(self, source_map: Any) -> None:
        self.source_map = source_map
        self.items: list[Diagnostic] = []
        self._seen: set[tuple[str, str, str]] = set()

    def add(
        self, code: str, pointer: str, message: str, *, hint: str | None = None, key: bool = False
    ) -> None:
        ident = (code, pointer, message)
        if ident in self._seen:  # a parameterised case repeats its problems once per row
            return
        self._seen.add(ident)
        span = self.source_map.span(pointer, key=key) if self.source_map is not None else None
        self.items.append(make(code, pointer, message, hint=hint, key=key, span=span))


def _keys(d: _Diags, table: Any, pointer: str, allowed: tuple[str, ...], what: str) -> bool:
    if not isinstance(table, dict):
        d.add("FORGEC_TEST_KEY", pointer, f"{what} must be a table")
        return False
    for key in table:
        if key not in allowed:
            hint, _ = suggestion(key, allowed, join(pointer, key), key=True)
            d.add(
                "FORGEC_TEST_KEY",
                join(pointer, key),
                f"`{key}` is not a key of {what}",
                hint=hint or f"the keys are: {', '.join(allowed)}",
                key=True,
            )
    return True


# --- cases --------------------------------------------------------------------------------


def _cases(d: _Diags, raw_cases: list[Any], base: str, program: Any) -> list[Case]:
    cases: list[Case] = []
    names: dict[str, str] = {}
    for index, raw in enumerate(raw_cases):
        pointer = join(base, index) if base else f"/{index}"
        if not _keys(d, raw, pointer, CASE_KEYS, "a case"):
            continue
        for case in _expand(d, raw, pointer):
            _validate(d, case, program)
            if case.name in names:
                d.add(
                    "FORGEC_TEST_KEY",
                    join(pointer, "name"),
                    f"two cases are named {case.name!r}",
                    hint="each case needs its own name (a parameterised one: use {{param}})",
                )
            names[case.name] = pointer
            cases.append(case)
    return cases


def _expand(d: _Diags, raw: dict[str, Any], pointer: str) -> list[Case]:
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        d.add("FORGEC_TEST_KEY", join(pointer, "name"), "a case needs a `name` (a string)")
        name = f"case {pointer.rsplit('/', 1)[-1]}"
    params = raw.get("params")
    if params is None:
        return [_case(d, raw, pointer, name)]
    if not isinstance(params, list) or not params or not all(isinstance(p, dict) for p in params):
        d.add(
            "FORGEC_TEST_KEY",
            join(pointer, "params"),
            "`params` is an array of tables (`[[case.params]]`), one per expanded case",
        )
        return [_case(d, raw, pointer, name)]
    out = []
    for row_index, row in enumerate(params):
        filled = _fill({k: v for k, v in raw.items() if k != "params"}, row)
        shown = filled["name"] if isinstance(filled.get("name"), str) else name
        if shown == name:
            shown = f"{name} [{row_index}]"
        out.append(_case(d, filled, pointer, shown))
    return out


_PARAM = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _fill(value: Any, row: dict[str, Any]) -> Any:
    """`{{name}}` in strings replaced by the row's value; a string that is only `{{name}}`
    becomes the value itself (a number stays a number)."""
    if isinstance(value, str):
        whole = _PARAM.fullmatch(value)
        if whole and whole.group(1) in row:
            return row[whole.group(1)]

        def sub(m: re.Match[str]) -> str:
            got = row.get(m.group(1))
            if got is None:
                return m.group(0)
            return got if isinstance(got, str) else _compact(got)

        return _PARAM.sub(sub, value)
    if isinstance(value, list):
        return [_fill(v, row) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, row) for k, v in value.items()}
    return value


def _compact(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


def _case(d: _Diags, raw: dict[str, Any], pointer: str, name: str) -> Case:
    host = raw.get("host", {})
    if _keys(d, host, join(pointer, "host"), HOST_KEYS, "`host`"):
        for key in host:
            if key in HOST_KEYS and key not in HELD_TABLES:
                d.add(
                    "FORGEC_TEST_FIXTURE",
                    join(pointer, "host", key),
                    f"the in-memory host keeps no `{key}`",
                    hint="mock the steps that read them with [[case.mock]]",
                    key=True,
                )
    else:
        host = {}
    mocks: list[Mock] = []
    raw_mocks = raw.get("mock", [])
    if not isinstance(raw_mocks, list):
        d.add("FORGEC_TEST_KEY", join(pointer, "mock"), "`mock` is an array: `[[case.mock]]`")
        raw_mocks = []
    for i, m in enumerate(raw_mocks):
        mp = join(pointer, "mock", i)
        if not _keys(d, m, mp, MOCK_KEYS, "a mock"):
            continue
        step = m.get("step")
        if not isinstance(step, str):
            d.add("FORGEC_TEST_KEY", join(mp, "step"), "a mock needs `step`, the node it answers")
            continue
        error = m.get("error")
        if error is not None and error not in MOCK_ERRORS:
            d.add(
                "FORGEC_TEST_KEY",
                join(mp, "error"),
                '`error` is "transient" (retried) or "permanent"',
            )
            error = "permanent"
        if ("result" in m) == (error is not None):
            d.add(
                "FORGEC_TEST_KEY",
                mp,
                "a mock gives either `result` or `error` (with `message`), exactly one",
            )
        message = m.get("message", "mocked failure")
        if not isinstance(message, str):
            d.add("FORGEC_TEST_KEY", join(mp, "message"), "`message` is a string")
            message = "mocked failure"
        mocks.append(Mock(step, m.get("result"), error, message))
    models: list[Mapping[str, Any]] = []
    raw_models = raw.get("model", [])
    if not isinstance(raw_models, list):
        d.add("FORGEC_TEST_KEY", join(pointer, "model"), "`model` is an array: `[[case.model]]`")
        raw_models = []
    for i, m in enumerate(raw_models):
        mp = join(pointer, "model", i)
        if not _keys(d, m, mp, MODEL_KEYS, "a model answer"):
            continue
        if "output" not in m:
            d.add("FORGEC_TEST_KEY", mp, "a model answer needs `output` (what the model says)")
            continue
        models.append(dict(m))
    expect = raw.get("expect", {})
    if not _expect(d, expect, join(pointer, "expect")):
        expect = {}
    return Case(
        name=name,
        input=raw.get("input", {}),
        host=dict(host),
        mocks=tuple(mocks),
        model=tuple(models),
        expect=dict(expect),
        pointer=pointer,
    )


def _expect(d: _Diags, expect: Any, pointer: str) -> bool:
    if not _keys(d, expect, pointer, EXPECT_KEYS, "`expect`"):
        return False
    status = expect.get("status")
    if status is not None and status not in STATUSES:
        d.add("FORGEC_TEST_KEY", join(pointer, "status"), f"`status` is one of {STATUSES}")
    if "error" in expect and not isinstance(expect["error"], str):
        d.add("FORGEC_TEST_KEY", join(pointer, "error"), "`error` is a code (a string)")
    for key, keys in (
        ("effects", EFFECT_KEYS),
        ("compensations", COMPENSATION_KEYS),
        ("flows", FLOW_KEYS),
        ("not_flows", FLOW_KEYS),
    ):
        items = expect.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            d.add("FORGEC_TEST_KEY", join(pointer, key), f"`{key}` is an array of tables")
            continue
        for i, item in enumerate(items):
            _keys(d, item, join(pointer, key, i), keys, f"an entry of `{key}`")
            if isinstance(item, dict) and key in ("flows", "not_flows"):
                for need in FLOW_KEYS:
                    if not isinstance(item.get(need), str):
                        d.add(
                            "FORGEC_TEST_KEY",
                            join(pointer, key, i),
                            f"a flow needs `{need}` (a string), as `forgec inspect` names them",
                        )
            if isinstance(item, dict) and key == "effects" and "capability" not in item:
                d.add("FORGEC_TEST_KEY", join(pointer, key, i), "an effect needs `capability`")
    no_effects = expect.get("no_effects")
    if no_effects is not None and not (
        isinstance(no_effects, list) and all(isinstance(x, str) for x in no_effects)
    ):
        d.add("FORGEC_TEST_KEY", join(pointer, "no_effects"), "`no_effects` lists capabilities")
    transitions = expect.get("transitions")
    if transitions is not None:
        good = (isinstance(transitions, int) and not isinstance(transitions, bool)) or (
            isinstance(transitions, dict)
            and set(transitions) == {"max"}
            and isinstance(transitions["max"], int)
        )
        if not good:
            d.add(
                "FORGEC_TEST_KEY",
                join(pointer, "transitions"),
                "`transitions` is a number (exact) or `{max = N}`",
            )
    for where, text in _patterns(expect.get("output"), join(pointer, "output")):
        if len(text) > PATTERN_MAX:
            d.add("FORGEC_TEST_KEY", where, f"a pattern has at most {PATTERN_MAX} characters")
            continue
        try:
            re.compile(text)
        except re.error as exc:
            d.add("FORGEC_TEST_KEY", where, f"`<re:{text}>` is not a regular expression: {exc}")
    return True


def _patterns(value: Any, pointer: str) -> list[tuple[str, str]]:
    if isinstance(value, str) and value.startswith(RE_PREFIX) and value.endswith(">"):
        return [(pointer, value[len(RE_PREFIX) : -1])]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _patterns(v, join(pointer, k))]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _patterns(v, join(pointer, i))]
    return []


# --- against the tool ---------------------------------------------------------------------


def _validate(d: _Diags, case: Case, program: Any) -> None:
    """The case's fixtures against what the tool and the real host can be."""
    if program is None:
        return
    from forgec.ir.capabilities import BY_NAME
    from forgec.ir.codes import REGISTRY

    nodes = {n["id"]: n for n in program.nodes}
    calls = _call_sites(program)
    models = _model_sites(program)
    p = case.pointer
    for i, mock in enumerate(case.mocks):
        mp = join(p, "mock", i)
        if mock.step not in nodes:
            hint, _ = suggestion(mock.step, sorted(nodes), join(mp, "step"))
            d.add(
                "FORGEC_TEST_STEP_UNKNOWN",
                join(mp, "step"),
                f"the tool has no step `{mock.step}`",
                hint=hint or f"its capability steps: {', '.join(sorted(calls)) or 'none'}",
            )
            continue
        capability = calls.get(mock.step)
        if capability is None:
            d.add(
                "FORGEC_TEST_NOT_A_CAPABILITY",
                join(mp, "step"),
                f"`{mock.step}` is {_a(nodes[mock.step]['type'])} node, not a capability call: "
                "only capability steps can be mocked",
                hint=f"its capability steps: {', '.join(sorted(calls)) or 'none'}",
            )
            continue
        if mock.error is None:
            row = BY_NAME.get(capability)
            problem = _schema_problem(row.result, mock.result) if row is not None else None
            if problem is not None:
                d.add(
                    "FORGEC_TEST_FIXTURE",
                    join(mp, "result"),
                    f"{capability} never returns this: {problem}",
                    hint="a mock is checked against the capability's result shape "
                    "(docs/catalog.md)",
                )
    for i, answer in enumerate(case.model):
        mp = join(p, "model", i)
        node = answer.get("node")
        if node is None:
            continue
        if node not in nodes:
            hint, _ = suggestion(node, sorted(nodes), join(mp, "node"))
            d.add(
                "FORGEC_TEST_STEP_UNKNOWN",
                join(mp, "node"),
                f"the tool has no step `{node}`",
                hint=hint or f"its model steps: {', '.join(sorted(models)) or 'none'}",
            )
            continue
        if node not in models:
            d.add(
                "FORGEC_TEST_NOT_A_CAPABILITY",
                join(mp, "node"),
                f"`{node}` is {_a(nodes[node]['type'])} node, not a model step",
                hint=f"its model steps: {', '.join(sorted(models)) or 'none'}",
            )
            continue
        schema = models[node]
        if schema is not None:
            problem = _schema_problem(schema, answer["output"])
            if problem is not None:
                d.add(
                    "FORGEC_TEST_FIXTURE",
                    join(mp, "output"),
                    f"the step's output schema refuses this answer: {problem}",
                    hint="the VM checks every answer against the step's `returns` schema",
                )
    expect = case.expect
    error = expect.get("error")
    codes = {f["code"] for f in program.fails}
    if (
        isinstance(error, str)
        and error not in codes
        and not (error in REGISTRY and REGISTRY[error].kind == "run")
    ):
        choices = sorted(codes | {c for c, e in REGISTRY.items() if e.kind == "run"})
        hint, _ = suggestion(error, choices, join(p, "expect", "error"))
        d.add(
            "FORGEC_TEST_FIXTURE",
            join(p, "expect", "error"),
            f"no run of this tool can end with `{error}`: it is neither a `fail` code of the "
            "tool nor a RUN_ code",
            hint=hint or f"the tool's fail codes: {', '.join(sorted(codes)) or 'none'}",
        )
    for i, entry in enumerate(expect.get("compensations") or []):
        node = entry.get("node") if isinstance(entry, dict) else None
        if isinstance(node, str) and node not in nodes:
            d.add(
                "FORGEC_TEST_STEP_UNKNOWN",
                join(p, "expect", "compensations", i, "node"),
                f"the tool has no step `{node}`",
            )
    for key in ("effects", "no_effects"):
        for i, entry in enumerate(expect.get(key) or []):
            name = entry.get("capability") if isinstance(entry, dict) else entry
            if isinstance(name, str) and name not in BY_NAME:
                hint, _ = suggestion(name, sorted(BY_NAME), "")
                d.add(
                    "FORGEC_TEST_FIXTURE",
                    join(p, "expect", key, i),
                    f"`{name}` is not a capability",
                    hint=hint,
                )
    runs_input = error not in ("RUN_INPUT_INVALID", "RUN_INPUT_TOO_LARGE")
    if runs_input and program.input_schema is not None:
        problem = _schema_problem(program.input_schema, case.input)
        if problem is not None:
            d.add(
                "FORGEC_TEST_FIXTURE",
                join(p, "input"),
                f"the tool's inputSchema refuses this input: {problem}",
                hint='a case about a refused input says so: `error = "RUN_INPUT_INVALID"`',
            )
    _validate_seed(d, case, program)


def _validate_seed(d: _Diags, case: Case, program: Any) -> None:
    from forgec.runtime.memory_host import MemoryHost, SeedError

    host = case.host
    p = join(case.pointer, "host")
    tables = {k: host[k] for k in ("tasks", "notes", "memories") if k in host}
    for table, records in tables.items():
        if not isinstance(records, list):
            d.add("FORGEC_TEST_KEY", join(p, table), f"`{table}` is an array of records")
            return
    try:
        MemoryHost().seed(**tables)
    except SeedError as exc:
        table, index, field = exc.where
        pointer = join(p, table)
        if index is not None:
            pointer = join(pointer, index)
        if field is not None:
            pointer = join(pointer, field)
        d.add("FORGEC_TEST_FIXTURE", pointer, str(exc), key=field is not None)
    state = host.get("state")
    if state is not None:
        decl = program.state
        if decl is None:
            d.add("FORGEC_TEST_FIXTURE", join(p, "state"), "the tool keeps no state")
        elif not isinstance(state, dict):
            d.add("FORGEC_TEST_KEY", join(p, "state"), "`state` is a table of the tool's fields")
        else:
            schema = {
                "type": "object",
                "properties": decl["fields"],
                "additionalProperties": False,
            }
            problem = _schema_problem(schema, state)
            if problem is not None:
                d.add(
                    "FORGEC_TEST_FIXTURE",
                    join(p, "state"),
                    f"the tool's state.fields refuse this state: {problem}",
                )


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} `{kind}`"


def _call_sites(program: Any) -> dict[str, str]:
    """node id → capability, for every capability step of PROGRAM."""
    from forgec.runtime.opcodes import Op

    out: dict[str, str] = {}
    for op, arg, node in program.code:
        if op == Op.CALL:
            out[program.nodes[node]["id"]] = program.calls[arg]["capability"]
    return out


def _model_sites(program: Any) -> dict[str, Any]:
    """node id → output schema (None without one), for every model step of PROGRAM."""
    from forgec.runtime.opcodes import Op

    out: dict[str, Any] = {}
    for op, arg, node in program.code:
        if op == Op.MODEL:
            out[program.nodes[node]["id"]] = program.models[arg].get("outputSchema")
    return out


_VALIDATORS: dict[str, Any] = {}


def _schema_problem(schema: Mapping[str, Any], value: Any) -> str | None:
    import fastjsonschema
    import orjson

    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
    validator = _VALIDATORS.get(key)
    if validator is None:
        validator = fastjsonschema.compile(dict(schema), use_formats=False)
        _VALIDATORS[key] = validator
    try:
        validator(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        message = str(exc.message)
        if message.startswith("data."):
            return message[5:]
        return message.replace("data", "the value", 1)
    except Exception as exc:  # a value fastjsonschema cannot read (not JSON)
        return f"{type(exc).__name__}: {exc}"
    return None


__all__ = ["Case", "Mock", "TestFile", "cases_from_json", "load_tests", "tool_beside"]
