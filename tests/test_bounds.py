"""Bounds in memory and time (SPEC §16, issue 12): every attack runs in a CHILD PROCESS under a
memory limit (RLIMIT_AS 1 GiB) and a wall-clock limit, through the real command line or the
real Python API, and must end in a clean `RUN_*` / `FORGE_*` result well inside both.

Before the fix these exhausted the machine: a doubling template grew to gigabytes, a shared
`[$v, $v]` list made `eq` run for minutes and the serializer segfault. A child process is the
only honest harness: a MemoryError, a segfault or a hang must fail the test, not the runner.
"""

from __future__ import annotations

import http.server
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from loopback import serving

MEMORY = 1 << 30  # RLIMIT_AS of every child
WALL = 20.0  # seconds a child may take before the test fails
QUICK = 8.0  # "well inside": what a bounded attack may take, interpreter start included


PEAK_MB = 300  # "well inside" 1 GiB: a forgec run or check of a small tool peaks near 60 MB

# the child runs the command in-process and says its own peak RSS last, on stderr
_PEAK = (
    "import resource, runpy, sys\n"
    "sys.argv = ['forgec', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('forgec', run_name='__main__')\n"
    "finally:\n"
    "    print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)\n"
)


def _peak_mb(stderr: str) -> int:
    lines = [line for line in stderr.splitlines() if line.startswith("peak ")]
    assert lines, stderr[-2000:]
    return int(lines[-1].split()[1])


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def child(
    argv: list[str], *, stdin: str | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run argv under the memory limit; a timeout is a failed test, with what it printed."""
    started = time.monotonic()
    proc = subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WALL,
        preexec_fn=_limits,
        check=False,
    )
    return proc, time.monotonic() - started


def tool(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A complete manifest that checks clean around `nodes`."""
    m: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "bounds-attack",
        "version": 1,
        "title": "Bounds attack",
        "description": "Tries to outgrow the run's bounds.",
        "createdAt": "2026-12-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {"type": "object"},
        "outputSchema": {},
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 256, "nodes": nodes},
    }
    m.update(extra)
    return m


def forge_run(
    tmp_path: Path, manifest: dict[str, Any], *extra: str
) -> tuple[dict[str, Any], float]:
    """`forgec run --yes --format json` on the reference SQLite host, in a child process."""
    result, elapsed, _peak = forge_run_peak(tmp_path, manifest, *extra)
    return result, elapsed


