"""The verdict (SPEC §23, issue 28): "what can this version do that the one I agreed to could
not?" Pairs of versions where power grows in exactly one way never read "No new power"; pairs
that only reorder, rename nodes, change text or narrow do. Then the CLI (a real subprocess):
`tools diff`, `review`, the enable prompt, their JSON, the witness, and the measurement-1
proposal of the issue.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from forgec.api import check
from forgec.store.verdict import NO_NEW_POWER, Verdict, schema_inputs, verdict

INPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "urgent": {"type": "boolean"},
        "ids": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
        "status": {"type": "string", "enum": ["done", "cancelled"]},
    },
    "required": ["id"],
}


def tool(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A manifest around NODES (flow order: each node's `next` is the following one unless it
    says otherwise; the entry is the first)."""
    nodes = copy.deepcopy(nodes)
    for a, b in itertools.pairwise(nodes):
        if a["type"] not in ("if", "return", "fail"):
            a.setdefault("next", b["id"])
    manifest: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "verdict.demo",
        "version": 1,
        "title": "Verdict demo",
        "description": "A tool the verdict tests compare.",
        "createdAt": "2026-12-01T09:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": INPUT,
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 256, "nodes": nodes},
    }
    manifest.update(extra)
    return manifest


def checked(manifest: dict[str, Any], target: str = "talos") -> Any:
    report = check(orjson.dumps(manifest), target=target)
    assert report.ok, [d.message for d in report.errors]
    return report


def judge(old: dict[str, Any], new: dict[str, Any], target: str = "talos") -> Verdict:
    found = verdict(checked(old, target), checked(new, target), was="v1")
    assert found is not None
    return found


def cap(nid: str, capability: str, target: str | None = None, **input: Any) -> dict[str, Any]:
    after = input.pop("next", None)
    node = {"id": nid, "type": "capability", "capability": capability, "input": input}
    if target:
        node["target"] = target
    if after:
        node["next"] = after
    return node


def ret(nid: str = "done") -> dict[str, Any]:
    return {"id": nid, "type": "return", "value": {"ok": True}}


def ref(path: str) -> dict[str, str]:
    return {"$ref": path}


def cond(then: str, else_: str, nid: str = "check", path: str = "input.urgent") -> dict[str, Any]:
    return {
        "id": nid,
        "type": "if",
        "condition": {"op": "truthy", "left": ref(path)},
        "then": then,
        "else": else_,
    }


def loop(nid: str, body: list[dict[str, Any]], max_items: int = 5) -> dict[str, Any]:
    body = copy.deepcopy(body)
    for a, b in itertools.pairwise(body):
        a.setdefault("next", b["id"])
    return {
        "id": nid,
        "type": "foreach",
        "source": ref("input.ids"),
        "itemVar": "item",
        "maxItems": max_items,
        "body": body,
    }


BASE = [
    cap("close", "tasks.setStatus", id=ref("input.id"), status="done"),
    cap("log", "notes.create", title="Closed", body={"$template": "closed {{input.id}}"}),
    ret(),
]

LLM = {
    "id": "sum",
    "type": "llm",
    "op": "summarize",
    "input": {"text": ref("input.id")},
    "target": "summary",
    "requirements": {"privacy": "local-only"},
}

WEB = {"mode": "allowlist", "hosts": ["api.example.com"]}


def web(body: Any) -> dict[str, Any]:
    return cap(
        "send",
        "net.http",
        "sent",
        method="POST",
        url="https://api.example.com/notes",
        body=body,
        timeoutMs=5000,
    )


