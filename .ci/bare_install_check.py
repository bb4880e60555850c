"""Run by .ci/run with the python of a venv that holds only `pip install .` (no extra).

It proves the bare install is the embeddable runtime: a Program lowered elsewhere runs here on
the in-memory host, none of the extras' libraries can be imported or was imported, and a
compiler command says which extra to install instead of raising.

usage: python bare_install_check.py PROGRAM.json
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

EXTRAS_ONLY = ("lark", "sqlglot", "croniter", "httpx", "httpcore", "mcp", "pygls", "jsonschema")


def main(program_path: str) -> int:
    from forgec.runtime import Program, run
    from forgec.runtime.memory_host import MemoryHost

    with open(program_path, "rb") as f:
        program = Program.from_json(f.read())  # examples/memory-capture, lowered by the compiler
    host = MemoryHost()
    # the model's answer is checked against the step's outputSchema (fastjsonschema, a core need)
    host.script_model({"fact": "the bare install runs Programs", "tags": ["ci"]})
    message = {"message": "Remember: the bare install runs Programs"}
    result = run(program, message, host=host, consent=lambda request: True).to_json()
    assert result["status"] == "ok" and result["output"]["saved"] is True, result
    installed = [name for name in EXTRAS_ONLY if importlib.util.find_spec(name) is not None]
    assert not installed, f"the bare install brought in {installed}"
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in EXTRAS_ONLY)
    assert not loaded, loaded
    assert not any(m.startswith(("forgec.frontend", "forgec.passes")) for m in sys.modules)

    # The command line exists, stays lazy, and names the missing extra in one line.
    forgec = [sys.executable, "-m", "forgec"]
    helped = subprocess.run([*forgec, "--help"], capture_output=True, text=True, check=False)
    assert helped.returncode == 0 and "check" in helped.stdout, helped.stderr
    checked = subprocess.run(
        [*forgec, "check", program_path], capture_output=True, text=True, check=False
    )
    lines = checked.stderr.strip().splitlines()
    assert checked.returncode == 2, (checked.returncode, checked.stderr)
    assert len(lines) == 1 and "pip install 'forgec[compiler]'" in lines[0], checked.stderr
    print(f"bare install: ran {program.id} ({result['transitions']} transitions): ok")
    print(json.dumps(result["output"], ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
