"""The installed-tools store: install, list, enable, disable, roll back, and consent (SPEC §9, §14).

Rules, in the order a person meets them:
- **Install** runs the full check, lowers the manifest to a Program, and only then writes. Any
  error — from the check or from the store's own version rules — writes nothing, and the report
  lists every issue (the store's refusals are `FORGE_VERSION` diagnostics at `/version` or
  `/parentVersion`). Every version records its **author**: `person` (the CLI, the Python API)
  or `model` (`tool_create`, with the persona's name when known).
- A person's version becomes current and **off**. A model does not number versions: the
  store does, so nothing a model writes can block, freeze or probe the numbering. A model's
  version of an id with no version becomes v1 (current, off), whatever its file says; of an id
  that has versions it is **proposal N** (its own sequence per tool, never reused): stored,
  never current by itself, the current version exactly as it was, on or off. A person
  `accept`s it — it becomes the next version of the lineage (latest + 1, parent the latest),
  current and off — or `reject`s it (kept, never current).
- **Versions** (the lineage): the first version of a tool has `parentVersion: null`; every
  later one names the latest version of the lineage as its parent and has a higher number.
  Proposals, waiting or rejected, are not in the lineage: they hold no version number and
  never raise its floor (a row keyed `PROPOSAL_BASE + N`, `forgec.store.schema`). Nothing is
  deleted but an accepted proposal's row, which lives on as its version, so a version number
  is never reused.
- **Rollback** makes the highest stored, non-proposed, non-rejected version below the current
  one current and turns the tool off; at the first version it is refused.
- **Consent** is bound to a version's content hash, and only to it. Enabling a version whose
  hash has no consent always asks, whoever wrote it: nothing carries from an earlier version,
  however small the change (the prompt shows what changed since the last consent,
  `forgec.store.diff`). Only a person's `granted` consent counts; a `carried` record an older
  forgec wrote is not a consent. An R4 tool asks when it is turned on and before every run:
  the yes to turning it on is recorded only as where the next version's diff starts, never as
  a consent to run (`has_consent` is false for R4, and `versions` shows none).
- **Integrity**: every read that could lead to running, enabling, showing or serving a version
  recomputes its hash (`forgec.store.integrity`); a changed or damaged row is `StoreDamaged`.

Every operation is one `BEGIN IMMEDIATE` transaction; SQLite's journal makes a crash at any
point leave the store as it was before the operation. Listing is one query (a JOIN), so it is
linear in the number of tools.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from forgec.ir.diagnostics import Diagnostic, make, sort_key
from forgec.ir.marks import Marks
from forgec.ir.rules import TOOL_ID_PATTERN
from forgec.store import effects as fx
from forgec.store.integrity import (
    VERSION_COLUMNS,
    StoreDamaged,
    check_row,
    dumps,
    hash_texts,
    label,
    legacy_hash,
    loads,
    manifest_text,
)
from forgec.store.schema import PROPOSAL_BASE, StoreError, connect

_ID = re.compile(rf"(?:{TOOL_ID_PATTERN})\Z", re.ASCII)  # the one tool-id rule (forgec.ir.rules)
AUTHORS = ("person", "model")
ProblemHook = Callable[[str], None]


class ToolNotFound(StoreError):
    pass


class ConsentRequired(StoreError):
    """Enabling needs a person's consent that was not given; `status` says why and what grew."""

    def __init__(self, message: str, status: ConsentStatus) -> None:
        super().__init__(message)
        self.status = status


@attrs.frozen
class ToolSummary:
    id: str
    version: int  # the current version
    latest_version: int
    enabled: bool
    risk: str
    powers: tuple[str, ...]
    labels: tuple[str, ...]
    title: str
    proposed: tuple[int, ...] = ()  # numbers of the proposals waiting for a person

    @property
    def name(self) -> str:
        return f"dynamic:{self.id}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "version": self.version,
            "enabled": self.enabled,
            "risk": self.risk,
            "powers": list(self.powers),
        }


@attrs.frozen
class VersionInfo:
    version: int
    parent_version: int | None
    current: bool
    hash: str
    installed_at: str
    consent: str | None  # "granted" (a person's, for this very hash) | None
    author: str = "person"
    author_name: str | None = None
    status: str = "previous"  # "current" | "proposed" | "rejected" | "previous"
    problem: str | None = None  # why the row cannot be trusted (changed, damaged)
    # when a person said yes to this very hash (turning it on); for a version that asks every
    # run that yes is no consent to run, but it was given, and the table says so
    turned_on_at: str | None = None
    always_asks: bool = False

    @property
    def consent_words(self) -> str:
        """The truth about consent, in words: given (and when), asked every run (turned on
        when), or none."""
        if self.always_asks:
            when = f"; turned on {self.turned_on_at}" if self.turned_on_at else ""
            return f"asks every run{when}"
        if self.consent == "granted":
            return f"consent given {self.turned_on_at}" if self.turned_on_at else "consent given"
        return "no consent"

    @property
    def proposal(self) -> int | None:
        return self.version - PROPOSAL_BASE if self.version > PROPOSAL_BASE else None

    @property
    def label(self) -> str:
        return label(self.version)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": None if self.proposal is not None else self.version,
            "proposal": self.proposal,
            "parentVersion": self.parent_version,
            "current": self.current,
            "hash": self.hash,
            "author": self.author,
            "authorName": self.author_name,
            "status": self.status,
            "intact": self.problem is None,
            "installedAt": self.installed_at,
            "consent": self.consent_words,
            "consentGivenAt": self.turned_on_at,
            "alwaysAsks": self.always_asks,
        }


