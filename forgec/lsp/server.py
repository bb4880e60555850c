"""The pygls wiring: documents in, answers out, checks debounced and superseded work dropped.

A change schedules one check after a short pause (`DEBOUNCE_S`); a newer change cancels the
one waiting, and a check whose document moved on meanwhile publishes nothing. Requests
(hover, completion, …) answer from the analysis of the text as it is now, waiting for its
check if it has not run yet, so an answer never describes an older text.

Checks run off the event loop, in a worker process within the check budget (`forgec.budget`,
default 5 s; `--check-budget`, the `checkBudget` initialization option or setting): while one
document is checked, requests about the others are answered, and a check over the budget ends
as `FORGEC_CHECK_BUDGET` on that document. Concurrent askers of one text share one check.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from forgec.lsp import features, semantic
from forgec.lsp.analysis import Analysis, analyse, language_of
from forgec.lsp.positions import LineIndex

DEFAULT_BUDGET_S = 5.0  # forgec.budget.DEFAULT_BUDGET_S (not imported here: start-up stays lazy)

DEBOUNCE_S = 0.01  # coalesces a burst of keystrokes; short enough to answer within 30 ms
TARGETS = ("talos", "talon")
log = logging.getLogger(__name__)


class _EscapingWriter:
    """What the protocol writes to the editor, each message's JSON body with every raw DEL,
    C1, bidi or line-separator character as a `\\u` escape and its `Content-Length` made
    right (SPEC §14: what a machine reads). pygls serialises with `json.dumps`, which escapes
    C0 and, ASCII-only, most of the rest, but writes DEL raw; the writer is the one choke point
    whatever a later pygls does."""

    def __init__(self, writer: Any, include_headers: bool) -> None:
        self.writer = writer
        self.include_headers = include_headers

    def write(self, data: bytes) -> Any:
        from forgec.runtime.jsontext import escape_unsafe

        if not self.include_headers:
            return self.writer.write(escape_unsafe(data))
        head, sep, body = data.partition(b"\r\n\r\n")
        safe = escape_unsafe(body)
        if safe is not body:
            lines = [
                b"Content-Length: %d" % len(safe)
                if line.lower().startswith(b"content-length:")
                else line
                for line in head.split(b"\r\n")
            ]
            head = b"\r\n".join(lines)
        return self.writer.write(head + sep + safe)

    def close(self) -> None:
        self.writer.close()


class _EscapingProtocol(LanguageServerProtocol):
    def set_writer(self, writer: Any, include_headers: bool = True) -> None:
        super().set_writer(_EscapingWriter(writer, include_headers), include_headers)


class ForgeLanguageServer(LanguageServer):
    def __init__(self) -> None:
        from forgec import __version__

        super().__init__(
            "forgec",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=_EscapingProtocol,
        )
        # the client's `forgec.target` setting, which overrides the files' own settings
        self.target: str | None = None
        self.analyses: dict[str, Analysis] = {}
        self.indexed: dict[str, Analysis] = {}  # the last analysis of each document with an index
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.budget_s = DEFAULT_BUDGET_S
        # the check in flight for each document: ((text, target, budget), its future)
        self.running: dict[str, tuple[tuple[str, str, float], asyncio.Future[Analysis]]] = {}

    # -- documents -----------------------------------------------------------------------

    def text_of(self, uri: str) -> str | None:
        """The text of URI: as the editor sent it when the document is open, else the file on
        disk read by the one bounded reader (SPEC §24; pygls' own fallback would read any file
        whole, a FIFO or `/dev/zero` included). A file that is not a regular one, is over its
        limit or is not UTF-8 has no text here."""
        from urllib.parse import unquote

        from pygls.uris import to_fs_path

        try:
            opened = self.workspace.text_documents.get(unquote(uri))
        except Exception:  # not initialized yet
            opened = None
        if opened is not None:
            return str(opened.source)
        try:
            path = to_fs_path(uri)
        except Exception:
            return None
        if not path:
            return None
        from forgec.frontend.reading import ReadError, read_tool_file, source_limit

        try:
            data = read_tool_file(path)
        except ReadError:
            return None
        if len(data) > source_limit(path):
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc) or "utf-16")

    def current(self, uri: str) -> tuple[Analysis, LineIndex] | None:
        """The analysis of the document's text as it is now (checked now if it is stale)."""
        text = self.text_of(uri)
        if text is None or language_of(uri, text) is None:
            return None
        a = self.analyses.get(uri)
        if a is None or a.text != text or a.target != self.target_for(uri):
            a = self.check(uri, text)
        return a, LineIndex(text, self.encoding())

    def check(self, uri: str, text: str) -> Analysis:
        a = analyse(uri, text, target=self.target_for(uri), budget_s=self.budget_s)
        self.remember(uri, a)
        return a

    def remember(self, uri: str, a: Analysis) -> None:
        self.analyses[uri] = a
        if a.nodes:
            self.indexed[uri] = a

    async def analysis_of(self, uri: str, text: str) -> Analysis:
        """The analysis of TEXT, checked in a worker thread (which waits on the budgeted worker
        process), so the event loop keeps answering meanwhile."""
        target = self.target_for(uri)
        a = self.analyses.get(uri)
        if a is not None and a.text == text and a.target == target:
            return a
        key = (text, target, self.budget_s)
        running = self.running.get(uri)
        if running is None or running[0] != key:
            work = functools.partial(analyse, uri, text, target=target, budget_s=key[2])
            future = asyncio.get_running_loop().run_in_executor(None, work)
            running = (key, future)
            self.running[uri] = running
        try:
            a = await asyncio.shield(running[1])
        finally:
            if self.running.get(uri) is running and running[1].done():
                del self.running[uri]
        if self.text_of(uri) == text:  # a slower check of an older text must not win
            self.remember(uri, a)
        return a

    async def ready(self, uri: str) -> None:
        """Wait until the document's text as it is now has been analysed."""
        text = self.text_of(uri)
        if text is not None and language_of(uri, text) is not None:
            await self.analysis_of(uri, text)

    async def publish(self, uri: str) -> None:
        text = self.text_of(uri)
        if text is None:
            return
        if language_of(uri, text) is None:
            return
        a = await self.analysis_of(uri, text)
        if self.text_of(uri) != text:
            return  # the document moved on: its own check publishes
        diags = features.diagnostics(a, LineIndex(text, self.encoding()))
        version = self.workspace.get_text_document(uri).version
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version)
        )

    def schedule(self, uri: str) -> None:
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.pending[uri] = asyncio.ensure_future(self._debounced(uri))

    async def _debounced(self, uri: str) -> None:
        try:
            await asyncio.sleep(DEBOUNCE_S)
        except asyncio.CancelledError:
            return
        if self.pending.get(uri) is asyncio.current_task():
            del self.pending[uri]
        try:
            await self.publish(uri)
        except Exception:  # the server must outlive any one document
            log.exception("forgec lsp: publishing %s failed", uri)

    def target_for(self, uri: str) -> str:
        """The client's target setting, else what `[tool.forgec]` nearest the file says."""
        if self.target is not None:
            return self.target
        from forgec.frontend.settings import SettingsError, settings_for

        path = _file_path(uri)
        if path is None:
            return "talos"
        try:
            return settings_for(path).target_for(path)
        except SettingsError as exc:
            log.warning("forgec lsp: %s", exc)
            return "talos"

    def set_target(self, value: Any) -> bool:
        """Take `target` from settings shaped `{"forgec": {"target": ..}}` or `{"target": ..}`."""
        if isinstance(value, dict):
            value = value.get("forgec", value)
        if isinstance(value, dict):
            value = value.get("target")
        if isinstance(value, str) and value in TARGETS and value != self.target:
            self.target = value
            return True
        return False

    def set_budget(self, value: Any) -> bool:
        """Take `checkBudget` (seconds) from settings shaped like `set_target`'s."""
        if isinstance(value, dict):
            value = value.get("forgec", value)
        if isinstance(value, dict):
            value = value.get("checkBudget")
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and 0 < value <= 3600
            and value != self.budget_s
        ):
            self.budget_s = float(value)
            return True
        return False


