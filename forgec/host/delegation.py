"""Delegation: sub-agents, background agent tasks, personas and the A2A queue.

- **Sub-agents** (`subagent.invoke`) are Python callables in a registry the embedder fills;
  `builtin_subagents()` gives the seed's five: `memory-retriever` (FTS5 over the thread's memory
  items) and `file-searcher` (ranked snippets from files under configured roots) need no model;
  `session-summarizer` and `memory-groomer` ask the configured model provider; `spark-coder`
  needs `OPENAI_API_KEY` and says so when it is missing. An unknown name is an error listing
  the registered ones. Each built-in's own input has a shape beside the rows
  (`forgec.ir.capabilities.SUBAGENT_SHAPES`), which `check` runs on literals and the bridge
  on every call before the sub-agent runs, so a sub-agent reads fields it can trust.
- **Background tasks** (`subagent.background`) are durable rows in `background_tasks`, run by a
  runner callable the embedder registers, on a worker thread with its own connection. They end
  `completed` or `failed` (a cancel or an overrun deadline is `failed` with the reason); the
  completion is posted into the originating thread's messages. `timeoutMinutes` below 15 is
  raised to 15. Without a runner the task is `queued` for the daemon (`forgec talond`), which
  runs it as a turn of its profile's whole persona. A profile is the persona's whole self:
  prompt, skills, labels, model and provider (`profile_of`), never only its card.
- **Personas** load from a folder: `<folder>/<name>/persona.md` (first line, `#` stripped, is
  the description), `skills/` (one entry per skill) and/or `skills.txt`, `labels.txt`
  (capability labels, one per line) and `prompts/`.
- **A2A** (`persona.send`, `persona.task_status`): durable rows in `a2a_tasks`
  (`queued` → `running` → `completed` | `failed`), processed by the handler registered for the
  target persona on a worker thread, or — with no handler, for a persona of the folder — left
  `queued` for the daemon; `await_reply` and `wait_ms` poll the row. A chain of sends (A → B →
  A …) is bounded: a send made by a turn that itself runs an A2A task of depth `MAX_DEPTH` is
  stored `failed` with an error saying so, and never reaches its target.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from forgec.host import db as dbm
from forgec.host import handler_errors as v
from forgec.host.db import Tx, new_id, now_iso
from forgec.host.handlers import HostCall, handles
from forgec.runtime.host import HostError


@attrs.frozen
class Persona:
    name: str
    description: str | None
    skills: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    folder: Path | None = None
    prompt: str = ""  # persona.md, the system prompt

    @property
    def prompts_dir(self) -> Path | None:
        return self.folder / "prompts" if self.folder is not None else None

    def card(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "skills": list(self.skills)}


class PersonaError(ValueError):
    """A persona file cannot be read (not UTF-8, unreadable): one line naming the file."""


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PersonaError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise PersonaError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    out: list[str] = []
    for line in _read(path).splitlines():
        line = line.split("#", 1)[0].strip()
        out.extend(x.strip() for x in line.split(",") if x.strip())
    return out


def load_personas(folder: Path | None) -> dict[str, Persona]:
    """Every `<folder>/<name>/persona.md` persona, by name (an absent folder: none)."""
    if folder is None or not folder.is_dir():
        return {}
    personas: dict[str, Persona] = {}
    for sub in sorted(folder.iterdir()):
        prompt = sub / "persona.md"
        if not sub.is_dir() or not prompt.is_file():
            continue
        text = _read(prompt)
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        description = first.lstrip("#").strip() or None
        skills = _lines(sub / "skills.txt")
        if (sub / "skills").is_dir():
            skills += [
                p.stem for p in sorted((sub / "skills").iterdir()) if not p.name.startswith(".")
            ]
        personas[sub.name] = Persona(
            name=sub.name,
            description=description,
            skills=tuple(dict.fromkeys(skills)),
            labels=tuple(_lines(sub / "labels.txt")),
            folder=sub,
            prompt=text,
        )
    return personas


@attrs.frozen
class DelegationContext:
    """What a sub-agent, a background runner or an A2A handler may use of the host."""

    persona: str
    thread: str
    db_path: Path
    # (op, input, output_schema) → the model's answer, through the host's model router
    model: Callable[[str, Any, Mapping[str, Any] | None], Any]
    file_roots: tuple[Path, ...] = ()
    spark_base_url: str = "https://api.openai.com/v1"
    spark_model: str = "gpt-5.4-spark"
    # variable name → the key the host read when it opened (`CredentialStore.key`): checked,
    # and scrubbed from everything the host lets out; a sub-agent never reads os.environ
    key: Callable[[str], str | None] = lambda name: None
    # the host's one scrub (`CredentialStore.scrub_value`), for what a background worker
    # writes to the database outside any call's boundary
    scrub: Callable[[Any], Any] = lambda value: value
    config: Any = None  # the HostConfig (a profile's model and provider)
    a2a_depth: int = 0  # depth of the A2A task the current turn runs for (0: none)


MAX_DEPTH = 4  # sends in one A2A chain (SPEC §19)


def profile_of(persona: Persona, config: Any = None) -> dict[str, Any]:
    """A persona as a background profile: everything it is (the seed: "a profile uses another
    loaded persona's prompt, skills, model, provider, and capabilities")."""
    chosen = (getattr(config, "persona_models", None) or {}).get(persona.name)
    provider = chosen.provider if chosen is not None else None
    model = chosen.model if chosen is not None else None
    if model is None:
        endpoint = (
            (getattr(config, "providers", None) or {}).get(provider)
            if provider is not None
            else getattr(config, "model", None)
        )
        model = getattr(endpoint, "model", None)
    return {
        **persona.card(),
        "prompt": persona.prompt,
        "labels": list(persona.labels),
        "model": model,
        "provider": provider,
    }


SubagentFn = Callable[[dict[str, Any], DelegationContext], Any]
BackgroundRunner = Callable[[dict[str, Any], DelegationContext], Any]
PersonaHandler = Callable[[str, str], Any]  # (message, from_persona) → reply


def _json_safe(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        v.fail(f"{what} returned a value that is not JSON")


# --- built-in sub-agents ---------------------------------------------------------------------


def memory_retriever(inp: dict[str, Any], ctx: DelegationContext) -> Any:
    from forgec.host.personal_data import fts_query

    query = inp["query"]  # checked at the bridge by its shape (SUBAGENT_SHAPES)
    limit = v.whole(inp.get("limit"), 10)
    match = fts_query(query)
    if match is None:
        return {"items": []}
    conn = dbm.connect(ctx.db_path)
    try:
        rows = conn.execute(
            "SELECT m.key, m.type, m.value, -bm25(memory_items_fts) AS score"
            " FROM memory_items_fts JOIN memory_items m ON m.seq = memory_items_fts.rowid"
            " WHERE memory_items_fts MATCH ? AND m.persona = ? AND m.thread_id = ?"
            " ORDER BY bm25(memory_items_fts) LIMIT ?",
            (match, ctx.persona, ctx.thread, limit),
        ).fetchall()
    finally:
        conn.close()
    return {
        "items": [
            {
                "key": r["key"],
                "namespace": r["type"],
                "value": r["value"],
                "score": float(r["score"]),
            }
            for r in rows
        ]
    }


_MAX_FILES = 5000
_MAX_FILE_BYTES = 1024 * 1024


def file_searcher(inp: dict[str, Any], ctx: DelegationContext) -> Any:
    """Rank files under the roots by how often the query's words occur; snippets per hit line."""
    name = "file-searcher"
    query = inp["query"]  # checked at the bridge by its shape (SUBAGENT_SHAPES)
    limit = v.whole(inp.get("limit"), 10)
    if not ctx.file_roots:
        v.fail(
            f"{name}: no roots are configured ([subagents.file_searcher] roots in the host config)"
        )
    words = [w.casefold() for w in re.findall(r"\w+", query)][:16]
    if not words:
        return {"results": []}
    results: list[dict[str, Any]] = []
    seen = 0
    for root in ctx.file_roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fname in sorted(filenames):
                seen += 1
                if seen > _MAX_FILES:
                    break
                path = Path(dirpath) / fname
                try:
                    if path.is_symlink() or path.stat().st_size > _MAX_FILE_BYTES:
                        continue
                    data = path.read_bytes()
                except OSError:
                    continue
                if b"\0" in data[:4096]:
                    continue  # binary
                text = data.decode("utf-8", "replace")
                score = 0
                best: tuple[int, int, str] | None = None
                for lineno, line in enumerate(text.splitlines(), 1):
                    folded = line.casefold()
                    hits = sum(folded.count(w) for w in words)
                    if hits:
                        score += hits
                        if best is None or hits > best[0]:
                            best = (hits, lineno, line.strip()[:240])
                if best is not None:
                    results.append(
                        {
                            "path": str(path),
                            "line": best[1],
                            "snippet": best[2],
                            "score": score,
                        }
                    )
    results.sort(key=lambda r: (-r["score"], r["path"]))
    return {"results": results[:limit]}


def session_summarizer(inp: dict[str, Any], ctx: DelegationContext) -> Any:
    name = "session-summarizer"
    extra = inp.get("text")  # checked at the bridge by its shape (SUBAGENT_SHAPES)
    conn = dbm.connect(ctx.db_path)
    try:
        rows = conn.execute(
            "SELECT channel_id, markdown, created_at FROM messages"
            " WHERE persona = ? AND thread_id = ? ORDER BY seq",
            (ctx.persona, ctx.thread),
        ).fetchall()
    finally:
        conn.close()
    history = [
        {"channel": r["channel_id"], "at": r["created_at"], "text": r["markdown"]} for r in rows
    ]
    if extra:
        history.append({"channel": "input", "at": now_iso(), "text": extra})
    if not history:
        v.fail(f"{name}: the thread has no messages to summarize")
    schema = {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
        "additionalProperties": False,
    }
    answer = ctx.model("summarize", {"conversation": history}, schema)
    return {"summary": answer["summary"], "messages": len(history)}


def memory_groomer(inp: dict[str, Any], ctx: DelegationContext) -> Any:
    # takes no input: its shape (SUBAGENT_SHAPES) refuses any field at the bridge
    conn = dbm.connect(ctx.db_path)
    try:
        rows = conn.execute(
            "SELECT key, type, value FROM memory_items WHERE persona = ? AND thread_id = ?"
            " ORDER BY seq",
            (ctx.persona, ctx.thread),
        ).fetchall()
        items = [{"key": r["key"], "namespace": r["type"], "value": r["value"]} for r in rows]
        if not items:
            return {"deleted": [], "remaining": 0}
        schema = {
            "type": "object",
            "properties": {"delete": {"type": "array", "items": {"type": "string"}}},
            "required": ["delete"],
            "additionalProperties": False,
        }
        answer = ctx.model(
            "rank",
            {
                "goal": "list the keys of duplicate, obsolete or trivial memory items to prune",
                "items": items,
            },
            schema,
        )
        known = {i["key"] for i in items}
        doomed = [k for k in dict.fromkeys(answer["delete"]) if k in known]
        with Tx(conn):
            for key in doomed:
                conn.execute(
                    "DELETE FROM memory_items WHERE persona = ? AND thread_id = ? AND key = ?",
                    (ctx.persona, ctx.thread, key),
                )
    finally:
        conn.close()
    return {"deleted": doomed, "remaining": len(items) - len(doomed)}


def spark_coder(inp: dict[str, Any], ctx: DelegationContext) -> Any:
    from forgec.host.models import OpenAIProvider, model_answer
    from forgec.runtime.host import CallContext

    name = "spark-coder"
    key = ctx.key("OPENAI_API_KEY")
    if not key:
        v.fail(f"{name} needs OPENAI_API_KEY, which is not set in the host's environment")
    task = inp["task"]  # checked at the bridge by its shape (SUBAGENT_SHAPES)
    files = inp.get("files") or {}
    schema = {
        "type": "object",
        "properties": {
            "operations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "enum": ["write", "delete"]},
                        "path": {"type": "string"},
                        "content": {"type": "string"},
                    },
                    "required": ["op", "path"],
                },
            }
        },
        "required": ["operations"],
    }
    provider = OpenAIProvider(ctx.spark_base_url, ctx.spark_model, api_key=key, name=name)
    step = CallContext(tool_id=name, tool_version=1, node_id=name)  # a sub-agent's one step
    return model_answer(
        provider, "generate", {"task": task, "files": dict(files)}, {}, schema, step
    )


