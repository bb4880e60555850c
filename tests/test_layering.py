"""The runtime stands alone (starlark `TestDeps`): importing it pulls in no compiler module,
and a Program stored as JSON runs with `forgec.runtime` alone, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from reference_interp import lower_dict, manifest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("lark", "forgec.frontend", "forgec.passes", "forgec.backend", "forgec.catalog")


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_importing_the_runtime_imports_no_compiler() -> None:
    done = fresh(
        f"""
        import sys
        import forgec.runtime, forgec.runtime.memory_host
        bad = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))
        assert not bad, bad
        """
    )
    assert done.returncode == 0, done.stderr


def test_a_program_from_json_runs_with_the_runtime_alone(tmp_path: Path) -> None:
    m = manifest(
        [
            {
                "id": "mk",
                "type": "capability",
                "capability": "tasks.create",
                "input": {"title": {"$template": "Call {{input.who}}"}},
                "target": "task",
                "next": "r",
            },
            {"id": "r", "type": "return", "value": {"title": {"$ref": "task.title"}}},
        ]
    )
    stored = tmp_path / "tool.program.json"
    stored.write_bytes(lower_dict(m).to_bytes())
    done = fresh(
        f"""
        import sys, json
        from forgec.runtime import Program, run
        from forgec.runtime.memory_host import MemoryHost
        program = Program.from_json(open({str(stored)!r}, "rb").read())
        result = run(program, {{"who": "Ada"}}, host=MemoryHost(), consent=lambda r: True)
        print(json.dumps(result.to_json()["output"]))
        bad = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))
        assert not bad, bad
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"title": "Call Ada"}'