@attrs.frozen
class StoredVersion:
    """One installed version, everything needed to show it or run it (its hash verified)."""

    tool_id: str
    version: int
    parent_version: int | None
    target: str
    manifest: dict[str, Any]
    program_text: str  # `forgec.runtime.Program.to_json()` as stored (see `program`)
    marks: Marks
    hash: str
    forgec_version: str
    installed_at: str
    current: bool
    enabled: bool  # current and the tool is on
    author: str = "person"
    author_name: str | None = None
    status: str = "stored"  # the stored column: "stored" | "proposed" | "rejected"
    effects: dict[str, Any] = attrs.field(factory=dict)

    @property
    def name(self) -> str:
        return f"dynamic:{self.tool_id}"

    @property
    def proposal(self) -> int | None:
        """This row's proposal number, or None for a version of the lineage."""
        return self.version - PROPOSAL_BASE if self.version > PROPOSAL_BASE else None

    @property
    def label(self) -> str:
        """How a person reads which one it is: `v3`, or `proposal 2`."""
        return label(self.version)

    @property
    def program(self) -> dict[str, Any]:
        """The lowered Program's JSON. Parsed when asked, not when listed: serving a thousand
        tools reads no Program (the hash over its text is verified either way)."""
        value = loads(self.tool_id, self.version, "Program", self.program_text)
        if not isinstance(value, dict):
            raise StoreDamaged(f"the stored version of {self.name} v{self.version} is damaged")
        return value

    @property
    def author_words(self) -> str:
        if self.author == "model":
            return f"a model (persona {self.author_name})" if self.author_name else "a model"
        return "a person"


@attrs.frozen
class ConsentStatus:
    """Whether turning a version on (or running it) needs a person to say yes, and why.

    `reason`: "first" (no consent on record for the tool), "changed" (this version's hash has
    no consent; `basis` is the version last consented to, the one the prompt's diff starts
    from), "always" (R4: asked every time), or "covered" (no need: this very hash has the
    person's consent). `growth` says, in words, what the version may do beyond `basis` (or
    everything for a first consent): shown, never a reason to skip asking.
    """

    tool_id: str
    version: int
    needed: bool
    reason: str
    growth: dict[str, list[str]] = attrs.field(factory=dict)
    basis: int | None = None
    always_asks: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": f"dynamic:{self.tool_id}",
            "version": self.version,
            "needed": self.needed,
            "reason": self.reason,
            "growth": self.growth,
            "basis": self.basis,
            "alwaysAsks": self.always_asks,
        }


@attrs.frozen
class InstallResult:
    report: Any  # forgec.api.Report, with the store's own refusals added
    installed: tuple[str, int] | None  # (id, version) when written; a proposal: (id, its number)
    status: str | None = None  # "installed" (current, off) | "proposed" | None (not written)

    @property
    def ok(self) -> bool:
        return self.installed is not None

    def to_json(self) -> dict[str, Any]:
        out = dict(self.report.to_json())
        out["installed"] = (
            {"id": self.installed[0], "version": self.installed[1]} if self.installed else None
        )
        return out


Checker = Callable[..., Any]  # (source, *, path, target) -> forgec.api.Report
Lowerer = Callable[[Any], Any]  # Report -> object with .to_json()
FaultHook = Callable[[str], None]  # called after each write (tests: crash mid-transaction)


def default_store_path() -> Path:
    """`tools.db` in the user's data directory (platformdirs), e.g. ~/.local/share/forgec."""
    import platformdirs

    return Path(platformdirs.user_data_dir("forgec")) / "tools.db"


def _refuse_a_new_store(path: Path, create: str) -> None:
    if path.exists():
        return
    if create == "no":
        raise StoreError(
            f"{path}: no tool store there (check the path; `forgec tools install` creates one)"
        )
    if not path.parent.is_dir():
        raise StoreError(
            f"{path}: the folder {path.parent} does not exist (a mistyped --store? "
            "forgec creates a store only in a folder that exists)"
        )


def normalize_id(tool: str) -> str:
    """Accept `ID` or `dynamic:ID`; refuse anything that cannot be a tool id."""
    tool_id = tool.removeprefix("dynamic:")
    if not _ID.match(tool_id):
        raise ToolNotFound(
            f"{tool!r} is not a tool id (3–64 lowercase letters, digits, '.', '_' or '-', "
            "optionally prefixed by 'dynamic:')"
        )
    return tool_id


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _default_checker(source: str | bytes, *, path: str | None, target: str) -> Any:
    from forgec.api import check

    return check(source, path=path, target=target)


def _default_lowerer(report: Any) -> Any:
    from forgec.backend import lower_report

    return lower_report(report)


_VCOLS = ", ".join(f"v.{c}" for c in VERSION_COLUMNS)