def builtin_subagents() -> dict[str, SubagentFn]:
    return {
        "memory-retriever": memory_retriever,
        "file-searcher": file_searcher,
        "session-summarizer": session_summarizer,
        "memory-groomer": memory_groomer,
        "spark-coder": spark_coder,
    }


def invoke(
    inp: Mapping[str, Any], registry: Mapping[str, SubagentFn], ctx: DelegationContext
) -> dict[str, Any]:
    cap = "subagent.invoke"
    f = inp  # checked at the bridge by the row's shape
    name = f["name"]
    payload = f.get("input") or {}
    fn = registry.get(name)
    if fn is None:
        known = ", ".join(sorted(registry)) or "none"
        v.fail(f"{cap}: no sub-agent named {name!r} is registered (registered: {known})")
    try:
        answer = fn(dict(payload), ctx)
    except HostError:
        raise
    except Exception as exc:  # an embedder's bug is this call's failure, not the host's
        v.fail(f"{cap}: sub-agent {name!r} failed: {type(exc).__name__}: {exc}")
    return {"result": _json_safe(answer, f"sub-agent {name!r}")}


# --- background tasks ------------------------------------------------------------------------

BG = "subagent.background"


def _bg_json(row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"taskId": row["id"], "status": row["status"]}
    if row["status"] == "completed":
        out["result"] = json.loads(row["result"]) if row["result"] is not None else None
    elif row["status"] == "failed":
        out["error"] = row["error"]
    out["createdAt"] = row["created_at"]
    out["updatedAt"] = row["updated_at"]
    return out


