"""What a `tools/call` of a forged tool returns to the client (SPEC §17; docs/mcp.md lists it).

- **ok**: `structuredContent` is the output (wrapped as `{"result": ..}` when the tool's output
  is not an object), the same JSON as the first text item, and — for a tool with `ui` — its card
  as a second text item (the title, then one `label: value` line per value) with the values in
  `_meta["forgec/ui"]`. `_meta["forgec/run"]` holds the transitions and compensations.
- **failed**: `isError: true`, the error (`<tool> failed at node X: CODE: message`) as the only
  text item, **no** `structuredContent` — a client that validates it against the tool's
  `outputSchema` would otherwise reject the answer and hide the error — and the whole SPEC §8 run
  result in `_meta["forgec/run"]`.

Text that came from the tool or its run (card title, labels, values, error messages) reaches a
person's screen, so control and bidirectional characters are shown escaped, never raw.
"""

from __future__ import annotations

from typing import Any

import orjson

# Unicode Cc plus the bidirectional controls of SPEC §14
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def safe_text(text: str, *, keep_newlines: bool = False) -> str:
    """TEXT with every control or bidi character escaped (`\\x1b`, `\\u202e`)."""
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if keep_newlines and ch in "\n\t":
            out.append(ch)
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif ch in _BIDI:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def ui_values(ui: dict[str, Any], output: Any) -> list[dict[str, Any]]:
    """`[{"label", "path", "value"}]`; a path the output lacks has `"value": null, "missing": true`."""
    from forgec.runtime.values import MISSING, resolve

    values: list[dict[str, Any]] = []
    for entry in ui.get("values") or []:
        segments = entry.get("segments")
        value = resolve({"$": output}, ["$", *segments]) if segments else MISSING
        item: dict[str, Any] = {"label": entry.get("label"), "path": entry.get("path")}
        if value is MISSING:
            item.update(value=None, missing=True)
        else:
            item["value"] = value
        values.append(item)
    return values


def ui_card(title: str, values: list[dict[str, Any]]) -> str:
    """The card a person reads: the title, then `label: value` lines (`—` for a missing one)."""
    from forgec.runtime.values import render

    lines = [safe_text(title)]
    for item in values:
        shown = "—" if item.get("missing") else render(item["value"])
        lines.append(f"{safe_text(str(item['label']))}: {safe_text(shown)}")
    return "\n".join(lines)


def forged_ok(
    run: dict[str, Any], *, wraps_output: bool, ui: dict[str, Any] | None
) -> dict[str, Any]:
    """The fields of a successful call's result (content, structured_content, meta)."""
    import mcp_types as types

    output = run["output"]
    structured = {"result": output} if wraps_output or not isinstance(output, dict) else output
    content: list[Any] = [types.TextContent(type="text", text=dumps(structured))]
    meta: dict[str, Any] = {"forgec/run": {k: run[k] for k in ("transitions", "compensations")}}
    if ui is not None:
        values = ui_values(ui, output)
        title = str(ui.get("title") or "")
        content.append(types.TextContent(type="text", text=ui_card(title, values)))
        meta["forgec/ui"] = {"title": title, "values": values}
    return {"content": content, "structured_content": structured, "meta": meta}


def forged_failed(name: str, run: dict[str, Any]) -> dict[str, Any]:
    """The fields of a failed call's result: the message as text, the run in `_meta` only."""
    import mcp_types as types

    error = run.get("error") or {}
    where = f" at node `{error.get('node')}`" if error.get("node") else ""
    text = f"{name} failed{where}: {error.get('code')}: {error.get('message')}"
    undone = [c for c in run.get("compensations") or [] if isinstance(c, dict)]
    if undone:
        text += "\ncompensations: " + ", ".join(
            f"{c.get('node')} ({c.get('capability')}) {c.get('status')}" for c in undone
        )
    return {
        "content": [types.TextContent(type="text", text=safe_text(text, keep_newlines=True))],
        "meta": {"forgec/run": run},
        "is_error": True,
    }


def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