class Store:
    """A tool store on one SQLite file. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        checker: Checker | None = None,
        lowerer: Lowerer | None = None,
        fault_hook: FaultHook | None = None,
        create: str = "yes",
    ) -> None:
        """CREATE says what to do when an explicit PATH holds no store yet: "yes" (make it and
        its folders), "file" (make the file, only in a folder that exists: what `install`
        does) or "no" (refuse: a mistyped `--store` must not become a new empty store)."""
        self.path = Path(path) if path is not None else default_store_path()
        if path is not None and create != "yes":
            _refuse_a_new_store(self.path, create)
        self._check = checker or _default_checker
        self._lower = lowerer or _default_lowerer
        self._fault = fault_hook
        self._conn = connect(self.path, fill=self._fill_schema_1)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.path}: the tool store is busy or locked: {exc}") from None
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"{self.path}: could not save the change: {exc}") from None

    def _write(self, conn: sqlite3.Connection, label: str, sql: str, args: tuple[Any, ...]) -> None:
        try:
            conn.execute(sql, args)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: could not write to the tool store: {exc}") from None
        if self._fault is not None:
            self._fault(label)

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: could not read the tool store: {exc}") from None

    # -- schema 1 -> 2 --------------------------------------------------------------------

    def _fill_schema_1(self, conn: sqlite3.Connection) -> None:
        """Give every schema-1 version its effects and the new hash — only when its old hash
        still matches: a row changed before the upgrade keeps a hash that will not match."""
        rows = conn.execute(
            "SELECT tool_id, version, target, manifest, program, marks, hash, forgec_version"
            " FROM versions"
        ).fetchall()
        for tool_id, version, target, manifest, program, marks, old, fv in rows:
            if not all(isinstance(x, str) for x in (target, manifest, program, marks, old, fv)):
                continue
            effects = dumps(self._legacy_effects(manifest, marks, target))
            intact = legacy_hash(manifest, program, fv) == old
            digest = (
                hash_texts(manifest, program, target, fv, marks, effects, "person")
                if intact
                else old
            )
            conn.execute(
                "UPDATE versions SET effects = ?, hash = ? WHERE tool_id = ? AND version = ?",
                (effects, digest, tool_id, version),
            )
            if intact:
                conn.execute(
                    "UPDATE consents SET hash = ? WHERE tool_id = ? AND version = ?",
                    (digest, tool_id, version),
                )

    def _legacy_effects(self, manifest: str, marks: str, target: str) -> dict[str, Any]:
        try:
            report = self._check(manifest.encode(), path=None, target=target)
            if report.ir is not None and report.facts is not None:
                return fx.effects_from_report(report, target)
        except Exception:  # an old row forgec can no longer check: take the widest effects
            pass
        try:
            return fx.effects_from_marks(
                Marks.from_json(orjson.loads(marks)), orjson.loads(manifest)
            )
        except Exception:  # unreadable: it will not verify anyway
            return {}

    # -- install --------------------------------------------------------------------------

    def install(
        self,
        source: str | bytes,
        *,
        path: str | None = None,
        target: str = "talos",
        author: str = "person",
        author_name: str | None = None,
        tests: list[dict[str, Any]] | None = None,
    ) -> InstallResult:
        """Check, lower and store a new version. With any issue, nothing is written.

        TESTS: the version's test cases as JSON (SPEC §22), kept beside it (`tests_of`).

        A person's version becomes current and off, numbered as its file says (above the
        latest version of the lineage, which names it as parent). A model's version is numbered
        by the store: of an id with no version it becomes v1 (current, off); of an id that has
        versions it is proposal N, outside the version numbers (see the module docstring)."""
        if author not in AUTHORS:
            raise ValueError(f"author must be one of {AUTHORS}, not {author!r}")
        report = self._check(source, path=path, target=target)
        refused = self._tests_refusals(report, tests, author)
        if refused:
            merged = sorted([*report.diagnostics, *refused], key=sort_key)
            return InstallResult(
                report=attrs.evolve(report, diagnostics=tuple(merged)), installed=None
            )
        if author == "model":
            return self._install_model(report, target, author_name, tests)
        ident = _identity(report)
        prepared = self._prepared(report, target, author) if report.ok else None
        with self._tx() as conn:
            latest = self._latest(conn, ident) if ident else None
            refusals = _version_refusals(ident, latest) if ident else []
            if refusals or prepared is None:
                return InstallResult(report=_with(report, refusals), installed=None)
            tool_id, version, parent = ident  # type: ignore[misc]
            self._insert(conn, tool_id, version, parent, target, prepared, author, None, "stored")
            self._keep_tests(conn, tool_id, version, tests)
            self._make_current(conn, tool_id, version)
        return InstallResult(report=report, installed=(tool_id, version), status="installed")

    def _install_model(
        self,
        report: Any,
        target: str,
        author_name: str | None,
        tests: list[dict[str, Any]] | None = None,
    ) -> InstallResult:
        """A model's version. What the store holds never changes what the model is told, nor
        which refusals it gets: its own numbers are not the store's business (SPEC §14), so
        the work done is the same whether or not the id exists — the check of its text, then
        the check of the same manifest numbered as a first version."""
        if not report.ok or not isinstance(report.manifest, dict):
            return InstallResult(report=report, installed=None)
        ident = _identity(report)
        if ident is None:
            return InstallResult(report=report, installed=None)
        tool_id = ident[0]
        as_proposal = self._prepared(report, target, "model")
        first = self._prepared(self._renumbered(report.manifest, 1, None, target), target, "model")
        with self._tx() as conn:
            latest = self._latest(conn, ident)
            if latest is None:
                self._insert(conn, tool_id, 1, None, target, first, "model", author_name, "stored")
                self._keep_tests(conn, tool_id, 1, tests)
                self._make_current(conn, tool_id, 1)
                return InstallResult(report=report, installed=(tool_id, 1), status="installed")
            row = conn.execute(
                "SELECT last_proposal FROM tools WHERE id = ?", (tool_id,)
            ).fetchone()
            number = int(row[0]) + 1 if row is not None else 1
            self._write(
                conn,
                "tools",
                "UPDATE tools SET last_proposal = ? WHERE id = ?",
                (number, tool_id),
            )
            key = PROPOSAL_BASE + number
            # the lineage head it was proposed against: what a review compares it with
            self._insert(
                conn, tool_id, key, latest[0], target, as_proposal, "model", author_name, "proposed"
            )
            self._keep_tests(conn, tool_id, key, tests)
        return InstallResult(report=report, installed=(tool_id, number), status="proposed")

    def _renumbered(
        self, manifest: dict[str, Any], version: int, parent: int | None, target: str
    ) -> Any:
        """The check report of MANIFEST numbered VERSION with PARENT (the store's numbers)."""
        report = self._check(
            manifest_text({**manifest, "version": version, "parentVersion": parent}).encode(),
            path=None,
            target=target,
        )
        if not report.ok:  # only the numbers changed: a budget overrun, or a forgec bug
            codes = sorted({d.code for d in report.diagnostics if d.is_error})
            raise StoreError(
                f"cannot store the checked tool under its new number: {', '.join(codes)}"
            )
        return report

    def _prepared(self, report: Any, target: str, author: str) -> tuple[str, ...] | None:
        """The texts a version row stores and hashes, from a clean report (None otherwise)."""
        if not report.ok or report.manifest is None or report.marks is None:
            return None
        try:
            program_json = self._lower(report).to_json()
        except Exception as exc:  # a checked tool that cannot lower is a forgec bug
            raise StoreError(f"cannot lower the checked tool (a forgec bug): {exc}") from exc
        from forgec import __version__

        return (
            manifest_text(report.manifest),
            dumps(program_json),
            target,
            __version__,
            dumps(report.marks.to_json()),
            dumps(fx.effects_from_report(report, target)),
            author,
        )

    def _insert(
        self,
        conn: sqlite3.Connection,
        tool_id: str,
        key: int,
        parent: int | None,
        target: str,
        texts: tuple[str, ...] | None,
        author: str,
        author_name: str | None,
        status: str,
    ) -> None:
        if texts is None:
            raise StoreError("cannot store a tool that did not check clean (a forgec bug)")
        self._write(
            conn,
            "versions",
            "INSERT INTO versions (tool_id, version, parent_version, target, manifest,"
            " program, marks, hash, forgec_version, installed_at, author, author_name,"
            " status, effects) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tool_id,
                key,
                parent,
                target,
                texts[0],
                texts[1],
                texts[4],
                hash_texts(*texts),
                texts[3],
                _now(),
                author,
                author_name,
                status,
                texts[5],
            ),
        )

    def _tests_refusals(
        self, report: Any, tests: list[dict[str, Any]] | None, author: str
    ) -> list[Diagnostic]:
        """Why TESTS cannot be kept with the checked tool (SPEC §22), at `/tests/...`: cases
        checked as a tests file's are (steps, mocks against the result shapes, inputs against
        `inputSchema`); a model's cases are at most `TESTS_BYTES` and hold no `<re:...>`
        pattern (a pattern is code a review would run)."""
        if tests is None or not report.ok:
            return []
        from forgec.testing import cases_from_json
        from forgec.testing.cases import RE_PREFIX

        text = dumps(tests)
        if len(text.encode()) > TESTS_BYTES:
            return [
                make(
                    "FORGEC_TEST_KEY",
                    "/tests",
                    f"the test cases are larger than {TESTS_BYTES // 1024} KiB",
                )
            ]
        if author == "model" and f'"{RE_PREFIX}' in text:
            return [
                make(
                    "FORGEC_TEST_KEY",
                    "/tests",
                    "a model's test cases may not hold `<re:...>` patterns",
                    hint='match by value or with "<any>"',
                )
            ]
        _, found = cases_from_json(tests, self._lower(report))
        return [attrs.evolve(d, path="/tests" + d.path, span=None) for d in found]

    def _keep_tests(
        self,
        conn: sqlite3.Connection,
        tool_id: str,
        key: int,
        tests: list[dict[str, Any]] | None,
    ) -> None:
        if tests is None:
            return
        self._write(
            conn,
            "version_tests",
            "INSERT OR REPLACE INTO version_tests (tool_id, version, cases) VALUES (?, ?, ?)",
            (tool_id, key, dumps(tests)),
        )

    def tests_of(self, stored: StoredVersion) -> list[dict[str, Any]] | None:
        """The test cases kept with a stored version or proposal (SPEC §22), None without.
        Evidence for a review only: they are never consented to, nor covered by the hash."""
        rows = self._read(
            "SELECT cases FROM version_tests WHERE tool_id = ? AND version = ?",
            (stored.tool_id, stored.version),
        )
        if not rows:
            return None
        try:
            value = orjson.loads(rows[0][0])
        except orjson.JSONDecodeError:
            raise StoreDamaged(
                f"the test cases of {stored.name} {stored.label} are damaged"
            ) from None
        return value if isinstance(value, list) else None

    def _make_current(self, conn: sqlite3.Connection, tool_id: str, version: int) -> None:
        now = _now()
        self._write(
            conn,
            "tools",
            "INSERT INTO tools (id, current_version, enabled, created_at, updated_at)"
            " VALUES (?, ?, 0, ?, ?) ON CONFLICT (id) DO UPDATE SET"
            " current_version = excluded.current_version, enabled = 0,"
            " updated_at = excluded.updated_at",
            (tool_id, version, now, now),
        )

    def _latest(
        self, conn: sqlite3.Connection, ident: tuple[str, int, int | None]
    ) -> tuple[int, bool] | None:
        """(the latest version of the lineage, whether the manifest's number is one of the
        lineage's) — None when the id has no version. Proposals, waiting or rejected, are not
        the lineage: they never raise its floor."""
        row = conn.execute(
            "SELECT max(version), max(version = ?) FROM versions"
            " WHERE tool_id = ? AND status = 'stored'",
            (ident[1], ident[0]),
        ).fetchone()
        return (int(row[0]), bool(row[1])) if row and row[0] is not None else None

    # -- reading --------------------------------------------------------------------------

    def _summaries(self, where: str, args: tuple[Any, ...]) -> list[Any]:
        return self._read(
            "SELECT t.id, t.current_version, t.enabled, "
            + _VCOLS
            + ", (SELECT max(version) FROM versions WHERE tool_id = t.id AND status = 'stored'),"
            f" (SELECT group_concat(version - {PROPOSAL_BASE}) FROM versions"
            "  WHERE tool_id = t.id AND status = 'proposed')"
            " FROM tools t LEFT JOIN versions v"
            " ON v.tool_id = t.id AND v.version = t.current_version " + where + " ORDER BY t.id",
            args,
        )

    def tools(self, *, on_problem: ProblemHook | None = None) -> list[ToolSummary]:
        """Every tool whose current version is intact. A changed or damaged one is left out and
        ON_PROBLEM gets one line about it; without ON_PROBLEM it raises `StoreDamaged`."""
        out = []
        for row in self._summaries("", ()):
            try:
                out.append(_summary(row))
            except StoreDamaged as exc:
                if on_problem is None:
                    raise
                on_problem(str(exc))
        return out

    def tool(self, tool: str) -> ToolSummary:
        tool_id = normalize_id(tool)
        rows = self._summaries("WHERE t.id = ?", (tool_id,))
        if not rows:
            raise ToolNotFound(f"no tool dynamic:{tool_id} in the store {self.path}")
        return _summary(rows[0])

    def _tool_row(self, conn: sqlite3.Connection, tool_id: str) -> tuple[int, bool]:
        """(current version, enabled) without reading the version: what disable, rollback,
        accept and reject need, so a damaged version can still be turned off."""
        row = conn.execute(
            "SELECT current_version, enabled FROM tools WHERE id = ?", (tool_id,)
        ).fetchone()
        if row is None:
            raise ToolNotFound(f"no tool dynamic:{tool_id} in the store {self.path}")
        return int(row[0]), bool(row[1])

    def versions(self, tool: str) -> list[VersionInfo]:
        """Every stored version, each checked: a changed or damaged row has `problem` set."""
        tool_id = normalize_id(tool)
        current, _ = self._tool_row(self._conn, tool_id)
        rows = self._read(
            "SELECT " + _VCOLS + ", c.kind, c.hash, c.granted_at FROM versions v"
            " LEFT JOIN consents c ON c.tool_id = v.tool_id AND c.version = v.version"
            " WHERE v.tool_id = ? ORDER BY v.version",
            (tool_id,),
        )
        out = []
        for row in rows:
            fields = dict(zip(VERSION_COLUMNS, row, strict=False))
            kind, consent_hash = row[len(VERSION_COLUMNS)], row[len(VERSION_COLUMNS) + 1]
            granted_at = row[len(VERSION_COLUMNS) + 2]
            mine = kind == "granted" and consent_hash == fields["hash"]
            asks = _always_asks(fields["marks"])
            problem = None
            try:
                check_row(tool_id, fields)
            except StoreDamaged as exc:
                problem = str(exc)
            version = fields["version"]
            out.append(
                VersionInfo(
                    version=version,
                    parent_version=fields["parent_version"],
                    current=version == current,
                    hash=str(fields["hash"]),
                    installed_at=str(fields["installed_at"]),
                    consent=kind if mine and not asks else None,
                    turned_on_at=str(granted_at) if mine and granted_at else None,
                    always_asks=asks,
                    author=str(fields["author"]),
                    author_name=fields["author_name"],
                    status=_status(fields["status"], version == current),
                    problem=problem,
                )
            )
        return out

    def get(self, tool: str, version: int | None = None) -> StoredVersion:
        """A stored version (the current one when VERSION is None), its hash verified."""
        tool_id = normalize_id(tool)
        current, enabled = self._tool_row(self._conn, tool_id)
        wanted = current if version is None else version
        rows = self._read(
            "SELECT " + _VCOLS + " FROM versions v WHERE v.tool_id = ? AND v.version = ?",
            (tool_id, wanted),
        )
        if not rows:
            if version is None:
                raise StoreDamaged(
                    f"the tool store is damaged: the current version v{wanted} of "
                    f"dynamic:{tool_id} is missing"
                )
            raise ToolNotFound(f"dynamic:{tool_id} has no version {wanted}")
        return _decode(tool_id, dict(zip(VERSION_COLUMNS, rows[0], strict=True)), current, enabled)

    def enabled_versions(self, *, on_problem: ProblemHook | None = None) -> list[StoredVersion]:
        """The current version of every tool that is on (what the MCP server may list): one
        query. Only intact versions; ON_PROBLEM gets one line for each one left out."""
        rows = self._read(
            "SELECT t.id, t.current_version, " + _VCOLS + " FROM tools t"
            " LEFT JOIN versions v ON v.tool_id = t.id AND v.version = t.current_version"
            " WHERE t.enabled = 1 ORDER BY t.id"
        )
        out = []
        for tool_id, current, *cols in rows:
            try:
                if cols[0] is None:
                    raise StoreDamaged(
                        f"the tool store is damaged: the current version v{current} of "
                        f"dynamic:{tool_id} is missing"
                    )
                out.append(
                    _decode(tool_id, dict(zip(VERSION_COLUMNS, cols, strict=True)), current, True)
                )
            except StoreDamaged as exc:
                if on_problem is not None:
                    on_problem(f"dynamic:{tool_id} left out: {exc}")
        return out

    def checked_ir(self, stored: StoredVersion) -> Any:
        """The IR of a stored version, checked again by this forgec (what the consent diff
        compares: `forgec.store.diff`). The stored manifest passed its check when installed."""
        return self.checked_report(stored).ir

    def checked_report(self, stored: StoredVersion) -> Any:
        """The check report of a stored version, checked again by this forgec (its IR and
        facts: what the consent diff and the verdict compare)."""
        return self._check(manifest_text(stored.manifest).encode(), path=None, target=stored.target)

    # -- proposals ------------------------------------------------------------------------

    def proposals(self, tool: str) -> list[int]:
        """The numbers of TOOL's proposals that no person has accepted or rejected."""
        tool_id = normalize_id(tool)
        self._tool_row(self._conn, tool_id)
        rows = self._read(
            "SELECT version FROM versions WHERE tool_id = ? AND status = 'proposed'"
            " AND version > ? ORDER BY version",
            (tool_id, PROPOSAL_BASE),
        )
        return [int(r[0]) - PROPOSAL_BASE for r in rows]

    def get_proposal(self, tool: str, number: int) -> StoredVersion:
        """Proposal NUMBER (waiting or rejected), its hash verified."""
        tool_id = normalize_id(tool)
        if not 1 <= number < PROPOSAL_BASE:
            raise ToolNotFound(f"dynamic:{tool_id} has no proposal {number}")
        try:
            return self.get(tool_id, PROPOSAL_BASE + number)
        except ToolNotFound:
            raise ToolNotFound(f"dynamic:{tool_id} has no proposal {number}") from None

    def accept(self, tool: str, number: int) -> StoredVersion:
        """A person makes proposal NUMBER the next version of the lineage (latest + 1, with
        the latest as parent: the model's own numbers never count), current and off."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            proposal = self._must_be_proposal(tool_id, number)
            latest = self._latest(conn, (tool_id, 0, None))
            top = latest[0] if latest is not None else 0
            version, parent = top + 1, (top or None)
            report = self._renumbered(proposal.manifest, version, parent, proposal.target)
            texts = self._prepared(report, proposal.target, "model")
            self._write(
                conn,
                "versions",
                "DELETE FROM versions WHERE tool_id = ? AND version = ?",
                (tool_id, proposal.version),
            )
            self._write(  # the proposal's test cases become the new version's
                conn,
                "version_tests",
                "UPDATE version_tests SET version = ? WHERE tool_id = ? AND version = ?",
                (version, tool_id, proposal.version),
            )
            self._insert(
                conn,
                tool_id,
                version,
                parent,
                proposal.target,
                texts,
                "model",
                proposal.author_name,
                "stored",
            )
            self._make_current(conn, tool_id, version)
            return self.get(tool_id, version)

    def reject(self, tool: str, number: int) -> None:
        """A person rejects proposal NUMBER: kept, never current, holding no version number."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            proposal = self._must_be_proposal(tool_id, number)
            self._write(
                conn,
                "versions",
                "UPDATE versions SET status = 'rejected' WHERE tool_id = ? AND version = ?",
                (tool_id, proposal.version),
            )

    def _must_be_proposal(self, tool_id: str, number: int) -> StoredVersion:
        proposal = self.get_proposal(tool_id, number)
        if proposal.status != "proposed":
            raise StoreError(
                f"dynamic:{tool_id} proposal {number} was rejected; only a waiting proposal "
                "can be decided"
            )
        return proposal

    # -- consent --------------------------------------------------------------------------

    def consent_status(self, tool: str, version: int | None = None) -> ConsentStatus:
        stored = self.get(tool, version)
        return self._consent_status(self._conn, stored)

    def _basis(self, conn: sqlite3.Connection, tool_id: str) -> StoredVersion | None:
        """The version most recently consented to (a person's `granted` consent), when its row
        is intact and still the one consented to; else None. It is where the prompt's diff
        starts, never a consent for another version."""
        row = conn.execute(
            "SELECT version, hash FROM consents WHERE tool_id = ? AND kind = 'granted'"
            " ORDER BY rowid DESC LIMIT 1",
            (tool_id,),
        ).fetchone()
        if row is None:
            return None
        try:
            basis = self.get(tool_id, int(row[0]))
        except StoreError:
            return None
        return basis if basis.hash == row[1] else None

    def _consent_status(self, conn: sqlite3.Connection, stored: StoredVersion) -> ConsentStatus:
        tid, ver = stored.tool_id, stored.version
        if stored.marks.always_asks:
            basis = self._basis(conn, tid)
            return ConsentStatus(
                tid,
                ver,
                needed=True,
                reason="always",
                growth=growth_between(stored, basis or _NOTHING),
                basis=basis.version if basis is not None else None,
                always_asks=True,
            )
        if self._own_consent(conn, stored):
            return ConsentStatus(tid, ver, needed=False, reason="covered", basis=stored.version)
        basis = self._basis(conn, tid)
        if basis is None:
            return ConsentStatus(tid, ver, needed=True, reason="first", growth=_everything(stored))
        return ConsentStatus(
            tid,
            ver,
            needed=True,
            reason="changed",
            growth=growth_between(stored, basis),
            basis=basis.version,
        )

    def _own_consent(self, conn: sqlite3.Connection, stored: StoredVersion) -> bool:
        """A person's consent for this very hash (a `carried` record is not one)."""
        row = conn.execute(
            "SELECT 1 FROM consents WHERE tool_id = ? AND version = ? AND hash = ?"
            " AND kind = 'granted'",
            (stored.tool_id, stored.version, stored.hash),
        ).fetchone()
        return row is not None

    def enable(self, tool: str, *, consent: bool = False) -> ConsentStatus:
        """Turn the current version on. Raises `ConsentRequired` when consent is needed and
        CONSENT is false; with CONSENT true the person's yes is recorded (for R4 only as the
        basis of the next diff: an R4 tool still asks before every run)."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            stored = self.get(tool_id)
            status = self._consent_status(conn, stored)
            if status.needed and not consent:
                raise ConsentRequired(_consent_message(stored, status), status)
            if status.needed:
                self._write(
                    conn,
                    "consents",
                    "INSERT OR REPLACE INTO consents (tool_id, version, kind, carried_from,"
                    " marks, granted_at, hash) VALUES (?, ?, 'granted', NULL, ?, ?, ?)",
                    (tool_id, stored.version, dumps(stored.marks.to_json()), _now(), stored.hash),
                )
            self._write(
                conn,
                "tools",
                "UPDATE tools SET enabled = 1, updated_at = ? WHERE id = ?",
                (_now(), tool_id),
            )
        return status

    def disable(self, tool: str) -> None:
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            self._tool_row(conn, tool_id)
            self._write(
                conn,
                "tools",
                "UPDATE tools SET enabled = 0, updated_at = ? WHERE id = ?",
                (_now(), tool_id),
            )

    def rollback(self, tool: str) -> int:
        """Make the previous stored version current and turn the tool off; returns it.
        Proposals and rejected versions are never rolled back to."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            current, _ = self._tool_row(conn, tool_id)
            row = conn.execute(
                "SELECT max(version) FROM versions WHERE tool_id = ? AND version < ?"
                " AND status = 'stored'",
                (tool_id, current),
            ).fetchone()
            previous = row[0] if row else None
            if previous is None:
                raise StoreError(
                    f"dynamic:{tool_id} is at its first version ({current}); "
                    "there is no earlier version to roll back to"
                )
            self._write(
                conn,
                "tools",
                "UPDATE tools SET current_version = ?, enabled = 0, updated_at = ? WHERE id = ?",
                (previous, _now(), tool_id),
            )
        return int(previous)

    def tool_ids(self) -> list[tuple[str, int]]:
        """(id, current version) of every tool, read without decoding any version: what a
        listing needs to name a tool whose version is damaged."""
        return [
            (str(r[0]), int(r[1]))
            for r in self._read("SELECT id, current_version FROM tools ORDER BY id")
        ]

    def remove(self, tool: str, version: int | None = None) -> list[int]:
        """Delete a tool (every version, its consents) or one VERSION of it; returns the versions
        removed. Nothing is read or checked first, so a damaged row can always be removed. When
        the current version goes, the latest remaining stored version becomes current, off; a
        tool left with no stored version is removed whole. A person's act (the CLI), never a
        model's: the MCP face has no such tool."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            current, _ = self._tool_row(conn, tool_id)
            stored = [
                int(r[0])
                for r in conn.execute(
                    "SELECT version FROM versions WHERE tool_id = ? ORDER BY version", (tool_id,)
                ).fetchall()
            ]
            if version is not None and version not in stored:
                raise StoreError(
                    f"dynamic:{tool_id} has no version {version} "
                    f"(stored: {', '.join(str(v) for v in stored) or 'none'})"
                )
            gone = stored if version is None else [version]
            for v in gone:
                self._write(
                    conn, "consents", "DELETE FROM consents WHERE tool_id = ? AND version = ?",
                    (tool_id, v),
                )  # fmt: skip
                self._write(
                    conn, "versions", "DELETE FROM versions WHERE tool_id = ? AND version = ?",
                    (tool_id, v),
                )  # fmt: skip
                self._write(
                    conn, "version_tests",
                    "DELETE FROM version_tests WHERE tool_id = ? AND version = ?", (tool_id, v),
                )  # fmt: skip
            left = conn.execute(
                "SELECT max(version) FROM versions WHERE tool_id = ? AND status = 'stored'",
                (tool_id,),
            ).fetchone()
            successor = left[0] if left else None
            if successor is None:
                for table in ("consents", "versions", "version_tests"):
                    self._write(
                        conn, table, f"DELETE FROM {table} WHERE tool_id = ?", (tool_id,)
                    )  # proposals and rejected versions go with the tool
                self._write(conn, "tools", "DELETE FROM tools WHERE id = ?", (tool_id,))
            elif current in gone:
                self._write(
                    conn,
                    "tools",
                    "UPDATE tools SET current_version = ?, enabled = 0, updated_at = ? WHERE id = ?",
                    (successor, _now(), tool_id),
                )
        return gone

    def has_consent(self, tool: str, version: int | None = None) -> bool:
        """Whether a version (the current one by default) may run without asking: consent for
        its very hash is on record and it is not R4."""
        stored = self.get(tool, version)
        if stored.marks.always_asks:
            return False
        return self._own_consent(self._conn, stored)


def _always_asks(marks_text: Any) -> bool:
    """R4 from a row's marks text (an unreadable row shows no consent either)."""
    try:
        marks = orjson.loads(marks_text)
    except (orjson.JSONDecodeError, TypeError):
        return True
    return not isinstance(marks, dict) or bool(marks.get("alwaysAsks", True))


