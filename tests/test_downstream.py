"""Downstream never raises: whatever `check` accepts, every later stage takes without a traceback.

For each accepted input (a random valid manifest, or a mutant of a shipped example in either
form that still checks clean) the same command line a user has runs — in-process through
`forgec.cli.main`, so a Python exception fails the test with its traceback — `inspect` (text
and JSON), `lower` (JSON and `--disasm`), `fmt --to forge` then `compile` (which must give the
same canonical manifest), `tools install` into a temporary store; the lowered Program survives
`Program.from_json(to_json())`, and runs on the in-memory host to a result.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from strategies import JSON_VALUES, manifests

from forgec.api import check
from forgec.cli import main
from forgec.frontend.canonical import canonical_manifest
from forgec.runtime import Program, run
from forgec.runtime.memory_host import MemoryHost

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FORMS = sorted(EXAMPLES.glob("*.talostool")) + sorted(EXAMPLES.glob("*.forge"))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def accepted_target(source: bytes, suffix: str) -> str | None:
    """The target whose catalog `check` accepts the source with, or None (nothing downstream)."""
    for target in ("talos", "talon"):
        if check(source, path=f"tool{suffix}", target=target).ok:
            return target
    return None


def downstream(source: bytes, suffix: str, tool_input: Any = None) -> bool:
    """Run every stage after `check` on an accepted source; False when check refuses it."""
    target = accepted_target(source, suffix)
    if target is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"tool{suffix}"
        path.write_bytes(source)
        p, t = str(path), f"--target={target}"
        code, _, err = cli("check", t, p)
        assert code == 0, err  # the CLI agrees with the API
        for argv in (("inspect", t, p), ("lower", t, "--disasm", p)):
            code, out, err = cli(*argv)
            assert code == 0 and out, (argv, err)
        code, out, err = cli("inspect", t, "--format", "json", p)
        assert code == 0 and isinstance(orjson.loads(out), dict), err
        code, out, err = cli("lower", t, p)
        assert code == 0, err
        program = Program.from_json(out)
        assert Program.from_json(program.to_json()).to_json() == program.to_json()

        # .forge text and back: the same canonical manifest
        manifest = check(source, path=p, target=target).manifest
        assert manifest is not None
        code, forge_text, err = cli("fmt", "--to", "forge", p)
        assert code == 0, err
        forge = Path(tmp) / "again.forge"
        forge.write_text(forge_text, encoding="utf-8")
        code, compiled, err = cli("compile", t, str(forge))
        assert code == 0, err
        assert orjson.loads(compiled) == canonical_manifest(manifest)

        code, _, err = cli("tools", "install", t, "--store", str(Path(tmp) / "t.db"), p)
        assert code == 0, err

        host = MemoryHost()
        for given_input in ({}, tool_input):
            result = run(program, given_input, host=host, consent=lambda request: True)
            assert result.to_json()["status"] in {"ok", "failed", "cancelled", "denied"}
    return True


# --- random valid manifests -------------------------------------------------------------------


@SETTINGS
@given(manifests(), JSON_VALUES)
def test_every_stage_takes_a_random_valid_manifest(manifest: dict[str, Any], value: Any) -> None:
    source = orjson.dumps(manifest, option=orjson.OPT_INDENT_2)
    assume(downstream(source, ".talostool", value))


# --- mutants of the shipped examples, both forms -----------------------------------------------

_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[A-Za-z_][\w.-]*|-?\d+(?:\.\d+)?|\S')


@st.composite
def byte_mutants(draw: st.DrawFn) -> tuple[bytes, str]:
    path = draw(st.sampled_from(FORMS))
    data = bytearray(path.read_bytes())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "delete", "insert", "duplicate"]))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "insert":
            data[at:at] = draw(
                st.sampled_from([b",", b"}", b"{", b"\n", b"\\", b'"', b"0", b"\xff"])
            )
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 16))]
    return bytes(data), path.suffix


@st.composite
def token_mutants(draw: st.DrawFn) -> tuple[bytes, str]:
    path = draw(st.sampled_from(FORMS))
    data = path.read_bytes()
    tokens = [m.span() for m in _TOKEN.finditer(data)]
    start, end = draw(st.sampled_from(tokens))
    other_start, other_end = draw(st.sampled_from(tokens))
    replacement = draw(
        st.sampled_from(
            [b"", data[other_start:other_end], data[start:end] * 2, b"0", b"-1", b"1e400",
             b"9007199254740993", b'"\\u0000"', b"null", b"true", b"[]", b"{}"]
        )
    )  # fmt: skip
    return data[:start] + replacement + data[end:], path.suffix


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def value_mutants(draw: st.DrawFn) -> tuple[bytes, str]:
    path = draw(st.sampled_from(sorted(EXAMPLES.glob("*.talostool"))))
    doc = orjson.loads(path.read_bytes())
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(_paths(doc)[1:]))
        parent = doc
        for step in where[:-1]:
            parent = parent[step]
        kind = draw(st.sampled_from(["replace", "delete", "copy"]))
        if kind == "delete" and isinstance(parent, dict):
            del parent[where[-1]]
        elif kind == "copy":
            other = draw(st.sampled_from(_paths(doc)))
            value: Any = doc
            for step in other:
                value = value[step]
            parent[where[-1]] = copy.deepcopy(value)
        else:
            parent[where[-1]] = draw(_like(parent[where[-1]]))
    # the stdlib writes what orjson refuses to (integers past 64 bits): the loader must cope
    return json.dumps(doc, indent=2, ensure_ascii=False).encode(), ".talostool"


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Mostly a value of the same type (so the mutant often still checks), sometimes any JSON."""
    if isinstance(value, bool):
        same: st.SearchStrategy[Any] = st.booleans()
    elif isinstance(value, int):
        same = st.integers(-3, 300) | st.sampled_from([0, 2**53 - 1, 2**53, 10**20])
    elif isinstance(value, float):
        same = st.floats(allow_nan=False, allow_infinity=False)
    elif isinstance(value, str):
        same = st.text(max_size=12) | st.sampled_from(
            [value + "{{", value + "}}", "{{input.x}}", "$" + value, value.upper(), "é\u202e"]
        )
    else:
        return JSON_VALUES
    return st.one_of(same, same, same, JSON_VALUES)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(byte_mutants(), token_mutants(), value_mutants(), value_mutants()), JSON_VALUES)
def test_every_stage_takes_an_accepted_mutant_of_an_example(
    mutant: tuple[bytes, str], value: Any
) -> None:
    source, suffix = mutant
    # a refused mutant is fine (check said so, no traceback); an accepted one goes all the way
    event("accepted" if downstream(source, suffix, value) else "refused")


def test_every_shipped_example_goes_all_the_way_down() -> None:
    # the fuzzer's seeds are themselves accepted (else the mutants test nothing downstream)
    refused = [p.name for p in FORMS if not downstream(p.read_bytes(), p.suffix)]
    assert not refused, refused
