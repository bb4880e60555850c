"""What each page shows, as plain data, from the functions the CLI calls.

Every function here is synchronous and runs in a worker thread (`pages.Page.in_store`). The
dicts hold raw text from tools and runs: the templates print each value through safe text and
HTML escaping (`forgec.screen.app`), so nothing here escapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forgec.screen.app import Lines, Source
from forgec.screen.diffing import consent_diff


def json_text(value: Any) -> Lines:
    from forgec.runtime.jsontext import dumps_text

    return Lines(dumps_text(value, indent=True))


def json_ascii(value: Any) -> Lines:
    """VALUE as JSON text with every non-ASCII character as a `\\u` escape: a form field that
    carries a run's input back holds no raw control or bidi character, and reads back equal."""
    import json

    return Lines(json.dumps(value, ensure_ascii=True, indent=2))


def source_text(source: bytes) -> Source:
    """A source for the paste box: its lines and tabs kept, every other control escaped."""
    return Source(source.decode("utf-8", "replace"))


# -- Tools -------------------------------------------------------------------------------------


RISKS = ("R0", "R1", "R2", "R3", "R4")


def tools_page(
    store: Any, *, query: str = "", waiting: bool = False, risk: str = ""
) -> dict[str, Any]:
    """Every tool (SPEC §18), the ones the search and the filters keep (SPEC §23: a search over
    the title and the name, tools with proposals waiting, one risk), and the count of what
    waits for review. One pass over the store's summaries; a tool's author is read only for
    the rows shown."""
    problems: list[str] = []
    everything = store.tools(on_problem=problems.append)
    words = query.casefold().split()
    risk = risk if risk in RISKS else ""
    kept = [
        t
        for t in everything
        if (not waiting or t.proposed)
        and (not risk or t.risk == risk)
        and all(w in f"{t.title}\n{t.name}".casefold() for w in words)
    ]
    rows = []
    for t in kept:
        try:
            author = store.get(t.id).author_words
        except Exception as exc:  # a damaged current version: named, the rest still lists
            problems.append(str(exc))
            continue
        rows.append({"summary": t, "author": author})
    return {
        "tools": rows,
        "problems": problems,
        "total": len(everything),
        "waiting_proposals": sum(len(t.proposed) for t in everything),
        "waiting_tools": sum(1 for t in everything if t.proposed),
        "query": query,
        "waiting": waiting,
        "risk": risk,
        "risks": RISKS,
        "filtered": bool(words or waiting or risk),
    }


# -- Import ------------------------------------------------------------------------------------


def report_view(report: Any, source: bytes) -> dict[str, Any]:
    """The import page's result: each issue (code, message, pointer, line:col, the excerpt as
    `forgec check` prints it) and, when clean, inspect's facts and the graph."""
    from forgec.answers import inspect_json
    from forgec.render.text import render_diagnostic

    text = report.source_map.text if report.source_map is not None else source_text(source)
    issues = [
        {
            "code": d.code,
            "severity": d.severity.value,
            "message": d.message,
            "pointer": d.path,
            "where": f"{d.span.line}:{d.span.column}" if d.span is not None else None,
            "hint": d.hint,
            "notes": list(d.notes),
            "excerpt": Lines(render_diagnostic(d, path=report.path, source=text)),
        }
        for d in report.diagnostics
    ]
    out: dict[str, Any] = {"ok": report.ok, "issues": issues, "path": report.path}
    if report.ok and report.manifest is not None:
        facts = inspect_json(report)
        out["facts"] = facts
        out["card"] = card_view(facts["consent"]) if facts["consent"] else None
        out["graph"] = graph_of(report.manifest, report.target, report.facts)
    return out


def graph_of(manifest: dict[str, Any], target: str, facts: Any, gained: Any = ()) -> dict[str, Any]:
    """The graph's layout; GAINED: node ids the verdict names, drawn highlighted."""
    from forgec.catalog import get_catalog
    from forgec.render.graph import graph_parts
    from forgec.screen.svg import layout

    flows = getattr(facts, "flows", ()) if facts is not None else ()
    parts = graph_parts(manifest, catalog=get_catalog(target), flows=flows)
    return layout(parts, gained=frozenset(gained))


def install_checked(
    store_path: Path | None, report: Any, source: bytes, name: str | None, target: str
) -> Any:
    """`Store.install` (what `forgec tools install` calls) with the report the page already
    checked within the budget, so the file is not checked a second time."""
    from forgec.store import Store

    with Store(store_path, checker=lambda *a, **k: report) as store:
        return store.install(source, path=name, target=target)


