"""docs/mcp.md's Inspector example names a tool and arguments the real server lists (issue 22:
it named `dynamic_weekly_Dreview`, which does not exist, with an argument it does not take)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from test_mcp_server import run_client

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")


def _calls() -> list[tuple[str, dict[str, str]]]:
    text = DOC.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        if "--method tools/call" not in line:
            continue
        name = re.search(r"--tool-name (\S+)", line)
        assert name, line
        args = dict(re.findall(r"--tool-arg (\w+)=(\S+)", line))
        found.append((name.group(1), args))
    return found


def test_the_doc_has_a_call_example() -> None:
    assert _calls()


def test_the_inspector_example_names_a_listed_tool_with_its_arguments(tmp_path: Path) -> None:
    store = tmp_path / "tools.db"
    # the doc's own setup line, with a store of the test's own
    setup = re.search(r"^forgec tools install (\S+) && forgec tools enable (\S+) --yes$", DOC, re.M)
    assert setup, "the doc says how to install the tool it calls"
    for argv in (
        ["tools", "install", "--store", str(store), setup.group(1)],
        ["tools", "enable", "--store", str(store), setup.group(2), "--yes"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "forgec", *argv], cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr

    async def body(session):  # type: ignore[no-untyped-def]
        listed = await session.list_tools()
        return {t.name: t.input_schema for t in listed.tools}

    tools = run_client(["--store", str(store), "--db", str(tmp_path / "h.db")], body)
    for name, args in _calls():
        assert name in tools, (name, sorted(tools))
        props = tools[name].get("properties", {})
        assert set(args) <= set(props), (args, props)
        assert set(tools[name].get("required", [])) <= set(args)
