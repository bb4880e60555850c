"""A persona as an agent: one turn is a chat completion with tools, every call through the bridge.

A turn of persona P (SPEC §19):
- **the system prompt** is P's `persona.md`, its skills, and the instruction files of exactly
  the tools it is offered (SPEC §13, `forgec.mcp.instructions`);
- **the tools** are the host tools P's labels grant, under their MCP names with the MCP
  server's input schemas (`forgec.mcp.listing.host_entries`, the one definition), and the
  enabled forged tools P's labels cover (`forged_entry`), as OpenAI function tools;
- **every call goes through the bridge**: a name not offered is refused; the input is checked
  against the offered schema; the checks without effect run (`forgec.mcp.prechecks`: the
  bridge's label check again, size, parameters, network allowlist, credentials present); then
  consent, by the host's policy since no person is at a terminal: an R4 call runs only when
  `[talond] consent_policy` allows that tool (pinned to a version or hash where the entry says),
  a forged tool below R4 only with the consent a person recorded when turning it on; then the
  reference host runs it (`ReferenceHost.call`, labels checked a third time there);
- **bounds**: at most `[talond] rounds` model answers (default 16) and `turn_seconds` of wall
  clock (default 300; a background task's is its `timeoutMinutes`); over either the work fails
  saying which.

The model is P's (`[personas.P]` in the host config: a `[providers.NAME]` and/or a model id),
else the host's `[model]`; a background task's `provider` overrides it.

Each model request and each tool call is a step (`Steps`: DBOS's checkpointed steps in the
daemon, `forgec.daemon.engine`), so a turn run again after a crash replays what was recorded;
before every tool call a step records the intent, and a call with an intent from an earlier
run and no recorded result (the crash came during it) is answered "interrupted, not repeated":
an effect happens at most once. A transient model error (refused connection, timeout, 5xx) is
asked again with backoff within the turn's deadline; every model answer is held to the deadline
(its streamed body included) and to `[talond] answer_bytes`.

**Labels** (SPEC §21, `forgec.daemon.turn_labels`): a turn starts with the labels of what
started it, joins those of every result the model reads, and hands them to the bridge with
every call (the `[flows] deny` rules refuse a call as a forged tool's step, `RUN_FLOW_DENIED` to
the model); what the turn writes keeps them. A result's labels are journaled with it, so a turn
run again carries what it had read.

**Planned work** (SPEC §21): a schedule, A2A task or background task that names a forged tool
runs that tool (enabled, offered to the persona, consented as any call of it) with its stored
input, instead of a turn: no model decides a call, and §15's per-value labels decide what
outside text may reach. Its run is a step behind an intent step, like a turn's call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs

from forgec.daemon.tables import Work
from forgec.daemon.turn_labels import failed_call_labels, turn_labels
from forgec.host.agentcall import AgentContext, call_as_agent, forged_output_labels
from forgec.host.config import HostConfig, ModelConfig
from forgec.host.delegation import Persona, load_personas
from forgec.mcp.listing import ToolEntry, forged_entry, forged_visible, host_entries
from forgec.mcp.policy import ConsentPolicy
from forgec.mcp.reach import persona_labels
from forgec.runtime.host import HostError

INTERRUPTED = (
    "interrupted: the daemon stopped while this call was running, so whether it took effect "
    "is unknown; it was not repeated"
)
MAX_RESULT_CHARS = 16_000  # of one tool result shown back to the model


class TurnFailed(Exception):
    """The turn cannot finish (bounds, model errors, an unknown persona): the work fails."""


class Stopping(Exception):
    """The daemon is stopping: hand the work back, its recorded steps keep what was done."""


class Cancelled(Exception):
    """The work's row is no longer running (a background task cancelled): stop, finish nothing."""


class Steps(Protocol):
    """How a turn runs its steps: `run` records FN's output (and replays it when the turn runs
    again); `token` is different in every run of the turn (an intent recorded under another
    token was made by an earlier run)."""

    token: str

    def run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any: ...


class Direct:
    """Steps with no engine: each runs once, nothing is recorded (tests, one-off turns)."""

    token = "direct"

    def run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)


MODEL_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # between tries of a transient model error


@attrs.frozen
class Outcome:
    answer: str
    rounds: int
    calls: tuple[str, ...]
    labels: tuple[str, ...] = ()  # the turn's context labels at its end (SPEC §21)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "rounds": self.rounds,
            "toolCalls": list(self.calls),
            "labels": list(self.labels),
        }


