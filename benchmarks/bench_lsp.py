"""`forgec lsp` through a real client: diagnostics after a change, hover, completion.

Starts `python -m forgec lsp` as a subprocess, talks to it with pytest-lsp's client (the same
one the tests use, VS Code's capabilities), opens the 64-node benchmark `.forge` file and
prints medians:

- **didChange → publishDiagnostics**: from sending a change (a whole new text) to the
  diagnostics for that version arriving (target: 30 ms), debounce included;
- **hover** on a step and **completion** after `$` (target: 10 ms each).

Run by hand: `python benchmarks/bench_lsp.py [--repeat N]`. Not a CI gate.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dsl import sixty_four_nodes


async def bench(repeat: int) -> dict[str, float]:
    from lsprotocol import types as lsp
    from pytest_lsp import ClientServerConfig, client_capabilities

    config = ClientServerConfig(server_command=[sys.executable, "-m", "forgec", "lsp"])
    client = await config.start()
    await client.initialize_session(
        lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    uri = "file:///bench/bench-64.forge"
    text = sixty_four_nodes()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "forge", 1, text))
    )
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    changes, hovers, completions = [], [], []
    step = text.index("n1:")
    step_pos = lsp.Position(text.count("\n", 0, step), 5)
    ref = text.index("$", step)
    ref_pos = lsp.Position(text.count("\n", 0, ref), ref - text.rfind("\n", 0, ref))
    for i in range(repeat):
        version = i + 2
        edited = text + f"# edit {i}\n"
        start = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangeWholeDocument(text=edited)],
            )
        )
        while True:
            note = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if note.version == version:
                break
        changes.append(time.perf_counter() - start)
        start = time.perf_counter()
        await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), step_pos)
        )
        hovers.append(time.perf_counter() - start)
        start = time.perf_counter()
        await client.text_document_completion_async(
            lsp.CompletionParams(lsp.TextDocumentIdentifier(uri), ref_pos)
        )
        completions.append(time.perf_counter() - start)
    await client.shutdown_session()
    return {
        "didChange → diagnostics": statistics.median(changes),
        "hover": statistics.median(hovers),
        "completion": statistics.median(completions),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    targets = {"didChange → diagnostics": 30.0, "hover": 10.0, "completion": 10.0}
    results = asyncio.run(bench(args.repeat))
    print(f"forgec lsp, 64-node .forge, median of {args.repeat} (real client over stdio)")
    for name, seconds in results.items():
        ms = seconds * 1000
        verdict = "met" if ms <= targets[name] else "NOT met"
        print(f"  {name:<26} {ms:7.2f} ms   (target ≤ {targets[name]:.0f} ms: {verdict})")


if __name__ == "__main__":
    main()