def _status(column: Any, current: bool) -> str:
    """What `versions` says of a version: current, proposed, rejected, or previous (any other
    kept version: one that was current, or one a rollback left behind)."""
    if current:
        return "current"
    return column if column in ("proposed", "rejected") else "previous"


def _decode(tool_id: str, row: dict[str, Any], current: int, enabled: bool) -> StoredVersion:
    check_row(tool_id, row)
    v = row["version"]
    manifest = loads(tool_id, v, "manifest", row["manifest"])
    marks = loads(tool_id, v, "marks", row["marks"])
    effects = loads(tool_id, v, "effects", row["effects"])
    if not all(isinstance(x, dict) for x in (manifest, marks, effects)):
        raise StoreDamaged(f"the stored version of dynamic:{tool_id} {label(v)} is damaged")
    try:
        parsed_marks = Marks.from_json(marks)
    except (TypeError, ValueError, AttributeError):
        raise StoreDamaged(
            f"the stored version of dynamic:{tool_id} {label(v)} is damaged (unreadable marks)"
        ) from None
    is_current = v == current
    return StoredVersion(
        tool_id=tool_id,
        version=v,
        parent_version=row["parent_version"],
        target=row["target"],
        manifest=manifest,
        program_text=row["program"],
        marks=parsed_marks,
        hash=row["hash"],
        forgec_version=row["forgec_version"],
        installed_at=str(row["installed_at"]),
        current=is_current,
        enabled=is_current and enabled,
        author=row["author"],
        author_name=row["author_name"],
        status=str(row["status"]),
        effects=effects,
    )


