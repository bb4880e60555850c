"""`schedule.manage`: durable cron schedules owned by the current persona.

Schedules live in the `schedules` table, so a new host (a restart) sees them. `cronExpr` must pass
the one cron rule (`forgec.catalog.cron.validate_cron`, the same the checker applies); `prompt` and `promptFile` are exclusive, and a
`promptFile` is a basename (`memory-grooming`), resolved in the persona's `prompts/` folder as
`NAME`, `NAME.md` or `NAME.txt` — never a path. Every action sees only the persona's own rows,
so another persona's schedule id is "not found", not "forbidden" (ids do not leak).

`prompt` and `promptFile` are both optional (the seed): a schedule with neither fires its
`label` as the prompt, and one with no label either fires a line naming the schedule
(`forgec.daemon` reads `firing_prompt`). `cancel` disables, and `update` keeps a cancelled
schedule disabled (changing a schedule is not arming it: create a new one to run it again);
`delete` removes. `update`, `cancel` and `delete` return the row as it was
before under `previous`, which is what the compensation restores (SPEC §5: `schedule.manage` ⟲
`schedule.manage`).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forgec.catalog.cron import normalize_cron, validate_cron
from forgec.host import handler_errors as v
from forgec.host.db import Tx, new_id, now_iso
from forgec.host.handlers import HostCall, handles
from forgec.ir.hooks import row_hook

CAP = "schedule.manage"
_BASENAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}(\.(md|txt))?$")


def check_cron(expr: str) -> str:
    """`expr` as stored, when the one cron rule (`forgec.catalog.cron`) accepts it."""
    problem = validate_cron(expr)
    if problem is not None:
        v.fail(f"{CAP}: `cronExpr` {expr[:200]!r} is refused: {problem}")
    return normalize_cron(expr)


def next_run(expr: str) -> str | None:
    from croniter import croniter

    try:
        nxt = croniter(expr, _dt.datetime.now(_dt.UTC)).get_next(_dt.datetime)
    except Exception:
        return None
    return nxt.astimezone(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def resolve_prompt_file(name: str, prompts_dir: Path | None) -> Path:
    """The file a `promptFile` alias names in the persona's prompts/ folder."""
    if "/" in name or "\\" in name or name.startswith(".") or not _BASENAME.match(name):
        v.fail(
            f"{CAP}: `promptFile` must be a prompt name such as 'memory-grooming', "
            f"not a path ({name!r})"
        )
    if prompts_dir is None:
        v.fail(f"{CAP}: no persona folder is configured, so `promptFile` {name!r} cannot be found")
    candidates = [name] if name.endswith((".md", ".txt")) else [name, f"{name}.md", f"{name}.txt"]
    for candidate in candidates:
        path = prompts_dir / candidate
        if path.is_file() and path.resolve().parent == prompts_dir.resolve():
            return path
    v.fail(f"{CAP}: no prompt {name!r} in the persona's prompts folder ({prompts_dir})")


