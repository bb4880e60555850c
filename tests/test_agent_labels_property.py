"""SPEC §21's soundness, searched for counterexamples: hypothesis writes turn scripts — a
model's own host-tool calls whose arguments copy earlier results (`strategies.turn_scripts`) —
and runs them through the bridge's call API (`forgec.host.agentcall`) on the real reference
host, growing the turn's context from each result's labels as the daemon does — and through the
MCP server's own call path (`ForgeServer.call`, in process), where the server keeps the
session's labels itself.

An oracle tracks, independently of the guard, where each value really came from: the text that
started the turn (seeded with its labels), a memory item (private, plus what was written into
it), a message's text read back with `db.query` (people's text: `external:talon`, plus what was
posted), a channel name read back (`private:db.query` and what picked it). At every call that
reached the host, every (label, sink) the oracle says the arguments carry must be among the
labels the bridge saw for that call — and for the destination argument, among that argument's
own data labels. A call the deny rules refused had no effect; a call that ran breaks no rule
for the flows the oracle saw."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import turn_scripts

from forgec.host import HostOptions, open_host
from forgec.host.agentcall import AgentContext, call_as_agent
from forgec.host.config import ChannelConfig, HostConfig
from forgec.runtime import sources_and_sinks as fl
from forgec.runtime.host import HostError

# every value is also a channel name, so any copied value can be a destination
NAMES = tuple(f"v{i}" for i in range(64))
SEEDS = (
    frozenset(),
    frozenset({"external:evil.example"}),
    frozenset({"external:talon"}),
    frozenset({"private:notes.list"}),
)


class Recording:
    """The reference host, recording the `CallContext` its bridge was handed (what the guard
    saw) for every call that got through the flow check."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.config = host.config
        self.seen: list[tuple[str, Any, Any]] = []

    def close(self) -> None:
        """The MCP server's pool closes a host it does not keep; the test closes this one."""

    def call(self, capability: str, input: Any, context: Any) -> Any:
        self.host.check_flow(capability, input, context)  # raises before anything is recorded
        self.seen.append((capability, input, context))
        return self.host.call(capability, input, context)


class Turn:
    """A daemon-like turn: calls through `call_as_agent`, joining each result's labels."""

    def __init__(self, host: Recording, seed: frozenset[str]) -> None:
        self.host = host
        self.context = AgentContext.start(seed)
        self.values: list[str] = ["v0"]  # what the turn has seen, in order
        self.truth: dict[str, frozenset[str]] = {"v0": seed}  # value → where it came from
        self.memory: dict[str, str] = {}
        self.fresh = 1

    def value(self, arg: Any) -> str:
        kind, n = arg
        if kind == "copy":
            return self.values[-1 - n % len(self.values)]
        name = NAMES[self.fresh % len(NAMES)]
        self.fresh += 1
        self.truth.setdefault(name, frozenset())
        return name

    def saw(self, value: str, labels: frozenset[str]) -> None:
        self.values.append(value)
        self.truth[value] = self.truth.get(value, frozenset()) | labels

    def call(self, capability: str, args: dict[str, Any]) -> Any:
        outcome = call_as_agent(self.host, capability, args, self.context, caller="prop")
        self.context.join(outcome.labels)
        return outcome.result


