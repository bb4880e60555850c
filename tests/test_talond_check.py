"""SPEC §21: a persona's own card (`forgec talond check`, the daemon and `mcp serve` at start),
and the planned-work fields of the rows, which `check`, the bridge and the MCP schemas read
from one table.

The card is tried through the real CLI on a personas folder and a real store; the warning must
name the tools of each leg, and a persona that lacks a leg gets none. The rows' planned fields
are searched (hypothesis) for an input the row's own check and its JSON Schema (what an MCP
client and the daemon's model are given) disagree on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from test_talond import write_config, write_personas
from test_talond_daemon import ROOT, Daemon, make_store

from forgec.ir import capabilities as rows


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


LEAKY = ("net.http:egress", "memory.access:thread", "channel.send:journal")


def _host(root: Path, deny: str = "", network: bool = True) -> tuple[Path, Path]:
    write_personas(root, {"alpha": LEAKY, "beta": ("memory.access:thread",), "gamma": ()})
    store = make_store(root)  # add.task (tasks.create): needs no label, so every persona has it
    extra = '[network]\nallow = ["news.example.com"]\n\n' if network else ""
    extra += f"[flows]\ndeny = [{deny}]\n" if deny else ""
    config = write_config(root, None, extra)
    return config, store


def test_the_card_names_each_leg_and_warns_only_when_one_persona_holds_three(
    tmp_path: Path,
) -> None:
    config, store = _host(tmp_path)
    done = _cli(
        tmp_path, "talond", "check", "--host-config", str(config), "--store", str(store),
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cards = {c["persona"]: c for c in json.loads(done.stdout)["personas"]}
    assert set(cards) == {"alpha", "beta", "gamma"}

    def tools(persona: str, leg: str) -> set[str]:
        return {item["tool"] for item in cards[persona][leg]}

    forged = "dynamic_add_Dtask"
    assert tools("alpha", "private") == {"memory_access", forged}
    assert cards["alpha"]["untrusted"] == [
        {"tool": "net_http", "what": ["external:news.example.com"]}
    ]
    assert tools("alpha", "egress") == {"net_http", "channel_send"}
    assert tools("alpha", "writes") == {"memory_access", forged}
    assert cards["alpha"]["ruleOfTwo"] is True
    warning = cards["alpha"]["warning"]
    for name in ("memory_access", forged, "net_http", "channel_send"):
        assert name in warning
    assert "no [flows] deny rule guards" in warning
    # beta reads private data and writes, but nothing outside steers it and nothing leaves
    assert tools("beta", "untrusted") == set() and tools("beta", "egress") == set()
    assert cards["beta"]["warning"] is None and cards["gamma"]["warning"] is None
    assert tools("gamma", "private") == {forged}  # the forged tool counts by its steps

    text = _cli(tmp_path, "talond", "check", "--host-config", str(config), "--store", str(store))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("persona alpha") and any(
        line.strip().startswith("warning: alpha holds private data") for line in lines
    )
    assert sum("warning:" in line for line in lines) == 1


def test_the_card_says_which_deny_rules_guard_the_turns(tmp_path: Path) -> None:
    config, store = _host(tmp_path, deny='"private->egress"')
    done = _cli(
        tmp_path, "talond", "check", "--host-config", str(config), "--store", str(store),
        "--format", "json",
    )  # fmt: skip
    cards = {c["persona"]: c for c in json.loads(done.stdout)["personas"]}
    assert "refuses private->egress" in cards["alpha"]["warning"]


def test_the_daemon_and_mcp_serve_warn_at_start(tmp_path: Path) -> None:
    config, store = _host(tmp_path)
    clock = tmp_path / "clock"
    clock.write_text(repr(time.time()))
    daemon = Daemon(tmp_path, config, store, clock).start()
    try:
        warned = daemon.wait_for(
            lambda e: e["event"] == "warning" and e.get("persona") == "alpha", what="the warning"
        )
        assert "net_http" in warned["message"] and "channel_send" in warned["message"]
        personas = [e for e in daemon.events if e["event"] == "persona"]
        assert {e["name"] for e in personas} == {"alpha", "beta", "gamma"}
        assert not any(
            e["event"] == "warning" and e.get("persona") == "beta" for e in daemon.events
        )
    finally:
        assert daemon.stop() == 0
    serve = subprocess.Popen(
        [
            sys.executable, "-m", "forgec", "mcp", "serve", "--store", str(store),
            "--host-config", str(config), "--persona-labels", ",".join(LEAKY),
        ],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        _out, err = serve.communicate("", timeout=60)  # no client: it ends at end of input
    finally:
        serve.kill()
        serve.wait(30)
    (line,) = [x for x in err.splitlines() if "rule of two" in x]
    assert line.startswith("forgec mcp: warning: this server's persona holds private data")
    assert "net_http" in line and "channel_send" in line


# --- planned work: one table for check, the bridge and the MCP schema -------------------------

PLANNED_ROWS = ("schedule.manage", "persona.send", "subagent.background")
_VALUES: dict[str, Any] = {
    "tool": "digest",
    "input": {"channel": "journal"},
    "prompt": "say hello",
    "promptFile": "daily",
    "message": "hello",
    "target_persona": "beta",
    "cronExpr": "0 9 * * *",
    "scheduleId": "sch_1",
    "label": "daily",
    "taskId": "bg_1",
}


@st.composite
def planned_inputs(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(PLANNED_ROWS))
    row = rows.BY_NAME[name]
    fields = [f for f in row.shape.fields if f in _VALUES]
    chosen = draw(st.lists(st.sampled_from(fields), unique=True))
    out: dict[str, Any] = {f: _VALUES[f] for f in chosen}
    if row.selector is not None:
        out[row.selector] = draw(st.sampled_from(row.operations()))
    return name, out


@settings(max_examples=400, deadline=None)
@given(planned_inputs())
def test_the_rows_check_and_their_schema_agree_on_planned_work(
    case: tuple[str, dict[str, Any]],
) -> None:
    name, value = case
    row = rows.BY_NAME[name]
    by_check = not row.shape.check(value, frozenset(), runtime=True)
    by_schema = Draft7Validator(row.shape.schema()).is_valid(value)
    assert by_check == by_schema, (name, value, row.shape.check(value, frozenset(), runtime=True))


def test_planned_work_is_a_tool_and_its_input_in_place_of_a_prompt() -> None:
    def problems(name: str, value: dict[str, Any]) -> list[str]:
        return [p.message for p in rows.BY_NAME[name].shape.check(value, runtime=True)]

    send = {"target_persona": "beta"}
    assert problems("persona.send", {**send, "tool": "digest", "input": {}}) == []
    assert problems("persona.send", send) == ["missing one of the fields `message` or `tool`"]
    assert problems("persona.send", {**send, "message": "m", "input": {}}) == [
        "`input` needs `tool`: give both"
    ]
    assert (
        "mutually exclusive" in problems("persona.send", {**send, "message": "m", "tool": "t"})[0]
    )
    spawn = {"action": "spawn"}
    assert problems("subagent.background", {**spawn, "tool": "digest"}) == []
    assert problems("subagent.background", spawn) != []
    create = {"action": "create", "cronExpr": "0 9 * * *"}
    assert problems("schedule.manage", {**create, "tool": "digest", "input": {"a": 1}}) == []
    assert problems("schedule.manage", {**create, "tool": "digest", "prompt": "p"}) != []
    for name in PLANNED_ROWS:
        assert "tool" in rows.BY_NAME[name].destinations  # which tool runs is where data goes


def test_the_readme_shows_what_talond_check_prints_for_the_example(tmp_path: Path) -> None:
    import re
    import shlex
    import shutil

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Talon: schedules fire, personas answer", 1)[1].split("\n### ", 1)[0]
    block = re.search(r"```console\n\$ (forgec talond check[^\n]*)\n(.*?)```", section, re.S)
    assert block is not None
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run(
        [sys.executable, "-m", *shlex.split(block.group(1))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "data")},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == block.group(2)


def test_a_models_own_net_http_reaches_nothing_without_a_host_allowlist(tmp_path: Path) -> None:
    # the bridge refuses a direct net_http call to any host when `[network] allow` is empty,
    # so the card does not count it: alpha then sends, but reads nothing from outside
    config, store = _host(tmp_path, network=False)
    done = _cli(
        tmp_path, "talond", "check", "--host-config", str(config), "--store", str(store),
        "--format", "json",
    )  # fmt: skip
    (alpha,) = [c for c in json.loads(done.stdout)["personas"] if c["persona"] == "alpha"]
    assert alpha["untrusted"] == [] and alpha["warning"] is None
    assert [i["tool"] for i in alpha["egress"]] == ["channel_send"]


def test_schedule_manage_keeps_a_plan_in_place_of_a_prompt_and_undoes_it(tmp_path: Path) -> None:
    from forgec.host import HostOptions, open_host
    from forgec.runtime.host import CallContext

    ctx = CallContext("t", 1, "n")
    options = HostOptions(db=tmp_path / "h.db", persona_labels=("schedule.manage:own",))
    with open_host(options) as h:
        made = h.call(
            "schedule.manage", {"action": "create", "cronExpr": "0 9 * * *", "prompt": "hi"}, ctx
        )
        sid = made["scheduleId"]
        planned = {"action": "update", "scheduleId": sid, "tool": "digest", "input": {"n": 1}}
        changed = h.call("schedule.manage", planned, ctx)
        assert (changed["tool"], changed["input"], changed["prompt"]) == ("digest", {"n": 1}, None)
        assert changed["previous"]["prompt"] == "hi" and changed["previous"]["tool"] is None
        # the compensation puts the prompt back and the plan away
        h.compensate("schedule.manage", "schedule.manage", planned, changed, ctx)
        (row,) = h.call("schedule.manage", {"action": "list"}, ctx)["schedules"]
        assert (row["prompt"], row["tool"], row["input"]) == ("hi", None, None)
        again = h.call(
            "schedule.manage", {"action": "update", "scheduleId": sid, "tool": "digest"}, ctx
        )
        assert again["input"] == {}  # a plan with no input runs the tool on `{}`
        back = h.call(
            "schedule.manage", {"action": "update", "scheduleId": sid, "prompt": "bye"}, ctx
        )
        assert (back["prompt"], back["tool"], back["input"]) == ("bye", None, None)