def _expire(conn: Any) -> None:
    """Running tasks past their deadline are failed (their worker may be long gone)."""
    now = now_iso()
    with Tx(conn):
        conn.execute(
            "UPDATE background_tasks SET status = 'failed', error = 'timed out', updated_at = ?"
            " WHERE status IN ('queued', 'running') AND deadline < ?",
            (now, now),
        )


def _post(conn: Any, persona: str, thread: str | None, text: str) -> None:
    if thread is None:
        return
    now = now_iso()
    conn.execute(
        "INSERT INTO threads (id, persona, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (thread, persona, now),
    )
    conn.execute(
        "INSERT INTO messages (id, thread_id, persona, channel_id, connector, content, markdown,"
        " created_at) VALUES (?, ?, ?, 'background', 'outbox', ?, ?, ?)",
        (new_id("msg"), thread, persona, text, text, now),
    )


def _finish_bg(
    db_path: Path, task_id: str, persona: str, thread: str | None, result: Any, error: str | None
) -> None:
    conn = dbm.connect(db_path)
    try:
        with Tx(conn):
            status = "failed" if error is not None else "completed"
            cur = conn.execute(
                "UPDATE background_tasks SET status = ?, result = ?, error = ?, updated_at = ?"
                " WHERE id = ? AND status = 'running'",
                (
                    status,
                    None if error else json.dumps(result, ensure_ascii=False),
                    error,
                    now_iso(),
                    task_id,
                ),
            )
            if cur.rowcount:
                summary = f"failed: {error}" if error else "completed"
                _post(conn, persona, thread, f"Background task `{task_id}` {summary}.")
    finally:
        conn.close()


