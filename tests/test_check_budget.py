"""The check budget in the servers (SPEC §16, issue 17 "A check budget in every server"): the
MCP server and the language server check off their event loop, in a worker process within a
budget; every other request is answered meanwhile, and a check over the budget is
`FORGEC_CHECK_BUDGET` — nothing installed, never a hang or a crash.

Through the real interfaces: the `mcp` SDK client against `python -m forgec mcp serve`, a
pytest-lsp client against `python -m forgec lsp`. A slow check on demand comes from the test
hook `FORGEC_TEST_CHECK_DELAY_S` (a source holding `slow-check-on-purpose` sleeps first in the
worker); a genuinely slow one from the worst-case search (`tests/worst_cases.py`) under a
small budget.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from manifests import manifest_with_nodes
from mcp_client import run_session
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from forgec.budget import DELAY_ENV, DELAY_MARKER, check_with_budget
from forgec.store import Store

ROOT = Path(__file__).resolve().parent.parent
SLOW = DELAY_MARKER.decode()


def slow_manifest(tool_id: str = "slow.tool") -> dict[str, Any]:
    m = manifest_with_nodes([{"id": "done", "type": "return", "value": {"ok": True}}])
    m["id"] = tool_id
    m["description"] = f"A tool whose check is slow on purpose ({SLOW})."
    return m


def doubling_loop(times: int = 3) -> dict[str, Any]:
    """Issue 17's flow-analysis attack: a loop body that doubles `x` TIMES times (35–50 s to
    check with three before the flows fix)."""
    body = [
        {"id": f"d{i}", "type": "set", "target": "x", "value": [{"$ref": "x"}, {"$ref": "x"}]}
        for i in range(times)
    ]
    for i in range(times - 1):
        body[i]["next"] = f"d{i + 1}"
    m = manifest_with_nodes(
        [
            {"id": "s", "type": "set", "target": "x", "value": [1], "next": "loop"},
            {
                "id": "loop",
                "type": "foreach",
                "source": {"$ref": "input.items"},
                "itemVar": "it",
                "maxItems": 10,
                "body": body,
                "next": "done",
            },
            {"id": "done", "type": "return", "value": {"n": 1}},
        ]
    )
    m["id"] = "flow.attack"
    m["inputSchema"] = {"type": "object", "properties": {"items": {"type": "array"}}}
    return m


# -- the reusable function --------------------------------------------------------------------


def test_check_with_budget_returns_the_report_or_the_budget_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fine = check_with_budget(orjson.dumps(slow_manifest()), budget_s=30)
    assert fine.ok and fine.ir is not None and fine.manifest is not None
    assert fine.facts.flows == ()  # computed in the worker, readable here

    from worst_cases import build

    slowest, _path, _target = build("catalog_checks", 4000, 8)  # 0.2-0.3 s of CPU
    started = time.monotonic()
    stopped = check_with_budget(slowest, target="talon", budget_s=0.05)
    elapsed = time.monotonic() - started
    assert [d.code for d in stopped.diagnostics] == ["FORGEC_CHECK_BUDGET"] and not stopped.ok
    assert "within 0.05 s" in stopped.diagnostics[0].message
    assert elapsed < 5
    # issue 17's flow attack, 35–50 s before the flows fix, now within any sane budget
    assert check_with_budget(orjson.dumps(doubling_loop()), budget_s=30).ok
    # the killed worker is replaced: the next check is clean
    assert check_with_budget(orjson.dumps(slow_manifest()), budget_s=30).ok


# -- MCP --------------------------------------------------------------------------------------


def run_mcp(store: Path, tmp: Path, body: Any, *, budget: str, delay: str = "0") -> Any:
    """`forgec mcp serve` with this store and check budget, a real SDK client session
    (`tests/mcp_client.py`), BODY once the server lists its tools."""
    args = ["mcp", "serve", "--store", str(store), "--db", str(tmp / "h.db")]
    args += ["--persona-labels", "tool.create", "--check-budget", budget]

    async def up(session: Any) -> Any:
        await session.list_tools()  # the server is up
        return await body(session)

    env = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1", DELAY_ENV: delay}
    return run_session(args, up, env=env, timeout=120)


async def create_while_listing(session: Any, manifest: dict[str, Any]) -> tuple[Any, list[float]]:
    """Call tool_create and, while it is in flight, time `tools/list` answers."""
    result: dict[str, Any] = {}
    timings: list[float] = []

    async def create() -> None:
        result["r"] = await session.call_tool("tool_create", {"manifest": manifest})

    async with anyio.create_task_group() as tg:
        tg.start_soon(create)
        await anyio.sleep(0.3)  # the check is under way in the worker
        for _ in range(3):
            if "r" in result:
                break
            started = time.monotonic()
            listed = await session.list_tools()
            timings.append(time.monotonic() - started)
            assert "tool_create" in [t.name for t in listed.tools]
            await anyio.sleep(0.2)
    return result["r"], timings


def _versions(store: Path, tool_id: str) -> list[Any]:
    with Store(store) as s:
        try:
            return s.versions(tool_id)
        except Exception:  # no such tool
            return []


def test_tools_list_is_answered_while_a_slow_tool_create_checks(tmp_path: Path) -> None:
    store = tmp_path / "tools.db"
    result, timings = run_mcp(
        store,
        tmp_path,
        lambda s: create_while_listing(s, slow_manifest()),
        budget="60",
        delay="3",
    )
    assert timings and max(timings) < 1.0, timings  # answered while the check ran
    assert not result.is_error, result
    assert result.structured_content["ok"] is True
    assert [v.version for v in _versions(store, "slow.tool")] == [1]


def test_over_the_budget_is_forgec_check_budget_and_installs_nothing(tmp_path: Path) -> None:
    store = tmp_path / "tools.db"
    started = time.monotonic()
    result, timings = run_mcp(
        store,
        tmp_path,
        lambda s: create_while_listing(s, slow_manifest()),
        budget="1",
        delay="30",
    )
    assert time.monotonic() - started < 60  # stopped at the budget, not after the delay
    assert result.is_error
    codes = [d["code"] for d in result.structured_content["report"]["diagnostics"]]
    assert codes == ["FORGEC_CHECK_BUDGET"]
    assert result.structured_content["ok"] is False
    assert _versions(store, "slow.tool") == []
    assert all(t < 1.0 for t in timings), timings


def test_a_genuinely_hostile_manifest_stops_at_the_budget(tmp_path: Path) -> None:
    """No hook: one of the slowest inputs the worst-case search knows (0.2–0.3 s of CPU: long
    SQL, many cron triggers) under a 0.05 s budget. Issue 17's flow attack (35–50 s before the
    `flows` fix) is checked in a bounded time now, so it is no longer over any budget."""
    from worst_cases import build

    store = tmp_path / "tools.db"
    source, _path, _target = build("catalog_checks", 4000, 8)
    manifest = orjson.loads(source)
    result, timings = run_mcp(
        store, tmp_path, lambda s: create_while_listing(s, manifest), budget="0.05"
    )
    assert all(t < 1.0 for t in timings), timings
    assert result.is_error
    codes = [d["code"] for d in result.structured_content["report"]["diagnostics"]]
    assert codes == ["FORGEC_CHECK_BUDGET"]
    assert _versions(store, manifest["id"]) == []
    # and the same file within the default budget installs
    result = run_mcp(
        store,
        tmp_path,
        lambda s: s.call_tool("tool_create", {"manifest": manifest}),
        budget="5",
    )
    assert not result.is_error, result
    assert [v.version for v in _versions(store, manifest["id"])] == [1]


# -- LSP --------------------------------------------------------------------------------------


FAST = """tool fast-doc {
  version 1
  title "Fast"
  description "A document checked quickly."
  created "2026-11-02T09:00:00Z"
  parent null
  network forbidden
  flow entry a max 8 {
    a: return 1
  }
}
"""
SLOW_DOC = FAST.replace("fast-doc", "slow-doc").replace("checked quickly", SLOW)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "forgec", "lsp", "--check-budget", "2"],
        server_env={**os.environ, "PYTHONPATH": str(ROOT), DELAY_ENV: "30"},
    ),
)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    params = lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="forge", version=1, text=text)
        )
    )


async def _diagnostics_of(client: LanguageClient, uri: str, within: float) -> list[Any]:
    deadline = time.monotonic() + within
    while uri not in client.diagnostics:
        assert time.monotonic() < deadline, f"no diagnostics for {uri}"
        await anyio.sleep(0.05)
    return client.diagnostics[uri]


@pytest.mark.asyncio
async def test_hover_is_answered_while_a_slow_document_is_analysed(
    client: LanguageClient,
) -> None:
    fast, slow = "file:///work/fast.forge", "file:///work/slow.forge"
    _open(client, fast, FAST)
    assert list(await _diagnostics_of(client, fast, 30)) == []
    _open(client, slow, SLOW_DOC)
    await anyio.sleep(0.3)  # its check is under way
    position = lsp.Position(line=FAST.count("\n", 0, FAST.index("a: return")), character=4)
    started = time.monotonic()
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri=fast), position)
    )
    assert time.monotonic() - started < 1.0
    assert hover is not None and "return" in hover.contents.value
    # the slow one ends at the budget with the budget error, not after the 30 s delay
    diags = await _diagnostics_of(client, slow, 20)
    assert [d.code for d in diags] == ["FORGEC_CHECK_BUDGET"]


def test_the_language_server_takes_its_budget_from_options_and_settings() -> None:
    from forgec.lsp.server import ForgeLanguageServer

    ls = ForgeLanguageServer()
    assert ls.budget_s == 5.0
    assert ls.set_budget({"forgec": {"checkBudget": 2}}) and ls.budget_s == 2.0
    assert ls.set_budget({"checkBudget": 0.5}) and ls.budget_s == 0.5
    for bad in ({"checkBudget": True}, {"checkBudget": -1}, {"checkBudget": "9"}, {}):
        assert not ls.set_budget(bad) and ls.budget_s == 0.5


def test_a_worker_that_dies_mid_check_is_said_so_not_budget_and_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from forgec import budget

    monkeypatch.setenv(DELAY_ENV, "30")
    budget.close_workers()  # workers started from here on see the delay
    budget.warm_up()  # one ready worker, which the check below takes
    (worker,) = _children()
    got: dict[str, Any] = {}

    def run() -> None:
        got["report"] = check_with_budget(orjson.dumps(slow_manifest()), budget_s=60)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while budget._POOL._idle and time.monotonic() < deadline:
        time.sleep(0.05)  # until the check has taken it
    time.sleep(0.5)  # it has the request and sleeps in the check
    os.kill(worker, 9)  # what the kernel does to a worker past RLIMIT_AS, or a crash
    thread.join(30)
    report = got["report"]
    # SPEC §24: FORGEC_CHECK_BUDGET is only for time; a dead worker is said as what it is
    assert [d.code for d in report.diagnostics] == ["FORGEC_CHECK_STOPPED"]
    assert "stopped before it finished" in report.diagnostics[0].message
    monkeypatch.delenv(DELAY_ENV)
    budget.close_workers()
    assert check_with_budget(orjson.dumps(slow_manifest()), budget_s=60).ok


def _children() -> list[int]:
    """This process' `python -m forgec.budget` children."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if parent == os.getpid() and b"forgec.budget" in cmd:
            out.append(int(entry))
    return out


