"""A URL-fetching host tool gets its labels from its row, not from being `net.http`.

docs/architecture.md ("Adding a host tool"): a row that reads from outside or sends, whose one
URL destination is a `validate="url"` field, is named by that URL's host — its result carries
`external:<host>`, its call is the sink `egress:<host>`. A second such tool, `probe.fetch`
(its URL field named `address`, not `url`), is added as `tests/test_new_host_tool.py` adds
one — its row joins the rows before anything reads them — and every reader of the labels is
asked about it in a fresh interpreter: the flow pass of the real `check`, the run-time
`origin_labels` / `call_sink`, the daemon's failed-call labels, the forged tool's source
labels and `forgec mcp`'s reach card. Each answer is then compared to `net.http`'s own, with
the host in it: the two rows say the same, so the two must be labelled the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from forgec.catalog.urls import url_host
from forgec.ir.capabilities import BY_NAME, ROWS
from forgec.runtime import sources_and_sinks as fl

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import json, sys
import orjson
from forgec.ir import capabilities as rows
from forgec.ir.shapes import Shape, string

row = rows.Capability(
    "probe.fetch",
    "Fetch a page (a host tool only this test adds).",
    Shape(
        {
            "address": string("absolute https: URL", min_length=1, max_length=2048, validate="url"),
            "note": string("what to say with it"),
        },
        limit=rows.HOST_TOOL_LIMIT,
        required=("address",),
    ),
    rows.OpMarks("Network", "R4"),
    {"type": "object", "properties": {"body": {"type": "string"}}, "required": ["body"]},
    targets=rows.TALON,
    label="probe.fetch:egress",
    source="external",
    sink="egress",
    mcp_name="probe_fetch",
    needs_network=True,
    destinations=("address",),
)
rows.ROWS = (*rows.ROWS, row)
rows.BY_NAME[row.name] = row

import forgec
from forgec.daemon.turn_labels import failed_call_labels
from forgec.host.agentcall import forged_source_labels
from forgec.mcp.reach import capability_legs
from forgec.runtime import sources_and_sinks as fl

CAP, FIELD = sys.argv[1], sys.argv[2]


def step(nid, capability, data, nxt, target=None):
    node = {"id": nid, "type": "capability", "capability": capability, "input": data, "next": nxt}
    if target:
        node["target"] = target
    return node


url = lambda host: {"address" if CAP == "probe.fetch" else "url": f"https://{host}/x"} | (
    {} if CAP == "probe.fetch" else {"method": "POST"}
)
nodes = [
    step("recall", "memory.access", {"operation": "list"}, "fetch", "items"),
    step("fetch", CAP, url("news.example.com"), "keep", "page"),
    step("keep", "notes.create", {"title": "t", "body": {"$ref": "page.body"}}, "send"),
    step("send", CAP, url("api.example.com") | {"note" if CAP == "probe.fetch" else "body":
         {"$ref": "items"}}, "done"),
    {"id": "done", "type": "return", "value": "ok"},
]
doc = {
    "schema": "talos.local-tool.v1", "id": "probe.tool", "version": 1, "title": "Probe",
    "description": "A tool of the URL-row probe.", "createdAt": "2026-01-01T00:00:00Z",
    "parentVersion": None, "execution": "declarative-flow", "installScope": "device",
    "network": {"mode": "allowlist", "hosts": ["api.example.com", "news.example.com"]},
    "credentialRequirements": [],
    "flow": {"entry": "recall", "maxTransitions": 64, "nodes": nodes},
}
report = forgec.check(orjson.dumps(doc), target="talon")
assert report.ok, [d.message for d in report.errors]


class Marks:
    capabilities = (CAP,)
    network = ("news.example.com",)


call = {FIELD: "https://News.Example.com/a"}
print(json.dumps({
    "url_field": fl.url_field(CAP),
    "flows": sorted({(f.source, f.sink) for f in report.facts.flows}),
    "origin": sorted(fl.origin_labels(CAP, call, {"body": "x"})),
    "sink": fl.call_sink(CAP, call),
    "computed_sink": fl.call_sink(CAP, {FIELD: 7}),
    "failed": sorted(failed_call_labels(CAP, call, "RUN_HOST_ERROR")),
    "forged": sorted(forged_source_labels(Marks())),
    "legs": {k: sorted(v) for k, v in capability_legs(CAP, ("news.example.com",)).items()},
}))
"""


def _ask(capability: str, field: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, capability, field],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


def test_a_second_url_fetching_tool_is_labelled_by_its_urls_host() -> None:
    http = _ask("net.http", "url")
    probe = _ask("probe.fetch", "address")
    assert probe["url_field"] == "address" and http["url_field"] == "url"
    # net.http's own answers (unchanged by reading the row instead of the name)
    assert http["flows"] == [
        ["external:news.example.com", "egress:api.example.com"],
        ["external:news.example.com", "output"],
        ["external:news.example.com", "write:notes.create"],
        ["private:memory.access", "egress:api.example.com"],
        ["private:memory.access", "output"],
    ]
    assert http["origin"] == ["external:news.example.com"]
    assert http["sink"] == "egress:news.example.com"
    assert http["computed_sink"] == "egress:*"
    assert http["failed"] == ["external:news.example.com"]
    assert http["forged"] == ["external:news.example.com"]
    assert http["legs"]["untrusted"] == ["external:news.example.com"]
    assert http["legs"]["egress"] == ["egress:news.example.com"]
    # and the second tool's: the same, from its row alone
    assert {k: v for k, v in probe.items() if k != "url_field"} == {
        k: v for k, v in http.items() if k != "url_field"
    }


def test_the_url_field_is_the_rows_one_url_destination_of_a_source_or_send() -> None:
    for row in ROWS:
        urls = [d for d in row.destinations if row.url_destination(d)]
        named = row.source == "external" or row.sink == "egress"
        assert fl.url_field(row.name) == (urls[0] if named and urls else None), row.name
        if row.source == "external":  # an outside source is named by its URL's host
            assert fl.url_field(row.name) is not None, row.name


_URL_ROWS = sorted(fl.URL_FIELDS)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(_URL_ROWS),
    st.one_of(
        st.builds(
            "{}://{}{}".format,
            st.sampled_from(["http", "https", "HTTPS", "ftp", ""]),
            st.from_regex(r"[A-Za-z0-9.\-]{0,20}(:[0-9]{1,5})?", fullmatch=True),
            st.sampled_from(["", "/", "/p?q=1", "#f"]),
        ),
        st.text(max_size=30),
        st.none(),
        st.integers(),
    ),
)
def test_a_url_rows_labels_are_its_urls_host(capability: str, url: Any) -> None:
    """For every row named by its URL, whatever the URL: the result's origin and the call's
    sink name the host the one URL rule reads (`*` when it reads none), and nothing else."""
    row = BY_NAME[capability]
    field = fl.url_field(capability)
    assert field is not None
    call = {field: url}
    host = url_host(url) or "*"
    origin = fl.origin_labels(capability, call, {"body": ""})
    if row.source == "external":
        assert f"external:{host}" in origin
        assert not {x for x in origin if x.startswith("external:")} - {
            f"external:{host}",
            fl.TALON,
        }
    if row.sink == "egress":
        assert fl.call_sink(capability, call) == f"egress:{host}"
