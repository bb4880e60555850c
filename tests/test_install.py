"""What `pip install forgec` and its extras promise, held against pyproject.toml and the code.

The bare install is the embeddable runtime (attrs, orjson, fastjsonschema); each extra adds a
face (`compiler`, `host`, `mcp`, `lsp`, `all`). These tests read every third-party import in
forgec (ast, nothing executed) so a new import cannot hide a requirement again, and run the
real CLI with an extra's modules blocked to see the one-line hint. `.ci/run` also installs the
project bare into a fresh venv and runs a Program there (`.ci/bare_install_check.py`).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from forgec.cli import COMMAND_MODULES
from forgec.commands.needs import COMMAND_NEEDS, EXTRA_MODULES

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CORE = {"attrs", "orjson", "fastjsonschema"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def extra_distributions(extra: str) -> set[str]:
    """The distributions an extra installs, self-references (`forgec[host]`) expanded."""
    out: set[str] = set()
    for requirement in PROJECT["optional-dependencies"][extra]:
        name = _name(requirement)
        if name == "forgec":
            for inner in requirement.split("[", 1)[1].split("]", 1)[0].split(","):
                out |= extra_distributions(inner.strip())
        else:
            out.add(name)
    return out


def distribution_of(module: str) -> set[str]:
    names = importlib.metadata.packages_distributions().get(module, [])
    return {n.lower().replace("_", "-") for n in names}


def third_party_imports(under: Path) -> dict[str, list[str]]:
    """top-level module → files importing it, for every non-stdlib, non-forgec import."""
    found: dict[str, list[str]] = {}
    for path in sorted(under.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("forgec", "__future__"):
                    found.setdefault(top, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_bare_install_is_the_runtime_and_its_needs() -> None:
    assert {_name(r) for r in PROJECT["dependencies"]} == CORE


def test_the_runtime_imports_only_core_dependencies() -> None:
    # fastjsonschema was once a hidden requirement of forgec.runtime: now every import counts
    found = third_party_imports(ROOT / "forgec" / "runtime")
    outside = {
        module: files for module, files in found.items() if not distribution_of(module) & CORE
    }
    assert not outside, outside


def test_every_third_party_import_is_declared_where_it_is_needed() -> None:
    declared = set(CORE)
    for extra in PROJECT["optional-dependencies"]:
        if extra != "dev":
            declared |= extra_distributions(extra)
    undeclared = {
        module: files
        for module, files in third_party_imports(ROOT / "forgec").items()
        if not distribution_of(module) & declared
    }
    assert not undeclared, f"imported but in no extra: {undeclared}"


@pytest.mark.parametrize("extra", sorted(EXTRA_MODULES))
def test_the_extras_table_matches_pyproject(extra: str) -> None:
    # forgec.commands.needs names modules; pyproject names distributions: they must agree
    provided = extra_distributions(extra)
    for module in EXTRA_MODULES[extra]:
        assert distribution_of(module) & provided, f"{module} is not installed by [{extra}]"


@pytest.mark.parametrize("extra", sorted(EXTRA_MODULES))
def test_every_distribution_of_an_extra_is_in_the_table(extra: str) -> None:
    # the other direction: a distribution pyproject puts in an extra (not through another
    # extra) is provided by a module the table lists for it, so a command that needs the
    # extra is refused up front when that distribution is missing, with the right extra named
    direct = {_name(r) for r in PROJECT["optional-dependencies"][extra] if _name(r) != "forgec"}
    listed = set().union(*(distribution_of(m) for m in EXTRA_MODULES[extra]))
    assert direct <= listed, f"[{extra}] installs {sorted(direct - listed)}, not in the table"


def test_all_is_every_extra_and_every_command_has_needs() -> None:
    faces = set(EXTRA_MODULES)
    assert extra_distributions("all") == set().union(*(extra_distributions(e) for e in faces))
    assert set(COMMAND_MODULES) <= set(COMMAND_NEEDS)


def _cli_without(blocked: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    # `sys.modules[name] = None` is how Python spells "this module is not installed"
    code = textwrap.dedent(
        f"""
        import sys
        for name in {blocked!r}:
            sys.modules[name] = None
        from forgec.cli import main
        sys.exit(main({list(argv)!r}))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("blocked", "argv", "line"),
    [
        (
            ["lark"],
            ["check", "examples/task-triage.forge"],
            "forgec check needs the compiler: pip install 'forgec[compiler]'",
        ),
        (
            ["httpx"],
            # a literal URL: the checker reads it with httpx's parser
            ["check", "--target", "talon", "examples/talon-status-check.talostool"],
            "forgec check needs the compiler: pip install 'forgec[compiler]'",
        ),
        (
            ["platformdirs"],
            ["run", "examples/note-updater.talostool"],
            "forgec run needs the reference host: pip install 'forgec[host]'",
        ),
        (
            ["lark", "httpx"],
            ["tools", "list"],
            "forgec tools needs the compiler and the "
            "reference host: pip install 'forgec[compiler,host]'",
        ),
        (["mcp"], ["mcp"], "forgec mcp needs the MCP SDK: pip install 'forgec[mcp]'"),
        (["pygls"], ["lsp"], "forgec lsp needs the language server: pip install 'forgec[lsp]'"),
    ],
)
def test_a_missing_extra_is_one_line_and_exit_2(
    blocked: list[str], argv: list[str], line: str
) -> None:
    done = _cli_without(blocked, *argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"forgec: error: {line}"]


def test_help_and_explain_need_no_extra() -> None:
    every = sorted({m for modules in EXTRA_MODULES.values() for m in modules})
    assert _cli_without(every, "--help").returncode == 0
    explained = _cli_without(every, "explain", "FORGE_MANIFEST_STRUCTURE")
    assert explained.returncode == 0, explained.stderr
