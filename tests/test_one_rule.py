"""SPEC §16 "one rule each": what `check` accepts the host runs, and what it refuses the host
refuses too — for cron expressions, SQL and URLs.

Each table row goes through the real static check (`forgec.api.check` on a manifest holding the
value as a literal) and through the real reference host at run time (SQLite database, loopback
HTTP server); the two verdicts must be equal, and the row's expected verdict must hold.
"""

from __future__ import annotations

import http.server
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import serving

from forgec import api
from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="step")
LABELS = ("db.query:own", "schedule.manage:own", "net.http:egress")


def _manifest(capability: str, inp: dict[str, Any], hosts: list[str] | None = None) -> dict:
    return {
        "schema": "talos.local-tool.v1",
        "id": "one-rule",
        "version": 1,
        "title": "One rule",
        "description": "Holds one value for the checker.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "allowlist", "hosts": hosts} if hosts else {"mode": "forbidden"},
        "credentialRequirements": [],
        "flow": {
            "entry": "step",
            "maxTransitions": 4,
            "nodes": [
                {
                    "id": "step",
                    "type": "capability",
                    "capability": capability,
                    "input": inp,
                    "target": "out",
                    "next": "done",
                },
                {"id": "done", "type": "return", "value": {"$ref": "out"}},
            ],
        },
    }


def _checker_errors(capability: str, inp: dict[str, Any], hosts: list[str] | None = None):
    import orjson

    report = api.check(orjson.dumps(_manifest(capability, inp, hosts)), target="talon")
    return [d for d in report.diagnostics if d.severity == "error"]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Any]:
    cfg = HostConfig(persona="alice", thread="t1")
    with open_host(HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=LABELS)) as h:
        yield h


# -- cron ------------------------------------------------------------------------------------

CRON_ACCEPTED = [
    "* * * * *",
    "0 9 * * 1-5",
    "*/15 * * * *",
    "*/60 * * * *",  # a step up to the field's span
    "0 */24 * * *",
    "0 0 */31 * *",
    "0 0 1 */12 *",
    "0 0 * * */7",
    "5/15 * * * *",
    "0 0 1,15 * *",
    "0-59/5 0-23 1-31 1-12 0-7",
    "0 0 * JAN-MAR mon-fri",
    "0 0 1 jan/2 *",
    "30 4 29 2 *",  # leap years only, but it occurs
    "0 9 31 2 mon",  # day of month OR day of week: Mondays in February
    "0 12 * * 7",
    "0 12 * * sun",
    "0\t9 * * *",
]
CRON_REFUSED = [
    "0 9 31 2 *",  # never occurs
    "0 0 30 2 *",
    "0 0 31 4,6,9,11 *",
    "0 9 31 2 */1",  # `*/1` leaves the day of month deciding: still never
    "0 0 L * *",
    "0 0 15W * *",
    "0 0 * * 1#2",
    "0 0 ? * *",
    "0 0 * * 5L",
    "H * * * *",
    "@daily",
    "@reboot",
    "* * * *",
    "* * * * * *",
    "0 0 * * * 2027",
    "*/0 * * * *",
    "*/61 * * * *",
    "0 */25 * * *",
    "0 0 * * */8",
    "60 * * * *",
    "0 24 * * *",
    "0 0 0 * *",
    "0 0 * 13 *",
    "0 0 * * 8",
    "5-1 * * * *",
    "1,,2 * * * *",
    "0 9 * * *\n0 10 * * *",
    "",
]


def _schedule_input(expr: str) -> dict[str, Any]:
    return {"action": "create", "cronExpr": expr, "prompt": "weekly review"}


def _host_accepts_cron(host: Any, expr: str) -> bool:
    try:
        host.call("schedule.manage", _schedule_input(expr), CTX)
    except HostError as exc:
        assert exc.code.startswith("RUN_"), exc
        return False
    return True


@pytest.mark.parametrize("expr", CRON_ACCEPTED)
def test_cron_accepted_by_checker_and_host(host: Any, expr: str) -> None:
    assert _checker_errors("schedule.manage", _schedule_input(expr)) == []
    assert _host_accepts_cron(host, expr)


