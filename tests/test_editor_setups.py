"""docs/editor.md's editor setups, as an editor sends them, keep each file's own target.

The setups used to pass `{"forgec": {"target": "talos"}}`, which overrides the project's
per-file targets: a `talon-*` tool that `forgec check` passes showed two errors in Neovim.
A real LSP client (pytest-lsp) starts `python -m forgec lsp` with the initialization options
the docs' Neovim setup gives, opens a Talon example of this repository (whose
`[tool.forgec.targets]` says `talon`) and must see no error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "editor.md").read_text()
BLOCKS = re.findall(r"```(?:jsonc|lua|toml)\n(.*?)```", DOC, re.S)


def test_no_editor_setup_forces_a_target() -> None:
    setups = [b for b in BLOCKS if "lsp" in b and ("--stdio" in b or "stdio" in b)]
    assert len(setups) == 3  # VS Code (generic client), Neovim, Helix
    for block in setups:
        assert "target" not in block, block


def _neovim_init_options() -> dict[str, object] | None:
    (block,) = [b for b in BLOCKS if "vim.lsp.start" in b]
    return None if "init_options" not in block else {"unparsed": block}


pygls = pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "forgec", "lsp"]),
)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    params = lsp.InitializeParams(
        capabilities=client_capabilities("neovim"),
        initialization_options=_neovim_init_options(),
        root_uri=ROOT.as_uri(),
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["talon-db-digest.forge", "talon-status-check.talostool"])
async def test_a_talon_file_keeps_its_own_target(client: LanguageClient, name: str) -> None:
    path = ROOT / "examples" / name
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri,
                language_id="forge" if name.endswith(".forge") else "json",
                version=1,
                text=path.read_text(),
            )
        )
    )
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    errors = [
        d for d in client.diagnostics.get(uri, []) if d.severity == lsp.DiagnosticSeverity.Error
    ]
    assert errors == []