def background_job(
    task_id: str,
    prompt: str,
    provider: str | None,
    profile: Persona | None,
    workdir: str | None,
    minutes: int,
    ctx: DelegationContext,
) -> dict[str, Any]:
    """What a background runner is handed: the task and its profile's whole persona."""
    return {
        "taskId": task_id,
        "prompt": prompt,
        "provider": provider,
        "profile": profile_of(profile, ctx.config) if profile is not None else None,
        "workingDirectory": workdir,
        "timeoutMinutes": minutes,
    }


def background(
    conn: Any,
    inp: Mapping[str, Any],
    *,
    runner: BackgroundRunner | None,
    personas: Mapping[str, Persona],
    ctx: DelegationContext,
) -> dict[str, Any]:
    f = inp  # checked at the bridge by the row's shape
    action = f["action"]
    if action == "profiles":
        # wrapped like every delegation answer (SPEC §13), so it matches the outputSchema
        return {"result": [p.card() for p in personas.values()]}
    if action != "spawn":
        task_id = f["taskId"]
        _expire(conn)
        row = conn.execute(
            "SELECT * FROM background_tasks WHERE id = ? AND persona = ?", (task_id, ctx.persona)
        ).fetchone()
        if row is None:
            v.fail(f"{BG}: no background task {task_id!r} for this persona")
        if action == "cancel":
            with Tx(conn):
                conn.execute(
                    "UPDATE background_tasks SET status = 'failed', error = 'cancelled',"
                    " updated_at = ? WHERE id = ? AND status IN ('queued', 'running')",
                    (now_iso(), task_id),
                )
            row = conn.execute("SELECT * FROM background_tasks WHERE id = ?", (task_id,)).fetchone()
        out = _bg_json(row)
        if action == "status":
            out.pop("result", None)
        return out
    # SPEC §21 planned work: a forged tool and its input in place of the prompt (the daemon
    # runs it; an in-process runner runs prompts only)
    tool = f.get("tool")
    tool_input = _planned_input(f, runner is not None, BG)
    prompt = f.get("prompt") or f"run the forged tool {tool}"
    provider = f.get("provider")
    profile = f.get("profile")
    workdir = f.get("workingDirectory")
    minutes = min(v.whole(f.get("timeoutMinutes"), 15), 24 * 60)
    minutes = max(minutes, 15)  # the seed: the minimum effective value is 15
    if profile is not None and profile not in personas:
        known = ", ".join(sorted(personas)) or "none are loaded"
        v.fail(f"{BG}: unknown profile {profile!r} (personas: {known})")
    if workdir is not None and not Path(workdir).expanduser().is_dir():
        v.fail(f"{BG}: workingDirectory {workdir!r} is not a directory")
    if provider is not None and ctx.config is not None and provider not in ctx.config.providers:
        known = ", ".join(sorted(ctx.config.providers)) or "none are configured"
        v.fail(f"{BG}: unknown provider {provider!r} ([providers.NAME]: {known})")
    task_id = new_id("bg")
    now = _dt.datetime.now(_dt.UTC)
    deadline = (now + _dt.timedelta(minutes=minutes)).isoformat(timespec="milliseconds")
    with Tx(conn):
        conn.execute(
            "INSERT INTO background_tasks (id, persona, thread_id, prompt, provider, profile,"
            " working_directory, timeout_minutes, tool, input, status, created_at, updated_at,"
            " deadline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                ctx.persona,
                ctx.thread,
                prompt,
                provider,
                profile,
                workdir,
                minutes,
                tool,
                tool_input,
                "running" if runner is not None else "queued",
                now_iso(),
                now_iso(),
                deadline.replace("+00:00", "Z"),
            ),
        )
    if runner is None:  # the daemon takes it from the queue
        return {"taskId": task_id, "status": "queued"}
    job = background_job(
        task_id, prompt, provider, personas[profile] if profile else None, workdir, minutes, ctx
    )

    def work() -> None:
        try:
            result = ctx.scrub(_json_safe(runner(job, ctx), "the background runner"))
        except Exception as exc:  # a runner failure is the task's failure, not the host's
            _finish_bg(
                ctx.db_path,
                task_id,
                ctx.persona,
                ctx.thread,
                None,
                ctx.scrub(getattr(exc, "message", None) or str(exc) or type(exc).__name__),
            )
        else:
            _finish_bg(ctx.db_path, task_id, ctx.persona, ctx.thread, result, None)

    threading.Thread(target=work, name=f"forgec-bg-{task_id}", daemon=True).start()
    return {"taskId": task_id, "status": "running"}