def _file_path(uri: str) -> Any:
    """The local path of a `file:` URI (None for an unsaved buffer)."""
    from pathlib import Path
    from urllib.parse import unquote, urlparse
    from urllib.request import url2pathname

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(url2pathname(unquote(parsed.path)))


server = ForgeLanguageServer()


def _guard(default: Any) -> Any:
    """A request that fails answers DEFAULT and logs why: a bad document never stops the server."""

    def wrap(fn: Any) -> Any:
        def run(ls: ForgeLanguageServer, params: Any) -> Any:
            try:
                return fn(ls, params)
            except Exception:  # the server must outlive any one document
                log.exception("forgec lsp: %s failed", fn.__name__)
                return default

        run.__name__ = fn.__name__
        return run

    return wrap


def _answer(default: Any) -> Any:
    """A request about one document: answered once the document's current text is analysed
    (off the event loop), by `fn(ls, params, analysis, line_index)`; DEFAULT for a document
    that is not open or not a tool, and on failure as `_guard` does."""

    def wrap(fn: Any) -> Any:
        async def run(ls: ForgeLanguageServer, params: Any) -> Any:
            try:
                uri = params.text_document.uri
                await ls.ready(uri)
                got = ls.current(uri)
                if got is None:
                    return default
                return fn(ls, params, *got)
            except Exception:  # the server must outlive any one document
                log.exception("forgec lsp: %s failed", fn.__name__)
                return default

        run.__name__ = fn.__name__
        return run

    return wrap