@attrs.define
class Offered:
    entry: ToolEntry
    stored: Any = None  # the StoredVersion of a forged tool
    _validator: Any = None

    def problem(self, args: Any) -> str | None:
        from jsonschema import Draft7Validator
        from jsonschema.exceptions import best_match

        if self._validator is None:
            self._validator = Draft7Validator(self.entry.input_schema)
        error = best_match(self._validator.iter_errors(args))
        if error is None:
            return None
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        return f"invalid input for `{self.entry.name}`: {error.message} (at {where})"

    def function(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.entry.name,
                "description": self.entry.description,
                "parameters": self.entry.input_schema,
            },
        }


class Agents:
    """Runs turns of the loaded personas (each on the caller's worker thread)."""

    def __init__(
        self,
        config: HostConfig,
        *,
        db_path: Path,
        store_path: Path | None,
        policy: ConsentPolicy,
        templates: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.db_path = db_path
        self.store_path = store_path
        self.policy = policy
        self.templates = templates
        self.environ = environ
        self.personas = load_personas(config.personas_dir)

    # --- a turn --------------------------------------------------------------------------------

    def run(
        self,
        work: Work,
        steps: Steps | None = None,
        stop: Callable[[], bool] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Outcome:
        persona = self.personas.get(work.persona)
        if persona is None:
            raise TurnFailed(
                f"persona {work.persona!r} is not loaded (no {work.persona}/persona.md)"
            )
        host = self._open_host(persona, work)
        steps = steps or Direct()
        try:
            if work.tool is not None:
                return self._planned(persona, work, steps, host)
            return self._turn(
                persona,
                work,
                steps,
                stop or (lambda: False),
                cancelled or (lambda: False),
                host,
            )
        finally:
            host.close()

    def _open_host(self, persona: Persona, work: Work) -> Any:
        from forgec.host import ConfigError, HostOptions, open_host

        try:
            host = open_host(
                HostOptions(
                    db=self.db_path,
                    config=self.config,
                    persona=persona.name,
                    thread=work.thread,
                    persona_labels=persona_labels(persona, self.config),
                    environ=self.environ,
                )
            )
        except ConfigError as exc:
            raise TurnFailed(f"cannot open the host for {persona.name}: {exc}") from None
        host.a2a_depth = work.depth  # a send from this turn is one deeper (the chain bound)
        return host

    def offered(self, labels: tuple[str, ...]) -> dict[str, Offered]:
        """The tools a persona with LABELS is offered: granted host tools, covered forged ones."""
        out = {e.name: Offered(e) for e in host_entries(labels)}
        if self.store_path is None or not self.store_path.exists():
            return out
        from forgec.store import Store, StoreError

        try:
            with Store(self.store_path) as store:
                enabled = store.enabled_versions(on_problem=lambda _msg: None)
        except StoreError:
            return out
        for stored in enabled:
            if not forged_visible(stored.marks, labels):
                continue
            entry = forged_entry(
                stored.manifest, stored.marks, digest=stored.hash, ui=stored.program.get("ui")
            )
            if entry is not None:
                out[entry.name] = Offered(entry, stored)
        return out

    def system_prompt(self, persona: Persona, offered: Mapping[str, Offered]) -> str:
        from forgec.mcp.instructions import collect_instructions, default_folder

        folder = self.templates / "tool-instructions" if self.templates else default_folder()
        text, _warnings = collect_instructions(folder, [o.entry.internal for o in offered.values()])
        parts = [persona.prompt.strip() or f"You are {persona.name}."]
        if persona.skills:
            parts.append("Your skills: " + ", ".join(persona.skills) + ".")
        if text:
            parts.append("# Tools\n\n" + text)
        return "\n\n".join(parts)

    def first_message(self, persona: Persona, work: Work) -> str:
        from forgec.host.schedules import firing_prompt

        if work.kind == "firing" and work.schedule is not None:
            try:
                return firing_prompt(work.schedule, persona.prompts_dir)
            except HostError as exc:
                raise TurnFailed(exc.message) from None
        if work.kind == "a2a":
            return f"A task from persona {work.from_persona!r}:\n\n{work.prompt}"
        return work.prompt

    def _turn(
        self,
        persona: Persona,
        work: Work,
        steps: Steps,
        stop: Callable[[], bool],
        cancelled: Callable[[], bool],
        host: Any,
    ) -> Outcome:
        labels = persona_labels(persona, self.config)
        offered = self.offered(labels)
        provider, model = self.provider_for(persona, work, host)
        bounds = self.config.talond
        budget = (
            work.timeout_minutes * 60
            if work.kind == "background" and work.timeout_minutes
            else bounds.turn_seconds
        )
        deadline = time.monotonic() + budget
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt(persona, offered)},
            {"role": "user", "content": self.first_message(persona, work)},
        ]
        tools = [o.function() for o in offered.values()]
        calls: list[str] = []
        turn = AgentContext.start(work.labels)
        for round_no in range(1, bounds.rounds + 1):
            if cancelled():
                raise Cancelled(work.id)
            if stop():
                raise Stopping
            asked = steps.run(
                "model", self._ask, provider, model, messages, tools, deadline, budget, host
            )
            if "error" in asked:
                raise TurnFailed(asked["error"])
            reply = asked["reply"]
            messages.append(reply)
            tool_calls = reply.get("tool_calls") or []
            if not tool_calls:
                answer = str(reply.get("content") or "")
                return Outcome(answer, round_no, tuple(calls), turn_labels(turn.labels()))
            for call in tool_calls:
                name = call["function"]["name"]
                calls.append(name)
                intent = steps.run("intent", _intent, call["id"], name, steps.token)
                done = steps.run(
                    "call",
                    self._call_step,
                    intent,
                    steps.token,
                    offered,
                    name,
                    call["function"]["arguments"],
                    host,
                    turn,
                )
                turn.join(tuple(done.get("labels") or ()))  # recorded with it: a replay reads them
                content = str(done["content"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
            if time.monotonic() > deadline:
                raise TurnFailed(f"over its wall-clock budget of {budget} s")
        raise TurnFailed(f"over its bound of {bounds.rounds} tool-call rounds")

    def _call_step(
        self,
        intent: dict[str, Any],
        token: str,
        offered: Mapping[str, Offered],
        name: str,
        raw: str,
        host: Any,
        turn: AgentContext,
    ) -> dict[str, Any]:
        """A tool call as a step: its content and the labels its result added to the turn.
        It runs only when its result was not recorded; if its intent was recorded by an
        earlier run, that run died during the call: not repeated."""
        if intent.get("token") != token:
            return {"content": json.dumps({"error": INTERRUPTED}), "labels": []}
        before = turn.labels()
        content = self.call_tool(offered, name, raw, host, turn)
        return {"content": content, "labels": sorted(turn.labels() - before)}

    def _ask(
        self,
        provider: Any,
        model: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        deadline: float,
        budget: float,
        host: Any,
    ) -> dict[str, Any]:
        """One model request as a step: `{"reply": message}` or `{"error": why}`. A transient
        error is asked again with backoff while the turn's deadline allows."""
        tries = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {"error": f"over its wall-clock budget of {budget} s"}
            try:
                reply = provider.turn(
                    messages,
                    tools,
                    model=model,
                    timeout_s=remaining,
                    max_bytes=self.config.talond.answer_bytes,
                )
            except HostError as exc:
                message = host.credentials.scrub(exc.message)
                pause = MODEL_BACKOFF_S[min(tries, len(MODEL_BACKOFF_S) - 1)]
                if not exc.transient:
                    return {"error": message}
                if deadline - time.monotonic() <= pause:
                    return {"error": f"over its wall-clock budget of {budget} s: {message}"}
                tries += 1
                time.sleep(pause)
                continue
            out: dict[str, Any] = reply.to_json()
            return {"reply": out}

    # --- the model -----------------------------------------------------------------------------

    def provider_for(self, persona: Persona, work: Work, host: Any) -> tuple[Any, str | None]:
        """(the OpenAI-compatible client, the model id) for a turn of PERSONA."""
        from forgec.host.models import OpenAIProvider

        chosen = self.config.persona_models.get(persona.name)
        name = work.provider or (chosen.provider if chosen is not None else None)
        endpoint: ModelConfig | None = (
            self.config.providers.get(name) if name is not None else self.config.model
        )
        if endpoint is None or endpoint.kind != "openai" or not endpoint.base_url:
            where = f"[providers.{name}]" if name else "[model]"
            raise TurnFailed(
                f"{persona.name} has no chat model: configure an OpenAI-compatible {where} "
                "(base_url, model) in the host config"
            )
        key = None
        if endpoint.api_key_credential:
            key = host.credentials.get(endpoint.api_key_credential)
        elif endpoint.api_key_env:
            # read and checked when the host opened (open_host reads every [model] and
            # [providers.*] variable into the registry its scrub reads), from this same environ
            key = host.credentials.key(endpoint.api_key_env)
        local = None if endpoint.locality is None else endpoint.locality == "local"
        provider = OpenAIProvider(
            endpoint.base_url,
            endpoint.model or "",
            api_key=key,
            timeout_ms=endpoint.timeout_ms,
            local=local,
            name=name or "model",
        )
        model = chosen.model if chosen is not None and chosen.model else None
        return provider, model

    # --- a tool call, through the bridge ---------------------------------------------------

    def call_tool(
        self,
        offered: Mapping[str, Offered],
        name: str,
        raw: str,
        host: Any,
        turn: AgentContext | None = None,
    ) -> str:
        """One call of the model's, through the bridge, carrying TURN's labels (SPEC §21;
        what its result carries joins TURN): the tool message content, the result as JSON or
        `{"error": ...}`."""
        turn = turn if turn is not None else AgentContext.start()
        try:
            result = self._call(offered, name, raw, host, turn)
        except HostError as exc:
            content = _error(f"{exc.code}: {host.credentials.scrub(exc.message)}")
        except Refused as exc:
            content = _error(str(exc))
        else:
            text = json.dumps(result, ensure_ascii=False, default=str)
            content = text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + " …"
        return content

    def _call(
        self, offered: Mapping[str, Offered], name: str, raw: str, host: Any, turn: AgentContext
    ) -> Any:
        from forgec.mcp.prechecks import forged_problem, host_call_problem

        tool = offered.get(name)
        if tool is None:
            raise Refused(
                f"`{name}` is not available: there is no such tool, it is off, or this "
                "persona's capability labels do not grant it"
            )
        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise Refused(f"the arguments of `{name}` are not valid JSON") from None
        problem = tool.problem(args)
        if problem is not None:
            raise Refused(problem)
        entry = tool.entry
        if entry.kind == "host":
            problem = host_call_problem(entry.internal, entry.name, args, host)
            if problem is not None:
                raise Refused(problem)
            self._consent_host(entry, args)
            return self._call_host(entry, args, host, turn)
        stored = tool.stored
        problem = forged_problem(stored, host)
        if problem is not None:
            raise Refused(problem)
        self._consent_forged(entry, stored)
        tool_input = args.get("input") if entry.wraps_input else args
        return self._run_forged(entry, stored, tool_input, host, turn.labels(), turn)

    def _call_host(self, entry: ToolEntry, args: Any, host: Any, turn: AgentContext) -> Any:
        """The bridge call of one host tool, carrying the turn's labels; its result's labels
        (or its failure's) join the turn (SPEC §21)."""
        try:
            outcome = call_as_agent(
                host,
                entry.internal,
                args,
                turn,
                caller="talond",
                name=entry.name,
                allowed_hosts=tuple(self.config.allow_hosts),
                allowed_flows=self._flows_allowed((entry.name, entry.internal)),
            )
        except HostError as exc:
            turn.join(failed_call_labels(entry.internal, args, exc.code))
            raise
        turn.join(outcome.labels)
        return outcome.result

    def _flows_allowed(self, names: tuple[str, ...], **pin: Any) -> frozenset[str]:
        """The flows the consent policy's `[[allow]]` entries allow this tool (SPEC §21)."""
        allowed = getattr(self.policy, "flows_allowed", None)
        return frozenset(allowed(names, **pin)) if allowed is not None else frozenset()

    def _consent_host(self, entry: ToolEntry, args: Any) -> None:
        from forgec.catalog import get_catalog

        spec = get_catalog("talon").get(entry.internal)
        risk = spec.step_marks(args).risk if spec is not None else "R4"
        if risk == "R4" and not self.policy.allows((entry.name, entry.internal)):
            raise Refused(
                f"`{entry.name}` is R4: it asks a person before every run, and no person is "
                "at the daemon; it runs only when the host's consent policy allows it "
                "([talond] consent_policy)"
            )

    def _consent_forged(self, entry: ToolEntry, stored: Any) -> None:
        if stored.marks.always_asks:
            names = (stored.name, entry.name)
            if not self.policy.allows(names, version=stored.version, hash=stored.hash):
                from forgec.render.consent import always_asks_banner

                why = always_asks_banner(stored.marks)
                raise Refused(
                    f"{stored.name} v{stored.version} asks a person before every run ({why}), "
                    "and no person is at the daemon; it runs only when the host's consent "
                    "policy allows it ([talond] consent_policy)"
                )
            return
        from forgec.store import Store

        with Store(self.store_path) as store:
            if not store.has_consent(stored.tool_id, stored.version):
                raise Refused(
                    f"{stored.name} v{stored.version} has no recorded consent; a person must "
                    f"turn it on with `forgec tools enable {stored.tool_id}`"
                )

    def _run_forged(
        self,
        entry: ToolEntry,
        stored: Any,
        tool_input: Any,
        host: Any,
        input_labels: Any,
        turn: AgentContext,
    ) -> Any:
        """Run a forged tool whose INPUT carries INPUT_LABELS (the turn's context, or a
        planned task's stored labels); its output's labels join TURN (SPEC §21)."""
        from forgec.store.running import run_stored

        # consent was settled by the caller (recorded by a person, or the policy for R4)
        result = run_stored(
            stored,
            tool_input,
            host=host,
            consent=_yes,
            input_labels=turn_labels(input_labels),
            allowed_flows=self._flows_allowed(
                (stored.name, entry.name), version=stored.version, hash=stored.hash
            ),
        )
        out = result.to_json()
        turn.join(forged_output_labels(result, stored.marks))
        if not result.ok:
            error = out.get("error") or {}
            raise Refused(
                f"{stored.name} failed: {error.get('code', '')}: {error.get('message', '')}"
            )
        return out.get("output")

    # --- planned work (SPEC §21) ----------------------------------------------------------

    def _planned(self, persona: Persona, work: Work, steps: Steps, host: Any) -> Outcome:
        """Run the forged tool WORK names with its stored input, its input carrying the
        labels stored with the work; no model decides a call. A step behind an intent step,
        like a turn's call, so a run taken again after a crash is never repeated."""
        offered = self.offered(persona_labels(persona, self.config))
        tool = planned_tool(offered, str(work.tool))
        if tool is None:
            raise TurnFailed(
                f"the planned tool {work.tool!r} is not available to {persona.name}: there is "
                "no such forged tool, it is off, or this persona's labels do not cover it"
            )
        try:
            tool_input = json.loads(work.tool_input) if work.tool_input else {}
        except ValueError:
            raise TurnFailed(
                f"the stored input of the planned tool {work.tool!r} is not JSON"
            ) from None
        turn = AgentContext.start(work.labels)
        intent = steps.run("intent", _intent, "planned", tool.entry.name, steps.token)
        done = steps.run(
            "call", self._planned_step, intent, steps.token, tool, tool_input, host, turn
        )
        if "error" in done:
            raise TurnFailed(done["error"])
        turn.join(tuple(done.get("labels") or ()))
        return Outcome(done["content"], 0, (tool.entry.name,), turn_labels(turn.labels()))

    def _planned_step(
        self,
        intent: dict[str, Any],
        token: str,
        tool: Offered,
        tool_input: Any,
        host: Any,
        turn: AgentContext,
    ) -> dict[str, Any]:
        if intent.get("token") != token:
            return {"content": json.dumps({"error": INTERRUPTED}), "labels": []}
        try:
            content = self._run_planned(tool, tool_input, host, turn)
        except TurnFailed as exc:
            return {"error": str(exc), "labels": sorted(turn.labels())}
        return {"content": content, "labels": sorted(turn_labels(turn.labels()))}

    def _run_planned(self, tool: Offered, tool_input: Any, host: Any, turn: AgentContext) -> str:
        from forgec.mcp.prechecks import forged_problem

        stored = tool.stored
        problem = forged_problem(stored, host)
        if problem is None and tool.entry.wraps_input:
            problem = tool.problem({"input": tool_input})
        elif problem is None:
            problem = tool.problem(tool_input)
        if problem is not None:
            raise TurnFailed(problem)
        try:
            self._consent_forged(tool.entry, stored)
            output = self._run_forged(tool.entry, stored, tool_input, host, turn.labels(), turn)
        except Refused as exc:
            raise TurnFailed(str(exc)) from None
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + " …"


def planned_tool(offered: Mapping[str, Offered], name: str) -> Offered | None:
    """The offered forged tool a planned task names: by its MCP name or its tool id."""
    tool = offered.get(name)
    if tool is not None and tool.stored is not None:
        return tool
    for candidate in offered.values():
        if candidate.stored is not None and name in (
            candidate.stored.tool_id,
            candidate.stored.name,
        ):
            return candidate
    return None


class Refused(Exception):
    """A call refused before it had any effect (the model is told why)."""


def _yes(_request: Any) -> bool:
    return True


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def _intent(call_id: str, name: str, token: str) -> dict[str, Any]:
    return {"id": call_id, "name": name, "token": token}


__all__ = ["Agents", "Cancelled", "Direct", "Outcome", "Steps", "Stopping", "TurnFailed"]
