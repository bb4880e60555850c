"""Reading input is bounded too (SPEC §24, issue 30): every file forgec reads as a tool or a
test goes through `forgec.frontend.reading`, and a folder walk never leaves its folder.

Each attack runs through the real command line in a child process, under a wall-clock timeout
and, where memory is the attack, `RLIMIT_AS` 1 GiB: a hang, a MemoryError or a traceback fails
the test, not the runner. Secrets used here are generated per run and never printed: an
assertion says only whether one was found.
"""

from __future__ import annotations

import ast
import json
import os
import resource
import secrets
import string
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "note-updater.forge"
MEMORY = 1 << 30
WALL = 30.0


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def forgec(
    *args: str, cwd: Path, env: dict[str, str] | None = None, memory: bool = True
) -> subprocess.CompletedProcess[str]:
    """`forgec ARGS` in a child (1 GiB address space, WALL seconds, else the test fails)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=WALL,
        preexec_fn=_limit_memory if memory else None,
        check=False,
    )


def fake_key() -> str:
    """An OpenAI-shaped key, random per run (a real scanner would flag it): never printed."""
    alphabet = string.ascii_letters + string.digits
    return "sk-proj-" + "".join(secrets.choice(alphabet) for _ in range(48))


def _tree(tmp_path: Path) -> Path:
    tools = tmp_path / "repo" / "tools"
    tools.mkdir(parents=True)
    (tools / "note-updater.forge").write_bytes(EXAMPLE.read_bytes())
    return tools


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Error:" not in proc.stderr.split("error[")[0], (
        proc.stderr[-1500:]
    )


# -- a folder walk stays in its folder ----------------------------------------------------------


def test_a_link_out_of_the_folder_is_skipped_named_and_never_printed(tmp_path: Path) -> None:
    tools = _tree(tmp_path)
    key = fake_key()
    outside = tmp_path / "credentials"
    outside.write_text(f"OPENAI_API_KEY={key}\n")
    (tools / "creds.talostool").symlink_to(os.path.relpath(outside, tools))
    (tools / "env.talostool").symlink_to("/proc/self/environ")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "leak.forge").write_text(f"tool x {{ title {key} }}\n")
    (tools / "more").symlink_to(elsewhere, target_is_directory=True)
    env_key = fake_key()
    proc = forgec("check", "tools", cwd=tools.parent, env={"HOSTILE_TEST_KEY": env_key})
    _no_traceback(proc)
    out = proc.stdout + proc.stderr
    assert key not in out and env_key not in out, "a secret from outside the folder was printed"
    assert "OPENAI_API_KEY" not in out and "HOSTILE_TEST_KEY" not in out
    for name in ("creds.talostool", "env.talostool", "more"):
        line = next((x for x in proc.stderr.splitlines() if name in x), "")
        assert "skipped" in line and "outside" in line, proc.stderr
    assert proc.returncode == 0, out  # the one real tool checks clean
    # the same in JSON and SARIF
    for fmt in ("json", "sarif"):
        proc = forgec(
            "check", "--format", fmt, "tools", cwd=tools.parent, env={"HOSTILE_TEST_KEY": env_key}
        )
        assert key not in proc.stdout + proc.stderr and env_key not in proc.stdout + proc.stderr
        json.loads(proc.stdout)


def test_a_link_inside_the_folder_is_read(tmp_path: Path) -> None:
    tools = _tree(tmp_path)
    (tools / "sub").mkdir()
    (tools / "sub" / "alias.forge").symlink_to("../note-updater.forge")
    proc = forgec("check", "--format", "json", "tools", cwd=tools.parent)
    assert proc.returncode == 0, proc.stderr
    files = [f["path"] for f in json.loads(proc.stdout)["files"]]
    assert files == ["tools/note-updater.forge", "tools/sub/alias.forge"]
    assert "skipped" not in proc.stderr


def test_a_fifo_in_a_folder_is_skipped_without_hanging(tmp_path: Path) -> None:
    tools = _tree(tmp_path)
    os.mkfifo(tools / "pipe.forge")
    os.mkfifo(tools / "pipe.talostool")
    for args in (("check", "tools"), ("fmt", "--check", "tools")):
        proc = forgec(*args, cwd=tools.parent)  # TimeoutExpired (a hang) fails the test
        _no_traceback(proc)
        assert "pipe.forge: skipped" in proc.stderr and "FIFO" in proc.stderr, proc.stderr
        assert proc.returncode == 0, proc.stderr


def test_a_fifo_named_outright_is_a_one_line_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.forge")
    for args in (
        ("check", "pipe.forge"),
        ("fmt", "--check", "pipe.forge"),
        ("compile", "pipe.forge"),
        ("lower", "pipe.forge"),
        ("inspect", "pipe.forge"),
        ("graph", "pipe.forge"),
        ("run", "pipe.forge", "--yes"),
        ("tools", "install", "--store", "s.db", "pipe.forge"),
    ):
        proc = forgec(*args, cwd=tmp_path)
        _no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = [x for x in proc.stderr.splitlines() if "pipe.forge" in x]
        assert lines and "FIFO" in lines[0] and "not a regular file" in lines[0], (args, lines)


def test_links_to_devices_are_skipped_in_a_folder_and_refused_when_named(tmp_path: Path) -> None:
    tools = _tree(tmp_path)
    (tools / "zero.forge").symlink_to("/dev/zero")
    (tools / "via-zero.forge").symlink_to("zero.forge")  # a chain that ends outside
    os.mkfifo(tools / "pipe")
    (tools / "inside-pipe.forge").symlink_to("pipe")  # inside, to a FIFO all the same
    proc = forgec("check", "tools", cwd=tools.parent)
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "zero.forge: skipped" in proc.stderr and "via-zero.forge: skipped" in proc.stderr
    assert "inside-pipe.forge: skipped: is a FIFO" in proc.stderr, proc.stderr
    for named in ("/dev/zero", "tools/zero.forge"):
        proc = forgec("check", named, cwd=tools.parent)
        _no_traceback(proc)
        assert proc.returncode == 2 and "character device" in proc.stderr, proc.stderr


def test_a_file_named_outright_is_read_as_named_without_printing_a_secret(
    tmp_path: Path,
) -> None:
    """SPEC §24: a file named on the command line is read as named (the link to the
    environment is followed); SPEC §14: the excerpt of a line holding a secret hides it."""
    (tmp_path / "env.talostool").symlink_to("/proc/self/environ")
    key = fake_key()
    env = {"HOSTILE_TEST_KEY": key, **os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.run(  # the key first in the environment: on the excerpt's line
        [sys.executable, "-m", "forgec", "check", "env.talostool"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=WALL,
        check=False,
    )
    _no_traceback(proc)
    assert proc.returncode == 1, proc.stderr  # read, and not a manifest
    assert key not in proc.stdout + proc.stderr, "the environment's secret was printed"
    # a credentials file named as a tool: its first line is the excerpt of a syntax error
    quoted = json.dumps(  # a diagnostic's message quotes the capability name it read
        {
            "schema": "talos.local-tool.v1",
            "id": "x.y",
            "flow": {"entry": "a", "nodes": [{"id": "a", "type": "capability", "capability": key}]},
        }
    )
    for name, text in (
        ("quoted.talostool", quoted),
        ("creds.talostool", f"OPENAI_API_KEY={key}\n"),
        ("creds.forge", f"OPENAI_API_KEY={key}\n"),
        ("conf.forge", f"tool t {{\n  api = {key}\n}}\n"),
    ):
        (tmp_path / name).write_text(text)
        for fmt in ("text", "json", "sarif"):
            proc = forgec("check", "--format", fmt, name, cwd=tmp_path)
            _no_traceback(proc)
            assert proc.returncode == 1, proc.stderr
            assert key not in proc.stdout + proc.stderr, f"{name} ({fmt}) printed the secret"


# -- reading is bounded ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["big.forge", "big.talostool"])
def test_a_sparse_huge_file_is_too_large_under_a_1_gib_cap(tmp_path: Path, name: str) -> None:
    big = tmp_path / name
    with big.open("wb") as f:
        f.truncate(1536 << 20)  # 1.5 GiB of holes: nothing on disk, everything to a read
    for args in (("check", name), ("fmt", "--check", name), ("compile", name)):
        started = time.monotonic()
        proc = forgec(*args, cwd=tmp_path)
        _no_traceback(proc)
        assert "FORGE_MANIFEST_TOO_LARGE" in proc.stdout + proc.stderr, (args, proc.stderr)
        assert proc.returncode == 1, (args, proc.stderr)
        assert time.monotonic() - started < 15


def test_standard_input_is_read_up_to_the_limit_only(tmp_path: Path) -> None:
    """`forgec check -` of an endless stream ends (the limit + 1 bytes, then the verdict)."""
    with open("/dev/zero", "rb") as endless:
        proc = subprocess.run(
            [sys.executable, "-m", "forgec", "check", "-"],
            stdin=endless,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
            preexec_fn=_limit_memory,
            timeout=WALL,
            check=False,
        )
    assert b"Traceback" not in proc.stderr
    assert b"FORGE_MANIFEST_TOO_LARGE" in proc.stdout, proc.stderr[-1500:]


def test_run_input_from_a_file_is_bounded(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "input.json")
    proc = forgec("run", str(EXAMPLE), "--yes", "--input", "@input.json", cwd=tmp_path)
    assert proc.returncode == 2 and "FIFO" in proc.stderr, proc.stderr


# -- the language server -------------------------------------------------------------------------


def test_the_language_server_reads_an_unopened_document_through_the_reader(
    tmp_path: Path,
) -> None:
    """pygls' own fallback reads any `file:` URI whole: a FIFO hung it, /dev/zero never ended."""
    from forgec.lsp.server import ForgeLanguageServer

    os.mkfifo(tmp_path / "pipe.forge")
    ls = ForgeLanguageServer()
    got: dict[str, Any] = {}

    def ask() -> None:
        got["pipe"] = ls.text_of((tmp_path / "pipe.forge").as_uri())
        got["zero"] = ls.text_of("file:///dev/zero")
        got["example"] = ls.text_of(EXAMPLE.as_uri())

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(WALL)
    assert not thread.is_alive(), "the language server blocked on a FIFO"
    assert got["pipe"] is None and got["zero"] is None
    assert got["example"] == EXAMPLE.read_text(encoding="utf-8")