def _summary(row: tuple[Any, ...]) -> ToolSummary:
    tool_id, current, enabled, *cols = row
    latest, proposed = cols[len(VERSION_COLUMNS)], cols[len(VERSION_COLUMNS) + 1]
    if cols[0] is None:
        raise StoreDamaged(
            f"the tool store is damaged: the current version v{current} of dynamic:{tool_id} "
            "is missing"
        )
    stored = _decode(tool_id, dict(zip(VERSION_COLUMNS, cols, strict=False)), current, enabled)
    m = stored.marks
    return ToolSummary(
        id=tool_id,
        version=current,
        latest_version=int(latest),
        enabled=bool(enabled),
        risk=m.risk,
        powers=m.powers,
        labels=m.labels,
        title=str(stored.manifest.get("title") or tool_id),
        proposed=tuple(sorted(int(x) for x in str(proposed).split(","))) if proposed else (),
    )


def growth_between(stored: StoredVersion, basis: StoredVersion) -> dict[str, list[str]]:
    """What STORED may do beyond BASIS: marks (powers, risk, hosts, labels) and effects."""
    out = stored.marks.growth_over(basis.marks)
    for key, items in fx.growth(stored.effects, basis.effects).items():
        if key == "hosts":
            key = "network"
        known = out.setdefault(key, [])
        known.extend(i for i in items if i not in known)
    return out


