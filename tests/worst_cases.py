# ruff: noqa: UP031  (templates spell `{{name}}`: %-formatting reads better than doubled braces)
"""Adversarial inputs within the limits (SPEC §16 "The checker is bounded too"), for the
worst-case search of `tests/test_check_worst_case.py` and the figures of docs/performance.md.

Each family builds one input from two sizes (`n`, `k`) and shrinks `n` until the input fits
the limits (a 64 KiB manifest, a 256 KiB `.forge` text; 64 top-level nodes, 16 per loop body).
The families aim at the costs each pass could grow by: long chains of `set`s that double a
value (folding, value size), wide and nested loops, many references and templates
(references, flows), branch diamonds (every path), deep schemas, many hosts, credentials,
cron triggers and long SQL (the catalog checks), long high-entropy strings (the secret
scanner), flows from many private sources to many sinks, and `.forge` texts at the size limit.

`python tests/worst_cases.py` checks the largest member of every family in this process and
prints each one's check time (the slowest goes in docs/performance.md).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

import orjson

MANIFEST_LIMIT = 65_536
FORGE_LIMIT = 262_144
TOP_NODES = 64
BODY_NODES = 16
SQL_LIMIT = 16_384  # db.query's `sql`

Built = tuple[bytes, str, str]  # (source, path, target)


def base(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "worst.case",
        "version": 1,
        "title": "Worst case",
        "description": "An input built to cost the checker as much as the limits allow.",
        "createdAt": "2026-12-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {
            "type": "object",
            "properties": {"items": {"type": "array"}, "q": {"type": "string"}},
        },
        "outputSchema": {},
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 256, "nodes": nodes},
    }
    m.update(extra)
    return m


def _chain(nodes: list[dict[str, Any]], last: str = "done") -> list[dict[str, Any]]:
    for i, node in enumerate(nodes):
        if node.get("type") not in ("if", "return", "fail"):
            node["next"] = nodes[i + 1]["id"] if i + 1 < len(nodes) else last
    return nodes


def _ret(value: Any, nid: str = "done") -> dict[str, Any]:
    return {"id": nid, "type": "return", "value": value}


# -- families: (n, k) -> manifest dict (or .forge text) --------------------------------------


def fold_chain(n: int, k: int) -> dict[str, Any]:
    """Issue 17: v_i = "{{v_i-1}}" written 1+k times, so each link multiplies the value."""
    n = min(n, TOP_NODES - 2)
    reps = 1 + min(k, 8)
    sets = [{"id": "s0", "type": "set", "target": "v0", "value": "ab"}]
    for i in range(1, n + 1):
        text = "".join("{{v%d}}" % (i - 1) for _ in range(reps))
        sets.append({"id": f"s{i}", "type": "set", "target": f"v{i}", "value": {"$template": text}})
    return base([*_chain(sets), _ret({"$template": "token {{v%d}}" % n})])


def shared_chain(n: int, k: int) -> dict[str, Any]:
    """Lists (k odd) or objects (k even) that hold the previous value twice: exponential
    sharing, read by a template and compared at the end."""
    n = min(n, TOP_NODES - 3)
    sets: list[dict[str, Any]] = [{"id": "s0", "type": "set", "target": "v0", "value": [1]}]
    for i in range(1, n + 1):
        ref = {"$ref": f"v{i - 1}"}
        value: Any = [ref, ref] if k % 2 else {"a": ref, "b": ref}
        sets.append({"id": f"s{i}", "type": "set", "target": f"v{i}", "value": value})
    cmp = {
        "id": "cmp",
        "type": "if",
        "condition": {"op": "eq", "left": {"$ref": f"v{n}"}, "right": {"$ref": f"v{n - 1}"}},
        "then": "done",
        "else": "done",
    }
    return base([*_chain(sets, "cmp"), cmp, _ret({"$template": "{{v%d}}" % n})])


def loops(n: int, k: int) -> dict[str, Any]:
    """As many loops with full bodies as the 64 nodes allow: accumulating templates over
    literal lists, items and indexes folded in every combination."""
    body_len = 1 + k % BODY_NODES
    count = max(1, min(n, (TOP_NODES - 2) // (body_len + 1)))
    width = 1 + min(n, 15)
    nodes: list[dict[str, Any]] = [{"id": "init", "type": "set", "target": "acc", "value": ""}]
    for i in range(count):
        body = []
        for j in range(body_len):
            text = "{{acc}}{{it%d}}{{ix%d}}" % (i, i)
            if j >= 2 and j % 2 == 0:
                text += "{{t%d_%d}}" % (i, j - 2)
            body.append(
                {
                    "id": f"b{i}_{j}",
                    "type": "set",
                    "target": "acc" if j % 2 else f"t{i}_{j}",
                    "value": {"$template": text},
                }
            )
        for j in range(body_len - 1):
            body[j]["next"] = body[j + 1]["id"]
        nodes.append(
            {
                "id": f"l{i}",
                "type": "foreach",
                "source": [f"p{x}-" * 3 for x in range(width)]
                if i % 2 == 0
                else {"$ref": "input.items"},
                "itemVar": f"it{i}",
                "indexVar": f"ix{i}",
                "maxItems": 100,
                "body": body,
            }
        )
    return base([*_chain(nodes), _ret({"$ref": "acc"})])


def references(n: int, k: int) -> dict[str, Any]:
    """Wide objects of references and templates with many placeholders, in every step."""
    n = min(n, TOP_NODES - 1)
    fields = 4 + k * 8
    nodes = []
    for i in range(n):
        prev = f"q{i - 1}" if i else "input.q"
        value = {
            f"f{j}": {"$ref": f"input.items[{j}].a.b"}
            if j % 3 == 0
            else {"$template": ("{{%s}}{{input.q}}" % prev) * (1 + j % 4)}
            if j % 3 == 1
            else [{"$ref": prev}, {"$ref": "input.q"}]
            for j in range(fields)
        }
        nodes.append({"id": f"s{i}", "type": "set", "target": f"q{i}", "value": value})
    return base([*_chain(nodes), _ret({"$ref": f"q{n - 1}"})])


def diamonds(n: int, k: int) -> dict[str, Any]:
    """A chain of if-diamonds: 2^n paths, each branch writing (or not) a variable read later."""
    k = min(k, 8)
    n = min(n, (TOP_NODES - 2 - k) // 3)
    nodes: list[dict[str, Any]] = [
        {"id": f"i{v}", "type": "set", "target": f"v{v}", "value": v, "next": f"i{v + 1}"}
        for v in range(k + 1)
    ]
    nodes[-1]["next"] = "c0"
    for i in range(n):
        nxt = f"c{i + 1}" if i + 1 < n else "done"
        nodes += [
            {
                "id": f"c{i}",
                "type": "if",
                "condition": {"op": "truthy", "left": {"$ref": "input.q"}},
                "then": f"a{i}",
                "else": f"b{i}",
            },
            {"id": f"a{i}", "type": "set", "target": f"v{i % (k + 1)}", "value": i, "next": nxt},
            {
                "id": f"b{i}",
                "type": "set",
                "target": "w",
                "value": {"$template": "{{v%d}}" % (i % (k + 1))},
                "next": nxt,
            },
        ]
    return base([*nodes, _ret({"w": {"$ref": "w"}, "v": {"$ref": "v0"}})])


def deep_schema(n: int, k: int) -> dict[str, Any]:
    """Schemas nested as deep as the limits let, wide at every level, in input, output and
    state, with defaults and enums."""
    depth = min(1 + k, 6)  # the top-level object and its property are two of the 8 levels

    def schema(d: int) -> dict[str, Any]:
        if d == 0:
            return {"type": "string", "enum": [f"e{x}" for x in range(8)], "default": "e1"}
        return {
            "type": "object",
            "properties": {f"p{x}": schema(d - 1) for x in range(2)},
            "required": ["p0"],
        }

    props = {f"f{x}": schema(depth) for x in range(max(1, n // 50))}
    m = base([_ret({"$ref": "input"})])
    m["inputSchema"] = {"type": "object", "properties": props}
    m["outputSchema"] = {"type": "object", "properties": props}
    m["state"] = {"fields": dict(list(props.items())[:4]), "maxBytes": 65536}
    return m


def hosts(n: int, k: int) -> dict[str, Any]:
    """Many allowlisted hosts, credentials scoped to them, and net.http steps to each."""
    count = max(1, n)
    names = [f"h{x}.example{x % 7}.com" for x in range(count)]
    creds = [
        {"id": f"cred{x}", "purpose": "An API key for one host.", "hosts": [names[x]]}
        for x in range(min(count, 16 * k))
    ]
    nodes = [
        {
            "id": f"r{x}",
            "type": "capability",
            "capability": "net.http",
            "input": {
                "method": "POST",
                "url": f"https://{names[x % count]}/api/v1/items?q=1&x={x}",
                "headers": {"Authorization": {"$credential": creds[x % len(creds)]["id"]}}
                if creds
                else {},
                "body": {"$template": "{{input.q}} {{%s}}" % (f"r{x - 1}" if x else "input")},
                "timeoutMs": 1000,
            },
            "target": f"r{x}",
        }
        for x in range(min(count, TOP_NODES - 1))
    ]
    return base(
        [*_chain(nodes), _ret({"$ref": "r0"})],
        network={"mode": "allowlist", "hosts": names},
        credentialRequirements=creds,
    )


def catalog_checks(n: int, k: int) -> dict[str, Any]:
    """Long SQL in db.query steps and many cron triggers and schedule.manage steps (talon)."""
    terms = max(1, n)
    while True:  # as long as db.query's SQL may be
        cols = ", ".join(f"content AS c{x}" for x in range(terms))
        where = " OR ".join(f"content LIKE '%{x}%'" for x in range(terms))
        sql = f"SELECT {cols} FROM messages WHERE {where} ORDER BY created_at DESC"
        if len(sql) <= SQL_LIMIT or terms == 1:
            break
        terms = max(1, int(terms * 0.9))
    cron = "1-59/2,3,5,7 */3,1-23/5 1-31/2,15 1-12/3,JAN,DEC MON-FRI,SUN"
    nodes = [
        {
            "id": f"q{x}",
            "type": "capability",
            "capability": "db.query",
            "input": {"sql": sql, "limit": 50},
            "target": f"r{x}",
        }
        for x in range(min(1 + k, 8))
    ] + [
        {
            "id": f"sc{x}",
            "type": "capability",
            "capability": "schedule.manage",
            "input": {
                "action": "create",
                "cronExpr": cron,
                "prompt": "Summarise the day.",
                "label": f"s{x}",
            },
            "target": f"x{x}",
        }
        for x in range(min(k * 4, 40))
    ]
    triggers = [{"type": "schedule", "cron": cron} for _ in range(min(n, 200))]
    return base([*_chain(nodes), _ret({"$ref": "r0"})], triggers=triggers)


_rng = random.Random(17)
_B64 = string.ascii_letters + string.digits + "+/"


def secret_scan(n: int, k: int) -> dict[str, Any]:
    """Long high-entropy strings under names a secret would have, in every kind of place."""
    blob = "".join(_rng.choice(_B64) for _ in range(max(8, n * 8)))
    nodes = [
        {
            "id": f"s{x}",
            "type": "set",
            "target": f"api_key_{x}",
            "value": {"token": blob[x:], "password": {"$template": "{{input.q}}" + blob[: x * k]}},
        }
        for x in range(min(16, 1 + k * 2))
    ]
    return base([*_chain(nodes), _ret({"$ref": "api_key_0"})])


def flows(n: int, k: int) -> dict[str, Any]:
    """Many private sources, model steps and egress sinks, mixed through sets and branches
    (talon), no loop doubling (that one is issue 17's regression test)."""
    n = min(n, (TOP_NODES - 1) // 3)
    nodes: list[dict[str, Any]] = []
    for x in range(n):
        nodes += [
            {
                "id": f"n{x}",
                "type": "capability",
                "capability": ["notes.list", "tasks.list", "memory.search"][x % 3],
                "input": {
                    "query": {"$template": "{{input.q}}{{%s}}" % (f"m{x - 1}" if x else "input.q")}
                }
                if x % 3 != 1
                else {},
                "target": f"p{x}",
            },
            {
                "id": f"m{x}",
                "type": "llm",
                "op": "summarize",
                "input": {"a": {"$ref": f"p{x}"}, "b": {"$ref": f"m{x - 1}" if x else "input"}},
                "target": f"m{x}",
            },
            {
                "id": f"e{x}",
                "type": "capability",
                "capability": "channel.send",
                "input": {"channelId": "team", "content": {"$template": "{{m%d}}" % x}},
                "target": f"o{x}",
            },
        ]
    for node in nodes:
        if node["capability" if "capability" in node else "op"] == "memory.search":
            node["input"] = {"query": {"$template": "{{input.q}}"}, "limit": 5}
    return base([*_chain(nodes), _ret({"$ref": f"m{n - 1}"})])


def forge_text(n: int, k: int) -> str:
    """A `.forge` text at the size limit: many steps, long comments and strings."""
    steps = min(max(2, n), TOP_NODES - 1)
    lines = [
        "tool worst.forge {",
        "  version 1",
        '  title "Worst forge"',
        '  description "A long text."',
        '  created "2026-12-01T00:00:00Z"',
        "  parent null",
        "  network forbidden",
        "  flow entry s0 max 256 {",
    ]
    for i in range(steps):
        nxt = f"s{i + 1}" if i + 1 < steps else "done"
        prev = f"v{i - 1}" if i else "input.q"
        lines.append(f'    s{i}: v{i} = "{{{{{prev}}}}}{"x" * (k * 8)}" -> {nxt}')
    lines.append(f"    done: return $v{steps - 1}")
    lines += ["  }", "}"]
    text = "\n".join(lines) + "\n"
    pad = FORGE_LIMIT - len(text.encode()) - 1
    comment = "# " + "padding " * 16 + "\n"
    if pad > 0:
        text = comment * (pad // len(comment)) + text
    return text


# -- issue 30: shapes the search had not tried (SPEC §24: renderers and suggestions too) --------


def _similar(i: int) -> str:
    """Names that differ in one or two characters: every one is near every other."""
    return "field_%04d_value" % i


def many_diagnostics(n: int, k: int) -> bytes:
    """Minified (one 64 KiB line) with an error per few bytes: every capability step's input
    holds many unknown fields, each a diagnostic with a "did you mean" and a source excerpt cut
    from the same long line."""
    steps = min(max(1, n // 50), TOP_NODES - 1)
    per = 1 + n // max(steps, 1)
    nodes = [
        {
            "id": f"c{i}",
            "type": "capability",
            "capability": "tasks.create",
            "input": {"title": "t", **{"titel%d" % j: j for j in range(per)}},
            "target": f"r{i}",
        }
        for i in range(steps)
    ]
    return orjson.dumps(base([*_chain(nodes), _ret(k)]))


def similar_names(n: int, k: int) -> dict[str, Any]:
    """Thousands of near-identical state fields and reads of near-misses of them in templates:
    each undefined read asks "did you mean" among all the fields."""
    fields = {_similar(i): {"type": "string"} for i in range(n)}
    reads = "".join("{{state.%s}}" % _similar(i).replace("value", "valeu") for i in range(n))
    nodes = [
        {"id": f"s{i}", "type": "set", "target": f"v{i}", "value": {"$template": reads}}
        for i in range(min(k, 8))
    ]
    m = base([*_chain(nodes), _ret(1)])
    m["state"] = {"fields": fields, "maxBytes": 65536}
    return m


def repeated_keys(n: int, k: int) -> bytes:
    """One JSON object whose keys repeat thousands of times (the loader's duplicate proof)."""
    m = base([_ret(1)])
    text = orjson.dumps(m)
    member = b'"title":"Worst case",' if k % 2 else b'"x%d":1,'
    repeated = b"".join(member.replace(b"%d", str(i % 7).encode()) for i in range(n * 4))
    return b"{" + repeated + text[1:]


def long_lines_forge(n: int, k: int) -> str:
    """A `.forge` text at the size limit whose steps are few very long lines, each with an
    error near its end (an unknown capability, a misspelt field): excerpts of long lines."""
    steps = min(max(2, k * 4), TOP_NODES - 1)
    lines = [
        "tool worst.long {",
        "  version 1",
        '  title "Long lines"',
        '  description "Very long lines."',
        '  created "2026-12-01T00:00:00Z"',
        "  parent null",
        "  network forbidden",
        "  flow entry s0 max 256 {",
    ]
    width = max(80, (FORGE_LIMIT - 4000) // steps - 120)
    for i in range(steps):
        nxt = f"s{i + 1}" if i + 1 < steps else "done"
        pad = " " * width  # blank in the text, nothing in the compiled manifest
        lines.append(
            f'    s{i}: r{i} = call tasks.craete {{title: "t",{pad}titel: 1, "x\\u202e": "y"}}'
            f" -> {nxt}"
        )
    lines.append("    done: return 1")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def forge_many_errors(n: int, k: int) -> str:
    """The largest `.forge` text made of errors: undefined near-miss references in every step,
    many per line, and a misspelt capability on each."""
    steps = TOP_NODES - 1
    per = max(1, min(n // steps, 50))  # the compiled manifest stays within 64 KiB
    lines = [
        "tool worst.errors {",
        "  version 1",
        '  title "Errors"',
        '  description "Errors everywhere."',
        '  created "2026-12-01T00:00:00Z"',
        "  parent null",
        "  network forbidden",
        "  flow entry s0 max 256 {",
    ]
    for i in range(steps):
        nxt = f"s{i + 1}" if i + 1 < steps else "done"
        text = "".join("{{%s}}" % _similar(j)[: 10 + j % 5] for j in range(per))
        lines.append(f'    s{i}: {_similar(i)} = "{text}" -> {nxt}')
    lines.append("    done: return 1")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


FAMILIES: dict[str, tuple[Callable[[int, int], Any], str]] = {
    "fold_chain": (fold_chain, "talos"),
    "shared_chain": (shared_chain, "talos"),
    "loops": (loops, "talos"),
    "references": (references, "talos"),
    "diamonds": (diamonds, "talos"),
    "deep_schema": (deep_schema, "talos"),
    "hosts": (hosts, "talon"),
    "catalog_checks": (catalog_checks, "talon"),
    "secret_scan": (secret_scan, "talos"),
    "flows": (flows, "talon"),
    "forge_text": (forge_text, "talon"),
    "many_diagnostics": (many_diagnostics, "talos"),
    "similar_names": (similar_names, "talos"),
    "repeated_keys": (repeated_keys, "talos"),
    "long_lines_forge": (long_lines_forge, "talos"),
    "forge_many_errors": (forge_many_errors, "talos"),
}


def build(family: str, n: int, k: int) -> Built:
    """FAMILY's input for (N, K), N shrunk until it fits the limits."""
    make, target = FAMILIES[family]
    n = max(1, n)
    while True:
        doc = make(n, k)
        if isinstance(doc, bytes):  # a manifest text written as is (minified, repeated keys)
            if len(doc) <= MANIFEST_LIMIT or (n == 1 and k <= 1):
                return doc, "worst.talostool", target
        elif isinstance(doc, str):
            data = doc.encode()
            if len(data) <= FORGE_LIMIT or (n == 1 and k <= 1):
                return data, "worst.forge", target
        else:
            data = orjson.dumps(doc)
            if len(data) <= MANIFEST_LIMIT or (n == 1 and k <= 1):
                return data, "worst.talostool", target
        if n == 1 and k > 1:
            k -= 1  # the smallest N is still too large: shrink the other size
            continue
        n = max(1, int(n * 0.8))


LARGEST = {family: (4000, 8) for family in FAMILIES}  # the biggest each family can be


def complete_check(source: bytes, path: str, target: str) -> Any:
    """Everything `tools install` pays: the check, the deferred flow facts, the canonical
    manifest, the lowering."""
    from forgec.api import check

    report = check(source, path=path, target=target)
    if report.facts is not None:
        _ = report.facts.flows
    if report.ok and report.manifest is not None:
        from forgec.backend import lower_report

        lower_report(report)
    render(report)
    return report


def render(report: Any) -> None:
    """What `forgec check` prints, in every format (SPEC §24: renderers are bounded too)."""
    from forgec.answers import check_json
    from forgec.render.sarif import to_sarif
    from forgec.render.text import render_report
    from forgec.runtime.jsontext import dumps_text

    render_report(report)
    dumps_text(check_json([report]), indent=True)
    dumps_text(to_sarif([report]), indent=True)


def search(max_examples: int, *, derandomize: bool, bound_s: float) -> dict[str, Any]:
    """A hypothesis search over the families for the slowest whole check, steered by
    `hypothesis.target`; fails (AssertionError) on the first input over BOUND_S of CPU.
    Returns the slowest input found: {"family", "n", "k", "bytes", "cpu"}."""
    import time

    from hypothesis import HealthCheck, given, settings, target
    from hypothesis import strategies as st

    slowest: dict[str, Any] = {"cpu": -1.0}

    @settings(
        max_examples=max_examples,
        derandomize=derandomize,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.sampled_from(sorted(FAMILIES)), st.integers(1, 4000), st.integers(1, 8))
    def one(family: str, n: int, k: int) -> None:
        source, path, tgt = build(family, n, k)
        started = time.process_time()
        complete_check(source, path, tgt)
        took = time.process_time() - started
        target(took, label="check CPU seconds")
        if took > slowest["cpu"]:
            slowest.update(family=family, n=n, k=k, bytes=len(source), cpu=took)
        assert took < bound_s, (family, n, k, took)

    one()
    return slowest


if __name__ == "__main__":  # pragma: no cover - a figure for the docs
    import resource
    import time

    for family, (n, k) in LARGEST.items():
        src, path, target = build(family, n, k)
        started = time.process_time()
        rep = complete_check(src, path, target)
        took = time.process_time() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        codes = sorted({d.code for d in rep.diagnostics if d.is_error})
        print(f"{family:15} {len(src):7} B  {took * 1000:8.1f} ms  peak {peak} MB  {codes}")
