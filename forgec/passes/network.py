"""Network: which steps may go out, to which hosts, and where credentials may travel (SPEC §5).

One cause, one code (SPEC §4.1):

- `network.mode: forbidden` — a *reachable* step whose capability needs the network is
  `FORGE_OUTBOUND_FORBIDDEN`, and nothing else about its host. Where reachability is unknown
  (no usable entry), every such step counts as reachable: deny by default.
- `network.mode: allowlist` — *every* network step, reachable or not, whose host is known
  statically must name a listed host exactly (no subdomain match; an empty list allows none),
  else `FORGE_NETWORK_NOT_DECLARED` at the URL. The host is known statically for a literal URL
  (`url_host`: hostname, lower-cased, no port or userinfo) and also for a template whose text
  before its first placeholder already holds the whole authority (`https://api.x.org/{{p}}`):
  nothing substituted later can change that host. Any other URL is checked at run time, and so
  are redirects. A URL that is not acceptable at all is `FORGEC_CAPABILITY_INPUT`'s business.
- Credentials — each host of each credential requirement must be in the allowlist (under
  `forbidden` none is), else `FORGE_CREDENTIAL_SCOPE`. A step that sends a credential (a
  `$credential` anywhere in its input) to a URL whose scheme is fixed as `http:` (a literal, or
  a template whose text before its first placeholder holds the scheme) is
  `FORGE_CREDENTIAL_SCOPE` at the URL too (SPEC §14: credentials only over https); a computed
  URL is checked by the host at run time. This is independent of the host's own
  validity (`FORGE_DOMAIN_INVALID`, reported by the structure pass): both lists are read as
  written (the IR keeps only valid hosts) and compared exactly.

A missing or unknown `network.mode`, or an allowlist without a usable `hosts` list, was
reported by the structure pass; nothing is checked against it here (one cause, one code).
"""

from __future__ import annotations

from typing import Any

from forgec.catalog.urls import url_host
from forgec.ir.nodes import (
    CapabilityNode,
    CredentialRef,
    ListExpr,
    Literal,
    ObjectExpr,
    Template,
    Value,
)
from forgec.ir.pointer import join
from forgec.ir.rules import FORBIDDEN, NETWORK_MODES
from forgec.passes.capabilities import capability_nodes
from forgec.passes.context import PassContext
from forgec.passes.model import raw_at
from forgec.runtime.sources_and_sinks import url_field


def static_host(value: Value | None) -> str | None:
    """The host a URL value reaches, when the manifest fixes it; else None."""
    if isinstance(value, Literal):
        return url_host(value.value) if isinstance(value.value, str) else None
    if not isinstance(value, Template) or not value.parts:
        return None
    if all(isinstance(part, str) for part in value.parts):
        return url_host("".join(str(part) for part in value.parts))
    prefix = value.parts[0]
    if not isinstance(prefix, str):
        return None
    scheme_end = prefix.find("://")
    if scheme_end < 0:
        return None
    authority_start = scheme_end + 3
    ends = [i for i in (prefix.find(c, authority_start) for c in "/?#") if i >= 0]
    if not ends:
        return None  # a placeholder may still extend the authority (`https://a.org{{x}}`)
    return url_host(prefix[: min(ends)] + "/")


def static_scheme(value: Value | None) -> str | None:
    """The URL's scheme (lower-cased) when the manifest fixes it; else None."""
    if isinstance(value, Literal):
        text = value.value if isinstance(value.value, str) else None
    elif isinstance(value, Template) and value.parts and isinstance(value.parts[0], str):
        text = value.parts[0]
    else:
        return None
    if text is None or ":" not in text:
        return None
    scheme = text.split(":", 1)[0]
    return scheme.lower() if scheme.isalpha() else None


def credentials_in(value: Value | None) -> list[CredentialRef]:
    """Every `$credential` a value holds, at any depth (a walk over the value's own size)."""
    out: list[CredentialRef] = []
    stack: list[Value] = [] if value is None else [value]
    while stack:
        item = stack.pop()
        if isinstance(item, CredentialRef):
            out.append(item)
        elif isinstance(item, ObjectExpr):
            stack.extend(member for _, member in item.fields)
        elif isinstance(item, ListExpr):
            stack.extend(item.items)
    return out