def test_a_flood_of_checks_starts_no_more_than_max_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from forgec import budget

    monkeypatch.setenv(DELAY_ENV, "2")
    budget.close_workers()
    reports: list[Any] = []
    threads = [
        threading.Thread(
            target=lambda: reports.append(
                check_with_budget(orjson.dumps(slow_manifest()), budget_s=60)
            )
        )
        for _ in range(budget.MAX_WORKERS + 3)
    ]
    for t in threads:
        t.start()
    most = 0
    while any(t.is_alive() for t in threads):
        most = max(most, len(_children()))
        time.sleep(0.05)
    assert 0 < most <= budget.MAX_WORKERS
    assert len(reports) == len(threads) and all(r.ok for r in reports)
    monkeypatch.delenv(DELAY_ENV)
    budget.close_workers()


# -- SPEC §24: only time is the budget; the same input gets the same diagnostics ------------------


def _deep_forge(levels: int) -> str:
    value = "[" * levels + "1" + "]" * levels
    return FAST.replace("fast-doc", "deep-doc").replace("return 1", f"return {value}")


def test_deep_nesting_through_tool_create_is_the_structure_error_the_cli_gives(
    tmp_path: Path,
) -> None:
    """Issue 30: a `.forge` nested 200 levels (about 1 KB) answered `FORGEC_CHECK_BUDGET …
    RecursionError … while pickling`; `forgec check` says `FORGE_MANIFEST_STRUCTURE`."""
    source = _deep_forge(200)
    path = tmp_path / "deep.forge"
    path.write_text(source)
    cli = subprocess.run(
        [sys.executable, "-m", "forgec", "check", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    expected = [
        (d["code"], d["message"]) for d in orjson.loads(cli.stdout)["files"][0]["diagnostics"]
    ]
    assert expected == [("FORGE_MANIFEST_STRUCTURE", "the manifest nests deeper than 64 levels")]
    # the budgeted path itself
    report = check_with_budget(source, path="deep.forge", budget_s=30)
    assert [(d.code, d.message) for d in report.diagnostics] == expected
    # and through a real MCP client
    store = tmp_path / "tools.db"
    result = run_mcp(
        store,
        tmp_path,
        lambda s: s.call_tool("tool_create", {"source": source}),
        budget="30",
    )
    assert result.is_error
    got = [(d["code"], d["message"]) for d in result.structured_content["report"]["diagnostics"]]
    assert got == expected, got
    assert _versions(store, "deep-doc") == []


def test_a_report_that_cannot_be_sent_whole_is_never_called_a_budget() -> None:
    """Every way a worker can stop but time is FORGEC_CHECK_STOPPED (SPEC §24)."""
    from forgec import budget

    deep = budget.check_with_budget(_deep_forge(5000), path="d.forge", budget_s=30)
    assert [d.code for d in deep.diagnostics] != ["FORGEC_CHECK_BUDGET"]
    assert all(d.code.startswith("FORGE_") for d in deep.diagnostics), deep.diagnostics
