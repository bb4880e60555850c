"""The pytest plugin of `pip install 'forgec[pytest]'` (entry point `pytest11`, SPEC §22).

- **Collection**: every `*.tests.toml` file under the paths pytest walks is a test file; each
  case is an item named `file::case`. A case that fails shows each expectation not met with
  its expected and actual value and the node; a tests file with problems is one failing item
  (`file::tests file`) showing every diagnostic as `forgec check` prints it.
- **`forge` fixture**: `check`, `compile`, `lower`, `disasm`, `card` and
  `run(tool, input, host=…, mocks=…, model=…)` (a `forgec.testing.CaseResult`: `.result`,
  `.effects`, `.calls`, `.flows`), all through the public API.
- **`forge_snapshot` fixture**: syrupy's `snapshot` with an extension that stores compiled
  output as readable files — `forge.compile(...)` as `.talostool`, `forge.disasm(...)` as
  `.disasm`, `forge.card(...)` as `.card.txt` — so `assert forge.compile("x.forge") ==
  forge_snapshot` works with syrupy's `--snapshot-update`.

Items carry an empty `funcargs` (as pytest's own `Function` does): pytest-lsp 1.0.1's
`pytest_runtest_call` wrapper returns without yielding for an item without it, which fails
every such item whichever plugin collected it (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

SUFFIX = ".tests.toml"


# --- collection -------------------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX):
        return ToolTestsFile.from_parent(parent, path=file_path)
    return None


class ToolTestsFile(pytest.File):
    """One `NAME.tests.toml`: its cases, or one item holding its problems."""

    def collect(self) -> Iterator[pytest.Item]:
        from forgec.testing import load_tests

        try:
            tests = load_tests(self.path)
        except OSError as exc:
            yield ProblemItem.from_parent(self, name="tests file", text=str(exc))
            return
        if not tests.ok:
            yield ProblemItem.from_parent(self, name="tests file", text=_diagnostics(tests))
            return
        for case in tests.cases:
            yield CaseItem.from_parent(self, name=case.name, tests=tests, case=case)


def _diagnostics(tests: Any) -> str:
    from forgec.render.text import render_diagnostic

    source = tests.source_map.text if tests.source_map is not None else None
    return "\n".join(
        render_diagnostic(d, path=tests.path, source=source) for d in tests.diagnostics
    )


class CaseFailed(Exception):
    """A case that did not pass; its text says why."""


class CaseItem(pytest.Item):
    def __init__(self, *, tests: Any, case: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tests = tests
        self.case = case
        self.funcargs: dict[str, Any] = {}  # see the module doc (pytest-lsp)

    def runtest(self) -> None:
        from forgec.testing import run_case

        result = run_case(self.tests.program, self.case)
        result.file = str(self.path)
        if not result.passed:
            raise CaseFailed(describe(result))

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = None
        if self.tests.source_map is not None:
            span = self.tests.source_map.span(self.case.pointer)
            line = span.line - 1 if span is not None else None
        return self.path, line, f"case: {self.case.name}"


class ProblemItem(pytest.Item):
    def __init__(self, *, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        raise CaseFailed(self.text)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, "tests file"


def describe(result: Any) -> str:
    """A case's failures and errors for a person: expected, actual, node."""
    from forgec.render.safe import safe_text
    from forgec.runtime.jsontext import dumps_text

    lines = [f"case {result.name!r}: {result.outcome}"]
    lines += [f"  error: {e}" for e in result.errors]
    for f in result.failures:
        at = f" (node `{f.node}`)" if f.node else ""
        lines.append(f"  {f.what}{at}: {f.message}")
        if f.expected is not None or f.actual is not None:
            lines.append(f"    expected: {dumps_text(f.expected)}")
            lines.append(f"    actual:   {dumps_text(f.actual)}")
    return "\n".join(safe_text(line) for line in lines)


# --- the forge fixture ------------------------------------------------------------------------


class Compiled(str):
    """Canonical `.talostool` text (stored by `forge_snapshot` as `NAME.talostool`)."""

    __slots__ = ()
    suffix = "talostool"


class Disassembly(str):
    """A Program's listing (stored as `NAME.disasm`)."""

    __slots__ = ()
    suffix = "disasm"


class Card(str):
    """A consent card as text (stored as `NAME.card.txt`)."""

    __slots__ = ()
    suffix = "card.txt"