# -- the callers ----------------------------------------------------------------------------------

# Every module that reads a tool or test file, and the reader it calls (SPEC §24).
CALLERS = {
    "forgec/commands/common.py": "read_tool_file",  # check, fmt, compile, lower, inspect, graph,
    # run (the tool and --input @FILE), tools install: through `read_source` / `read_path`
    "forgec/api.py": "read_tool_file",  # forgec.check_file
    "forgec/lsp/server.py": "read_tool_file",  # a document the editor has not opened
    "forgec/screen/pages.py": "read_tool_stream",  # the screen's upload
    "forgec/frontend/settings.py": "read_regular",  # forgec.toml / pyproject.toml settings
    "forgec/testing/reading.py": "read_tool_file",  # forgec test: tests files and their tools
}
COMMANDS_THROUGH_READ_SOURCE = (
    "check",
    "fmt",
    "compile",
    "lower",
    "inspect",
    "graph",
    "run",
    "tools",
)
# Files forgec reads that are not tools or tests, each for a reason (host configuration, the
# daemon's own files, the grammar shipped in the package); none takes a path from a tool folder.
OTHER_READERS = {
    "forgec/frontend/reading.py",  # the reader itself
    "forgec/frontend/dsl.py",  # the packaged grammar and its parse-table cache
    "forgec/budget.py",  # the worker's pipes
    "forgec/daemon/clock.py",
    "forgec/daemon/service.py",
    "forgec/host/delegation.py",
    "forgec/host/config.py",
    "forgec/host/credentials.py",
    "forgec/host/models.py",
    "forgec/host/schedules.py",
    "forgec/mcp/policy.py",
    "forgec/mcp/instructions.py",
    "forgec/mcp/server.py",  # writes: its own standard output, escaped (SPEC §14)
}
_READ_CALLS = {"read_bytes", "read_text", "open", "fdopen"}