class Session(Turn):
    """An MCP session: the same calls through the server's own call path (`ForgeServer.call`:
    the listing, the input schema, the session's context, the bridge); the server joins the
    labels, the test never does."""

    def __init__(self, host: Recording, seed: frozenset[str], db: Path, cfg: HostConfig) -> None:
        super().__init__(host, frozenset())
        from forgec.mcp.server import ForgeServer, ServeOptions

        labels = ("memory.access:thread", "channel.send:*", "db.query:own")
        options = ServeOptions(store=db.parent / "tools.db", labels=labels, db=db)
        self.forge = ForgeServer(options, host_factory=lambda _options: host)
        self.truth["v0"] = frozenset()  # a session starts with no labels

    def call(self, capability: str, args: dict[str, Any]) -> Any:
        import anyio

        from forgec.ir.capabilities import BY_NAME

        name = BY_NAME[capability].mcp_name
        result = anyio.run(self.forge.call, None, name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            code = "RUN_FLOW_DENIED" if "RUN_FLOW_DENIED" in text else "OTHER"
            raise HostError(code, text)
        return result.structured_content


def _messages(db: Path) -> int:
    with sqlite3.connect(db) as raw:
        return raw.execute("SELECT count(*) FROM messages").fetchone()[0]


def run_script(
    script: list[Any], seed: frozenset[str], deny: tuple[str, ...], *, via: str = "bridge"
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h.db"
        cfg = HostConfig(
            thread="th",
            channels={name: ChannelConfig(name) for name in NAMES},
            flow_deny=deny,
        )
        labels = ("memory.access:thread", "channel.send:*", "db.query:own")
        with open_host(HostOptions(db=db, config=cfg, persona_labels=labels)) as real:
            host = Recording(real)
            turn = Turn(host, seed) if via == "bridge" else Session(host, seed, db, cfg)
            posted: list[tuple[str, str]] = []  # (channel, content) the oracle knows went out
            for tool, a, b in script:
                before = len(host.seen)
                expected: dict[str, frozenset[str]] = {}  # argument → its true labels
                try:
                    if tool == "remember":
                        key = b if isinstance(b, str) else "k0"
                        value = turn.value(a)
                        expected = {"value": turn.truth[value]}
                        turn.call(
                            "memory.access", {"operation": "write", "key": key, "value": value}
                        )
                        turn.memory[key] = value
                    elif tool == "recall":
                        key = b if isinstance(b, str) else "k0"
                        if key not in turn.memory:
                            continue
                        got = turn.call("memory.access", {"operation": "read", "key": key})
                        value = got["value"]
                        turn.saw(value, turn.truth[value] | {"private:memory.access"})
                    elif tool == "post":
                        channel = turn.value(a)
                        content = turn.value(b if not isinstance(b, str) else a)
                        expected = {
                            "channelId": turn.truth[channel],
                            "content": turn.truth[content],
                        }
                        turn.call("channel.send", {"channelId": channel, "content": content})
                        posted.append((channel, content))
                    elif tool == "read_texts":
                        got = turn.call(
                            "db.query",
                            {
                                "sql": "SELECT content FROM messages ORDER BY seq DESC",
                                "limit": 3,
                            },
                        )
                        for row in got["rows"]:
                            text = row["content"]
                            turn.saw(
                                text,
                                turn.truth.get(text, frozenset()) | {"private:db.query", fl.TALON},
                            )
                    else:  # read_channels: host facts only, and what picked them
                        got = turn.call(
                            "db.query",
                            {
                                "sql": "SELECT channel_id, count(*) AS n FROM messages "
                                "GROUP BY channel_id ORDER BY n DESC",
                                "limit": 3,
                            },
                        )
                        for row in got["rows"]:
                            channel = row["channel_id"]
                            picked = frozenset().union(
                                *(turn.truth[c] for ch, c in posted if ch == channel),
                                *(turn.truth[ch] for ch, _ in posted if ch == channel),
                            )
                            turn.saw(
                                channel,
                                turn.truth.get(channel, frozenset())
                                | picked
                                | {"private:db.query"},
                            )
                except HostError as exc:
                    assert exc.code == "RUN_FLOW_DENIED", exc
                    assert len(host.seen) == before  # refused before the host did anything
                    assert _messages(db) == len(posted)
                    continue
                if not expected:
                    continue
                capability, given_input, context = host.seen[-1]
                sink = fl.call_sink(capability, given_input)
                seen = context.all_labels()
                for argument, truth in expected.items():
                    # every flow that reached the host is one the guard saw ...
                    assert truth <= seen, (argument, truth, seen)
                    assert truth <= frozenset(context.labels.get(argument, ())), argument
                    # ... so a call that ran breaks none of the rules for it
                    assert (
                        fl.denied([r for r in deny if not r.endswith("->destination")], sink, truth)
                        is None
                    )
                dest = expected.get("channelId")
                if dest is not None:
                    assert (
                        fl.denied(
                            [r for r in deny if r.endswith("->destination")],
                            "destination:channel.send",
                            dest,
                        )
                        is None
                    )
            assert _messages(db) == len(posted)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=turn_scripts(),
    seed=st.sampled_from(SEEDS),
    deny=st.lists(st.sampled_from(fl.DENY_RULES), unique=True, max_size=4).map(tuple),
)
def test_every_flow_that_reaches_the_host_is_one_the_guard_saw(
    script: list[Any], seed: frozenset[str], deny: tuple[str, ...]
) -> None:
    run_script(script, seed, deny)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=turn_scripts(),
    deny=st.lists(st.sampled_from(fl.DENY_RULES), unique=True, max_size=4).map(tuple),
)
def test_an_mcp_session_lets_no_flow_by_the_guard(script: list[Any], deny: tuple[str, ...]) -> None:
    """The same scripts through the MCP server's call path, in process: the server keeps the
    session's labels itself."""
    run_script(script, frozenset(), deny, via="mcp")
