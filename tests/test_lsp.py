"""`forgec lsp` end to end: a real LSP client (pytest-lsp) talks to `python -m forgec lsp`.

Every test runs under two client presets (VS Code's and Neovim's capabilities), so answers are
checked against what those clients announce (position encoding, markup, resource operations).

One server per preset serves the whole module, as an editor's one server serves a session
(starting one is most of a test's time): each test opens its documents under a folder of its
own, waits for the diagnostics of its own document, and closes what it opened. A test that
changes a server-wide setting starts a server of its own (`own_client`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import pytest_asyncio

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CLIENTS = ["visual-studio-code", "neovim"]

HEAD = """tool lsp-test {
  version 1
  title "LSP test"
  description "A tool for the language server tests."
  created "2026-11-02T09:00:00Z"
  parent null
  network forbidden
"""


def forge(flow: str, extra: str = "") -> str:
    return HEAD + extra + "  flow entry a max 64 {\n" + flow + "  }\n}\n"


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "forgec", "lsp"])
# every async test runs on the module's event loop, the one its shared server's client lives on
ASYNC = pytest.mark.asyncio(loop_scope="module")


async def _initialize(lsp_client: LanguageClient, preset: str) -> None:
    params = lsp.InitializeParams(
        capabilities=client_capabilities(preset),
        initialization_options={"forgec": {"target": "talon"}},
        root_uri=EXAMPLES.as_uri(),
    )
    result = await lsp_client.initialize_session(params)
    encoding = result.capabilities.position_encoding
    lsp_client.encoding = str(getattr(encoding, "value", encoding) or "utf-16")  # type: ignore[attr-defined]
    lsp_client.folder = "work"  # type: ignore[attr-defined]
    lsp_client.opened = []  # type: ignore[attr-defined]


@pytest_lsp.fixture(params=CLIENTS, config=SERVER, scope="module")
async def shared_client(request, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await _initialize(lsp_client, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest_asyncio.fixture(loop_scope="module")
async def client(
    request: pytest.FixtureRequest, shared_client: LanguageClient
) -> AsyncIterator[LanguageClient]:
    """The module's server, for one test: its documents under a folder named after the test,
    closed when it ends."""
    folder = re.sub(r"[^\w.-]", "_", request.node.name)
    shared_client.folder = f"work/{folder}"  # type: ignore[attr-defined]
    shared_client.opened = []  # type: ignore[attr-defined]
    yield shared_client
    for uri in shared_client.opened:  # type: ignore[attr-defined]
        shared_client.text_document_did_close(lsp.DidCloseTextDocumentParams(doc(uri)))


@pytest_lsp.fixture(params=CLIENTS, config=SERVER, scope="module")
async def own_client(request, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await _initialize(lsp_client, request.param)
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    """The next diagnostics published for URI (another document's are not this test's)."""
    while True:
        params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri:
            return list(params.diagnostics)


async def open_doc(
    client: LanguageClient, name: str, text: str
) -> tuple[str, list[lsp.Diagnostic]]:
    uri = f"file:///{client.folder}/{name}"  # type: ignore[attr-defined]
    client.opened.append(uri)  # type: ignore[attr-defined]
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="forge", version=1, text=text)
        )
    )
    return uri, await published(client, uri)


def at(text: str, needle: str, offset: int = 0) -> lsp.Position:
    """The position of NEEDLE's first occurrence (+ OFFSET characters), ASCII text."""
    i = text.index(needle) + offset
    line = text.count("\n", 0, i)
    return lsp.Position(line=line, character=i - (text.rfind("\n", 0, i) + 1))


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


def apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """TEXT with EDITS applied as an editor applies them (ASCII text: columns are characters)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(p: lsp.Position) -> int:
        if p.line >= len(lines):
            return len(text)
        return min(starts[p.line] + p.character, starts[p.line] + len(lines[p.line]))

    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text


# -- diagnostics --------------------------------------------------------------------------


@ASYNC
@pytest.mark.parametrize("name", ["weekly-review.forge", "talon-thread-facts.talostool"])
async def test_examples_have_no_errors(client: LanguageClient, name: str) -> None:
    _, diags = await open_doc(client, name, (EXAMPLES / name).read_text())
    assert [d.message for d in diags if d.severity == lsp.DiagnosticSeverity.Error] == []


@ASYNC
async def test_diagnostics_carry_code_and_a_link_to_its_explanation(client: LanguageClient) -> None:
    text = forge("    a: x = 1 -> doen\n    done: return $x\n")
    _, diags = await open_doc(client, "edge.forge", text)
    (d,) = [d for d in diags if d.code == "FORGE_EDGE_MISSING"]
    assert d.source == "forgec"
    assert d.range.start == at(text, "doen")
    assert "did you mean `done`" in d.message
    href = d.code_description.href
    explained = Path(url2pathname(urlparse(href).path)).read_text()
    assert "FORGE_EDGE_MISSING" in explained and len(explained) > 60


@ASYNC
async def test_a_missing_brace_mid_file_still_reports_the_rest(client: LanguageClient) -> None:
    text = forge(
        '    a: x = call tasks.create {title: "x" -> b\n    b: y = = 2 -> c\n    c: retrun $x\n'
    )
    _, diags = await open_doc(client, "broken.forge", text)
    lines = sorted({d.range.start.line for d in diags})
    assert lines == [at(text, "-> b").line, at(text, "= = 2").line, at(text, "$x").line]


@ASYNC
@pytest.mark.parametrize(
    ("flow", "first", "second"),
    [
        # a broken edge, then a `{` never closed: the editor shows both (issue 31)
        (
            '    a: x = llm summarize {text: "t"} ->-> b\n    b: y = 2 -> c\n'
            "    c: return {saved: true, id: $y\n",
            "->-> b",
            "{saved",
        ),
        # a misspelt loop header, then a broken `next` two lines below its body
        (
            "    a: fro t in $input.xs max 3 {\n      b: y = 1\n    } -> c\n"
            "    c: z = 1 next d\n    d: return 1\n",
            "fro t",
            "next d",
        ),
    ],
)
async def test_a_later_mistake_is_still_shown_after_a_broken_step(
    client: LanguageClient, flow: str, first: str, second: str
) -> None:
    text = forge(flow)
    _, diags = await open_doc(client, "two.forge", text)
    lines = {d.range.start.line for d in diags if d.severity == lsp.DiagnosticSeverity.Error}
    assert {at(text, first).line, at(text, second).line} <= lines, lines


@ASYNC
async def test_duplicates_and_cycles_point_at_every_place(client: LanguageClient) -> None:
    text = forge("    a: x = 1 -> b\n    b: y = 2 -> a\n    b: return 1\n")
    _, diags = await open_doc(client, "dup.forge", text)
    dup = next(d for d in diags if d.code == "FORGE_NODE_DUPLICATE")
    assert dup.related_information, dup
    cycle = [d for d in diags if d.code == "FORGE_CYCLE"]
    if cycle:
        assert len(cycle[0].related_information or []) >= 2


@ASYNC
async def test_a_flow_warning_points_along_its_path(client: LanguageClient) -> None:
    text = (EXAMPLES / "flows" / "notes-digest-post.forge").read_text()
    _, diags = await open_doc(client, "notes-digest-post.forge", text)
    (flow,) = [d for d in diags if d.code == "FORGEC_FLOW_PRIVATE_EGRESS"]
    steps = [r.message for r in flow.related_information or []]
    assert len(steps) >= 2 and all("notes.list" in m or "private" in m for m in steps), steps


@ASYNC
async def test_diagnostics_follow_changes(client: LanguageClient) -> None:
    text = forge("    a: return 1\n")
    uri, diags = await open_doc(client, "change.forge", text)
    assert list(diags) == []
    broken = text.replace("return 1", "return")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=broken)],
        )
    )
    assert await published(client, uri), "the broken text has a diagnostic"


@ASYNC
async def test_positions_count_utf16_units(client: LanguageClient) -> None:
    # U+1F600 is two UTF-16 code units (four UTF-8 bytes): the column after it counts them
    text = forge('    a: x = "\U0001f600" -> doen\n    done: return 1\n')
    _, diags = await open_doc(client, "emoji.forge", text)
    (d,) = [d for d in diags if d.code == "FORGE_EDGE_MISSING"]
    line = text.split("\n")[d.range.start.line]
    before = line[: line.index("doen")]
    encoding = client.encoding  # type: ignore[attr-defined]
    units = (
        len(before.encode("utf-16-le")) // 2
        if encoding == "utf-16"
        else len(before.encode(encoding))
    )
    if encoding == "utf-32":
        units = len(before)
    assert d.range.start.character == units


@ASYNC
async def test_target_setting_changes_the_catalog(own_client: LanguageClient) -> None:
    client = own_client  # the setting is the server's: no other test may see it
    text = forge('    a: m = call memory.access {operation: "list"} -> b\n    b: return $m\n')
    uri, diags = await open_doc(client, "target.forge", text)
    assert not [d for d in diags if d.code == "FORGE_CAPABILITY_UNKNOWN"]
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"forgec": {"target": "talos"}})
    )
    assert [d for d in await published(client, uri) if d.code == "FORGE_CAPABILITY_UNKNOWN"]


@ASYNC
async def test_plain_json_is_left_alone_and_a_manifest_json_is_checked(
    client: LanguageClient,
) -> None:
    package = f"file:///{client.folder}/package.json"  # type: ignore[attr-defined]
    client.opened.append(package)  # type: ignore[attr-defined]
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=package, language_id="json", version=1, text='{"name": 1}'
            )
        )
    )
    manifest = (
        (EXAMPLES / "note-updater.talostool").read_text().replace('"version": 1', '"version": 0')
    )
    _uri, diags = await open_doc(client, "tool.json", manifest)
    assert [d.code for d in diags] == ["FORGE_VERSION"]
    assert package not in client.diagnostics


@ASYNC
async def test_garbage_never_stops_the_server(client: LanguageClient) -> None:
    for i, junk in enumerate(
        ["", "{", "tool", "\x00\x01 }}}} [[[", '{"schema": "talos.local-tool.v1"']
    ):
        await open_doc(client, f"junk{i}.forge", junk)
    text = forge("    a: return 1\n")
    uri, _ = await open_doc(client, "after.forge", text)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc(uri), at(text, "a: return")))
    assert hover is not None and "return" in hover.contents.value


# -- hover, navigation ---------------------------------------------------------------------


@ASYNC
async def test_hover_on_a_step_shows_its_marks_and_worst_case(client: LanguageClient) -> None:
    text = (EXAMPLES / "weekly-review.forge").read_text()
    uri, _ = await open_doc(client, "weekly-review.forge", text)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(doc(uri), at(text, "file: note"))
    )
    value = hover.contents.value
    for words in (
        "notes.create",
        "power **Write**",
        "risk **R2**",
        "input limit",
        "worst case from here: 2",
    ):
        assert words in value


@ASYNC
async def test_hover_on_a_reference_says_where_it_is_written(client: LanguageClient) -> None:
    text = (EXAMPLES / "weekly-review.forge").read_text()
    uri, _ = await open_doc(client, "weekly-review.forge", text)
    pos = at(text, "{{summary}}", 3)
    hover = await client.text_document_hover_async(lsp.HoverParams(doc(uri), pos))
    assert "written by `summarize`" in hover.contents.value


@ASYNC
async def test_definition_and_references_of_a_node(client: LanguageClient) -> None:
    text = (EXAMPLES / "weekly-review.forge").read_text()
    uri, _ = await open_doc(client, "weekly-review.forge", text)
    edge = at(text, "else skip", 5)
    (loc,) = await client.text_document_definition_async(lsp.DefinitionParams(doc(uri), edge))
    assert loc.range.start == at(text, "skip: lastIndex")
    refs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=doc(uri),
            position=edge,
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert len(refs) == 3  # two `else skip` edges and the node itself


@ASYNC
async def test_definition_and_references_of_a_variable(client: LanguageClient) -> None:
    text = (EXAMPLES / "weekly-review.forge").read_text()
    uri, _ = await open_doc(client, "weekly-review.forge", text)
    read = at(text, "$tasks.items", 2)
    (loc,) = await client.text_document_definition_async(lsp.DefinitionParams(doc(uri), read))
    assert loc.range.start == at(text, "tasks = call")
    refs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=doc(uri),
            position=at(text, "overdue = []"),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    assert len(refs) == 2  # {{overdue}} in `keep` and in `file`


@ASYNC
async def test_document_symbols_nest_loop_bodies(client: LanguageClient) -> None:
    text = (EXAMPLES / "weekly-review.forge").read_text()
    uri, _ = await open_doc(client, "weekly-review.forge", text)
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc(uri)))
    names = [s.name for s in symbols]
    assert names == ["fetch", "start", "scan", "file", "done"]
    scan = symbols[2]
    assert [c.name for c in scan.children] == ["dated", "check", "summarize", "keep", "skip"]


# -- completion --------------------------------------------------------------------------------


async def _labels(client: LanguageClient, uri: str, pos: lsp.Position) -> list[str]:
    result = await client.text_document_completion_async(lsp.CompletionParams(doc(uri), pos))
    items = result.items if isinstance(result, lsp.CompletionList) else result or []
    return [i.label for i in items]


@ASYNC
async def test_completion_of_capabilities_nodes_and_variables(client: LanguageClient) -> None:
    text = forge("    a: x = call tasks.list {} -> b\n    b: y = $x -> c\n    c: return $y\n")
    uri, _ = await open_doc(client, "complete.forge", text)
    caps = await _labels(client, uri, at(text, "tasks.list"))
    assert "memory.access" in caps and "tasks.create" in caps  # the talon target's catalog
    nodes = await _labels(client, uri, at(text, "-> b", 3))
    assert set(nodes) >= {"a", "b", "c"}
    variables = await _labels(client, uri, at(text, "$y", 1))
    assert {"input", "x", "y"} <= set(variables)


@ASYNC
async def test_completion_after_an_arrow_offers_only_the_steps_of_its_scope(
    client: LanguageClient,
) -> None:
    # after `->` it offered the loop body's steps too, which a top-level edge cannot name
    text = forge(
        "    a: for t in $input.xs max 3 {\n"
        "      b: y = 1 -> c\n"
        "      c: z = 2\n"
        "    } -> d\n"
        "    d: return 1\n"
    )
    uri, _ = await open_doc(client, "scopes.forge", text)
    top = await _labels(client, uri, at(text, "-> d", 3))
    assert set(top) == {"a", "d"}
    body = await _labels(client, uri, at(text, "-> c", 3))
    assert set(body) == {"b", "c"}


@ASYNC
async def test_completion_of_node_fields_in_a_manifest(client: LanguageClient) -> None:
    text = (EXAMPLES / "note-updater.talostool").read_text()
    uri, _ = await open_doc(client, "note-updater.talostool", text)
    pos = at(text, '"capability": ', 1)
    labels = await _labels(client, uri, pos)
    assert {"capability", "input", "retry", "compensation", "next"} <= set(labels)


# -- code actions, formatting ---------------------------------------------------------------


@ASYNC
async def test_did_you_mean_becomes_a_quick_fix(client: LanguageClient) -> None:
    text = forge("    a: x = 1 -> doen\n    done: return $x\n")
    uri, diags = await open_doc(client, "fix.forge", text)
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(doc(uri), diags[0].range, lsp.CodeActionContext(diagnostics=diags))
    )
    fix = next(a for a in actions if a.kind == lsp.CodeActionKind.QuickFix)
    (edit,) = fix.edit.changes[uri]
    assert edit.new_text == "done" and edit.range == diags[0].range


@ASYNC
async def test_a_missing_state_field_can_be_declared(client: LanguageClient) -> None:
    text = forge("    a: state.count = 1 -> b\n    b: return 1\n")
    uri, diags = await open_doc(client, "state.forge", text)
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(doc(uri), diags[0].range, lsp.CodeActionContext(diagnostics=diags))
    )
    titles = [a.title for a in actions]
    fix = next((a for a in actions if "state field" in a.title or "Declare" in a.title), None)
    assert fix is not None, titles
    fixed = apply(text, fix.edit.changes[uri])
    assert "state maxBytes" in fixed and "count" in fixed


@ASYNC
async def test_a_missing_required_field_can_be_added(client: LanguageClient) -> None:
    manifest = json.loads((EXAMPLES / "note-updater.talostool").read_text())
    del manifest["flow"]["nodes"][0]["next"]
    uri, diags = await open_doc(client, "missing.talostool", json.dumps(manifest, indent=2))
    (missing,) = [d for d in diags if "is missing `next`" in d.message]
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(doc(uri), missing.range, lsp.CodeActionContext(diagnostics=[missing]))
    )
    fix = next(a for a in actions if a.title == "Add the missing `next`")
    fixed = json.loads(apply(json.dumps(manifest, indent=2), fix.edit.changes[uri]))
    assert "next" in fixed["flow"]["nodes"][0]
    assert fixed["flow"]["nodes"][1:] == manifest["flow"]["nodes"][1:]


@ASYNC
async def test_convert_to_the_other_form(client: LanguageClient) -> None:
    text = (EXAMPLES / "task-triage.forge").read_text()
    uri, _ = await open_doc(client, "task-triage.forge", text)
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            doc(uri),
            lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
            lsp.CodeActionContext(diagnostics=[]),
        )
    )
    convert = next(a for a in actions if a.title.startswith("Convert this file to .talostool"))
    assert convert.title.endswith("(3 comments not kept)")  # the example's comments
    create, content = convert.edit.document_changes
    assert create.uri.endswith("task-triage.talostool")
    assert content.edits[0].new_text == (EXAMPLES / "task-triage.talostool").read_text()


@ASYNC
async def test_formatting_gives_the_canonical_text(client: LanguageClient) -> None:
    canonical = (EXAMPLES / "task-triage.forge").read_text()
    messy = canonical.replace("  version 1", "version    1").replace("\n\n", "\n")
    uri, _ = await open_doc(client, "messy.forge", messy)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            doc(uri), lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert apply(messy, edits) == canonical
    # only what differs: not one edit over the whole document
    assert sum(len(e.new_text) for e in edits) < len(canonical) / 4


COMMENTED = """# what the tool is for
tool lsp-test {
  version 1  # bump on every change
  title "LSP test"
  description "A tool for the language server tests."
  # the date it was first written
  created "2026-11-02T09:00:00Z"
  parent null
  network forbidden

  # the flow
  flow entry a max 64 {
    a: x = 1 -> b  # a constant
    # the end
    b: return $x
  }
}
"""


@ASYNC
async def test_formatting_keeps_comments(client: LanguageClient) -> None:
    messy = COMMENTED.replace("  version 1  #", "version    1 #").replace("a: x = 1", "a:   x=1")
    uri, _ = await open_doc(client, "commented.forge", messy)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            doc(uri), lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert apply(messy, edits) == COMMENTED
    assert len(edits) == 2  # the two lines that changed


@ASYNC
async def test_quick_fixes_keep_comments_and_add_a_valid_created_at(client: LanguageClient) -> None:
    text = COMMENTED.replace('  created "2026-11-02T09:00:00Z"\n', "")
    uri, diags = await open_doc(client, "nocreated.forge", text)
    (missing,) = [d for d in diags if "is missing `createdAt`" in d.message]
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(doc(uri), missing.range, lsp.CodeActionContext(diagnostics=[missing]))
    )
    fix = next(a for a in actions if a.title == "Add the missing `createdAt`")
    fixed = apply(text, fix.edit.changes[uri])
    from forgec.frontend.dsl_trivia import comment_texts

    assert comment_texts(fixed) == comment_texts(text)
    assert len(fix.edit.changes[uri]) == 1 and fix.edit.changes[uri][0].new_text.startswith(
        '  created "20'
    )
    import forgec

    report = forgec.check(fixed, path="fixed.forge")
    assert report.ok, [(d.code, d.message) for d in report.errors]


@pytest.mark.parametrize(
    "field",
    [
        "version",
        "title",
        "description",
        "createdAt",
        "parentVersion",
        "network",
        "credentialRequirements",
        "execution",
        "installScope",
    ],
)
def test_every_missing_field_fix_gives_a_field_that_checks(field: str) -> None:
    """The principle behind the `created ""` defect: no placeholder may itself be an error."""
    from forgec.lsp import features
    from forgec.lsp.analysis import analyse
    from forgec.lsp.positions import LineIndex

    manifest = json.loads((EXAMPLES / "note-updater.talostool").read_text())
    del manifest[field]
    text = json.dumps(manifest, indent=2)
    a = analyse("file:///work/missing.talostool", text)
    index = LineIndex(text)
    diags = [d for d in features.diagnostics(a, index) if f"is missing `{field}`" in d.message]
    assert diags
    actions = features.code_actions(
        a, index, diags[0].range, lsp.CodeActionContext(diagnostics=diags)
    )
    fix = next(x for x in actions if x.title == f"Add the missing `{field}`")
    fixed = apply(text, fix.edit.changes[a.uri])
    import forgec

    report = forgec.check(fixed, path="fixed.talostool")
    assert report.ok, [(d.code, d.message) for d in report.errors]


@ASYNC
async def test_semantic_tokens_colour_a_forge_file(client: LanguageClient) -> None:
    from forgec.lsp.semantic import TOKEN_TYPES

    text = (EXAMPLES / "weekly-review.forge").read_text()
    uri, _ = await open_doc(client, "weekly-review.forge", text)
    result = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=doc(uri))
    )
    assert result is not None and result.data
    lines = text.split("\n")
    seen: dict[str, set[str]] = {}
    line = col = 0
    data = result.data
    for i in range(0, len(data), 5):
        dl, dc, length, typ, mods = data[i : i + 5]
        line += dl
        col = dc if dl else col + dc
        word = lines[line][col : col + length]  # ASCII example: units are characters
        seen.setdefault(TOKEN_TYPES[typ] + ("+decl" if mods & 1 else ""), set()).add(word)
    assert {"tool", "flow", "call", "for", "return"} <= seen["keyword"]
    assert "# at most 50 tasks are looked at, whatever the list holds" in {
        w.strip() for w in seen["comment"]
    }
    assert {"fetch", "scan", "file", "done"} <= seen["function+decl"]
    assert "tasks.list" in seen["method"] and "$input.limit" in seen["variable"]
    assert '"""' in seen["string"]  # a multi-line string, one token per line


def test_minimal_edits_stay_bounded_on_a_hostile_document() -> None:
    """SPEC §24: 20 000 short lines that repeat with different periods (difflib over all lines
    is quadratic on them: more than a minute before) are one edit in linear time."""
    import time

    from forgec.lsp.edits import minimal_edits
    from forgec.lsp.positions import LineIndex

    old = "".join(f"{i % 7}\n" for i in range(20_000))
    new = "".join(f"{i % 5}\n" for i in range(20_000))
    started = time.process_time()
    edits = minimal_edits(LineIndex(old), new)
    assert time.process_time() - started < 2.0
    assert len(edits) == 1  # after the five first lines both share
    start = edits[0].range.start.line
    assert start == 5 and old[: 2 * start] + edits[0].new_text == new
    # a small change in a big document is still a small edit
    changed = old[:2000] + "z\n" + old[2002:]
    (edit,) = minimal_edits(LineIndex(old), changed)
    assert edit.new_text == "z\n" and edit.range.start.line == 1000
