"""Marks: what a tool may do, derived from its reachable steps (SPEC §6).

They decide the consent a person gives and, in the store, whether an upgrade must ask again.
"""

from __future__ import annotations

from typing import Any

import attrs

from forgec.ir.readable import HashedByValue

RISK_ORDER = ("R0", "R1", "R2", "R3", "R4")


def risk_rank(risk: str) -> int:
    return RISK_ORDER.index(risk)


@attrs.frozen(repr=False, eq=False)
class ModelNeeds(HashedByValue):
    """The strictest model requirements of the reachable `llm` steps."""

    privacy: str | None  # the strictest: local-only > local-preferred > remote-allowed
    reasoning_effort: str | None  # the highest asked
    structured_output: bool
    steps: int

    def to_json(self) -> dict[str, Any]:
        return {
            "privacy": self.privacy,
            "reasoningEffort": self.reasoning_effort,
            "structuredOutput": self.structured_output,
            "steps": self.steps,
        }


@attrs.frozen(repr=False, eq=False)
class Marks(HashedByValue):
    powers: tuple[str, ...] = ()  # sorted set: Read, Write, Send, Network, Delegate
    risk: str = "R0"
    always_asks: bool = False  # risk R4
    labels: tuple[str, ...] = ()  # Talon capability labels needed (sorted)
    network: tuple[str, ...] = ()  # hosts the tool may reach (sorted)
    credentials: tuple[str, ...] = ()  # declared credential ids used (sorted)
    model: ModelNeeds | None = None
    capabilities: tuple[str, ...] = ()  # reachable capabilities called (sorted)
    compensated: bool = True  # every writing step has an undo
    # SPEC §15, from the flow facts: (private label, egress sink) pairs and (untrusted label,
    # write or egress sink) pairs, sorted; a tool with both always asks, and says why
    sends: tuple[tuple[str, str], ...] = ()
    steered_by: tuple[tuple[str, str], ...] = ()
    asks_because: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "powers": list(self.powers),
            "risk": self.risk,
            "alwaysAsks": self.always_asks,
            "labels": list(self.labels),
            "network": list(self.network),
            "credentials": list(self.credentials),
            "model": self.model.to_json() if self.model else None,
            "capabilities": list(self.capabilities),
            "compensated": self.compensated,
            "sends": [list(p) for p in self.sends],
            "steeredBy": [list(p) for p in self.steered_by],
            "alwaysAsksBecause": self.asks_because,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Marks:
        model = data.get("model")
        return cls(
            powers=tuple(data.get("powers", ())),
            risk=data.get("risk", "R0"),
            always_asks=bool(data.get("alwaysAsks", False)),
            labels=tuple(data.get("labels", ())),
            network=tuple(data.get("network", ())),
            credentials=tuple(data.get("credentials", ())),
            model=ModelNeeds(
                privacy=model.get("privacy"),
                reasoning_effort=model.get("reasoningEffort"),
                structured_output=bool(model.get("structuredOutput")),
                steps=int(model.get("steps", 0)),
            )
            if model
            else None,
            capabilities=tuple(data.get("capabilities", ())),
            compensated=bool(data.get("compensated", True)),
            sends=tuple((str(a), str(b)) for a, b in data.get("sends", ())),
            steered_by=tuple((str(a), str(b)) for a, b in data.get("steeredBy", ())),
            asks_because=data.get("alwaysAsksBecause"),
        )

    def growth_over(self, old: Marks) -> dict[str, list[str]]:
        """What this version may do that `old` may not: the reasons to ask consent again."""
        grown: dict[str, list[str]] = {}
        if new_powers := sorted(set(self.powers) - set(old.powers)):
            grown["powers"] = new_powers
        if risk_rank(self.risk) > risk_rank(old.risk):
            grown["risk"] = [f"{old.risk} -> {self.risk}"]
        if new_hosts := sorted(set(self.network) - set(old.network)):
            grown["network"] = new_hosts
        if new_labels := sorted(set(self.labels) - set(old.labels)):
            grown["labels"] = new_labels
        return grown