@pytest.mark.parametrize("expr", CRON_REFUSED)
def test_cron_refused_by_checker_and_host(host: Any, expr: str) -> None:
    assert _checker_errors("schedule.manage", _schedule_input(expr)) != []
    assert not _host_accepts_cron(host, expr)


def test_cron_rule_has_one_public_function() -> None:
    from forgec.catalog.cron import validate_cron

    assert validate_cron("0 9 * * 1") is None
    assert "never" in (validate_cron("0 9 31 2 *") or "")


# -- SQL -------------------------------------------------------------------------------------

SQL_ACCEPTED = [
    "SELECT * FROM threads",
    "SELECT id, row_number() OVER (ORDER BY created_at) FROM threads",
    "SELECT rank() OVER (PARTITION BY persona ORDER BY id) FROM threads",
    "SELECT json_group_array(id) FROM threads",
    "SELECT json_group_object(id, persona) FROM threads",
    "SELECT random() FROM threads",
    "SELECT sqrt(4), pow(2, 3), ln(2), floor(1.5), ceil(1.5), pi(), atan2(1, 2) FROM threads",
    "SELECT count(*), max(id), group_concat(id, ',') FROM threads",
    "SELECT lower(id), upper(id), substr(id, 1, 2), instr(id, 'x'), length(id) FROM threads",
    "SELECT printf('%d', 1), format('%s', id), quote(id), hex(id) FROM threads",
    "SELECT iif(id = 'x', 1, 2), coalesce(id, ''), nullif(id, ''), ifnull(id, '') FROM threads",
    "SELECT date('now'), datetime('now'), strftime('%Y', 'now'), unixepoch() FROM threads",
    "SELECT json_extract('{\"a\": 1}', '$.a'), json_object('a', 1), json_array(1) FROM threads",
    "SELECT '{\"a\": 1}' -> '$.a', '{\"a\": 1}' ->> '$.a' FROM threads",
    "SELECT CAST(id AS TEXT), CASE WHEN id IS NULL THEN 0 ELSE 1 END FROM threads",
    "SELECT * FROM threads WHERE id LIKE 'a%' OR id GLOB 'b*'",
    "SELECT * FROM threads WHERE id = ? AND persona = ?",
    "SELECT * FROM threads WHERE id = ?1 OR id = ?2 OR persona = ?1",
    "SELECT m.content FROM messages m JOIN threads t ON t.id = m.thread_id",
    "SELECT * FROM memory_items ORDER BY key LIMIT 5;",
]
SQL_REFUSED = [
    "SELECT * FROM main.threads",
    "SELECT * FROM temp.threads",
    "SELECT * FROM sqlite_master",
    "SELECT * FROM tasks",
    "SELECT load_extension('x') FROM threads",
    "SELECT randomblob(1000) FROM threads",
    "SELECT zeroblob(1000) FROM threads",
    "SELECT sqlite_version() FROM threads",
    "SELECT changes() FROM threads",
    "SELECT fts3_tokenizer('x') FROM threads",
    "SELECT id FROM threads WHERE id REGEXP 'a'",
    "SELECT * FROM threads WHERE id = :name",
    "SELECT * FROM threads WHERE id = @name",
    "SELECT * FROM threads WHERE id = $name",
    "SELECT * FROM threads WHERE id = ?0",
    "SELECT * FROM threads WHERE id = ?101",
    "SELECT * FROM threads WHERE id IN (SELECT id FROM threads)",
    "SELECT * FROM threads UNION SELECT * FROM threads",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "SELECT * FROM json_each('[1]')",
    "SELECT * FROM pragma_table_info('threads')",
    "DELETE FROM threads",
    "SELECT 1; SELECT 2",
]


def _host_accepts_sql(host: Any, sql: str) -> bool:
    params = ["a", "b"] if "?" in sql else None
    try:
        host.call("db.query", {"sql": sql, **({"params": params} if params else {})}, CTX)
    except HostError as exc:
        assert exc.code.startswith("RUN_"), exc
        return False
    return True