# --- A2A -------------------------------------------------------------------------------------

TERMINAL = ("completed", "failed")


def _planned_input(f: Mapping[str, Any], in_process: bool, cap: str) -> str | None:
    """A planned task's input as stored (JSON text), None for a prompt; refused where the
    work would run in-process (only `forgec talond` runs planned work, SPEC §21)."""
    tool = f.get("tool")
    if tool is None:
        return None
    if in_process:
        v.fail(f"{cap}: a planned task (`tool`) runs in forgec talond, not in this process")
    return json.dumps(f.get("input", {}), ensure_ascii=False, separators=(",", ":"))


def _a2a_json(row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": row["id"],
        "status": row["status"],
        "targetPersona": row["target_persona"],
    }
    if row["status"] == "completed":
        out["result"] = json.loads(row["result"]) if row["result"] is not None else None
    elif row["status"] == "failed":
        out["error"] = row["error"]
    return out


def process_a2a(db_path: Path, task_id: str, handler: PersonaHandler) -> None:
    """Claim a queued A2A task, run the handler, store the reply (a worker thread's job)."""
    conn = dbm.connect(db_path)
    try:
        with Tx(conn):
            row = conn.execute(
                "SELECT * FROM a2a_tasks WHERE id = ? AND status = 'queued'", (task_id,)
            ).fetchone()
            if row is None:
                return
            conn.execute(
                "UPDATE a2a_tasks SET status = 'running', updated_at = ? WHERE id = ?",
                (now_iso(), task_id),
            )
        try:
            reply = _json_safe(handler(row["message"], row["from_persona"]), "the persona handler")
            status, result, error = "completed", json.dumps(reply, ensure_ascii=False), None
        except Exception as exc:
            status, result, error = (
                "failed",
                None,
                getattr(exc, "message", None) or str(exc) or type(exc).__name__,
            )
        with Tx(conn):
            conn.execute(
                "UPDATE a2a_tasks SET status = ?, result = ?, error = ?, updated_at = ?"
                " WHERE id = ?",
                (status, result, error, now_iso(), task_id),
            )
    finally:
        conn.close()