# each: (name, v1 nodes, v2 nodes, v1 extra, v2 extra, target, words the gain says)
GROWS = [
    (
        "a wider literal set",
        BASE,
        [
            cond("hard", "close"),
            cap("hard", "tasks.setStatus", id=ref("input.id"), status="cancelled", next="log"),
            *BASE,
        ],
        {},
        {},
        "talos",
        "status to `cancelled` (v1: `done`)",
    ),
    (
        "a new host",
        [web("ping"), ret()],
        [web("ping"), ret()],
        {"network": WEB},
        {"network": {"mode": "allowlist", "hosts": ["api.example.com", "evil.example.net"]}},
        "talon",
        "can reach evil.example.net",
    ),
    (
        "a new flow",
        [cap("read", "notes.list", "notes", limit=5), web("ping"), ret()],
        [
            cap("read", "notes.list", "notes", limit=5),
            web({"$template": "{{notes.items}}"}),
            ret(),
        ],
        {"network": WEB},
        {"network": WEB},
        "talon",
        "notes (notes.list)",
    ),
    (
        "computed where a literal was",
        BASE,
        [BASE[0], cap("log", "notes.create", title=ref("input.id"), body="closed"), ret()],
        {},
        {},
        "talos",
        "title computed from your input",
    ),
    (
        "a higher count",
        [loop("each", [cap("mark", "tasks.setStatus", id=ref("item"), status="done")]), ret()],
        [
            loop("each", [cap("mark", "tasks.setStatus", id=ref("item"), status="done")], 50),
            ret(),
        ],
        {},
        {},
        "talos",
        "up to 50 times a run (v1: 5 times)",
    ),
    (
        "a new operation",
        BASE,
        [*BASE[:2], cap("more", "tasks.create", title="Follow up"), ret()],
        {},
        {},
        "talos",
        "tasks.create",
    ),
    (
        "privacy widened",
        [LLM, ret()],
        [{**LLM, "requirements": {"privacy": "remote-allowed"}}, ret()],
        {},
        {},
        "talos",
        "a remote model (v1: a local model only)",
    ),
    (
        "a gained step behind a condition",
        BASE,
        [
            *BASE[:2],
            cond("wipe", "done", nid="maybe"),
            cap("wipe", "tasks.setStatus", id=ref("input.id"), status="cancelled", next="done"),
            ret(),
        ],
        {},
        {},
        "talos",
        "cancelled",
    ),
    (
        "a condition dropped",
        [cond("close", "done"), *BASE],
        BASE,
        {},
        {},
        "talos",
        "in more runs (v1: only when $input.urgent",
    ),
    (
        "saved state another run reads",
        [{"id": "keep", "type": "set", "target": "state.last", "value": "a"}, ret()],
        [{"id": "keep", "type": "set", "target": "state.last", "value": ref("input.id")}, ret()],
        {"state": {"fields": {"last": {"type": "string"}}, "maxBytes": 1024}},
        {"state": {"fields": {"last": {"type": "string"}}, "maxBytes": 1024}},
        "talos",
        "can save state.last with value computed from your input (v1: `a`)",
    ),
    (
        "a write moved before a read that feeds a write",
        [
            cap("read", "tasks.list", "open", limit=10),
            {
                **loop("each", [cap("copy", "notes.create", title=ref("t.title"), body="copied")]),
                "source": ref("open.items"),
                "itemVar": "t",
                "maxItems": 10,
            },
            cap("more", "tasks.create", title="Follow up"),
            ret(),
        ],
        [
            cap("more", "tasks.create", title="Follow up"),
            cap("read", "tasks.list", "open", limit=10),
            {
                **loop("each", [cap("copy", "notes.create", title=ref("t.title"), body="copied")]),
                "source": ref("open.items"),
                "itemVar": "t",
                "maxItems": 10,
            },
            ret(),
        ],
        {},
        {},
        "talos",
        "can call notes.create with title",
    ),
    (
        "private data posted where nothing left the device",
        [cap("read", "notes.list", "notes", limit=5), ret()],
        [
            cap("read", "notes.list", "notes", limit=5),
            cap(
                "post",
                "channel.send",
                channelId="general",
                content={"$template": "{{notes.items}}"},
            ),
            ret(),
        ],
        {},
        {},
        "talon",
        "sends notes (notes.list) to #general (v1: nothing left the device)",
    ),
    (
        "two calls needing the wider limit, one wide call before",
        [cap("a", "tasks.list", limit=1), cap("b", "tasks.list", limit=2), ret()],
        [cap("a", "tasks.list", limit=2), cap("b", "tasks.list", limit=2), ret()],
        {},
        {},
        "talos",
        "can call tasks.list up to 2 times a run (v1: once)",
    ),
    (
        "two narrow calls where one wide call was",
        [cap("a", "tasks.list", limit=2), ret()],
        [cap("a", "tasks.list", limit=1), cap("b", "tasks.list", limit=1), ret()],
        {},
        {},
        "talos",
        "can call tasks.list up to 2 times a run (v1: once)",
    ),
    (
        "a new trigger",
        BASE,
        BASE,
        {},
        {"triggers": [{"type": "schedule", "cron": "0 9 * * 1"}]},
        "talos",
        "starts by itself: schedule 0 9 * * 1",
    ),
]


