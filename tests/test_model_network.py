"""The model and network passes: structured output, outbound, allowlisted hosts, credentials.

Pins SPEC §4.1's one-cause-one-code rules: under `forbidden` a reachable network step gets
`FORGE_OUTBOUND_FORBIDDEN` only and an unreachable one nothing; under `allowlist` every step
with a statically known host is checked, reachable or not; credential scope is checked apart
from the host's DNS validity.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from manifests import manifest_with_nodes

import forgec
from forgec.ir.nodes import Literal, Ref, Template
from forgec.passes.network import static_host

DONE = {"id": "done", "type": "return", "value": {"ok": True}}
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def check(nodes: list[dict[str, Any]], target: str = "talos", **kw: Any) -> forgec.Report:
    return forgec.check(orjson.dumps(manifest_with_nodes(nodes, **kw)), target=target)


def diags(report: forgec.Report) -> list[tuple[str, str]]:
    return [(d.code, d.path) for d in report.diagnostics]


# --- model steps -----------------------------------------------------------------------------


def llm(**extra: Any) -> dict[str, Any]:
    node = {
        "id": "ask",
        "type": "llm",
        "op": "summarize",
        "input": {"$ref": "input.text"},
        "target": "summary",
        "next": "done",
    }
    node.update(extra)
    return node


MISSING = ("FORGE_LLM_STRUCTURED_OUTPUT_MISSING_SCHEMA", "/flow/nodes/0")


def test_structured_output_from_defaults_needs_a_schema() -> None:
    defaults = {"structuredOutput": True}
    assert diags(check([llm(), DONE], modelDefaults=defaults)) == [MISSING]
    assert diags(check([llm(outputSchema=SCHEMA), DONE], modelDefaults=defaults)) == []


def test_step_requirements_override_the_defaults() -> None:
    off = {"structuredOutput": False}
    on = {"structuredOutput": True}
    assert diags(check([llm(requirements=off), DONE], modelDefaults=on)) == []
    assert diags(check([llm(requirements=on), DONE], modelDefaults=off)) == [MISSING]
    assert diags(check([llm(), DONE])) == []  # asked nowhere


def test_a_malformed_schema_is_not_also_missing() -> None:
    report = check(
        [llm(outputSchema={"$ref": "#/x"}), DONE], modelDefaults={"structuredOutput": True}
    )
    assert "FORGE_LLM_STRUCTURED_OUTPUT_MISSING_SCHEMA" not in [c for c, _ in diags(report)]
    assert not report.ok


# --- outbound and allowlist ------------------------------------------------------------------


def http(url: Any, node_id: str = "call", nxt: str = "done") -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "capability",
        "capability": "net.http",
        "input": {"method": "GET", "url": url},
        "target": "resp",
        "next": nxt,
    }


def allow(*hosts: str) -> dict[str, Any]:
    return {"mode": "allowlist", "hosts": list(hosts)}


FORBIDDEN = {"mode": "forbidden"}
URL = "https://api.example.org/v1"


def test_outbound_forbidden_alone_when_reachable() -> None:
    report = check([http(URL), DONE], target="talon", network=FORBIDDEN)
    assert diags(report) == [("FORGE_OUTBOUND_FORBIDDEN", "/flow/nodes/0/capability")]


def test_outbound_forbidden_boundary_unreachable_step() -> None:
    report = check([DONE, http(URL)], target="talon", network=FORBIDDEN, entry="done")
    assert [c for c, _ in diags(report)] == ["FORGE_UNREACHABLE_NODE"]


def test_no_entry_means_deny_by_default() -> None:
    report = check([http(URL), DONE], target="talon", network=FORBIDDEN, entry="nope")
    assert "FORGE_OUTBOUND_FORBIDDEN" in [c for c, _ in diags(report)]


def test_undeclared_host_trigger_and_boundary() -> None:
    other = "https://status.example.org/v1"
    report = check([http(other), DONE], target="talon", network=allow("api.example.org"))
    assert diags(report) == [("FORGE_NETWORK_NOT_DECLARED", "/flow/nodes/0/input/url")]
    assert diags(check([http(URL), DONE], target="talon", network=allow("api.example.org"))) == []


def test_hosts_match_exactly_never_by_subdomain() -> None:
    report = check([http(URL), DONE], target="talon", network=allow("example.org"))
    [diag] = report.diagnostics
    assert diag.code == "FORGE_NETWORK_NOT_DECLARED"
    assert diag.hint is not None and "subdomain" in diag.hint


def test_host_is_lowercased_without_port_and_userinfo_is_refused() -> None:
    url = "https://API.Example.org:8443/v1"
    assert diags(check([http(url), DONE], target="talon", network=allow("api.example.org"))) == []
    # the host refuses `user@` at run time, so the checker does too (one URL parser)
    url = "https://user@API.Example.org:8443/v1"
    report = check([http(url), DONE], target="talon", network=allow("api.example.org"))
    assert ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/url") in diags(report)


def test_empty_allowlist_allows_nothing() -> None:
    report = check([http(URL), DONE], target="talon", network=allow())
    assert diags(report) == [("FORGE_NETWORK_NOT_DECLARED", "/flow/nodes/0/input/url")]


def test_allowlist_applies_to_unreachable_steps_too() -> None:
    nodes = [DONE, http("https://evil.example.net/")]
    report = check(nodes, target="talon", network=allow("api.example.org"), entry="done")
    assert ("FORGE_NETWORK_NOT_DECLARED", "/flow/nodes/1/input/url") in diags(report)


def test_template_with_a_fixed_host_is_checked_statically() -> None:
    fixed = {"$template": "https://evil.example.net/{{input.path}}"}
    report = check([http(fixed), DONE], target="talon", network=allow("api.example.org"))
    assert diags(report) == [("FORGE_NETWORK_NOT_DECLARED", "/flow/nodes/0/input/url")]
    open_host = {"$template": "https://api.example.org{{input.path}}"}  # may extend the host
    report = check([http(open_host), DONE], target="talon", network=allow("api.example.org"))
    assert diags(report) == []


@pytest.mark.parametrize(
    ("value", "host"),
    [
        (Literal("https://A.b.org:1/x", ""), "a.b.org"),
        (Template("", ("https://a.b.org/x/", Ref("p", ("p",), "")), ""), "a.b.org"),
        (Template("", ("https://a.b.org?q=", Ref("p", ("p",), "")), ""), "a.b.org"),
        (Template("", ("https://a.b.org", Ref("p", ("p",), "")), ""), None),
        (Template("", ("https://", Ref("p", ("p",), ""), "/x"), ""), None),
        (Template("", (Ref("p", ("p",), ""),), ""), None),
        (Ref("input.url", ("input", "url"), ""), None),
        (Literal("ftp://a.b.org/", ""), None),
    ],
)
def test_static_host(value: Any, host: str | None) -> None:
    assert static_host(value) == host


# --- credential scope ------------------------------------------------------------------------


def creds(*hosts: str) -> list[dict[str, Any]]:
    return [{"id": "api-key", "purpose": "Status API", "hosts": list(hosts)}]


def test_credential_scope_trigger_and_boundary() -> None:
    report = check(
        [DONE], network=allow("api.example.org"), credentialRequirements=creds("other.example.org")
    )
    assert diags(report) == [("FORGE_CREDENTIAL_SCOPE", "/credentialRequirements/0/hosts/0")]
    ok = check(
        [DONE], network=allow("api.example.org"), credentialRequirements=creds("api.example.org")
    )
    assert diags(ok) == []


def test_credential_hosts_are_all_out_of_scope_when_forbidden() -> None:
    report = check([DONE], network=FORBIDDEN, credentialRequirements=creds("api.example.org"))
    assert diags(report) == [("FORGE_CREDENTIAL_SCOPE", "/credentialRequirements/0/hosts/0")]


def test_credential_scope_is_independent_of_domain_validity() -> None:
    report = check(
        [DONE], network=allow("api.example.org"), credentialRequirements=creds("API.example.org")
    )
    found = [c for c, _ in diags(report)]
    assert "FORGE_DOMAIN_INVALID" in found and "FORGE_CREDENTIAL_SCOPE" in found


def test_credential_scope_points_at_the_host_as_written() -> None:
    hosts = creds("Bad Host", "api.example.org", "x.example.org")
    report = check([DONE], network=allow("api.example.org"), credentialRequirements=hosts)
    scope = [p for c, p in diags(report) if c == "FORGE_CREDENTIAL_SCOPE"]
    assert scope == ["/credentialRequirements/0/hosts/0", "/credentialRequirements/0/hosts/2"]


def test_unacceptable_url_is_an_input_problem_not_an_undeclared_host() -> None:
    report = check([http("ftp://files.example.net/x"), DONE], target="talon", network=allow())
    assert diags(report) == [("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/url")]


def test_allowlist_without_hosts_is_one_structure_error() -> None:
    report = check(
        [http(URL), DONE],
        target="talon",
        network={"mode": "allowlist"},
        credentialRequirements=creds("api.example.org"),
    )
    assert [c for c, _ in diags(report)] == ["FORGE_MANIFEST_STRUCTURE"]
