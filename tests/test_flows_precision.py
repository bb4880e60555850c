"""SPEC §15 precision: flows that must NOT be reported, each beside the one-edit variant that
must, so a test passes only when the analysis tells the two apart (none of them can pass on
an analysis that reports everything, nor on one that reports nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import orjson

import forgec

PRIVATE_OUT = ("private:memory.access", "egress:api.example.com")
UNTRUSTED_WRITE = ("external:news.example.com", "write:notes.create")


def tool(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "schema": "talos.local-tool.v1",
        "id": "precision.tool",
        "version": 1,
        "title": "Precision",
        "description": "A tool of the precision suite.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "allowlist", "hosts": ["api.example.com", "news.example.com"]},
        "credentialRequirements": [],
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 64, "nodes": nodes},
        **extra,
    }


def pairs(doc: dict[str, Any]) -> set[tuple[str, str]]:
    report = forgec.check(orjson.dumps(doc), target="talon")
    assert report.ok, [d.message for d in report.errors]
    return {(f.source, f.sink) for f in report.facts.flows}


RECALL = {
    "id": "recall",
    "type": "capability",
    "capability": "memory.access",
    "input": {"operation": "list"},
    "target": "items",
    "next": "pick",
}


def post(body: Any, nid: str = "post", nxt: str = "done") -> dict[str, Any]:
    return {
        "id": nid,
        "type": "capability",
        "capability": "net.http",
        "input": {"method": "POST", "url": "https://api.example.com/in", "body": body},
        "next": nxt,
    }


DONE = {"id": "done", "type": "return", "value": {"ok": True}}


def test_private_value_used_only_in_a_branch_that_returns_does_not_egress() -> None:
    def flow(show: Any) -> dict[str, Any]:
        return tool(
            [
                RECALL,
                {
                    "id": "pick",
                    "type": "if",
                    "condition": {"op": "truthy", "left": {"$ref": "input.show"}},
                    "then": "show",
                    "else": "post",
                },
                {"id": "show", "type": "return", "value": show},
                post({"$ref": "input.text"}),
                DONE,
            ]
        )

    quiet = flow({"$ref": "items"})
    assert PRIVATE_OUT not in pairs(quiet)
    assert ("private:memory.access", "output") in pairs(quiet)
    # the same private value on the other branch does leave
    leaky = flow({"n": 1})
    leaky["flow"]["nodes"][3] = post({"$template": "{{items}}"})
    assert PRIVATE_OUT in pairs(leaky)


def test_a_value_overwritten_before_the_sink_does_not_egress() -> None:
    def flow(second: Any) -> dict[str, Any]:
        return tool(
            [
                {**RECALL, "next": "keep"},
                {"id": "keep", "type": "set", "target": "x", "value": {"$ref": "items"},
                 "next": "pick"},
                {"id": "pick", "type": "set", "target": "x", "value": second, "next": "post"},
                post({"$template": "{{x}}"}),
                DONE,
            ]
        )  # fmt: skip

    assert PRIVATE_OUT not in pairs(flow({"$ref": "input.text"}))
    assert PRIVATE_OUT in pairs(flow({"$template": "{{x}} and more"}))  # x kept, not replaced


def test_a_field_that_is_not_the_one_sent_does_not_egress() -> None:
    def flow(sent: str) -> dict[str, Any]:
        return tool(
            [
                {**RECALL, "next": "pack"},
                {"id": "pack", "type": "set", "target": "pack",
                 "value": {"secret": {"$ref": "items"}, "public": {"$ref": "input.text"},
                           "list": [{"$ref": "input.text"}, {"$ref": "items"}]},
                 "next": "post"},
                post({"$ref": sent}),
                DONE,
            ]
        )  # fmt: skip

    assert PRIVATE_OUT not in pairs(flow("pack.public"))
    assert PRIVATE_OUT not in pairs(flow("pack.list[0]"))
    assert PRIVATE_OUT in pairs(flow("pack.secret"))
    assert PRIVATE_OUT in pairs(flow("pack.list[1]"))
    assert PRIVATE_OUT in pairs(flow("pack"))


def test_control_ends_where_the_branches_join() -> None:
    fetch = {
        "id": "fetch",
        "type": "capability",
        "capability": "net.http",
        "input": {"method": "GET", "url": "https://news.example.com/"},
        "target": "page",
        "next": "check",
    }

    def flow(join_then: str) -> dict[str, Any]:
        return tool(
            [
                fetch,
                {"id": "check", "type": "if",
                 "condition": {"op": "contains", "left": {"$ref": "page.body"}, "right": "x"},
                 "then": join_then, "else": "save"},
                {"id": "tag", "type": "set", "target": "t", "value": "seen", "next": "save"},
                {"id": "save", "type": "capability", "capability": "notes.create",
                 "input": {"title": "t", "body": {"$ref": "input.text"}}, "next": "done"},
                DONE,
            ]
        )  # fmt: skip

    # both branches meet at `save`: the page decides nothing about it
    assert UNTRUSTED_WRITE not in pairs(flow("save"))
    # the page decides whether `tag` runs, and `tag` feeds nothing: still none at `save`
    assert UNTRUSTED_WRITE not in pairs(flow("tag"))
    # but a branch that ends the run makes every later step depend on the page
    ended = flow("done")
    ended["flow"]["nodes"][1]["then"] = "stop"
    ended["flow"]["nodes"].append({"id": "stop", "type": "return", "value": None})
    assert UNTRUSTED_WRITE in pairs(ended)


def test_a_loop_source_steers_its_body_but_not_what_follows() -> None:
    def flow(after_body: bool) -> dict[str, Any]:
        body: list[dict[str, Any]] = [
            {"id": "note", "type": "set", "target": "seen", "value": {"$ref": "line"}},
        ]
        if after_body:
            body[0]["next"] = "save"
            body.append({"id": "save", "type": "capability", "capability": "notes.create",
                         "input": {"title": "t", "body": {"$ref": "input.text"}}})  # fmt: skip
        nodes = [
            {"id": "fetch", "type": "capability", "capability": "net.http",
             "input": {"method": "GET", "url": "https://news.example.com/"}, "target": "page",
             "next": "split"},
            {"id": "split", "type": "llm", "op": "extract", "input": {"$ref": "page.body"},
             "target": "lines", "next": "each"},
            {"id": "each", "type": "foreach", "source": {"$ref": "lines"}, "itemVar": "line",
             "maxItems": 5, "body": body, "next": "final"},
            {"id": "final", "type": "capability", "capability": "tasks.create",
             "input": {"title": {"$ref": "input.text"}}, "next": "done"},
            DONE,
        ]  # fmt: skip
        return tool(nodes)

    inside = pairs(flow(True))
    assert UNTRUSTED_WRITE in inside  # the page decides how often `save` runs
    assert UNTRUSTED_WRITE not in pairs(flow(False))
    # SPEC §15 "Failure is control": the page may make `split` fail, or give more than five
    # lines (RUN_LOOP_BOUND), and so decide whether `final` runs at all
    steered = [f for f in forgec.check(orjson.dumps(flow(False)), target="talon").facts.flows
               if f.node == "final" and f.source.startswith("external:")]  # fmt: skip
    assert steered and all(f.via == "control" for f in steered)
    assert any("split" in f.path or "each" in f.path for f in steered)


def test_what_follows_a_loop_that_cannot_fail_is_not_steered_by_its_source() -> None:
    def flow(source: Any) -> dict[str, Any]:
        body = [{"id": "note", "type": "set", "target": "seen", "value": {"$ref": "line"}}]
        return tool([
            {"id": "fetch", "type": "capability", "capability": "net.http",
             "input": {"method": "GET", "url": "https://news.example.com/"}, "target": "page",
             "next": "each"},
            {"id": "each", "type": "foreach", "source": source, "itemVar": "line",
             "maxItems": 5, "body": body, "next": "final"},
            {"id": "final", "type": "capability", "capability": "tasks.create",
             "input": {"title": {"$ref": "input.text"}}, "next": "done"},
            DONE,
        ])  # fmt: skip

    after = ("external:news.example.com", "write:tasks.create")
    # a literal list: its length is fixed and `page.body` is there by net.http's declared shape
    fixed = pairs(flow([{"$ref": "page.body"}, {"$ref": "page.status"}]))
    assert after not in fixed
    # a list the page chose may be too long (or not a list): it decides whether `final` runs
    assert after in pairs(flow({"$ref": "page.headers.items"}))


def test_inspect_json_lists_the_flows_through_the_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.talostool"
    doc = tool([{**RECALL, "next": "post"}, post({"$template": "{{items}}"}), DONE])
    path.write_text(json.dumps(doc))
    done = subprocess.run(
        [sys.executable, "-m", "forgec", "inspect", "--target", "talon", "--format", "json",
         str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    flows = json.loads(done.stdout)["flows"]
    assert {
        "source": "private:memory.access",
        "sink": "egress:api.example.com",
        "node": "post",
        "argument": "body",
        "via": "data",
        "path": ["recall", "post"],
    } in flows
    assert all(set(f) == {"source", "sink", "node", "argument", "via", "path"} for f in flows)


def test_rows_other_people_write_are_untrusted_and_the_tools_own_rows_are_not() -> None:
    def flow(sql: Any) -> dict[str, Any]:
        return tool(
            [
                {"id": "q", "type": "capability", "capability": "db.query",
                 "input": {"sql": sql}, "target": "rows", "next": "save"},
                {"id": "save", "type": "capability", "capability": "notes.create",
                 "input": {"title": "t", "body": {"$template": "{{rows.rows}}"}},
                 "next": "done"},
                DONE,
            ]
        )  # fmt: skip

    talon = ("external:talon", "write:notes.create")
    assert talon in pairs(flow("SELECT content FROM messages"))
    assert talon in pairs(flow("SELECT title FROM threads"))
    assert talon not in pairs(flow("SELECT key, value FROM memory_items"))
    assert talon in pairs(flow({"$template": "SELECT * FROM {{input.table}}"}))  # computed


def test_a_sub_agents_answer_is_untrusted() -> None:
    def flow(capability: str, nid: str = "ask") -> dict[str, Any]:
        inputs = {
            "subagent.invoke": {"name": "researcher", "input": {"q": "hi"}},
            "memory.access": {"operation": "list"},
        }
        return tool(
            [
                {"id": nid, "type": "capability", "capability": capability,
                 "input": inputs[capability], "target": "answer", "next": "save"},
                {"id": "save", "type": "capability", "capability": "notes.create",
                 "input": {"title": "t", "body": {"$template": "{{answer}}"}}, "next": "done"},
                DONE,
            ]
        )  # fmt: skip

    talon = ("external:talon", "write:notes.create")
    assert talon in pairs(flow("subagent.invoke"))
    assert talon not in pairs(flow("memory.access"))