@pytest.mark.parametrize(
    ("name", "v1", "v2", "x1", "x2", "target", "says"), GROWS, ids=[g[0] for g in GROWS]
)
def test_power_grown_one_way_is_never_no_new_power(
    name: str,
    v1: list[dict[str, Any]],
    v2: list[dict[str, Any]],
    x1: dict[str, Any],
    x2: dict[str, Any],
    target: str,
    says: str,
) -> None:
    found = judge(tool(v1, **x1), tool(v2, **x2), target)
    assert found.new_power, name
    assert found.headline != NO_NEW_POWER
    sentences = [g.sentence for g in found.gains]
    assert any(says in s for s in sentences), sentences
    for gain in found.to_json()["gains"]:
        assert set(gain) == {"node", "capability", "what", "was", "sentence", "witness"}
        assert gain["was"].startswith("v1: ")


def _renamed(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every node id (and every edge to it) renamed."""
    out = copy.deepcopy(nodes)
    for node in out:
        for key in ("id", "next", "then", "else"):
            if key in node:
                node[key] = f"renamed_{node[key]}"
    return out


SAME = [
    ("identical", BASE, BASE, {}, {}),
    ("reordered", BASE, [BASE[1], BASE[0], BASE[2]], {}, {}),
    ("renamed nodes", BASE, _renamed(BASE), {}, {}),
    ("text changed", BASE, BASE, {}, {"title": "Another title", "description": "New words."}),
    ("a step removed", BASE, [BASE[0], BASE[2]], {}, {}),
    (
        "a lower count",
        [loop("each", [cap("mark", "tasks.setStatus", id=ref("item"), status="done")], 20), ret()],
        [loop("each", [cap("mark", "tasks.setStatus", id=ref("item"), status="done")], 3), ret()],
        {},
        {},
    ),
    ("a condition added", BASE, [cond("close", "done"), *BASE], {}, {}),
    (
        "a branch removed",
        [
            cond("hard", "close"),
            cap("hard", "tasks.setStatus", id=ref("input.id"), status="cancelled", next="log"),
            *BASE,
        ],
        [cond("log", "close"), *BASE],
        {},
        {},
    ),
    (
        "a lower limit",
        [cap("r", "tasks.list", limit=50), ret()],
        [cap("r", "tasks.list", limit=5), ret()],
        {},
        {},
    ),
    (
        # issue 31: each v2 call needs its own v1 call (a matching), not the widest one twice
        "two narrowings renamed",
        [cap("n0", "tasks.list", limit=1), cap("n1", "tasks.list", limit=2), ret()],
        _renamed([cap("n0", "tasks.list", limit=1), cap("n1", "tasks.list", limit=2), ret()]),
        {},
        {},
    ),
    (
        "two narrowings swapped",
        [cap("n0", "tasks.list", limit=1), cap("n1", "tasks.list", limit=2), ret()],
        [cap("n0", "tasks.list", limit=2), cap("n1", "tasks.list", limit=1), ret()],
        {},
        {},
    ),
    (
        "one narrow call on each branch where one wide call was",
        [cap("r", "tasks.list", limit=2), ret()],
        [
            cond("a", "b"),
            cap("a", "tasks.list", limit=1, next="done"),
            cap("b", "tasks.list", limit=2, next="done"),
            ret(),
        ],
        {},
        {},
    ),
    (
        "privacy narrowed",
        [{**LLM, "requirements": {"privacy": "remote-allowed"}}, ret()],
        [LLM, ret()],
        {},
        {},
    ),
    (
        "a trigger removed",
        BASE,
        BASE,
        {"triggers": [{"type": "schedule", "cron": "0 9 * * 1"}]},
        {},
    ),
    (
        "a host removed",
        [web("ping"), ret()],
        [web("ping"), ret()],
        {"network": {"mode": "allowlist", "hosts": ["api.example.com", "b.example.com"]}},
        {"network": WEB},
    ),
]


@pytest.mark.parametrize(("name", "v1", "v2", "x1", "x2"), SAME, ids=[s[0] for s in SAME])
def test_reorder_rename_text_and_narrowing_read_no_new_power(
    name: str,
    v1: list[dict[str, Any]],
    v2: list[dict[str, Any]],
    x1: dict[str, Any],
    x2: dict[str, Any],
) -> None:
    target = "talon" if any(n.get("capability") == "net.http" for n in v1) else "talos"
    found = judge(tool(v1, **x1), tool(v2, **x2), target)
    assert not found.new_power, [g.sentence for g in found.gains]
    assert found.to_json() == {"newPower": False, "headline": NO_NEW_POWER, "gains": []}


def test_first_consent_has_no_verdict() -> None:
    assert verdict(None, checked(tool(BASE))) is None


def test_witness_comes_from_the_input_schema() -> None:
    """The gained status is set only for an enum value of the input: the witness finds it."""
    v2 = [cap("close", "tasks.setStatus", id=ref("input.id"), status=ref("input.status")), ret()]
    found = judge(tool(BASE), tool(v2))
    gain = next(g for g in found.gains if g.node == "close")
    assert gain.witness is not None and gain.witness["from"] == "inputSchema"
    assert gain.witness["input"]["id"] == "x"


def test_schema_inputs_try_enum_values_and_bounds() -> None:
    made = schema_inputs(
        {
            "type": "object",
            "properties": {
                "s": {"enum": ["a", "b"]},
                "n": {"type": "integer", "minimum": 2, "maximum": 9},
            },
        }
    )
    assert {"s": "a", "n": 2} in made and {"s": "b", "n": 2} in made and {"s": "a", "n": 9} in made


# --- the real CLI ---------------------------------------------------------------------------

MEASURED = Path(__file__).parent / "verdict"


def forgec(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *argv],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )


def test_measurement_one_through_the_cli(tmp_path: Path) -> None:
    """Issue 28, measurement 1: the proposal drops `role = 'user'` from the query, posts to
    #general instead of #team and raises the limit 20 → 50. The verdict says it first."""
    store = ["--store", str(tmp_path / "tools.db")]
    v1, v2 = MEASURED / "thread-relay.v1.forge", MEASURED / "thread-relay.v2.forge"
    assert forgec("tools", "install", str(v1), "--target", "talon", *store).returncode == 0
    assert forgec("tools", "enable", "thread-relay", "--yes", *store).returncode == 0
    assert forgec("tools", "install", str(v2), "--target", "talon", *store).returncode == 0

    done = forgec("tools", "diff", "thread-relay", "1", "2", *store)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("New power: this version can do")
    assert "can post to #general (v1: #team)" in done.stdout
    assert "runs another SQL query" in done.stdout and "role = 'user'" in done.stdout
    assert "up to 50 times a run (v1: 20 times)" in done.stdout
    assert done.stdout.index("New power") < done.stdout.index("What changed from v1")

    as_json = json.loads(
        forgec("tools", "diff", "thread-relay", "1", "2", *store, "--format", "json").stdout
    )
    assert as_json["verdict"]["newPower"] is True
    assert {"node", "capability", "what", "was"} <= set(as_json["verdict"]["gains"][0])

    # the enable prompt: the verdict first, above the card and the diff; the banner's reason
    enable = forgec("tools", "enable", "thread-relay", *store)
    assert enable.returncode == 1
    err = enable.stderr
    assert err.index("New power") < err.index("┌─") < err.index("What changed from v1")
    assert "This tool is R4" not in err
    assert "asks before every run: it sends your private data" in err
    assert "(it is R3)" in err

    enable = forgec("tools", "enable", "thread-relay", "--yes", *store, "--format", "json")
    assert json.loads(enable.stdout)["verdict"]["newPower"] is True

    # the same version again: nothing to compare, no new power from v2 to v2
    same = json.loads(
        forgec("tools", "diff", "thread-relay", "2", "2", *store, "--format", "json").stdout
    )
    assert same["verdict"] == {"newPower": False, "headline": NO_NEW_POWER, "gains": []}

    # versions: dates, and the truth about consent for a tool that asks every run
    versions = forgec("tools", "versions", "thread-relay", *store)
    assert "asks every run; turned on 20" in versions.stdout
    assert "installed 20" in versions.stdout
    rows = json.loads(
        forgec("tools", "versions", "thread-relay", *store, "--format", "json").stdout
    )
    assert all(r["alwaysAsks"] and r["installedAt"] and r["consentGivenAt"] for r in rows)


def test_review_shows_the_verdict_first(tmp_path: Path) -> None:
    from forgec.store import Store

    db = tmp_path / "tools.db"
    store = ["--store", str(db)]
    v1 = tmp_path / "v1.talostool"
    v1.write_bytes(orjson.dumps(tool(BASE)))
    assert forgec("tools", "install", str(v1), *store).returncode == 0
    proposal = tool([*BASE[:2], cap("more", "tasks.create", title="Follow up"), ret()])
    with Store(db) as s:
        s.install(orjson.dumps(proposal), path=None, author="model")
    review = forgec("tools", "review", "verdict.demo", *store)
    assert review.returncode == 0, review.stderr
    assert review.stdout.startswith("New power: this version can do 1 thing v1 could not.")
    assert "can call tasks.create (v1: never called tasks.create)" in review.stdout
    as_json = json.loads(
        forgec("tools", "review", "verdict.demo", *store, "--format", "json").stdout
    )
    assert as_json["verdict"] == as_json["diff"]["verdict"]
    assert as_json["verdict"]["gains"][0]["node"] == "more"


def test_witness_comes_from_a_test_case_first() -> None:
    """A §22 case (with its seeded host) is tried before the schema's inputs."""
    from forgec.testing import Case

    v2 = [cap("close", "tasks.setStatus", id=ref("input.id"), status=ref("input.status")), ret()]
    case = Case(name="cancel one", input={"id": "task-1", "status": "cancelled"})
    found = verdict(checked(tool(BASE)), checked(tool(v2)), was="v1", cases=[case])
    assert found is not None
    gain = next(g for g in found.gains if g.node == "close")
    assert gain.witness == {
        "input": {"id": "task-1", "status": "cancelled"},
        "from": "test case cancel one",
    }


def test_readme_shows_the_measurement_one_verdict_as_the_cli_prints_it(tmp_path: Path) -> None:
    """README's store section: the verdict above the diff, exactly what `tools diff` prints."""
    from forgec.store import Store

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    shown = readme.split("$ forgec tools diff thread-relay 1 p1\n", 1)[1].split("```", 1)[0]
    db = tmp_path / "tools.db"
    store = ["--store", str(db)]
    v1, v2 = MEASURED / "thread-relay.v1.forge", MEASURED / "thread-relay.v2.forge"
    assert forgec("tools", "install", str(v1), "--target", "talon", *store).returncode == 0
    with Store(db) as s:
        s.install(v2.read_bytes(), path=str(v2), target="talon", author="model")
    done = forgec("tools", "diff", "thread-relay", "1", "p1", *store)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown


def test_forgec_test_against_gives_the_verdict(tmp_path: Path) -> None:
    """`forgec test --against` (SPEC §22) reads the same verdict, in text and JSON."""
    examples = Path(__file__).parent.parent / "examples"
    tool_text = (examples / "task-triage.forge").read_text(encoding="utf-8")
    changed = tool_text.replace('"URGENT: {{input.title}}"', '"URGENT!! {{input.title}}"')
    assert changed != tool_text
    (tmp_path / "task-triage.forge").write_text(changed, encoding="utf-8")
    tests = (examples / "task-triage.tests.toml").read_text(encoding="utf-8")
    (tmp_path / "task-triage.tests.toml").write_text(
        tests.replace("URGENT: Server down", "URGENT!! Server down"), encoding="utf-8"
    )
    against = str(examples / "task-triage.forge")
    done = forgec(
        "test", str(tmp_path / "task-triage.tests.toml"), "--against", against, "--format", "json"
    )
    outcome = json.loads(done.stdout)
    found = outcome["files"][0]["against"]["verdict"]
    assert found["newPower"] is True
    assert any(
        g["what"].endswith("`URGENT!! {{input.title}}`")
        and g["was"].endswith(": `URGENT: {{input.title}}`")
        for g in found["gains"]
    ), found
    text = forgec("test", str(tmp_path / "task-triage.tests.toml"), "--against", against)
    assert "New power: this version can do" in text.stdout


def test_a_gain_never_carries_a_raw_control_or_bidi_character() -> None:
    """A proposal's values are data: its sentences escape them (SPEC §14), in JSON and text."""
    from forgec.render.diff import render_verdict

    evil = "\x1b[2J\u202eevil"
    v2 = [BASE[0], cap("log", "notes.create", title=evil, body="closed"), ret()]
    found = judge(tool(BASE), tool(v2)).to_json()
    text = json.dumps(found, ensure_ascii=False) + render_verdict(found)
    assert "\x1b" not in text and "\u202e" not in text
    assert any("\\x1b[2J\\u202eevil" in g["sentence"] for g in found["gains"])


def _digest(tmp_path: Path, limit: int, version: int) -> Path:
    examples = Path(__file__).parent.parent / "examples"
    text = (examples / "talon-db-digest.forge").read_text(encoding="utf-8")
    assert "limit: 50" in text and "parent null" in text
    text = text.replace("limit: 50", f"limit: {limit}")
    if version > 1:
        text = text.replace("version 1", f"version {version}").replace(
            "parent null", f"parent {version - 1}"
        )
    path = tmp_path / f"digest.v{version}.forge"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_narrowed_limit_reads_no_new_power_through_the_cli(tmp_path: Path) -> None:
    """talon-db-digest with `limit: 20` → `limit: 10`: the summary and the post are computed
    from the same sources (SPEC §23): "No new power". Raised again (10 → 20) it is a gain."""
    store = ["--store", str(tmp_path / "tools.db")]
    for version, limit in ((1, 20), (2, 10), (3, 20)):
        path = _digest(tmp_path, limit, version)
        done = forgec("tools", "install", str(path), "--target", "talon", *store)
        assert done.returncode == 0, done.stderr
    done = forgec("tools", "diff", "talon-db-digest", "1", "2", *store)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == NO_NEW_POWER
    assert "input.limit 20 → 10" in done.stdout  # §14's diff still shows the change
    as_json = json.loads(
        forgec("tools", "diff", "talon-db-digest", "1", "2", *store, "--format", "json").stdout
    )
    assert as_json["verdict"] == {"newPower": False, "headline": NO_NEW_POWER, "gains": []}
    raised = forgec("tools", "diff", "talon-db-digest", "2", "3", *store)
    assert raised.stdout.startswith("New power: this version can do 1 thing v2 could not.")
    assert "can read up to 20 rows a query (v2: 10)" in raised.stdout


def test_a_literal_newline_reads_as_a_line_break_sign_never_an_escape() -> None:
    """A gain's sentence shows a literal's newline as ⏎, in text and JSON (issue 28)."""
    from forgec.render.diff import render_verdict

    v2 = [BASE[0], cap("log", "notes.create", title="Closed\nby bot", body="closed"), ret()]
    found = judge(tool(BASE), tool(v2)).to_json()
    shown = [g["sentence"] for g in found["gains"]]
    assert any("`Closed⏎by bot`" in s for s in shown), shown
    text = json.dumps(found, ensure_ascii=False) + render_verdict(found)
    assert "\\x0a" not in text and "Closed\nby" not in text


def test_every_capability_row_s_review_words_name_its_own_fields() -> None:
    """The review's words are row data (SPEC §23): each phrase names only fields of its row."""
    import re

    from forgec.ir.capabilities import ROWS

    reserved = {"", "sends", "#", "?"}
    for row in ROWS:
        fields = set(row.shape.fields)
        for key, text in row.review_words.items():
            assert key in reserved or key in fields, (row.name, key)
            named = set(re.findall(r"\{(\w+)\}", text)) - {"data"}
            assert named <= fields, (row.name, key, named)
    assert any(r.review_words for r in ROWS)