def start_worker(db_path: Path, task_id: str, handler: PersonaHandler) -> None:
    threading.Thread(
        target=process_a2a,
        args=(db_path, task_id, handler),
        name=f"forgec-a2a-{task_id}",
        daemon=True,
    ).start()


def _wait(conn: Any, task_id: str, wait_ms: int) -> Any:
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        row = conn.execute("SELECT * FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None or row["status"] in TERMINAL or time.monotonic() >= deadline:
            return row
        time.sleep(0.02)


def persona_send(
    conn: Any,
    inp: Mapping[str, Any],
    *,
    personas: Mapping[str, Persona],
    handlers: Mapping[str, PersonaHandler],
    ctx: DelegationContext,
    await_ms: int,
) -> dict[str, Any]:
    cap = "persona.send"
    f = inp  # checked at the bridge by the row's shape
    target = f["target_persona"]
    tool = f.get("tool")
    message = f.get("message") or f"run the forged tool {tool}"
    await_reply = bool(f.get("await_reply", False))
    if target == ctx.persona:
        v.fail(f"{cap}: a persona cannot send a task to itself")
    if target not in personas and target not in handlers:
        known = ", ".join(sorted((set(personas) | set(handlers)) - {ctx.persona})) or "none"
        v.fail(f"{cap}: unknown persona {target!r} (available: {known})")
    handler = handlers.get(target)
    tool_input = _planned_input(f, handler is not None, cap)
    task_id = new_id("a2a")
    now = now_iso()
    depth = ctx.a2a_depth + 1
    too_deep = depth > MAX_DEPTH
    error = (
        f"refused: the A2A chain is over its bound of {MAX_DEPTH} sends "
        f"(this send would be number {depth}); the task never reached {target!r}"
        if too_deep
        else None
    )
    with Tx(conn):
        conn.execute(
            "INSERT INTO a2a_tasks (id, from_persona, target_persona, message, tool, input,"
            " status, error, depth, thread_id, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                ctx.persona,
                target,
                message,
                tool,
                tool_input,
                "failed" if too_deep else "queued",
                error,
                depth,
                ctx.thread,
                now,
                now,
            ),
        )
    if too_deep:
        return {"taskId": task_id, "status": "failed", "targetPersona": target, "error": error}
    if handler is not None:
        start_worker(ctx.db_path, task_id, handler)
    # else: a persona of the folder with no in-process handler; the daemon takes it
    if not await_reply:
        return {"taskId": task_id, "status": "queued"}
    return _a2a_json(_wait(conn, task_id, await_ms))