@pytest.mark.parametrize("sql", SQL_ACCEPTED)
def test_sql_accepted_by_checker_and_host(host: Any, sql: str) -> None:
    assert _checker_errors("db.query", {"sql": sql}) == []
    assert _host_accepts_sql(host, sql)


@pytest.mark.parametrize("sql", SQL_REFUSED)
def test_sql_refused_by_checker_and_host(host: Any, sql: str) -> None:
    assert _checker_errors("db.query", {"sql": sql}) != []
    assert not _host_accepts_sql(host, sql)


def test_every_allowed_function_exists_in_this_sqlite() -> None:
    """The allowlist names only functions SQLite has, so an accepted call never fails as
    `no such function` at run time."""
    from forgec.catalog.sql import ALLOWED_FUNCTIONS

    names = {
        r[0] for r in sqlite3.connect(":memory:").execute("SELECT name FROM pragma_function_list")
    }
    if "bm25" not in names:  # FTS5 helpers are registered only once an FTS5 table is used
        names |= {"bm25", "highlight", "snippet"}
    names |= {"current_date", "current_time", "current_timestamp"}
    assert names >= ALLOWED_FUNCTIONS, sorted(ALLOWED_FUNCTIONS - names)


# -- URLs ------------------------------------------------------------------------------------

# (URL with `{port}` for the loopback server's, the host it reaches — None when refused)
URLS = [
    ("http://api.example:{port}/v1", "api.example"),
    ("HTTP://API.Example:{port}/V1", "api.example"),
    ("http://bücher.example:{port}/", "xn--bcher-kva.example"),
    ("http://BÜCHER.example:{port}/", "xn--bcher-kva.example"),
    ("http://xn--bcher-kva.example:{port}/", "xn--bcher-kva.example"),
    ("http://a.example:{port}/?next=@b.example", "a.example"),
    ("http://a.example:{port}/#@b.example", "a.example"),
    ("http://a.example:{port}/%40b.example", "a.example"),
    ("http://a.example@b.example:{port}/", None),
    ("http://user:pw@a.example:{port}/", None),
    ("http://@a.example:{port}/", None),
    ("http://a.example\\@b.example:{port}/", None),
    ("http://a.example%2F@b.example:{port}/", None),
    ("http://%61.example:{port}/", None),
    ("http://a.example%40b.example:{port}/", None),
    ("http://a.example.:{port}/", None),
    ("http://a..example:{port}/", None),
    ("http://a.example:99999/", None),
    ("http://a.example:{port}abc/", None),
    ("http://ａ.example:{port}/", None),
    ("http:/a.example:{port}/", None),
    ("http:a.example:{port}/", None),
    ("ftp://a.example:{port}/", None),
    ("http://a.example:{port}/\nHost: b.example", None),
]
URL_HOSTS = ("api.example", "xn--bcher-kva.example", "a.example", "b.example")


