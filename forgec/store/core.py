"""The installed-tools store: install, list, enable, disable, roll back, and consent (SPEC §9, §14).

Rules, in the order a person meets them:
- **Install** runs the full check, lowers the manifest to a Program, and only then writes. Any
  error — from the check or from the store's own version rules — writes nothing, and the report
  lists every issue (the store's refusals are `FORGE_VERSION` diagnostics at `/version` or
  `/parentVersion`). Every version records its **author**: `person` (the CLI, the Python API)
  or `model` (`tool_create`, with the persona's name when known).
- A person's version, and a model's first version of a new id, become current and **off**.
  A model's version of an id that already has versions is a **proposal**: stored, never current
  by itself; the current version stays exactly as it was, on or off. A person `accept`s it
  (current, off) or `reject`s it (kept, never current).
- **Versions**: the first version of a tool has `parentVersion: null`; every later one —
  proposals included — names the latest stored version as its parent and has a higher number.
  Nothing is ever deleted, so a version number is never reused. The refusals a model reads say
  what is wrong with its own numbers, never which numbers the store holds.
- **Rollback** makes the highest stored, non-proposed, non-rejected version below the current
  one current and turns the tool off; at the first version it is refused.
- **Consent** is recorded per tool version and bound to its content hash. Enabling a version
  needs consent unless (a) that version, with this hash, already has it, or (b) its author is a
  person and its effects (`forgec.store.effects`) and marks do not grow over those of the
  version most recently consented to — then the consent is carried and recorded as such. A
  model's version never inherits consent. An R4 tool's consent is never recorded: enabling it
  asks, and so does every run.
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
    legacy_hash,
    loads,
    manifest_text,
)
from forgec.store.schema import StoreError, connect

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
    proposed: tuple[int, ...] = ()  # versions a model proposed, waiting for a person

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
    consent: str | None  # "granted" | "carried" | None
    author: str = "person"
    author_name: str | None = None
    status: str = "previous"  # "current" | "proposed" | "rejected" | "previous"
    problem: str | None = None  # why the row cannot be trusted (changed, damaged)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "parentVersion": self.parent_version,
            "current": self.current,
            "hash": self.hash,
            "author": self.author,
            "authorName": self.author_name,
            "status": self.status,
            "intact": self.problem is None,
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

    `reason`: "first" (no consent on record), "grown" (more than the consent on record covers;
    `growth` says exactly what), "author" (a model wrote it: it never inherits consent; `growth`
    is what it adds over the consent on record, or everything), "always" (R4: asked every
    time), or "covered" (no need: `basis` is the version whose consent covers it).
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
    installed: tuple[str, int] | None  # (id, version) when written
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
    ) -> InstallResult:
        """Check, lower and store a new version. With any issue, nothing is written.

        A person's version becomes current and off; so does a model's first version of an id.
        A model's version of an id that has versions is stored as a proposal."""
        if author not in AUTHORS:
            raise ValueError(f"author must be one of {AUTHORS}, not {author!r}")
        report = self._check(source, path=path, target=target)
        ident = _identity(report)
        program_json: dict[str, Any] | None = None
        if report.ok and report.manifest is not None and report.marks is not None:
            try:
                program_json = self._lower(report).to_json()
            except Exception as exc:  # a checked tool that cannot lower is a forgec bug
                raise StoreError(f"cannot lower the checked tool (a forgec bug): {exc}") from exc
        with self._tx() as conn:
            latest = self._latest(conn, ident) if ident else None
            refusals = _version_refusals(ident, latest, coach=author == "person") if ident else []
            if refusals or program_json is None or not report.ok:
                return InstallResult(report=_with(report, refusals), installed=None)
            tool_id, version, parent = ident  # type: ignore[misc]
            from forgec import __version__

            texts = (
                manifest_text(report.manifest),
                dumps(program_json),
                target,
                __version__,
                dumps(report.marks.to_json()),
                dumps(fx.effects_from_report(report, target)),
                author,
            )
            digest = hash_texts(*texts)
            proposal = author == "model" and latest is not None
            now = _now()
            self._write(
                conn,
                "versions",
                "INSERT INTO versions (tool_id, version, parent_version, target, manifest,"
                " program, marks, hash, forgec_version, installed_at, author, author_name,"
                " status, effects) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tool_id,
                    version,
                    parent,
                    target,
                    texts[0],
                    texts[1],
                    texts[4],
                    digest,
                    __version__,
                    now,
                    author,
                    author_name,
                    "proposed" if proposal else "stored",
                    texts[5],
                ),
            )
            if not proposal:
                self._write(
                    conn,
                    "tools",
                    "INSERT INTO tools (id, current_version, enabled, created_at, updated_at)"
                    " VALUES (?, ?, 0, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                    " current_version = excluded.current_version, enabled = 0,"
                    " updated_at = excluded.updated_at",
                    (tool_id, version, now, now),
                )
        return InstallResult(
            report=report,
            installed=(tool_id, version),
            status="proposed" if proposal else "installed",
        )

    def _latest(
        self, conn: sqlite3.Connection, ident: tuple[str, int, int | None]
    ) -> tuple[int, bool] | None:
        """(the latest stored version, whether the manifest's number is stored) — None when
        the id has no version."""
        row = conn.execute(
            "SELECT max(version), max(version = ?) FROM versions WHERE tool_id = ?",
            (ident[1], ident[0]),
        ).fetchone()
        return (int(row[0]), bool(row[1])) if row and row[0] is not None else None

    # -- reading --------------------------------------------------------------------------

    def _summaries(self, where: str, args: tuple[Any, ...]) -> list[Any]:
        return self._read(
            "SELECT t.id, t.current_version, t.enabled, "
            + _VCOLS
            + ", (SELECT max(version) FROM versions WHERE tool_id = t.id),"
            " (SELECT group_concat(version) FROM versions"
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
            "SELECT " + _VCOLS + ", c.kind, c.hash FROM versions v"
            " LEFT JOIN consents c ON c.tool_id = v.tool_id AND c.version = v.version"
            " WHERE v.tool_id = ? ORDER BY v.version",
            (tool_id,),
        )
        out = []
        for row in rows:
            fields = dict(zip(VERSION_COLUMNS, row, strict=False))
            kind, consent_hash = row[len(VERSION_COLUMNS)], row[len(VERSION_COLUMNS) + 1]
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
                    consent=kind if kind and consent_hash == fields["hash"] else None,
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

    # -- proposals ------------------------------------------------------------------------

    def proposals(self, tool: str) -> list[int]:
        """The versions of TOOL a model proposed and no person has accepted or rejected."""
        tool_id = normalize_id(tool)
        self._tool_row(self._conn, tool_id)
        rows = self._read(
            "SELECT version FROM versions WHERE tool_id = ? AND status = 'proposed'"
            " ORDER BY version",
            (tool_id,),
        )
        return [int(r[0]) for r in rows]

    def accept(self, tool: str, version: int) -> StoredVersion:
        """A person makes proposal VERSION current; the tool is turned off."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            self._must_be_proposal(tool_id, version)
            stored = self.get(tool_id, version)
            self._write(
                conn,
                "versions",
                "UPDATE versions SET status = 'stored' WHERE tool_id = ? AND version = ?",
                (tool_id, version),
            )
            self._write(
                conn,
                "tools",
                "UPDATE tools SET current_version = ?, enabled = 0, updated_at = ? WHERE id = ?",
                (version, _now(), tool_id),
            )
        return attrs.evolve(stored, current=True, enabled=False, status="stored")

    def reject(self, tool: str, version: int) -> None:
        """A person rejects proposal VERSION: kept, never current."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            self._must_be_proposal(tool_id, version)
            self._write(
                conn,
                "versions",
                "UPDATE versions SET status = 'rejected' WHERE tool_id = ? AND version = ?",
                (tool_id, version),
            )

    def _must_be_proposal(self, tool_id: str, version: int) -> None:
        self._tool_row(self._conn, tool_id)
        rows = self._read(
            "SELECT status FROM versions WHERE tool_id = ? AND version = ?", (tool_id, version)
        )
        if not rows:
            raise ToolNotFound(f"dynamic:{tool_id} has no version {version}")
        if rows[0][0] != "proposed":
            was = {"rejected": "was rejected", "stored": "is not a proposal"}.get(
                rows[0][0], "is not a proposal"
            )
            raise StoreError(f"dynamic:{tool_id} v{version} {was}; only a proposal can be decided")

    # -- consent --------------------------------------------------------------------------

    def consent_status(self, tool: str, version: int | None = None) -> ConsentStatus:
        stored = self.get(tool, version)
        return self._consent_status(self._conn, stored)

    def _basis(self, conn: sqlite3.Connection, tool_id: str) -> StoredVersion | None:
        """The version most recently consented to, when its row is intact and still the one
        consented to (the consent's hash); else None, so nothing is carried."""
        row = conn.execute(
            "SELECT version, hash FROM consents WHERE tool_id = ? ORDER BY rowid DESC LIMIT 1",
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
        basis = self._basis(conn, tid)
        growth: dict[str, list[str]] = {}
        if basis is not None:
            growth = growth_between(stored, basis)
        if stored.marks.always_asks:
            return ConsentStatus(
                tid, ver, needed=True, reason="always", growth=growth, basis=None, always_asks=True
            )
        if self._own_consent(conn, stored):
            return ConsentStatus(tid, ver, needed=False, reason="covered", basis=stored.version)
        if stored.author != "person":
            return ConsentStatus(
                tid,
                ver,
                needed=True,
                reason="author",
                growth=growth if basis is not None else _everything(stored),
                basis=basis.version if basis is not None else None,
            )
        if basis is None:
            return ConsentStatus(tid, ver, needed=True, reason="first", growth=_everything(stored))
        if growth:
            return ConsentStatus(
                tid, ver, needed=True, reason="grown", growth=growth, basis=basis.version
            )
        return ConsentStatus(tid, ver, needed=False, reason="covered", basis=basis.version)

    def _own_consent(self, conn: sqlite3.Connection, stored: StoredVersion) -> bool:
        row = conn.execute(
            "SELECT 1 FROM consents WHERE tool_id = ? AND version = ? AND hash = ?",
            (stored.tool_id, stored.version, stored.hash),
        ).fetchone()
        return row is not None

    def enable(self, tool: str, *, consent: bool = False) -> ConsentStatus:
        """Turn the current version on. Raises `ConsentRequired` when consent is needed and
        CONSENT is false; with CONSENT true the person's yes is recorded (never for R4)."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            stored = self.get(tool_id)
            status = self._consent_status(conn, stored)
            if status.needed and not consent:
                raise ConsentRequired(_consent_message(stored, status), status)
            if not status.always_asks and not self._own_consent(conn, stored):
                kind = "granted" if status.needed else "carried"
                self._write(
                    conn,
                    "consents",
                    "INSERT OR REPLACE INTO consents (tool_id, version, kind, carried_from,"
                    " marks, granted_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        tool_id,
                        stored.version,
                        kind,
                        status.basis if kind == "carried" else None,
                        dumps(stored.marks.to_json()),
                        _now(),
                        stored.hash,
                    ),
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
            left = conn.execute(
                "SELECT max(version) FROM versions WHERE tool_id = ? AND status = 'stored'",
                (tool_id,),
            ).fetchone()
            successor = left[0] if left else None
            if successor is None:
                for table in ("consents", "versions"):
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
        raise StoreDamaged(f"the stored version of dynamic:{tool_id} v{v} is damaged")
    try:
        parsed_marks = Marks.from_json(marks)
    except (TypeError, ValueError, AttributeError):
        raise StoreDamaged(
            f"the stored version of dynamic:{tool_id} v{v} is damaged (unreadable marks)"
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
        return f"{name} is R4: it asks before it is turned on and before every run"
    grown = "; ".join(f"{k}: {', '.join(v)}" for k, v in status.growth.items())
    if status.reason == "author":
        return f"{name} was written by {stored.author_words}; it needs your own consent: {grown}"
    if status.reason == "grown":
        return f"{name} may do more than the version you agreed to (v{status.basis}): {grown}"
    return f"{name} has never been turned on; it needs your consent"


def _version_refusals(
    ident: tuple[str, int, int | None], latest: tuple[int, bool] | None, *, coach: bool
) -> list[Diagnostic]:
    """The store's version rules. COACH (a person): say which numbers to use. A model is told
    only what is wrong with the numbers its manifest already shows."""
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
        what = "is already installed" if exists else "is not above the latest stored version"
        if coach:
            out.append(
                make(
                    "FORGE_VERSION",
                    "/version",
                    f"version {version} of {name} {what} (latest: {top}); version numbers "
                    "are never reused, even after a rollback",
                    hint=f"use version {top + 1} with parentVersion {top}",
                )
            )
        else:
            out.append(
                make(
                    "FORGE_VERSION",
                    "/version",
                    f"version {version} of {name} {what}; version numbers are never reused",
                )
            )
    if parent != top:
        shown = "null" if parent is None else str(parent)
        if coach:
            out.append(
                make(
                    "FORGE_VERSION",
                    "/parentVersion",
                    f"parentVersion must name the latest stored version of {name}, {top} "
                    f"(it is {shown})",
                    hint=f"set parentVersion to {top}",
                )
            )
        else:
            out.append(
                make(
                    "FORGE_VERSION",
                    "/parentVersion",
                    f"parentVersion {shown} is not the latest stored version of {name}",
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


def _with(report: Any, extra: list[Diagnostic]) -> Any:
    if not extra:
        return report
    have = {(d.code, d.path, d.message) for d in report.diagnostics}
    fresh = [d for d in extra if (d.code, d.path, d.message) not in have]
    if report.source_map is not None:
        fresh = [attrs.evolve(d, span=report.source_map.span(d.path, key=d.key)) for d in fresh]
    merged = sorted([*report.diagnostics, *fresh], key=sort_key)
    return attrs.evolve(report, diagnostics=tuple(merged))