class Forge:
    """What a test of a tool needs, through forgec's public API. A TOOL is a path (`.forge`
    or `.talostool`, relative to the test's folder or absolute) or a manifest dict."""

    def __init__(self, root: Path, target: str | None = None) -> None:
        self.root = root
        self.target = target

    def _report(self, tool: Any, target: str | None = None) -> Any:
        import orjson

        import forgec

        chosen = target or self.target
        if isinstance(tool, Mapping):
            return forgec.check(orjson.dumps(dict(tool)), target=chosen or "talos")
        path = Path(tool)
        if not path.is_absolute():
            path = self.root / path
        if chosen is None:
            from forgec.frontend.settings import settings_for

            chosen = settings_for(path).target_for(path)
        return forgec.check_file(path, target=chosen)

    def check(self, tool: Any, *, target: str | None = None) -> Any:
        """The check report (`forgec.Report`: `.ok`, `.diagnostics`, `.marks`, `.manifest`)."""
        return self._report(tool, target)

    def _ok(self, tool: Any, target: str | None) -> Any:
        import forgec

        report = self._report(tool, target)
        if not report.ok:
            raise forgec.CheckError(report)
        return report

    def compile(self, tool: Any, *, target: str | None = None) -> Compiled:
        """The canonical `.talostool` text (what `forgec compile` writes)."""
        import forgec

        return Compiled(forgec.canonical_text(self._ok(tool, target).manifest))

    def lower(self, tool: Any, *, target: str | None = None) -> Any:
        """The `forgec.runtime.Program`."""
        from forgec.backend import lower_report

        return lower_report(self._ok(tool, target))

    def disasm(self, tool: Any, *, target: str | None = None) -> Disassembly:
        """The Program's listing, control and bidi characters escaped."""
        import forgec
        from forgec.render.safe import safe_text

        text = forgec.disassemble(self.lower(tool, target=target))
        return Disassembly(safe_text(text, keep_newlines=True))

    def card(self, tool: Any, *, target: str | None = None) -> Card:
        """The consent card a person would see, as text."""
        from forgec.render.consent import render_consent_card

        report = self._ok(tool, target)
        return Card(render_consent_card(report.manifest, report.marks) + "\n")

    def run(
        self,
        tool: Any,
        input: Any = None,
        *,
        host: Mapping[str, Any] | None = None,
        mocks: Iterable[Mapping[str, Any]] = (),
        model: Iterable[Mapping[str, Any]] = (),
        target: str | None = None,
    ) -> Any:
        """Run TOOL on a fresh in-memory host seeded with HOST (`tasks`, `notes`, `memories`,
        `state`, as `[case.host]`), with MOCKS (`{"step", "result"}` or `{"step", "error",
        "message"}`) and MODEL answers (`--replay` records). Returns a
        `forgec.testing.CaseResult`: `.result` (the §8 run result), `.effects`, `.calls`."""
        from forgec.testing import Mock, run_input

        program = self.lower(tool, target=target)
        given = [
            Mock(
                str(m["step"]),
                m.get("result"),
                m.get("error"),
                str(m.get("message", "mocked failure")),
            )
            for m in mocks
        ]
        return run_input(
            program, {} if input is None else input, host=host, mocks=given, model=model
        )


@pytest.fixture
def forge(request: pytest.FixtureRequest) -> Forge:
    """Check, compile, lower, disassemble and run tools (paths relative to the test file)."""
    return Forge(Path(str(request.path)).parent)


# --- the syrupy extension ---------------------------------------------------------------------


def _extensions() -> dict[str, Any]:
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

    # syrupy names the attribute `file_extension` since 5.x and `_file_extension` before it
    # (4.6.1 is the lowest release the `pytest` extra allows): each class sets both
    class _Text(SingleFileSnapshotExtension):
        _write_mode = WriteMode.TEXT

    class TalostoolExtension(_Text):
        file_extension = _file_extension = "talostool"

    class DisasmExtension(_Text):
        file_extension = _file_extension = "disasm"

    class CardExtension(_Text):
        file_extension = _file_extension = "card.txt"

    return {
        "talostool": TalostoolExtension,
        "disasm": DisasmExtension,
        "card.txt": CardExtension,
    }


_EXTENSIONS: dict[str, Any] = {}


class ForgeSnapshot:
    """`assert value == forge_snapshot`: the value's kind picks the file it is stored in."""

    def __init__(self, snapshot: Any) -> None:
        self._snapshot = snapshot
        self.last: Any = None  # the syrupy assertion of the latest comparison

    def __eq__(self, other: object) -> bool:
        suffix = getattr(other, "suffix", None)
        if not isinstance(other, str) or suffix is None:
            raise TypeError(
                "forge_snapshot stores forge.compile(), forge.disasm() or forge.card(); "
                f"got {type(other).__name__} (use syrupy's `snapshot` for anything else)"
            )
        if not _EXTENSIONS:
            _EXTENSIONS.update(_extensions())
        self.last = self._snapshot.use_extension(_EXTENSIONS[suffix])
        return bool(self.last == str(other))

    __hash__ = None  # type: ignore[assignment]


def pytest_assertrepr_compare(config: Any, op: str, left: Any, right: Any) -> list[str] | None:
    """A failed `== forge_snapshot` explained by syrupy's own diff of the stored file."""
    for mine, other in ((left, right), (right, left)):
        if isinstance(mine, ForgeSnapshot) and mine.last is not None:
            from syrupy import pytest_assertrepr_compare as syrupy_explains

            pair = (mine.last, other) if mine is left else (other, mine.last)
            return syrupy_explains(config, op, *pair)
    return None


@pytest.fixture
def forge_snapshot(snapshot: Any) -> ForgeSnapshot:
    """syrupy's snapshot, storing compiled output as readable `.talostool`, `.disasm` and
    `.card.txt` files (`--snapshot-update` writes them)."""
    return ForgeSnapshot(snapshot)
