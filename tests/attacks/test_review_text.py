"""Raw bidi and C1 characters in code for review (issue 18, measurement 9; SPEC §14 "Text
from a tool is data, never terminal control").

`fmt --to forge` and `compile` printed U+2066–U+2069, U+202E and U+009B raw (only ESC was
escaped), so a reviewer's editor could reorder the code it showed. Now every text forgec writes
for a person — `.forge` string literals and every JSON text (compile, fmt --to talostool, lower,
the disassembly, inspect and check JSON) — spells them as escapes, and the JSON still parses to
the same value. Played through the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from forgec.ir.text_rules import CONTROL_OR_BIDI

UNSAFE = {chr(c) for lo, hi in CONTROL_OR_BIDI for c in range(lo, hi + 1)} | {"\u2028", "\u2029"}


def _raw(text: str) -> list[str]:
    return [c for c in text if c in UNSAFE and c != "\n"]


HOSTILE = "one \u2066durable\u2069 \u202efact \u009b1m \u2028x\x7f"


def test_the_cli_prints_no_raw_bidi_or_c1(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "memory-capture.forge"
    escaped = json.dumps(HOSTILE)  # the .forge string syntax reads JSON escapes
    source = example.read_text().replace('"one durable fact"', escaped)
    assert source != example.read_text()
    forge = tmp_path / "t.forge"
    forge.write_text(source, encoding="utf-8")
    compiled = ""
    for args in (
        ["fmt", "--to", "forge", str(forge)],
        ["fmt", "--to", "talostool", str(forge)],
        ["compile", str(forge)],
        ["lower", str(forge)],
        ["lower", "--disasm", str(forge)],
        ["inspect", "--format", "json", str(forge)],
        ["check", "--format", "json", str(forge)],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "forgec", *args], capture_output=True, timeout=60
        )
        assert proc.returncode == 0, (args, proc.stderr)
        text = proc.stdout.decode("utf-8")
        assert _raw(text.replace("\n", "")) == [], (args, [hex(ord(c)) for c in _raw(text)])
        if args[0] == "compile":
            compiled = text
    # the escapes are JSON's: the compiled manifest still holds exactly the string written
    node = json.loads(compiled)["flow"]["nodes"][0]
    assert node["input"]["want"] == HOSTILE
