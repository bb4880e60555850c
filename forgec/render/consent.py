"""The consent card: what a person reads before a tool may run.

It is built from the manifest and its marks only, so the CLI (`inspect`, `tools show`), the
store (consent on enable/upgrade) and the MCP server all show a person the same thing.
"""

from __future__ import annotations

from typing import Any

from forgec.ir.marks import Marks
from forgec.render.safe import safe_text
from forgec.runtime.sources_and_sinks import describe_sink, describe_source

RISK_WORDS = {
    "R0": "no effects",
    "R1": "reads your data",
    "R2": "changes your data",
    "R3": "changes durable data or acts for you",
    "R4": "reaches outside this device or delegates work",
}


def consent_card_json(
    manifest: dict[str, Any], marks: Marks, *, author: str | None = None
) -> dict[str, Any]:
    """AUTHOR: who wrote this version, in words ("a person", "a model (persona x)"), when the
    card is of a stored version (§14); None for a file that is not stored."""
    creds = manifest.get("credentialRequirements") or []
    card = {
        "name": f"dynamic:{manifest.get('id')}",
        "title": manifest.get("title"),
        "description": manifest.get("description"),
        "version": manifest.get("version"),
        "risk": marks.risk,
        "riskMeaning": RISK_WORDS.get(marks.risk, ""),
        "alwaysAsks": marks.always_asks,
        "powers": list(marks.powers),
        "capabilities": list(marks.capabilities),
        "network": list(marks.network),
        "labels": list(marks.labels),
        "credentials": [
            {"id": c.get("id"), "purpose": c.get("purpose"), "hosts": c.get("hosts", [])}
            for c in creds
            if isinstance(c, dict)
        ],
        "model": marks.model.to_json() if marks.model else None,
        "undoable": marks.compensated,
        # SPEC §15: what data leaves the device and where; what outside text can steer
        "sends": _grouped(marks.sends),
        "steeredBy": _grouped(marks.steered_by),
        "alwaysAsksBecause": marks.asks_because,
    }
    if author is not None:
        card["author"] = author
    return card


def _grouped(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """One entry per source label, in words, with every sink it reaches."""
    by_source: dict[str, list[str]] = {}
    for source, sink in pairs:
        by_source.setdefault(source, []).append(sink)
    return [
        {
            "source": source,
            "data": describe_source(source),
            "sinks": sinks,
            "to": [describe_sink(s) for s in sinks],
        }
        for source, sinks in by_source.items()
    ]


def card_rows(card: dict[str, Any], *, which: str | None = None) -> list[tuple[str, str]]:
    """The card's rows (label, value) in order, from `consent_card_json`: the terminal card and
    the screen's card both lay out these, so they say the same words. WHICH: how the store
    names this row (`v3`, `proposal 2`) when it is not the manifest's own number: a proposal's
    file may claim any version; the store's name is what counts."""
    author = card.get("author")
    rows: list[tuple[str, str]] = [
        ("Tool", f"{card['name']} {which or 'v' + str(card['version'])}"),
        *([("Author", str(author))] if author else []),
        ("Risk", f"{card['risk']} — {card['riskMeaning']}"),
        ("Can", ", ".join(card["powers"]) or "nothing beyond computing a result"),
        ("Calls", ", ".join(card["capabilities"]) or "no capability"),
        ("Reaches", ", ".join(card["network"]) or "no network"),
    ]
    if card["labels"]:
        rows.append(("Labels", ", ".join(card["labels"])))
    for cred in card["credentials"]:
        hosts = ", ".join(cred["hosts"]) or "no host"
        rows.append(("Uses key", f"{cred['id']} ({cred['purpose']}) → {hosts}"))
    if card["model"]:
        model = card["model"]
        privacy = model.get("privacy") or "any model"
        effort = model.get("reasoningEffort") or "default effort"
        rows.append(("Model", f"{model['steps']} step(s), {privacy}, {effort}"))
    for sent in card["sends"]:
        rows.append(("Sends", f"{sent['data']} → {', '.join(sent['to'])}"))
    for steer in card["steeredBy"]:
        rows.append(("Steered by", f"{steer['data']} → {', '.join(steer['to'])}"))
    if not card["undoable"]:
        rows.append(("Undo", "some changes cannot be undone if a run fails"))
    consent = "asked once for this version"
    if card["alwaysAsks"]:
        because = card["alwaysAsksBecause"]
        consent = f"asked before every run: {because}" if because else "asked before every run"
    rows.append(("Consent", consent))
    return rows


def render_consent_card(
    manifest: dict[str, Any], marks: Marks, *, author: str | None = None, which: str | None = None
) -> str:
    card = consent_card_json(manifest, marks, author=author)
    rows = card_rows(card, which=which)
    width = max(len(label) for label, _ in rows)
    # Every value is one line of the card: a newline or an escape sequence in a title, a
    # purpose or an id must not forge or hide a line (SPEC §14). Only the description is laid
    # out over several lines, and each of them is quoted (`> `): the tool writes it, so none of
    # its lines, even the first, may read like one of the card's own rows ("│  Risk  R1 …").
    title = safe_text(card["title"])
    description = safe_text(card["description"], keep_newlines=True).split("\n")
    lines = [f"┌─ {title}", *(f"│  > {line}".rstrip() for line in description), "│"]
    lines += [f"│  {label.ljust(width)}  {safe_text(value)}" for label, value in rows]
    lines.append("└─")
    return "\n".join(lines)


def always_asks_banner(marks: Marks) -> str | None:
    """The one sentence every face (the enable prompt, the run prompt, the screen's banners)
    says of a tool that asks before every run, naming its real reason (SPEC §23): its risk
    (R4), or its data flows (§15) for a tool below R4 — never "R4" for an R3 tool. None when
    the tool does not ask every run."""
    if not marks.always_asks:
        return None
    if marks.risk == "R4":
        return f"This tool is R4: it {RISK_WORDS['R4']}, so it asks before every run."
    because = marks.asks_because or "of what its steps may do"
    return f"This tool asks before every run: {because} (it is {marks.risk})."
