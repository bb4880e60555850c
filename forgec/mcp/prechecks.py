"""Checks that refuse a call without any effect, run BEFORE consent is asked (SPEC §17).

Asking a person "allow this run?" and then failing on something knowable in advance wastes
their attention and trains them to click yes. So, after the labels (the listing) and the input
schema, and before any question:

- a forged tool: every credential it declares must be present on the host
  (`RUN_CREDENTIAL_MISSING`), and every `net.http` step with a literal URL must name a host the
  host's own allowlist accepts (`RUN_NETWORK_DENIED`; the manifest's allowlist was checked at
  install). Every such step counts, not only the ones this run would take: a tool that may
  reach a refused host is refused before asking rather than asked about and then stopped;
- a host tool: the bridge's checks without effect (`check_call`: label, size, parameters), and
  for `net_http` the URL's host against the host's allowlist, where an empty one allows nothing
  (a direct call has no manifest allowlist to fall back on).

Each returns a one-line message, or None when the call may go on to consent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def _steps(nodes: Any) -> Iterator[Mapping[str, Any]]:
    for node in nodes or []:
        if isinstance(node, Mapping):
            yield node
            yield from _steps(node.get("body"))


def _network_urls(capability: Any) -> tuple[str, ...]:
    """The URL fields of a capability that reaches the network (its row: `needs_network`, and
    the destinations whose rule is a URL), in field order; () for any other."""
    from forgec.ir.capabilities import BY_NAME

    row = BY_NAME.get(capability) if isinstance(capability, str) else None
    if row is None or not row.needs_network:
        return ()
    return tuple(d for d in row.destinations if row.url_destination(d))


def literal_urls(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(node id, url) of every literal URL a step that reaches the network calls."""
    out: list[tuple[str, str]] = []
    for node in _steps((manifest.get("flow") or {}).get("nodes")):
        data = node.get("input")
        if not isinstance(data, Mapping):
            continue
        for field in _network_urls(node.get("capability")):
            url = data.get(field)
            if isinstance(url, str):
                out.append((str(node.get("id")), url))
    return out


def _host_allow(host: Any) -> tuple[str, ...]:
    config = getattr(host, "config", None)
    return tuple(getattr(config, "allow_hosts", ()) or ())


def forged_problem(stored: Any, host: Any) -> str | None:
    from forgec.catalog.urls import url_host

    has = getattr(host, "has_credential", None)
    for cred in stored.program.get("credentials") or []:
        if has is not None and not has(cred["id"]):
            purpose = f" ({cred['purpose']})" if cred.get("purpose") else ""
            from forgec.host.credentials import how_to_supply

            return (
                f"{stored.name} was not run: RUN_CREDENTIAL_MISSING: credential "
                f"{cred['id']!r}{purpose} is not available on this host; "
                f"{how_to_supply(cred['id'])} when starting `forgec mcp serve`"
            )
    allow = _host_allow(host)
    if allow:  # an empty host-side list leaves the manifest's as the only gate (SPEC §12)
        for node_id, url in literal_urls(stored.manifest):
            name = url_host(url)
            if name is not None and name not in allow:
                return (
                    f"{stored.name} was not run: RUN_NETWORK_DENIED: step `{node_id}` calls "
                    f"{name!r}, which is not in the host's network allowlist"
                )
    return None


def host_call_problem(
    internal: str, mcp_name: str, args: Mapping[str, Any], host: Any
) -> str | None:
    from forgec.catalog.urls import url_host
    from forgec.runtime.host import HostError

    check = getattr(host, "check_call", None)
    if check is not None:
        try:
            check(internal, dict(args))
        except HostError as exc:
            return f"`{mcp_name}` was not run: {exc.code}: {exc.message}"
    for field in _network_urls(internal):
        name = url_host(str(args.get(field, "")))
        allow = _host_allow(host)
        if name is None or name not in allow:
            listed = ", ".join(allow) or "none"
            return (
                f"`{mcp_name}` was not run: RUN_NETWORK_DENIED: host {name!r} is not in the "
                f"host's network allowlist (listed: {listed})"
            )
    return None
