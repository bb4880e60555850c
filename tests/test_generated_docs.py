"""The reference tables in the docs are generated from the code's tables
(`forgec.render.tables`) and held equal here: the opcode table and the pools in
docs/runtime.md, the capability tables in docs/catalog.md. `FORGEC_WRITE_DOCS=1` rewrites them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forgec.render.tables import GENERATORS, generated_blocks, regenerate

ROOT = Path(__file__).resolve().parent.parent
DOCS = {
    "runtime.md": {"opcodes", "pools"},
    "catalog.md": {
        "talos-capabilities",
        "talos-inputs",
        "talon-capabilities",
        "talon-inputs",
        "subagent-inputs",
    },
}


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_generated_tables_are_current(doc: str) -> None:
    path = ROOT / "docs" / doc
    text = path.read_text(encoding="utf-8")
    if os.environ.get("FORGEC_WRITE_DOCS") == "1":
        text = regenerate(text)
        path.write_text(text, encoding="utf-8")
    blocks = generated_blocks(text)
    assert set(blocks) == DOCS[doc]
    for name, body in blocks.items():
        assert body == GENERATORS[name](), f"docs/{doc}: `{name}` is stale (FORGEC_WRITE_DOCS=1)"


def test_every_generator_has_a_doc() -> None:
    assert set(GENERATORS) == set().union(*DOCS.values())


# -- the Program's JSON Schema, from the opcode and pool tables ------------------------------


def _programs() -> list[dict]:
    from forgec import api

    out = []
    for path in sorted((ROOT / "examples").glob("*.talostool")):
        program = api.lower(path.read_bytes(), target="talon")
        out.append(program.to_json())
    return out


def test_the_program_schema_accepts_every_lowered_example() -> None:
    import jsonschema

    from forgec.runtime.pools import program_json_schema

    schema = program_json_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    programs = _programs()
    assert programs
    for data in programs:
        jsonschema.validate(data, schema)
        assert list(data) == list(schema["properties"])  # the key order is the table's


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(code=[[99, 0, 0]]),
        lambda d: d.pop("consts"),
        lambda d: d["values"].append(["nope", 0]),
        lambda d: d.update(format="forgec.program.v2"),
    ],
)
def test_the_program_schema_refuses_what_from_json_refuses(mutate) -> None:
    import jsonschema

    from forgec.runtime.pools import program_json_schema
    from forgec.runtime.program import Program, ProgramError

    data = _programs()[0]
    mutate(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, program_json_schema())
    with pytest.raises(ProgramError):
        Program.from_json(data)


def test_forgec_schema_program_prints_it() -> None:
    import json
    import subprocess
    import sys

    from forgec.runtime.pools import program_json_schema

    done = subprocess.run(
        [sys.executable, "-m", "forgec", "schema", "--program"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == program_json_schema()