def _everything(stored: StoredVersion) -> dict[str, list[str]]:
    """For a first consent, 'what grew' is everything the tool may do."""
    return growth_between(stored, _NOTHING)


_NOTHING = StoredVersion(
    tool_id="",
    version=0,
    parent_version=None,
    target="",
    manifest={},
    program_text="{}",
    marks=Marks(),
    hash="",
    forgec_version="",
    installed_at="",
    current=False,
    enabled=False,
)


def _consent_message(stored: StoredVersion, status: ConsentStatus) -> str:
    name = f"{stored.name} v{stored.version}"
    if status.reason == "always":
        from forgec.render.consent import always_asks_banner

        why = always_asks_banner(stored.marks) or "It asks before every run."
        return f"{name} asks before it is turned on and before every run. {why}"
    if status.reason == "changed":
        return (
            f"{name} (written by {stored.author_words}) is not the version you agreed to "
            f"(v{status.basis}); it needs your consent"
        )
    return f"{name}: you have agreed to no version of this tool yet; it needs your consent"


def _version_refusals(
    ident: tuple[str, int, int | None], latest: tuple[int, bool] | None
) -> list[Diagnostic]:
    """The store's numbering rules for a person's version, with the numbers to use (a person
    may read the store; a model is never refused on numbers: it does not number versions)."""
    tool_id, version, parent = ident
    name = f"dynamic:{tool_id}"
    out: list[Diagnostic] = []
    if latest is None:
        if parent is not None:
            out.append(
                make(
                    "FORGE_VERSION",
                    "/parentVersion",
                    f"parentVersion is {parent}, but no version of {name} is installed; "
                    "the first version has parentVersion null",
                )
            )
        return out
    top, exists = latest
    if version <= top:
        what = "is already installed" if exists else "is not above the latest version"
        out.append(
            make(
                "FORGE_VERSION",
                "/version",
                f"version {version} of {name} {what} (latest: {top}); version numbers "
                "are never reused, even after a rollback",
                hint=f"use version {top + 1} with parentVersion {top}",
            )
        )
    if parent != top:
        shown = "null" if parent is None else str(parent)
        out.append(
            make(
                "FORGE_VERSION",
                "/parentVersion",
                f"parentVersion must name the latest version of {name}, {top} (it is {shown})",
                hint=f"set parentVersion to {top}",
            )
        )
    return out