@server.feature(lsp.INITIALIZED)
def initialized(ls: ForgeLanguageServer, params: lsp.InitializedParams) -> None:
    import threading

    from forgec.budget import warm_up

    # start the checking worker now, not on the first keystroke
    threading.Thread(target=warm_up, name="forgec-warm-up", daemon=True).start()


@server.feature(lsp.INITIALIZE)
def initialize(ls: ForgeLanguageServer, params: lsp.InitializeParams) -> None:
    ls.set_target(params.initialization_options or {})
    ls.set_budget(params.initialization_options or {})


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(
    ls: ForgeLanguageServer, params: lsp.DidChangeConfigurationParams
) -> None:
    from forgec.frontend.settings import clear_cache

    clear_cache()  # the files' own settings may have changed too
    ls.set_budget(params.settings or {})
    ls.set_target(params.settings or {})
    if ls.analyses:
        for uri in list(ls.analyses):
            ls.schedule(uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
@_guard(None)
def did_open(ls: ForgeLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
@_guard(None)
def did_change(ls: ForgeLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
@_guard(None)
def did_close(ls: ForgeLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.analyses.pop(uri, None)
    ls.indexed.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _point(index: LineIndex, pos: lsp.Position) -> Any:
    return index.from_client(pos.line, pos.character)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
@_answer(None)
def hover(
    ls: ForgeLanguageServer, params: lsp.HoverParams, a: Analysis, index: LineIndex
) -> lsp.Hover | None:
    return features.hover(a, index, _point(index, params.position))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
@_answer([])
def definition(
    ls: ForgeLanguageServer, params: lsp.DefinitionParams, a: Analysis, index: LineIndex
) -> list[lsp.Location]:
    return features.definition(a, index, _point(index, params.position))


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
@_answer([])
def references(
    ls: ForgeLanguageServer, params: lsp.ReferenceParams, a: Analysis, index: LineIndex
) -> list[lsp.Location]:
    return features.references(
        a, index, _point(index, params.position), params.context.include_declaration
    )


@server.feature(
    lsp.TEXT_DOCUMENT_COMPLETION,
    lsp.CompletionOptions(trigger_characters=["$", "{", ">", '"', " ", "."]),
)
@_answer(None)
def completion(
    ls: ForgeLanguageServer, params: lsp.CompletionParams, a: Analysis, index: LineIndex
) -> lsp.CompletionList | None:
    uri = params.text_document.uri
    items = features.completion(a, index, _point(index, params.position), ls.indexed.get(uri))
    return lsp.CompletionList(is_incomplete=False, items=items)


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@_answer([])
def document_symbol(
    ls: ForgeLanguageServer, params: lsp.DocumentSymbolParams, a: Analysis, index: LineIndex
) -> list[lsp.DocumentSymbol]:
    return features.symbols(a, index)


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite]
    ),
)
@_answer([])
def code_action(
    ls: ForgeLanguageServer, params: lsp.CodeActionParams, a: Analysis, index: LineIndex
) -> list[lsp.CodeAction]:
    return features.code_actions(a, index, params.range, params.context)


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
@_answer([])
def formatting(
    ls: ForgeLanguageServer, params: lsp.DocumentFormattingParams, a: Analysis, index: LineIndex
) -> list[lsp.TextEdit]:
    return features.formatting(a, index)


@server.feature(
    lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
    lsp.SemanticTokensLegend(
        token_types=semantic.TOKEN_TYPES, token_modifiers=semantic.TOKEN_MODIFIERS
    ),
)
@_guard(None)
def semantic_tokens(
    ls: ForgeLanguageServer, params: lsp.SemanticTokensParams
) -> lsp.SemanticTokens | None:
    """Colours for a `.forge` document (a `.talostool` is JSON: the editor colours it)."""
    uri = params.text_document.uri
    text = ls.text_of(uri)
    if text is None or language_of(uri, text) != "forge":
        return None
    return lsp.SemanticTokens(data=semantic.encode(text, LineIndex(text, ls.encoding())))


def main(budget_s: float | None = None) -> None:
    if budget_s is not None:
        server.budget_s = budget_s
    server.start_io()
