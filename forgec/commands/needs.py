"""Which install extra each command needs: the one table `forgec.cli` reads before it runs a
command, and `tests/test_install.py` holds equal to `pyproject.toml`.

`pip install forgec` is the embeddable runtime only; a command that needs more says, in one
line and with exit status 2, which extra to install — not a `ModuleNotFoundError` traceback.
Looking a module up (`importlib.util.find_spec`) does not import it, so this costs nothing on
the `--help` path.
"""

from __future__ import annotations

import importlib.util

# extra → the top-level modules forgec imports from its packages
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    # httpx: the one URL parser `check` reads literal URLs with (forgec.catalog.urls);
    # ahocorasick_rs: the secret screen's search (forgec.passes.secrets)
    "compiler": ("lark", "sqlglot", "croniter", "httpx", "ahocorasick_rs"),
    "host": ("httpx", "httpcore", "platformdirs", "markdown_it", "sqlglot", "croniter"),
    "mcp": ("mcp", "mcp_types", "anyio", "jsonschema"),
    "lsp": ("pygls", "lsprotocol"),
    "screen": ("starlette", "jinja2", "uvicorn", "python_multipart", "ada_url"),
    # forgec talond's durable execution (DBOS Transact, its SQLite/PostgreSQL drivers)
    "daemon": ("dbos", "sqlalchemy", "psycopg"),
}
EXTRA_WHAT = {
    "compiler": "the compiler",
    "host": "the reference host",
    "mcp": "the MCP SDK",
    "lsp": "the language server",
    "screen": "the Tool Forge screen",
    "daemon": "the daemon's engine (DBOS)",
}
# command → the extras it needs (a command not listed needs none)
COMMAND_NEEDS: dict[str, tuple[str, ...]] = {
    "check": ("compiler",),
    "inspect": ("compiler",),
    "explain": (),
    "schema": ("compiler",),
    "compile": ("compiler",),
    "fmt": ("compiler",),
    "graph": ("compiler",),
    "lower": ("compiler",),
    "run": ("compiler", "host"),
    "test": ("compiler", "host"),
    "tools": ("compiler", "host"),
    "mcp": ("compiler", "host", "mcp"),
    "lsp": ("compiler", "lsp"),
    "screen": ("compiler", "host", "screen"),
    "talond": ("compiler", "host", "mcp", "daemon"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extras(command: str) -> list[str]:
    """The extras `command` needs that are not installed, in table order."""
    return [
        extra
        for extra in COMMAND_NEEDS.get(command, ())
        if not all(_installed(m) for m in EXTRA_MODULES[extra])
    ]


def extra_of_module(module: str, command: str | None = None) -> str | None:
    """The extra that provides top-level module `module`, if any: of the extras `command`
    needs first (httpx is in `[compiler]` and `[host]`; `check` needs the former)."""
    needed = COMMAND_NEEDS.get(command or "", ())
    holders = [extra for extra, modules in EXTRA_MODULES.items() if module in modules]
    for extra in holders:
        if extra in needed:
            return extra
    return holders[0] if holders else None


def install_hint(command: str, extras: list[str]) -> str:
    """The one line a user sees: what is missing and the pip command that adds it."""
    names = [EXTRA_WHAT[e] for e in extras]
    what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"forgec {command} needs {what}: pip install 'forgec[{','.join(extras)}]'"