def _identity(report: Any) -> tuple[str, int, int | None] | None:
    """(id, version, parentVersion) when the source says them well enough to compare."""
    manifest = report.manifest
    if isinstance(manifest, dict):
        tool_id, version, parent = (
            manifest.get("id"),
            manifest.get("version"),
            manifest.get("parentVersion"),
        )
    elif report.ir is not None:
        tool_id, version, parent = report.ir.id, report.ir.version, report.ir.parent_version
    else:
        return None
    if not isinstance(tool_id, str) or not _ID.match(tool_id):
        return None
    if type(version) is not int or (parent is not None and type(parent) is not int):
        return None
    return tool_id, version, parent


TESTS_BYTES = 64 * 1024  # the test cases kept with one version (compact JSON)


def _with(report: Any, extra: list[Diagnostic]) -> Any:
    if not extra:
        return report
    have = {(d.code, d.path, d.message) for d in report.diagnostics}
    fresh = [d for d in extra if (d.code, d.path, d.message) not in have]
    if report.source_map is not None:
        fresh = [attrs.evolve(d, span=report.source_map.span(d.path, key=d.key)) for d in fresh]
    merged = sorted([*report.diagnostics, *fresh], key=sort_key)
    return attrs.evolve(report, diagnostics=tuple(merged))
