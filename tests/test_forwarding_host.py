"""One forwarding host (issue 31): `forgec.runtime.host.ForwardingHost` forwards every method
of the host protocol — the list is read from the protocol classes, so a method added to the
protocol and not to the forwarder fails here — and no other class in forgec writes the
forwarding by hand again."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from reference_interp import lower_dict, manifest

from forgec.host.staged import StagedHost
from forgec.runtime import run
from forgec.runtime.host import ForwardingHost, Host, LabelledHost
from forgec.runtime.memory_host import MemoryHost
from forgec.testing.runner import CaseHost

ROOT = Path(__file__).resolve().parents[1] / "forgec"
PROTOCOLS = (Host, LabelledHost)


def protocol_methods() -> list[str]:
    names = {
        name
        for proto in PROTOCOLS
        for name, value in vars(proto).items()
        if callable(value) and not name.startswith("_")
    }
    return sorted(names)


def protocol_attributes() -> list[str]:
    return sorted({name for proto in PROTOCOLS for name in getattr(proto, "__annotations__", {})})


def test_the_protocol_lists_are_not_empty() -> None:
    methods = protocol_methods()
    for name in ("call", "model", "has_credential", "load_state", "save_state"):
        assert name in methods
    assert "compensate" in methods and "load_state_labels" in methods
    assert protocol_attributes() == ["keeps_labels"]


class Recorder:
    """An inner host that records each method called on it and answers a fresh token."""

    keeps_labels = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def method(*args: Any) -> Any:
            self.seen.append((name, args))
            return f"answer of {name}"

        return method


@pytest.mark.parametrize("name", protocol_methods())
def test_every_protocol_method_is_forwarded_with_its_arguments(name: str) -> None:
    inner = Recorder()
    outer = ForwardingHost(inner)
    params = [
        p
        for p in inspect.signature(getattr(LabelledHost, name)).parameters.values()
        if p.name != "self"
    ]
    args = tuple(f"<{p.name}>" for p in params)
    got = getattr(outer, name)(*args)
    assert inner.seen == [(name, args)], f"ForwardingHost.{name} does not forward"
    if name == "has_credential":
        assert got is True
    elif name != "save_state":
        assert got == f"answer of {name}"


def test_save_state_without_labels_reaches_a_host_that_keeps_none() -> None:
    inner = Recorder()
    ForwardingHost(inner).save_state("tool", {"a": 1})
    assert inner.seen == [("save_state", ("tool", {"a": 1}))]


@pytest.mark.parametrize("keeps", [True, False])
def test_keeps_labels_is_the_inner_hosts(keeps: bool) -> None:
    inner = Recorder()
    inner.keeps_labels = keeps
    assert ForwardingHost(inner).keeps_labels is keeps


def test_the_project_s_wrapping_hosts_are_forwarding_hosts(tmp_path: Path) -> None:
    from forgec.host import HostOptions, open_host

    assert issubclass(StagedHost, ForwardingHost)
    assert issubclass(CaseHost, ForwardingHost)
    # the two hosts that hold data themselves keep labels: the whole protocol, written once each
    assert isinstance(MemoryHost(), LabelledHost) and MemoryHost.keeps_labels
    with open_host(HostOptions(db=tmp_path / "h.db")) as host:
        assert isinstance(host, LabelledHost) and host.keeps_labels


def _forwards_by_hand(fn: ast.FunctionDef) -> bool:
    """Whether FN's body is only `[return] self.<x>.<fn's own name>(...)` (a docstring aside)."""
    body = [
        s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if len(body) != 1:
        return False
    stmt = body[0]
    value = stmt.value if isinstance(stmt, (ast.Return, ast.Expr)) else None
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    if value.func.attr != fn.name:
        return False
    owner = value.func.value
    return (
        isinstance(owner, ast.Attribute)
        and isinstance(owner.value, ast.Name)
        and owner.value.id == "self"
    )


def test_no_class_but_the_forwarding_host_writes_protocol_forwarding() -> None:
    names = set(protocol_methods())
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in ast.walk(tree):
            if not isinstance(cls, ast.ClassDef) or cls.name == "ForwardingHost":
                continue
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name in names and _forwards_by_hand(fn):
                    found.append(
                        f"{path.relative_to(ROOT.parent)}:{fn.lineno} {cls.name}.{fn.name}"
                    )
    assert not found, found


STATE = {"fields": {"count": {"type": "integer", "default": 0}}, "maxBytes": 40}


def test_a_run_through_a_forwarding_host_is_the_run_through_its_inner_host() -> None:
    """Through the VM: state and its labels saved and read back the same either way."""
    program = lower_dict(
        manifest(
            [
                {
                    "id": "inc",
                    "type": "set",
                    "target": "state.count",
                    "value": {"$ref": "input.n"},
                    "next": "r",
                },
                {"id": "r", "type": "return", "value": {"$ref": "state"}},
            ],
            state=STATE,
        )
    )
    outcomes = []
    for wrap in (False, True):
        inner = MemoryHost(clock=lambda: "2026-01-01T00:00:00Z")
        host: Any = ForwardingHost(inner) if wrap else inner
        first = run(
            program, {"n": 3}, host=host, consent=lambda _r: True, input_labels=("external:x",)
        )
        second = run(program, {"n": 4}, host=host, consent=lambda _r: True)
        outcomes.append(
            (first.output, second.output, inner.states, inner.state_labels, inner.saved_states)
        )
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][3], "the state's labels were stored"
