"""A persona's own card (SPEC §21, "the rule of two"): what its labels and enabled forged tools
let a turn read, be steered by and reach.

Four legs, each a list of (tool, label) pairs, from the capability rows' flow classes (the
table `forgec.runtime.sources_and_sinks` reads) — never spelled again here:
- **private data**: a tool whose result is the person's data (`source` private);
- **untrusted input**: a tool whose result holds text someone else wrote — a web page
  (`source` external: `external:<host>` per allowlisted host of a forged tool), another
  persona's or a sub-agent's answer (`outside_text`), or rows of `messages` and `threads`
  (`db.query`: `external:talon`);
- **writes** and **egress**: the call is a write or an egress sink (`sink`).

A forged tool counts by every capability its reachable steps call (`Marks.capabilities`).
When one persona holds private data, untrusted input and egress at once, a prompt injection in
what it reads can send what it knows: the card warns, naming the tools of each leg, and says
which `[flows] deny` rules the host config sets against it.

The host tools a persona is offered are `forgec.mcp.listing.host_entries` (the MCP listing and
the daemon's turns offer exactly those); its forged tools are the store's enabled versions its
labels cover (`forged_visible`). `forgec talond check`, the daemon at start and `forgec mcp
serve` at start print it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from forgec.ir.capabilities import BY_NAME
from forgec.runtime import sources_and_sinks as fl

LEGS = ("private", "untrusted", "writes", "egress")
LEG_WORDS = {
    "private": "private data",
    "untrusted": "untrusted input",
    "writes": "writes",
    "egress": "egress",
}
# the deny rules that cut the private-data → egress leak, and outside text steering a send
GUARDS = ("private->egress", "untrusted->egress", "untrusted->destination")


def capability_legs(capability: str, hosts: Iterable[str] = ()) -> dict[str, set[str]]:
    """leg → the labels (sources) or sinks one capability gives a caller, by its row."""
    row = BY_NAME.get(capability)
    out: dict[str, set[str]] = {leg: set() for leg in LEGS}
    if row is None:
        return out
    if row.source == "private":
        out["private"].add(f"private:{capability}")
    if row.source == "external":
        out["untrusted"].update(f"external:{h}" for h in (tuple(hosts) or ("*",)))
    if row.outside_text or fl.UNTRUSTED_TABLES & set(fl.tables_read(capability, None)):
        out["untrusted"].add(fl.TALON)  # other people's text: answers, messages, threads
    if row.sink == "write":
        out["writes"].add(f"write:{capability}")
    if row.sink == "egress":
        named_by_host = fl.url_field(capability) is not None
        for host in (tuple(hosts) or (None,)) if named_by_host else (None,):
            sink = fl.sink_of(capability, None, host)
            if sink is not None:
                out["egress"].add(sink)
    return out


def persona_reach(
    persona: str,
    labels: Iterable[str],
    forged: Iterable[Any] = (),
    deny: Iterable[str] = (),
    allow_hosts: Iterable[str] = (),
) -> dict[str, Any]:
    """The card of PERSONA with LABELS: each leg as `[{"tool", "what"}]`, the rule-of-two
    warning (None when it does not hold all three) and the deny rules that guard it.
    FORGED: the enabled stored versions (`StoredVersion`) to consider; ALLOW_HOSTS: the host
    config's `[network] allow` (the hosts a model's own `net_http` may reach; none: nothing, as
    the bridge's precheck says)."""
    from forgec.mcp.listing import forged_entry, forged_visible, host_entries

    granted = tuple(labels)
    legs: dict[str, dict[str, set[str]]] = {leg: {} for leg in LEGS}

    def add(tool: str, found: Mapping[str, set[str]]) -> None:
        for leg, items in found.items():
            if items:
                legs[leg].setdefault(tool, set()).update(items)

    for entry in host_entries(granted):
        if fl.url_field(entry.internal) is not None and not allow_hosts:
            continue  # a model's own net_http reaches only `[network] allow`: none, nothing
        add(entry.name, capability_legs(entry.internal, allow_hosts))
    for stored in forged:
        if not forged_visible(stored.marks, granted):
            continue
        listed = forged_entry(stored.manifest, stored.marks, digest=stored.hash)
        name = listed.name if listed is not None else stored.name
        for capability in stored.marks.capabilities:
            add(name, capability_legs(capability, stored.marks.network))
    card: dict[str, Any] = {"persona": persona, "labels": sorted(set(granted))}
    for leg in LEGS:
        card[leg] = [
            {"tool": tool, "what": sorted(items)} for tool, items in sorted(legs[leg].items())
        ]
    rules = sorted(set(deny))
    card["denyRules"] = rules
    card["ruleOfTwo"] = all(legs[leg] for leg in ("private", "untrusted", "egress"))
    card["warning"] = _warning(persona, legs, rules) if card["ruleOfTwo"] else None
    return card


def _warning(persona: str, legs: Mapping[str, Mapping[str, set[str]]], rules: list[str]) -> str:
    def names(leg: str) -> str:
        return ", ".join(sorted(legs[leg]))

    text = (
        f"{persona} holds private data ({names('private')}), untrusted input "
        f"({names('untrusted')}) and egress ({names('egress')}) at once: text it reads can "
        "steer it to send what it knows (the rule of two)"
    )
    guards = [r for r in rules if r in GUARDS]
    if guards:
        return text + f"; the host's [flows] deny refuses {', '.join(guards)} in its turns"
    return (
        text + '; no [flows] deny rule guards its turns: set [flows] deny = ["private->egress", '
        '"untrusted->egress"], or give it planned turns (docs/talond.md)'
    )


def render_text(cards: Iterable[Mapping[str, Any]]) -> str:
    """The cards for a person, one block per persona."""
    lines: list[str] = []
    for card in cards:
        labels = ", ".join(card["labels"]) or "none"
        lines.append(f"persona {card['persona']} (labels: {labels})")
        for leg in LEGS:
            items = card[leg]
            shown = ", ".join(f"{i['tool']} ({', '.join(i['what'])})" for i in items) or "-"
            lines.append(f"  {LEG_WORDS[leg] + ':':<17}{shown}")
        if card["warning"]:
            lines.append(f"  warning: {card['warning']}")
    return "\n".join(lines)


def persona_labels(persona: Any, config: Any) -> tuple[str, ...]:
    """A persona's own labels (`labels.txt`); the host config's `[persona] labels` stand in for
    the configured persona when its folder has none."""
    if persona.labels:
        return tuple(persona.labels)
    if persona.name == config.persona and config.labels is not None:
        return tuple(config.labels)
    return ()


def host_cards(config: Any, store_path: Any) -> list[dict[str, Any]]:
    """The card of every persona the host config's folder holds (of the configured persona
    alone, with the config's labels, when there is no folder)."""
    from forgec.host.delegation import load_personas

    forged = enabled_forged(store_path)
    deny = tuple(config.flow_deny)
    hosts = tuple(config.allow_hosts)
    personas = load_personas(config.personas_dir)
    if not personas:
        return [persona_reach(config.persona, config.labels or (), forged, deny, hosts)]
    return [
        persona_reach(name, persona_labels(p, config), forged, deny, hosts)
        for name, p in sorted(personas.items())
    ]


def enabled_forged(store_path: Any) -> list[Any]:
    """The store's enabled versions (none when there is no store or it cannot be read)."""
    if store_path is None or not store_path.exists():
        return []
    from forgec.store import Store, StoreError

    try:
        with Store(store_path) as store:
            return list(store.enabled_versions(on_problem=lambda _msg: None))
    except StoreError:
        return []