def forge_run_peak(
    tmp_path: Path, manifest: dict[str, Any], *extra: str
) -> tuple[dict[str, Any], float, int]:
    """forge_run, and the child's peak RSS in MB."""
    path = tmp_path / "attack.talostool"
    path.write_text(json.dumps(manifest))
    proc, elapsed = child(
        [
            sys.executable,
            "-c",
            _PEAK,
            "run",
            "--yes",
            "--format",
            "json",
            "--db",
            str(tmp_path / "host.db"),
            *extra,
            str(path),
        ]
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    peak = _peak_mb(proc.stderr)
    assert peak < PEAK_MB, "the run's memory is not bounded"
    try:
        return json.loads(proc.stdout), elapsed, peak
    except json.JSONDecodeError:
        raise AssertionError(
            f"no run result (exit {proc.returncode}): {proc.stderr[-2000:]}"
        ) from None


def setn(nid: str, target: str, value: Any, nxt: str | None) -> dict[str, Any]:
    node: dict[str, Any] = {"id": nid, "type": "set", "target": target, "value": value}
    if nxt is not None:
        node["next"] = nxt
    return node


def chain(prefix: str, target: str, value: Any, steps: int, after: str) -> list[dict[str, Any]]:
    """`steps` set nodes writing `value` to `target`, one after the other, then `after`."""
    return [
        setn(f"{prefix}{k}", target, value, f"{prefix}{k + 1}" if k + 1 < steps else after)
        for k in range(steps)
    ]


def ret(value: Any, nid: str = "done") -> dict[str, Any]:
    return {"id": nid, "type": "return", "value": value}


def too_large(result: dict[str, Any], elapsed: float) -> None:
    assert result["status"] == "failed", result
    assert result["error"]["code"] == "RUN_VALUE_TOO_LARGE", result["error"]
    assert "262144" in result["error"]["message"]
    assert elapsed < QUICK


DOUBLE_TEXT = {"$template": "{{v}}{{v}}"}
DOUBLE_LIST = [{"$ref": "v"}, {"$ref": "v"}]


# --- values built by the flow -------------------------------------------------------------


def test_doubling_template_string_stops_at_the_value_limit(tmp_path: Path) -> None:
    nodes = [setn("seed", "v", "ab", "d0"), *chain("d", "v", DOUBLE_TEXT, 40, "done")]
    result, elapsed = forge_run(tmp_path, tool([*nodes, ret({"$ref": "v"})]))
    too_large(result, elapsed)
    # "ab" doubled 17 times is 256 KiB of text: the 17th doubling is the one refused
    assert result["error"]["node"] == "d16" and result["transitions"] == 18


def test_doubling_shared_list_stops_and_eq_on_it_finishes(tmp_path: Path) -> None:
    nodes = [
        setn("seed", "v", [1], "d0"),
        *chain("d", "v", DOUBLE_LIST, 40, "cmp"),
        {
            "id": "cmp",
            "type": "if",
            "condition": {"op": "eq", "left": {"$ref": "v"}, "right": {"$ref": "v"}},
            "then": "done",
            "else": "done",
        },
        ret({"$ref": "v"}),
    ]
    result, elapsed = forge_run(tmp_path, tool(nodes))
    too_large(result, elapsed)


def test_eq_and_contains_on_the_largest_shared_lists_are_linear(tmp_path: Path) -> None:
    # two shared structures built apart (no identity to shortcut), each just under the limit:
    # 15 doublings of [1] are 196,605 bytes of JSON and 32,768 leaves
    nodes = [
        setn("sv", "v", [1], "a0"),
        *chain("a", "v", DOUBLE_LIST, 15, "sw"),
        setn("sw", "w", [1], "b0"),
        *chain("b", "w", [{"$ref": "w"}, {"$ref": "w"}], 15, "cmp"),
        {
            "id": "cmp",
            "type": "if",
            "condition": {"op": "eq", "left": {"$ref": "v"}, "right": {"$ref": "w"}},
            "then": "has",
            "else": "bad",
        },
        {
            "id": "has",
            "type": "if",
            "condition": {"op": "contains", "left": {"$ref": "v"}, "right": {"$ref": "w[0]"}},
            "then": "done",
            "else": "bad",
        },
        ret({"$template": "{{v}}"}),
        ret("unequal", "bad"),
    ]
    result, elapsed = forge_run(tmp_path, tool(nodes))
    assert result["status"] == "ok", result
    assert len(result["output"]) == 196_605 and elapsed < QUICK


def test_returning_and_templating_the_shared_list(tmp_path: Path) -> None:
    grown = [setn("sv", "v", [1], "a0"), *chain("a", "v", DOUBLE_LIST, 15, "done")]
    result, elapsed = forge_run(tmp_path, tool([*grown, ret({"$ref": "v"})]))
    assert result["status"] == "ok" and elapsed < QUICK
    assert json.dumps(result["output"], separators=(",", ":")).count("1") == 32_768
    # the same list placed twice in a template, or in an object, is over the limit
    for value in ({"$template": "{{v}} and {{v}}"}, {"a": {"$ref": "v"}, "b": {"$ref": "v"}}):
        result, elapsed = forge_run(tmp_path, tool([*grown, ret(value)]))
        too_large(result, elapsed)
        assert result["error"]["node"] == "done"


def test_doubling_in_a_loop_and_accumulating_across_two_loops(tmp_path: Path) -> None:
    # a body may not hold a foreach (SPEC §4), so "nested loops" is two loops in a row, the
    # second growing what the first built
    items = list(range(100))
    loop = {
        "id": "grow",
        "type": "foreach",
        "source": items,
        "itemVar": "it",
        "maxItems": 100,
        "body": [setn("twice", "v", DOUBLE_LIST, None)],
        "next": "grow2",
    }
    loop2 = {
        "id": "grow2",
        "type": "foreach",
        "source": items,
        "itemVar": "it2",
        "maxItems": 100,
        "body": [setn("again", "v", DOUBLE_TEXT, None)],
        "next": "done",
    }
    nodes = [setn("seed", "v", [0], "grow"), loop, loop2, ret({"$ref": "v"})]
    result, elapsed = forge_run(tmp_path, tool(nodes))
    too_large(result, elapsed)
    assert result["error"]["node"] == "twice"
    # the first loop alone stays under the limit for 14 rounds; the second loop's template
    # of it then doubles the text until it is refused
    loop["source"] = list(range(14))
    result, elapsed = forge_run(tmp_path, tool(nodes))
    too_large(result, elapsed)
    assert result["error"]["node"] == "again"


def test_object_keys_growth_narrow_and_wide(tmp_path: Path) -> None:
    narrow = {f"k{i}": {"$ref": "o"} for i in range(8)}  # measured in one pass
    wide = {f"key{i}": {"$ref": "o"} for i in range(12)}  # measured member by member
    for value in (narrow, wide):
        nodes = [setn("seed", "o", {"x": 1}, "g0"), *chain("g", "o", value, 30, "done")]
        result, elapsed = forge_run(tmp_path, tool([*nodes, ret({"$ref": "o"})]))
        too_large(result, elapsed)


def test_compensations_run_after_a_value_grows_too_large(tmp_path: Path) -> None:
    nodes = [
        {
            "id": "make",
            "type": "capability",
            "capability": "tasks.create",
            "input": {"title": "to be undone"},
            "target": "task",
            "compensation": "tasks.setStatus",
            "next": "seed",
        },
        setn("seed", "v", {"$template": "{{task}}"}, "d0"),
        *chain("d", "v", DOUBLE_TEXT, 40, "done"),
        ret({"$ref": "v"}),
    ]
    result, elapsed = forge_run(tmp_path, tool(nodes))
    too_large(result, elapsed)
    assert result["compensations"] == [
        {"node": "make", "capability": "tasks.create", "status": "undone"}
    ]


def test_a_run_holding_a_large_value_in_every_variable_stays_within_the_figure(
    tmp_path: Path,
) -> None:
    # 60 variables, each a fresh 240 KB string (four copies of a 60,000-character input):
    # docs/runtime.md's figure for values held without compensations is 64 × 256 KiB
    (tmp_path / "input.json").write_text(json.dumps({"s": "x" * 60_000}))
    four = {"$template": "{{input.s}}{{input.s}}{{input.s}}{{input.s}}"}
    nodes = [setn(f"v{k}", f"v{k}", four, f"v{k + 1}" if k < 59 else "done") for k in range(60)]
    small, _, base = forge_run_peak(tmp_path, tool([ret("small")]))
    big, elapsed, peak = forge_run_peak(
        tmp_path, tool([*nodes, ret({"$ref": "v0"})]), "--input", f"@{tmp_path / 'input.json'}"
    )
    assert small["status"] == big["status"] == "ok" and elapsed < QUICK
    assert peak - base < 16 + 16, (base, peak)  # 60 × 240 KB = 14.4 MB, plus transients


# --- the host's capabilities (fixed on the host-rules branch) ------------------------------

HOST_TOML = '[persona]\nname = "alice"\n[db_query]\ntime_limit_ms = {ms}\n'


def _db_query(tmp_path: Path, sql: str, ms: int) -> tuple[dict[str, Any], float]:
    config = tmp_path / "host.toml"
    config.write_text(HOST_TOML.format(ms=ms))
    nodes = [
        # a memory write opens the persona's thread: the attack needs one row in `threads`
        {
            "id": "mem",
            "type": "capability",
            "capability": "memory.access",
            "input": {"operation": "write", "key": "k", "value": "v"},
            "next": "q",
        },
        {
            "id": "q",
            "type": "capability",
            "capability": "db.query",
            "input": {"sql": sql},
            "target": "rows",
            "next": "done",
        },
        ret({"$ref": "rows"}),
    ]
    return forge_run(tmp_path, tool(nodes), "--target", "talon", "--host-config", str(config))


def _db_query_past_start(tmp_path: Path, sql: str, ms: int) -> tuple[dict[str, Any], float]:
    """_db_query, and how much longer it took than the same tool with a trivial query: the
    child's start-up (interpreter, imports, migrations) is most of a run and swings with the
    machine's load, so the bound is on what the query adds, not on the whole process."""
    result, elapsed = _db_query(tmp_path, sql, ms)
    base_dir = tmp_path / "baseline"
    base_dir.mkdir()
    _, baseline = _db_query(base_dir, "SELECT 1 AS i FROM threads LIMIT 1", ms)
    return result, elapsed - baseline


def test_db_query_printf_cannot_build_a_huge_string(tmp_path: Path) -> None:
    sql = "SELECT printf('%.2000000000c', 'x') AS s FROM threads LIMIT 1"
    result, elapsed = _db_query(tmp_path, sql, 100)
    assert result["status"] == "failed" and result["error"]["code"] == "RUN_CAPABILITY_FAILED"
    assert elapsed < 3.0, elapsed  # a 100 ms limit, plus the child's start


def test_db_query_instr_stays_within_the_time_limit(tmp_path: Path) -> None:
    # quadratic instr over strings within the 256 KiB cap: 12 of them in one straight-line row
    # ran 3.4 s against a 300 ms limit (neither the progress handler nor interrupt() acts
    # between them); the host's instr checks the deadline and searches in linear time
    term = "instr(printf('%.250000c', 'x') || 'y', printf('%.125000c', 'x') || 'z')"
    sql = "SELECT " + " + ".join([term] * 12) + " AS i FROM threads LIMIT 1"
    result, added = _db_query_past_start(tmp_path, sql, 300)
    if result["status"] == "ok":
        assert result["output"]["rows"] == [{"i": 0}]
    else:
        assert result["error"]["code"] == "RUN_CAPABILITY_FAILED"
        assert "time limit" in result["error"]["message"]
    assert added < 1.0, added  # a 300 ms limit (it ran 3.4 s past it before the fix)


def test_db_query_many_slow_calls_stop_at_the_time_limit(tmp_path: Path) -> None:
    # 400 instr calls on one row: each is quick, together they outlast a 100 ms limit
    term = "instr(printf('%.200000c', 'x'), 'y')"
    sql = "SELECT " + " + ".join([term] * 400) + " AS i FROM threads LIMIT 1"
    result, added = _db_query_past_start(tmp_path, sql, 100)
    assert result["status"] == "failed" and result["error"]["code"] == "RUN_CAPABILITY_FAILED"
    assert "time limit" in result["error"]["message"]
    assert added < 1.0, added  # a 100 ms limit


class _Trickle(http.server.BaseHTTPRequestHandler):
    """Sends a header line, or a body byte, every 0.3 s for 6 s: each read is quick, so only
    a deadline over the whole request stops it."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            if self.path == "/headers":
                for i in range(20):
                    self.wfile.write(f"X-Slow-{i}: {i}\r\n".encode())
                    self.wfile.flush()
                    time.sleep(0.3)
            self.wfile.write(b"Content-Type: text/plain\r\nContent-Length: 25\r\n\r\n")
            self.wfile.flush()
            for _ in range(20 if self.path == "/body" else 0):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.3)
        except OSError:  # the client gave up, as it should
            pass


@pytest.mark.parametrize("part", ["headers", "body"])
def test_net_http_trickled_response_stops_at_its_deadline(tmp_path: Path, part: str) -> None:
    api = "api.example.com"
    with serving(_Trickle) as srv:
        port = srv.server_address[1]
        url = f"http://{api}:{port}/{part}"
        nodes = [
            {
                "id": "get",
                "type": "capability",
                "capability": "net.http",
                "input": {"method": "GET", "url": url, "timeoutMs": 1000},
                "target": "res",
                "next": "done",
            },
            ret({"$ref": "res.status"}),
        ]
        m = tool(nodes, network={"mode": "allowlist", "hosts": [api]})
        started = time.monotonic()
        result, _ = forge_run(
            tmp_path, m, "--target", "talon", "--resolve", f"{api}:{port}:127.0.0.1"
        )
        elapsed = time.monotonic() - started
    assert result["status"] == "failed" and result["error"]["code"] == "RUN_CAPABILITY_FAILED"
    # one deadline of 1 s for the whole request (the child's start takes the rest)
    assert elapsed < 3.0, elapsed


# --- the source (SPEC §16: over 256 KiB refused before any parsing) ---------------------------------------------


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "note-updater.forge"


def _big_forge() -> str:
    """A real tool whose description is 3 MB of words: the text of issue 12's attack."""
    src = EXAMPLE.read_text(encoding="utf-8")
    return src.replace('description "', 'description "' + "word " * 600_000, 1)


def test_oversized_forge_is_refused_before_parsing_by_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "big.forge"
    path.write_text(_big_forge())
    proc, elapsed = child([sys.executable, "-c", _PEAK, "check", "--format", "json", str(path)])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    codes = {d["code"] for f in json.loads(proc.stdout)["files"] for d in f["diagnostics"]}
    assert codes == {"FORGE_MANIFEST_TOO_LARGE"}
    assert elapsed < 3.0 and _peak_mb(proc.stderr) < PEAK_MB


def test_oversized_forge_is_refused_before_parsing_by_the_api(tmp_path: Path) -> None:
    script = (
        "import resource, sys, forgec\n"
        "report = forgec.check(sys.stdin.read(), path='big.forge')\n"
        "print(' '.join(sorted({d.code for d in report.diagnostics})))\n"
        "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)\n"
    )
    proc, elapsed = child([sys.executable, "-c", script], stdin=_big_forge())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["FORGE_MANIFEST_TOO_LARGE"]
    assert elapsed < 3.0 and _peak_mb(proc.stderr) < PEAK_MB