class _Seen(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(self.headers.get("Host", ""))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


@pytest.fixture(scope="module")
def loopback() -> Iterator[http.server.ThreadingHTTPServer]:
    with serving(_Seen, seen=[]) as srv:
        yield srv


@pytest.mark.parametrize(("template", "expected"), URLS)
def test_checker_and_host_read_a_url_alike(
    tmp_path: Path, loopback: Any, template: str, expected: str | None
) -> None:
    port = loopback.server_address[1]
    url = template.format(port=port)
    hosts = [expected] if expected else list(URL_HOSTS)
    checker = _checker_errors("net.http", {"method": "GET", "url": url}, hosts=hosts)
    assert (checker == []) == (expected is not None), checker

    loopback.seen.clear()
    options = HostOptions(
        db=tmp_path / "h.db",
        config=HostConfig(),
        persona_labels=("net.http:egress",),
        resolve=tuple(f"{h}:{port}:127.0.0.1" for h in URL_HOSTS),
    )
    context = CallContext(tool_id="t", tool_version=1, node_id="step", allowed_hosts=tuple(hosts))
    with open_host(options) as h:
        try:
            result = h.call("net.http", {"method": "GET", "url": url}, context)
        except HostError as exc:
            assert exc.code.startswith("RUN_"), exc
            result = None
    if expected is None:
        assert result is None and loopback.seen == []  # refused before anything was sent
    else:
        assert result is not None and result["status"] == 200
        assert [s.split(":")[0] for s in loopback.seen] == [expected]


def test_a_url_is_read_by_one_parser_everywhere() -> None:
    # the checker, the host and the run-time labels (`external:<host>`, `egress:<host>`) all read
    # a URL's host through `forgec.catalog.urls`; a second parser would name another host for
    # the same text (`urlsplit` keeps `Bücher.example` where httpx sends `xn--bcher-kva.example`,
    # and reads `a.com@b.com` as `b.com`). Only the language server reads URIs (file://), not URLs.
    import re

    root = Path(__file__).resolve().parent.parent / "forgec"
    readers = {
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if re.search(r"\b(urlsplit|urlparse|urljoin)\b", path.read_text(encoding="utf-8"))
    }
    assert readers <= {"forgec/lsp/server.py"}, readers

    from forgec.runtime.sources_and_sinks import call_sink, origin_labels

    url = "https://Bücher.example/in"
    assert origin_labels("net.http", {"url": url}, {}) >= {"external:xn--bcher-kva.example"}
    assert call_sink("net.http", {"method": "POST", "url": url}) == "egress:xn--bcher-kva.example"
    assert call_sink("net.http", {"method": "POST", "url": "http://a.com@b.com/"}) == "egress:*"


# -- every capability: what `check` accepts, the host's call check accepts -----------------

import orjson  # noqa: E402
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from strategies import capability_inputs  # noqa: E402

from forgec.ir import capabilities as rows  # noqa: E402

ALL_LABELS = (*{row.label for row in rows.ROWS if row.label}, "channel.send:*")


@pytest.fixture(scope="module")
def granted_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cfg = HostConfig(persona="alice", thread="t1")
    db = tmp_path_factory.mktemp("one-rule") / "h.db"
    with open_host(HostOptions(db=db, config=cfg, persona_labels=ALL_LABELS)) as h:
        yield h


def _host_call_problem(host: Any, capability: str, inp: dict[str, Any]) -> str | None:
    from forgec.host.bridge import apply_caps

    try:
        host.check_call(capability, apply_caps(capability, inp))
    except HostError as exc:
        return f"{exc.code}: {exc.message}"
    return None


@pytest.mark.parametrize("capability", [row.name for row in rows.rows_of("talon")])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_what_check_accepts_the_host_call_check_accepts(
    granted_host: Any, capability: str, data: st.DataObject
) -> None:
    row = rows.BY_NAME[capability]
    inp = data.draw(capability_inputs(row))
    try:
        orjson.dumps(inp)
    except TypeError:  # beyond 64-bit integers: not a manifest orjson writes
        assume(False)
    hosts = ["example.org"] if capability == "net.http" else None
    if not _checker_errors(capability, inp, hosts):
        assert _host_call_problem(granted_host, capability, inp) is None, inp


# the measurements of issue 19: limits the host kept and `check` did not know
@pytest.mark.parametrize(
    ("inp", "field"),
    [
        ({"operation": "read", "key": "k" * 300}, "key"),
        ({"operation": "list", "namespace": "n" * 100}, "namespace"),
    ],
)
def test_check_refuses_what_the_host_refuses(granted_host: Any, inp: dict, field: str) -> None:
    errors = _checker_errors("memory.access", inp)
    assert errors and any(field in d.message for d in errors)
    assert _host_call_problem(granted_host, "memory.access", inp) is not None


# -- the built-in sub-agents' own inputs: the same rule, one level down ---------------------

from strategies import shape_inputs  # noqa: E402

SUBAGENTS = sorted(rows.SUBAGENT_SHAPES)
INVOKE = "/flow/nodes/0/input"


def _subagent_inputs() -> st.SearchStrategy[dict[str, Any]]:
    """`subagent.invoke` inputs naming a built-in sub-agent, `input` drawn from its shape."""
    return st.sampled_from(SUBAGENTS).flatmap(
        lambda name: st.fixed_dictionaries(
            {"name": st.just(name)},
            optional={"input": shape_inputs(rows.SUBAGENT_SHAPES[name])},
        )
    )


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(inp=_subagent_inputs())
def test_what_the_host_refuses_of_a_subagent_input_check_refuses(
    granted_host: Any, inp: dict[str, Any]
) -> None:
    try:
        orjson.dumps(inp)
    except TypeError:
        assume(False)
    refused = _host_call_problem(granted_host, "subagent.invoke", inp)
    errors = _checker_errors("subagent.invoke", inp)
    if refused is not None:
        assert errors, (inp, refused)
    if not errors:
        assert refused is None, inp


# what each sub-agent's own code refused before its input had a shape, `check` did not know
SUBAGENT_REFUSED = [
    ("memory-retriever", {"query": "q" * 501}, "/input/query"),
    ("memory-retriever", {"query": "cat", "limit": 51}, "/input/limit"),
    ("memory-retriever", {}, "/input/query"),
    ("file-searcher", {"query": "x", "limit": 0}, "/input/limit"),
    ("file-searcher", {"query": 7}, "/input/query"),
    ("session-summarizer", {"text": ["not", "text"]}, "/input/text"),
    ("memory-groomer", {"all": True}, "/input/all"),
    ("spark-coder", {"task": "t" * (32 * 1024 + 1)}, "/input/task"),
    ("spark-coder", {"task": "x", "files": {"a.py": 1}}, "/input/files/a.py"),
    ("spark-coder", {"files": {}}, "/input/task"),
]


@pytest.mark.parametrize(("name", "payload", "where"), SUBAGENT_REFUSED)
def test_check_refuses_the_subagent_input_the_host_refuses(
    granted_host: Any, name: str, payload: dict[str, Any], where: str
) -> None:
    inp = {"name": name, "input": payload}
    errors = _checker_errors("subagent.invoke", inp)
    assert [(d.code, d.path) for d in errors] == [("FORGEC_CAPABILITY_INPUT", INVOKE + where)]
    assert _host_call_problem(granted_host, "subagent.invoke", inp) is not None


def test_an_unknown_subagent_is_a_warning_with_the_likely_name() -> None:
    import orjson as _orjson

    manifest = _manifest("subagent.invoke", {"name": "memory-retreiver", "input": {"x": 1}})
    report = api.check(_orjson.dumps(manifest), target="talon")
    found = [d for d in report.diagnostics if d.code == "FORGEC_SUBAGENT_UNKNOWN"]
    assert [(d.severity, d.path) for d in found] == [("warning", INVOKE + "/name")]
    assert "memory-retriever" in found[0].message
    assert [f.value for f in found[0].fixes] == ["memory-retriever"]
    assert not [d for d in report.diagnostics if d.severity == "error"]


# a member that is an object holding expressions: its literal members are checked all the same
@pytest.mark.parametrize(
    ("capability", "inp", "where"),
    [
        (
            "subagent.invoke",
            {"name": "memory-retriever", "input": {"query": {"$ref": "input.q"}, "limit": 500}},
            "/input/limit",
        ),
        (
            "subagent.invoke",
            {"name": "memory-groomer", "input": {"all": {"$ref": "input.q"}}},
            "/input/all",
        ),
        (
            "net.http",
            {
                "method": "GET",
                "url": "https://example.org/",
                "headers": {"A": {"$ref": "input.q"}, "B": 7},
            },
            "/headers/B",
        ),
    ],
)
def test_the_literal_members_beside_an_expression_are_checked(
    granted_host: Any, capability: str, inp: dict[str, Any], where: str
) -> None:
    hosts = ["example.org"] if capability == "net.http" else None
    errors = _checker_errors(capability, inp, hosts)
    assert [(d.code, d.path) for d in errors] == [("FORGEC_CAPABILITY_INPUT", INVOKE + where)]
    # what the expression evaluates to does not matter: the host refuses the literal too
    evaluated = orjson.loads(orjson.dumps(inp).replace(b'{"$ref":"input.q"}', b'"x"'))
    assert _host_call_problem(granted_host, capability, evaluated) is not None