def _opens(tree: ast.AST) -> bool:
    """The module calls `open(…)`, `os.open`, `io.open`, `Path.read_bytes/read_text/open`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            return True
        if isinstance(f, ast.Attribute) and f.attr in _READ_CALLS:
            owner = f.value
            if isinstance(owner, ast.Name) and owner.id in ("webbrowser",):
                continue
            if f.attr == "open" and isinstance(owner, ast.Name) and owner.id in ("self",):
                continue
            return True
    return False


def test_no_other_module_opens_a_tool_file() -> None:
    found = set()
    for path in sorted((ROOT / "forgec").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if _opens(ast.parse(path.read_text(encoding="utf-8"))):
            found.add(rel)
    unexpected = found - OTHER_READERS - {"forgec/lsp/server.py"}
    # lsp/server.py: `did_open` is the LSP notification, not a file; the static view cannot
    # tell, so it is listed among the callers below, where its reader is required
    assert not unexpected, f"modules that open files outside the one reader: {sorted(unexpected)}"


def test_the_callers_go_through_the_reader() -> None:
    for rel, reader in CALLERS.items():
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert reader in text, f"{rel} does not call {reader}"
    for name in COMMANDS_THROUGH_READ_SOURCE:
        text = (ROOT / "forgec" / "commands" / f"{name}.py").read_text(encoding="utf-8")
        assert "read_source" in text or "read_path" in text, name
        assert "read_bytes" not in text and "read_text" not in text, name