def row_json(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "scheduleId": row["id"],
        "cronExpr": row["cron_expr"],
        "label": row["label"],
        "enabled": bool(row["enabled"]),
        "prompt": row["prompt"],
        "promptFile": row["prompt_file"],
        "tool": row["tool"],
        "input": _input(row["input"]),
        "threadId": row["thread_id"],
        "nextRun": next_run(row["cron_expr"]) if row["enabled"] else None,
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def _input(text: Any) -> Any:
    """A planned schedule's stored input (JSON text), None for a prompt schedule."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _input_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _get(conn: sqlite3.Connection, persona: str, sid: str) -> sqlite3.Row:
    row = conn.execute(
        "SELECT * FROM schedules WHERE id = ? AND persona = ?", (sid, persona)
    ).fetchone()
    if row is None:
        v.fail(f"{CAP}: no schedule {sid!r} for this persona")
    return row


def manage(
    conn: sqlite3.Connection,
    inp: Mapping[str, Any],
    *,
    persona: str,
    thread: str,
    prompts_dir: Path | None,
) -> dict[str, Any]:
    f = inp
    action = f["action"]
    sid = f.get("scheduleId")
    cron = f.get("cronExpr")
    label = f.get("label")
    prompt = f.get("prompt")
    prompt_file = f.get("promptFile")
    # SPEC §21 planned turns: a forged tool and its input in place of a prompt (the row's shape
    # keeps `tool` apart from `prompt`/`promptFile`, and `input` with its `tool`)
    tool = f.get("tool")
    tool_input = f.get("input", {} if tool is not None else None)
    if cron is not None:
        cron = normalize_cron(cron)  # the row's shape has checked it with the one cron rule
    if prompt_file is not None:
        resolve_prompt_file(prompt_file, prompts_dir)

    if action == "list":
        rows = conn.execute(
            "SELECT * FROM schedules WHERE persona = ? ORDER BY created_at, seq", (persona,)
        ).fetchall()
        return {"schedules": [row_json(r) for r in rows]}
    if action == "create":
        new = new_id("sch")
        now = now_iso()
        with Tx(conn):
            conn.execute(
                "INSERT INTO schedules (id, persona, thread_id, cron_expr, label, prompt,"
                " prompt_file, tool, input, enabled, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
                (
                    new,
                    persona,
                    thread,
                    cron,
                    label,
                    prompt,
                    prompt_file,
                    tool,
                    _input_text(tool_input),
                    now,
                    now,
                ),
            )
        return row_json(_get(conn, persona, new))
    assert sid is not None
    with Tx(conn):
        before = _get(conn, persona, sid)
        previous = row_json(before)
        if action == "delete":
            conn.execute("DELETE FROM schedules WHERE id = ?", (sid,))
            return {"scheduleId": sid, "deleted": True, "previous": previous}
        if action == "cancel":
            conn.execute(
                "UPDATE schedules SET enabled = 0, updated_at = ? WHERE id = ?", (now_iso(), sid)
            )
        else:  # update
            new_prompt, new_file = before["prompt"], before["prompt_file"]
            new_tool, new_input = before["tool"], before["input"]
            if prompt is not None:
                new_prompt, new_file, new_tool, new_input = prompt, None, None, None
            elif prompt_file is not None:
                new_prompt, new_file, new_tool, new_input = None, prompt_file, None, None
            elif tool is not None:
                new_prompt, new_file, new_tool = None, None, tool
                new_input = _input_text(tool_input)
            conn.execute(
                "UPDATE schedules SET cron_expr = ?, label = ?, prompt = ?, prompt_file = ?,"
                " tool = ?, input = ?, updated_at = ? WHERE id = ?",
                (
                    cron or before["cron_expr"],
                    label if label is not None else before["label"],
                    new_prompt,
                    new_file,
                    new_tool,
                    new_input,
                    now_iso(),
                    sid,
                ),
            )
    result = row_json(_get(conn, persona, sid))
    result["previous"] = previous
    return result


def restore(conn: sqlite3.Connection, persona: str, previous: dict[str, Any]) -> None:
    """Put a schedule back exactly as `previous` (a `row_json`), re-creating it if deleted."""
    sid = previous["scheduleId"]
    with Tx(conn):
        exists = conn.execute("SELECT persona FROM schedules WHERE id = ?", (sid,)).fetchone()
        if exists is not None and exists["persona"] != persona:
            v.fail(f"{CAP}: schedule {sid!r} belongs to another persona")
        values = (
            previous["cronExpr"],
            previous["label"],
            previous["prompt"],
            previous["promptFile"],
            previous.get("tool"),
            _input_text(previous.get("input")),
            1 if previous["enabled"] else 0,
            previous["threadId"],
            now_iso(),
        )
        if exists is None:
            conn.execute(
                "INSERT INTO schedules (cron_expr, label, prompt, prompt_file, tool, input,"
                " enabled, thread_id, updated_at, id, persona, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, sid, persona, previous["createdAt"]),
            )
        else:
            conn.execute(
                "UPDATE schedules SET cron_expr = ?, label = ?, prompt = ?, prompt_file = ?,"
                " tool = ?, input = ?, enabled = ?, thread_id = ?, updated_at = ? WHERE id = ?",
                (*values, sid),
            )


def remove(conn: sqlite3.Connection, persona: str, sid: str) -> None:
    with Tx(conn):
        conn.execute("DELETE FROM schedules WHERE id = ? AND persona = ?", (sid, persona))


def firing_prompt(row: sqlite3.Row | dict[str, Any], prompts_dir: Path | None) -> str:
    """What a firing asks the persona (SPEC §19): the `prompt`, else the `promptFile`'s text,
    else the `label`, else a line naming the schedule."""
    if row["prompt"]:
        return str(row["prompt"])
    if row["prompt_file"]:
        return resolve_prompt_file(str(row["prompt_file"]), prompts_dir).read_text(
            encoding="utf-8", errors="replace"
        )
    if row["label"]:
        return str(row["label"])
    return f"Scheduled task {row['id']} ({row['cron_expr']})"


@handles(CAP)
def handle(call: HostCall) -> dict[str, Any]:
    return manage(
        call.conn,
        call.input,
        persona=call.persona,
        thread=call.thread,
        prompts_dir=call.host.prompts_dir,
    )


@row_hook("undo", CAP)
def undo(call: HostCall, result: Mapping[str, Any]) -> dict[str, Any]:
    """A created schedule is removed; an updated, cancelled or deleted one put back as the
    step's result says it was (`previous`); a list changed nothing."""
    action = call.input.get("action")
    if action == "create":
        remove(call.conn, call.persona, str(result.get("scheduleId")))
        return {"scheduleId": result.get("scheduleId"), "deleted": True}
    if action in ("update", "cancel", "delete"):
        prev = result.get("previous")
        if not isinstance(prev, Mapping):
            v.fail(f"{CAP}: the step's result has no `previous` schedule")
        restore(call.conn, call.persona, dict(prev))
        return {"scheduleId": prev["scheduleId"], "restored": True}
    return {"undone": False, "reason": f"{action} changes nothing"}