def task_status(conn: Any, inp: Mapping[str, Any], *, ctx: DelegationContext) -> dict[str, Any]:
    cap = "persona.task_status"
    f = inp  # checked at the bridge by the row's shape
    task_id = f["task_id"]
    wait_ms = min(v.whole(f.get("wait_ms"), 0), 120_000)
    row = conn.execute("SELECT from_persona FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None or row["from_persona"] != ctx.persona:
        v.fail(f"{cap}: no A2A task {task_id!r} sent by this persona")
    return _a2a_json(_wait(conn, task_id, wait_ms))


def persona_list(
    personas: Mapping[str, Persona], handlers: Mapping[str, PersonaHandler], caller: str
) -> list[dict[str, Any]]:
    cards = {n: p.card() for n, p in personas.items()}
    for name in handlers:
        cards.setdefault(name, {"name": name, "description": None, "skills": []})
    return [cards[n] for n in sorted(cards) if n != caller]


def resume_queued(db_path: Path, conn: Any, handlers: Mapping[str, PersonaHandler]) -> None:
    """Start workers for queued A2A tasks whose target has a handler here (after a restart)."""
    if not handlers:
        return
    rows = conn.execute(
        "SELECT id, target_persona FROM a2a_tasks WHERE status = 'queued' ORDER BY seq"
    ).fetchall()
    for row in rows:
        handler = handlers.get(row["target_persona"])
        if handler is not None:
            start_worker(db_path, row["id"], handler)


# --- the handlers the bridge calls by name (`forgec.host.handlers`) --------------------------


@handles("subagent.invoke")
def handle_invoke(call: HostCall) -> dict[str, Any]:
    host = call.host
    return invoke(call.input, host.subagents, host.delegation_context(call.context))


@handles(BG)
def handle_background(call: HostCall) -> dict[str, Any]:
    host = call.host
    return background(
        call.conn,
        call.input,
        runner=host.background_runner,
        personas=host.personas,
        ctx=host.delegation_context(call.context),
    )


@handles("persona.send")
def handle_persona_send(call: HostCall) -> dict[str, Any]:
    host = call.host
    return persona_send(
        call.conn,
        call.input,
        personas=host.personas,
        handlers=host.persona_handlers,
        ctx=host.delegation_context(call.context),
        await_ms=host.config.a2a_await_ms,
    )


@handles("persona.task_status")
def handle_task_status(call: HostCall) -> dict[str, Any]:
    return task_status(call.conn, call.input, ctx=call.host.delegation_context(call.context))


@handles("persona.list")
def handle_persona_list(call: HostCall) -> list[dict[str, Any]]:
    host = call.host
    return persona_list(host.personas, host.persona_handlers, host.persona)