# -- a tool ------------------------------------------------------------------------------------


def card_of(stored: Any) -> dict[str, Any]:
    from forgec.render.consent import consent_card_json

    card = consent_card_json(stored.manifest, stored.marks, author=stored.author_words)
    # the store's name for the row (`v3`, `proposal 2`), as `forgec tools show` says it
    return card_view(card, which=stored.label)


def card_view(card: dict[str, Any], *, which: str | None = None) -> dict[str, Any]:
    """A consent card for the page: its rows as the terminal card words them."""
    from forgec.render.consent import card_rows

    rows = card_rows(card, which=which)
    return {
        **card,
        "rows": rows,
        "differs": [False] * len(rows),
        "description": Lines(card.get("description") or ""),
    }


def mark_differences(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Mark the rows of two cards that the other card does not have (same label and value),
    each row counted once: a row repeated on one side only is marked too."""
    from collections import Counter

    for mine, other in ((a, b), (b, a)):
        left = Counter(other["rows"])
        marks = []
        for row in mine["rows"]:
            marks.append(left[row] <= 0)
            left[row] -= 1
        mine["differs"] = marks
    for mine, other in ((a, b), (b, a)):
        if (mine.get("description") or "") != (other.get("description") or ""):
            mine["description_differs"] = True
        if mine.get("title") != other.get("title"):
            mine["title_differs"] = True


def ask_banner(marks: Any) -> str | None:
    """Why the tool asks before every run, in one sentence (`always_asks_banner`, the CLI's
    words too), or None."""
    from forgec.render.consent import always_asks_banner

    return always_asks_banner(marks)


def agreed_at(store: Any, stored: Any) -> str | None:
    """When the person said yes to this very version (its hash), or None."""
    for v in store.versions(stored.tool_id):
        if v.version == stored.version:
            return v.turned_on_at if v.hash == stored.hash else None
    return None


def installed_words(v: Any) -> str:
    return str(v.installed_at).replace("T", " ").removesuffix("Z") + " UTC"


def texts(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Each side's text (laid out over lines) and their line diff (`forgec.screen.textdiff`)."""
    from forgec.screen.textdiff import texts_and_diff

    out = texts_and_diff(old, new)
    for side in ("old", "new"):
        if out.get(side) is not None:
            out[side] = Lines(out[side])
    return out


def verdict_of(diff: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict the diff carries (SPEC §23, computed by `forgec.store.verdict` inside
    `diff_versions`), or None: a first consent has nothing to compare with."""
    import json

    verdict = diff.get("verdict")
    if not isinstance(verdict, dict):
        return None
    gains = []
    for g in verdict.get("gains") or ():
        witness = g.get("witness") if isinstance(g, dict) else None
        shown = json.dumps(witness.get("input"), ensure_ascii=True) if witness else None
        gains.append({**g, "witness_json": shown})
    return {**verdict, "gains": gains}


def gained_nodes(verdict: dict[str, Any] | None) -> set[str]:
    if not verdict:
        return set()
    return {g["node"] for g in verdict.get("gains", ()) if isinstance(g.get("node"), str)}


def tool_page(store: Any, tool: str) -> dict[str, Any]:
    summary = store.tool(tool)
    versions = store.versions(tool)
    current = store.get(tool)
    status = store.consent_status(tool)
    cards = {}
    for v in versions:
        if v.problem is None:
            cards[v.version] = card_of(store.get(tool, v.version))
    # a version is compared by its number, a proposal as "pN" (what `forgec tools diff` takes)
    sides = [
        (f"p{v.proposal}" if v.proposal is not None else str(v.version), v.label)
        for v in reversed(versions)
    ]
    return {
        "summary": summary,
        "current": current,
        "card": card_of(current),
        "banner": ask_banner(current.marks),
        "consent": status,
        "versions": list(reversed(versions)),
        # the truth about consent, in the CLI's words (`VersionInfo.consent_words`)
        "consent_words": {v.version: v.consent_words for v in versions},
        "installed_words": {v.version: installed_words(v) for v in versions},
        "sides": sides,
        "cards": cards,
        "proposals": store.proposals(tool),
        "can_roll_back": any(
            v.version < current.version and v.status == "previous" and v.proposal is None
            for v in versions
        ),
        "graph": graph_of(current.manifest, current.target, _facts_of(current)),
    }


def _facts_of(stored: Any) -> Any:
    """The flow facts of a stored version for its graph's flow edges: the stored manifest
    checked again (as `forgec graph` checks a file), within the check budget; over it the
    graph is drawn without flow edges."""
    from forgec.budget import check_with_budget
    from forgec.runtime.jsontext import dumps_text
    from forgec.screen.checking import DEFAULT_BUDGET

    report = check_with_budget(
        dumps_text(stored.manifest), target=stored.target, budget_s=DEFAULT_BUDGET
    )
    return report.facts


def diff_page(store: Any, tool: str, a: Any, b: Any) -> dict[str, Any]:
    """Any two versions compared: the verdict first (what B can do that A could not), §14's
    diff, the two texts and their line diff, B's graph with the gained steps highlighted."""
    summary = store.tool(tool)
    diff = consent_diff(store, summary.id, a, b)
    verdict = verdict_of(diff)
    old, new = _side(store, summary.id, a), _side(store, summary.id, b)
    return {
        "summary": summary,
        "diff": diff,
        "verdict": verdict,
        "old": old,
        "new": new,
        "text": texts(old.manifest, new.manifest),
        "graph": graph_of(new.manifest, new.target, _facts_of(new), gained_nodes(verdict)),
    }


def _side(store: Any, tool_id: str, which: Any) -> Any:
    """A side of a diff: version N, or proposal N for "pN" (`forgec tools diff`'s sides)."""
    if isinstance(which, str) and which.startswith("p"):
        return store.get_proposal(tool_id, int(which[1:]))
    return store.get(tool_id, int(which))


def enable_page(store: Any, tool: str) -> dict[str, Any]:
    """What turning the current version on shows, in this order (SPEC §23): the verdict
    against the version last agreed to, the ask banner, the card, §14's diff, the two texts
    and their line diff, the graph with the gained steps highlighted."""
    summary = store.tool(tool)
    current = store.get(tool)
    status = store.consent_status(tool)
    # the diff starts from the version last consented to (`ConsentStatus.basis`, what
    # `forgec tools enable` shows); nothing consented yet: everything is new
    basis = status.basis if status.basis != current.version else None
    diff = consent_diff(store, summary.id, basis, current.version)
    verdict = verdict_of(diff)
    before = store.get(tool, basis) if basis is not None else None
    return {
        "summary": summary,
        "current": current,
        "card": card_of(current),
        "consent": status,
        "banner": ask_banner(current.marks),
        "diff": diff,
        "verdict": verdict,
        "basis": before,
        "text": texts(before.manifest if before is not None else None, current.manifest),
        "graph": graph_of(
            current.manifest, current.target, _facts_of(current), gained_nodes(verdict)
        ),
    }


def enable_shown(store: Any, tool: str, shown_hash: str) -> str | None:
    """Turn on the current version if it is the one whose card the person saw (its hash):
    `Store.enable` with the person's yes. Else a line saying what changed, nothing turned on."""
    current = store.get(tool)
    if current.hash != shown_hash:
        return (
            f"{current.name} changed since the page was shown (now v{current.version}): "
            "read the card again"
        )
    store.enable(tool, consent=True)
    return None


def review_page(store: Any, tool: str, number: int) -> dict[str, Any]:
    """Proposal NUMBER beside the current version (what `forgec tools review` shows), in this
    order (SPEC §23): the verdict, the ask banner, both cards side by side with the rows that
    differ marked, §14's diff, each version's text and their line diff, the proposal's graph
    with the gained steps highlighted."""
    summary = store.tool(tool)
    current = store.get(tool)
    proposal = store.get_proposal(tool, number)
    diff = consent_diff(store, summary.id, current.version, f"p{number}")
    verdict = verdict_of(diff)
    current_card, proposal_card = card_of(current), card_of(proposal)
    mark_differences(current_card, proposal_card)
    agreed = agreed_at(store, current)
    return {
        "summary": summary,
        "current": current,
        "proposal": proposal,
        "current_card": current_card,
        "proposal_card": proposal_card,
        "current_heading": f"{current.label} — current"
        + (", you agreed to it" if agreed else ", not agreed to yet"),
        "proposal_heading": f"{proposal.label} — proposed by {proposal.author_words}",
        "banner": ask_banner(proposal.marks),
        "diff": diff,
        "verdict": verdict,
        "text": texts(current.manifest, proposal.manifest),
        "graph": graph_of(
            proposal.manifest, proposal.target, _facts_of(proposal), gained_nodes(verdict)
        ),
        "number": number,
        "next_version": summary.latest_version + 1,
        "testing": _testing(store, current, proposal),
    }


def _testing(store: Any, current: Any, proposal: Any) -> Any:
    """SPEC §22: the current version's cases run on the proposal (forgec/screen/testing.py)."""
    from forgec.screen.testing import testing_of

    return testing_of(store, current, proposal)


# -- Run ---------------------------------------------------------------------------------------


def run_page(store: Any, tool: str) -> dict[str, Any]:
    summary = store.tool(tool)
    current = store.get(tool)
    schema = current.manifest.get("inputSchema") or {}
    return {
        "summary": summary,
        "current": current,
        "card": card_of(current),
        "hash": current.hash,
        "enabled": current.enabled,
        "banner": ask_banner(current.marks),
        "asks": current.marks.always_asks or not store.has_consent(tool),
        "fields": input_fields(schema),
    }


def input_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """One form field per property of the input schema: a text box, a number, a checkbox, a
    choice (enum), or JSON text for anything else."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
    fields = []
    for name, sub in (props or {}).items():
        sub = sub if isinstance(sub, dict) else {}
        kind = sub.get("type")
        if isinstance(sub.get("enum"), list) and all(isinstance(x, str) for x in sub["enum"]):
            widget = "choice"
        elif kind in ("integer", "number"):
            widget = "number"
        elif kind == "boolean":
            widget = "checkbox"
        elif kind == "string":
            widget = "text"
        else:
            widget = "json"
        fields.append(
            {
                "name": name,
                "widget": widget,
                "kind": kind,
                "required": name in required,
                "description": sub.get("description"),
                "choices": sub.get("enum") or [],
                "default": sub.get("default"),
                "step": "1" if kind == "integer" else "any",
            }
        )
    return fields


def input_from_form(fields: list[dict[str, Any]], form: Any) -> tuple[Any, str | None]:
    """The tool input the form describes (the raw JSON box wins when filled), or a problem."""
    import orjson

    raw = form.get("input_json")
    if isinstance(raw, str) and raw.strip():
        try:
            return orjson.loads(raw), None
        except orjson.JSONDecodeError:
            return None, "the input is not valid JSON"
    out: dict[str, Any] = {}
    for f in fields:
        key = "in." + f["name"]
        value = form.get(key)
        if f["widget"] == "checkbox":
            if value is not None or f["required"]:
                out[f["name"]] = value == "on"
            continue
        if not isinstance(value, str) or value == "":
            continue
        if f["widget"] == "number":
            try:
                number = float(value)
            except ValueError:
                return None, f"{f['name']}: not a number"
            out[f["name"]] = (
                int(number) if f["kind"] == "integer" and number.is_integer() else number
            )
        elif f["widget"] == "json":
            try:
                out[f["name"]] = orjson.loads(value)
            except orjson.JSONDecodeError:
                return None, f"{f['name']}: not valid JSON"
        else:
            out[f["name"]] = value
    return out, None


def run_current(
    store_path: Path | None, host_config: Path | None, tool: str, shown_hash: str, tool_input: Any
) -> dict[str, Any]:
    """Run the current version (`forgec.store.running.run_stored`, what `forgec tools run`
    calls) if it is the one the page showed; the person's yes covers this run only."""
    from forgec.answers import ui_card
    from forgec.host import ConfigError
    from forgec.runtime import Program
    from forgec.store import Store
    from forgec.store.running import open_host_for, run_stored

    with Store(store_path) as store:
        stored = store.get(tool)
    if stored.hash != shown_hash:
        return {"problem": f"{stored.name} changed since the page was shown: run it again"}
    if not stored.enabled:
        return {"problem": f"{stored.name} is off"}

    def consent(request: Any) -> bool:
        # the page asked first (R4, or no consent on record for this hash), or it is on record
        return True

    try:
        host = open_host_for(host_config=host_config, default_labels=tuple(stored.marks.labels))
    except ConfigError as exc:
        return {"problem": str(exc)}
    try:
        program = Program.from_json(stored.program)
        result = run_stored(stored, tool_input, host=host, consent=consent, program=program)
    finally:
        host.close()
    out: dict[str, Any] = {"json": result.to_json(), "ok": result.ok}
    out["output"] = json_text(result.output) if result.ok else None
    out["card"] = ui_card(program.ui, result.output) if result.ok and program.ui else None
    return out