def url_of(node: CapabilityNode) -> tuple[Value | None, str]:
    """The step's URL value (or None) and its pointer: the input field whose URL's host
    names the call's source and sink, by its row (`sources_and_sinks.url_field`); a step of
    a capability without one has no URL (None, and its input's pointer)."""
    field = url_field(node.capability or "")
    if field is None:
        return None, join(node.pointer, "input")
    pointer = join(node.pointer, "input", field)
    value = node.input
    if isinstance(value, ObjectExpr):
        for key, member in value.fields:
            if key == field:
                return member, pointer
    elif isinstance(value, Literal) and isinstance(value.value, dict):
        url = value.value.get(field)
        if url is not None:
            return Literal(url, pointer), pointer
    return None, pointer


def network_steps(ctx: PassContext) -> list[CapabilityNode]:
    """Every step whose capability (in the target's catalog) needs the network."""
    flow = ctx.manifest.flow
    if flow is None:
        return []
    out = []
    for node in capability_nodes(flow.nodes):
        spec = ctx.catalog.get(node.capability) if node.capability is not None else None
        if spec is not None and spec.needs_network:
            out.append(node)
    return out


def maybe_reachable(ctx: PassContext, pointer: str) -> bool:
    facts = ctx.facts
    return not facts.reachability_known or pointer in facts.reachable_pointers


def check_network(ctx: PassContext) -> None:
    network = ctx.manifest.network
    if network is None or network.mode not in NETWORK_MODES:
        return
    hosts = set(network.hosts)
    forbidden = network.mode == FORBIDDEN
    if not forbidden and not isinstance(raw_at(ctx.raw, "/network/hosts"), list):
        return  # an allowlist without a usable `hosts`: its structure error is the one cause
    for node in network_steps(ctx):
        if forbidden:
            if maybe_reachable(ctx, node.pointer):
                ctx.report(
                    "FORGE_OUTBOUND_FORBIDDEN",
                    join(node.pointer, "capability"),
                    f"step `{node.id}` calls `{node.capability}`, which needs the network, but "
                    "the tool's network is forbidden",
                    hint='declare the hosts it may reach: "network": {"mode": "allowlist", '
                    '"hosts": ["api.example.org"]}',
                )
            continue
        value, pointer = url_of(node)
        _check_plain_http(ctx, node, value, pointer)
        host = static_host(value)
        if host is None or host in hosts:
            continue
        ctx.report(
            "FORGE_NETWORK_NOT_DECLARED",
            pointer,
            f"step `{node.id}` reaches `{host}`, which `network.hosts` does not list",
            hint=_host_hint(host, hosts),
        )
    _check_credential_scope(ctx, forbidden)


def _check_plain_http(ctx: PassContext, node: CapabilityNode, url: Value | None, at: str) -> None:
    if static_scheme(url) != "http":
        return
    sent = credentials_in(node.input)
    if not sent:
        return
    ctx.report(
        "FORGE_CREDENTIAL_SCOPE",
        at,
        f"step `{node.id}` sends credential `{sent[0].id}` over plain http: a credential is only "
        "attached to an https request",
        hint="use an `https://` URL",
    )


def _listed(raw: Any) -> list[tuple[int, str]]:
    """The string entries of a host list as written, with their indexes (the IR keeps only the
    valid hosts, once each, so its positions are not the manifest's)."""
    return (
        [(i, h) for i, h in enumerate(raw) if isinstance(h, str)] if isinstance(raw, list) else []
    )


def _check_credential_scope(ctx: PassContext, forbidden: bool) -> None:
    allowed = set() if forbidden else {h for _, h in _listed(raw_at(ctx.raw, "/network/hosts"))}
    for cred in ctx.manifest.credential_requirements:
        for i, host in _listed(raw_at(ctx.raw, join(cred.pointer, "hosts"))):
            if host in allowed:
                continue
            name = f"`{cred.id}`" if cred.id is not None else "a credential"
            why = (
                "the tool's network is forbidden"
                if forbidden
                else "`network.hosts` does not list it"
            )
            ctx.report(
                "FORGE_CREDENTIAL_SCOPE",
                join(cred.pointer, "hosts", i),
                f"credential {name} may reach `{host}`, but {why}",
                hint="a key may only travel to a host the tool may reach: list the host in "
                "`network.hosts` or remove it from the credential",
            )


def _host_hint(host: str, hosts: set[str]) -> str:
    related = sorted(h for h in hosts if host.endswith("." + h) or h.endswith("." + host))
    if related:
        return (
            f"hosts match exactly, never by subdomain (`{related[0]}` is listed); add `{host}` "
            "to `network.hosts`"
        )
    return f"add `{host}` to `network.hosts` if the tool should reach it"
