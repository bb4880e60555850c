"""The installed-tools store: install, list, enable, disable, roll back, and consent (SPEC §9).

Rules, in the order a person meets them:
- **Install** runs the full check, lowers the manifest to a Program, and only then writes. Any
  error — from the check or from the store's own version rules — writes nothing, and the report
  lists every issue (the store's refusals are `FORGE_VERSION` diagnostics at `/version` or
  `/parentVersion`). An installed version becomes current and is **off**.
- **Versions**: the first version of a tool has `parentVersion: null`; every later one names the
  latest stored version as its parent and has a higher number. Nothing is ever deleted, so a
  version number is never reused, even after a rollback.
- **Rollback** makes the highest stored version below the current one current and turns the
  tool off; at the first version it is refused.
- **Consent** is recorded per tool version, with the marks it was given for. Enabling a version
  needs consent unless (a) that version already has it, or (b) the consent most recently
  recorded for the tool covers it — its powers, risk, hosts and labels do not grow
  (`Marks.growth_over`) — in which case it is carried over and recorded as such. An R4 tool's
  consent is never recorded: enabling it asks, and so does every run.

Every operation is one `BEGIN IMMEDIATE` transaction; SQLite's journal makes a crash at any
point leave the store as it was before the operation. The content hash of a version is
`sha256("forgec-store/1" NUL manifest NUL program NUL forgec-version)`, where manifest and
program are their compact JSON bytes (the manifest in canonical order).
"""

from __future__ import annotations

import hashlib
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
from forgec.store.schema import StoreError, connect

_ID = re.compile(rf"(?:{TOOL_ID_PATTERN})\Z", re.ASCII)  # the one tool-id rule (forgec.ir.rules)
HASH_DOMAIN = b"forgec-store/1"


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

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "parentVersion": self.parent_version,
            "current": self.current,
            "hash": self.hash,
        }


@attrs.frozen
class StoredVersion:
    """One installed version, everything needed to show it or run it."""

    tool_id: str
    version: int
    parent_version: int | None
    target: str
    manifest: dict[str, Any]
    program: dict[str, Any]  # `forgec.runtime.Program.to_json()`
    marks: Marks
    hash: str
    forgec_version: str
    installed_at: str
    current: bool
    enabled: bool  # current and the tool is on

    @property
    def name(self) -> str:
        return f"dynamic:{self.tool_id}"


@attrs.frozen
class ConsentStatus:
    """Whether turning a version on (or running it) needs a person to say yes, and why.

    `reason`: "first" (no consent on record), "grown" (more than the consent on record covers;
    `growth` says exactly what), "always" (R4: asked every time), or "covered" (no need:
    `basis` is the version whose consent covers it).
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


def normalize_id(tool: str) -> str:
    """Accept `ID` or `dynamic:ID`; refuse anything that cannot be a tool id."""
    tool_id = tool.removeprefix("dynamic:")
    if not _ID.match(tool_id):
        raise ToolNotFound(
            f"{tool!r} is not a tool id (3–64 lowercase letters, digits, '.', '_' or '-', "
            "optionally prefixed by 'dynamic:')"
        )
    return tool_id


def content_hash(manifest: dict[str, Any], program: dict[str, Any], forgec_version: str) -> str:
    from forgec.frontend.canonical import canonical_manifest

    digest = hashlib.sha256()
    for part in (
        HASH_DOMAIN,
        orjson.dumps(canonical_manifest(manifest)),
        orjson.dumps(program),
        forgec_version.encode(),
    ):
        digest.update(part)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _default_checker(source: str | bytes, *, path: str | None, target: str) -> Any:
    from forgec.api import check

    return check(source, path=path, target=target)


def _default_lowerer(report: Any) -> Any:
    from forgec.backend import lower_report

    return lower_report(report)


class Store:
    """A tool store on one SQLite file. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        checker: Checker | None = None,
        lowerer: Lowerer | None = None,
        fault_hook: FaultHook | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self._conn = connect(self.path)
        self._check = checker or _default_checker
        self._lower = lowerer or _default_lowerer
        self._fault = fault_hook

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

    # -- install --------------------------------------------------------------------------

    def install(
        self, source: str | bytes, *, path: str | None = None, target: str = "talos"
    ) -> InstallResult:
        """Check, lower and store a new version, off. With any issue, nothing is written."""
        report = self._check(source, path=path, target=target)
        ident = _identity(report)
        program_json: dict[str, Any] | None = None
        if report.ok and report.manifest is not None and report.marks is not None:
            try:
                program_json = self._lower(report).to_json()
            except Exception as exc:  # a checked tool that cannot lower is a forgec bug
                raise StoreError(f"cannot lower the checked tool (a forgec bug): {exc}") from exc
        with self._tx() as conn:
            refusals = self._version_refusals(conn, ident) if ident else []
            if refusals or program_json is None or not report.ok:
                return InstallResult(report=_with(report, refusals), installed=None)
            manifest = report.manifest
            tool_id, version, parent = ident  # type: ignore[misc]
            from forgec import __version__

            digest = content_hash(manifest, program_json, __version__)
            now = _now()
            self._write(
                conn,
                "versions",
                "INSERT INTO versions (tool_id, version, parent_version, target, manifest,"
                " program, marks, hash, forgec_version, installed_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tool_id,
                    version,
                    parent,
                    target,
                    orjson.dumps(manifest).decode(),
                    orjson.dumps(program_json).decode(),
                    orjson.dumps(report.marks.to_json()).decode(),
                    digest,
                    __version__,
                    now,
                ),
            )
            self._write(
                conn,
                "tools",
                "INSERT INTO tools (id, current_version, enabled, created_at, updated_at)"
                " VALUES (?, ?, 0, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " current_version = excluded.current_version, enabled = 0,"
                " updated_at = excluded.updated_at",
                (tool_id, version, now, now),
            )
        return InstallResult(report=report, installed=(tool_id, version))

    def _version_refusals(
        self, conn: sqlite3.Connection, ident: tuple[str, int, int | None]
    ) -> list[Diagnostic]:
        tool_id, version, parent = ident
        row = conn.execute(
            "SELECT max(version) FROM versions WHERE tool_id = ?", (tool_id,)
        ).fetchone()
        latest: int | None = row[0] if row else None
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
        if version <= latest:
            exists = conn.execute(
                "SELECT 1 FROM versions WHERE tool_id = ? AND version = ?", (tool_id, version)
            ).fetchone()
            what = "is already installed" if exists else "is not above the latest stored version"
            out.append(
                make(
                    "FORGE_VERSION",
                    "/version",
                    f"version {version} of {name} {what} (latest: {latest}); version numbers "
                    "are never reused, even after a rollback",
                    hint=f"use version {latest + 1} with parentVersion {latest}",
                )
            )
        if parent != latest:
            shown = "null" if parent is None else str(parent)
            out.append(
                make(
                    "FORGE_VERSION",
                    "/parentVersion",
                    f"parentVersion must name the latest stored version of {name}, {latest} "
                    f"(it is {shown})",
                    hint=f"set parentVersion to {latest}",
                )
            )
        return out

    # -- reading --------------------------------------------------------------------------

    def tools(self) -> list[ToolSummary]:
        rows = self._read(
            "SELECT t.id, t.current_version, t.enabled, v.marks, v.manifest,"
            " (SELECT max(version) FROM versions WHERE tool_id = t.id)"
            " FROM tools t JOIN versions v ON v.tool_id = t.id AND v.version = t.current_version"
            " ORDER BY t.id"
        )
        return [_summary(*row) for row in rows]

    def tool(self, tool: str) -> ToolSummary:
        tool_id = normalize_id(tool)
        for summary in self.tools():
            if summary.id == tool_id:
                return summary
        raise ToolNotFound(f"no tool dynamic:{tool_id} in the store {self.path}")

    def versions(self, tool: str) -> list[VersionInfo]:
        current = self.tool(tool)
        rows = self._read(
            "SELECT v.version, v.parent_version, v.hash, v.installed_at, c.kind FROM versions v"
            " LEFT JOIN consents c ON c.tool_id = v.tool_id AND c.version = v.version"
            " WHERE v.tool_id = ? ORDER BY v.version",
            (current.id,),
        )
        return [
            VersionInfo(
                version=v,
                parent_version=p,
                current=v == current.version,
                hash=h,
                installed_at=at,
                consent=kind,
            )
            for v, p, h, at, kind in rows
        ]

    def get(self, tool: str, version: int | None = None) -> StoredVersion:
        """A stored version (the current one when VERSION is None)."""
        summary = self.tool(tool)
        wanted = summary.version if version is None else version
        rows = self._read(
            "SELECT version, parent_version, target, manifest, program, marks, hash,"
            " forgec_version, installed_at FROM versions WHERE tool_id = ? AND version = ?",
            (summary.id, wanted),
        )
        if not rows:
            raise ToolNotFound(f"{summary.name} has no version {wanted}")
        v, parent, target, manifest, program, marks, digest, fv, at = rows[0]
        current = v == summary.version
        return StoredVersion(
            tool_id=summary.id,
            version=v,
            parent_version=parent,
            target=target,
            manifest=orjson.loads(manifest),
            program=orjson.loads(program),
            marks=Marks.from_json(orjson.loads(marks)),
            hash=digest,
            forgec_version=fv,
            installed_at=at,
            current=current,
            enabled=current and summary.enabled,
        )

    def enabled_versions(self) -> list[StoredVersion]:
        """The current version of every tool that is on (what the MCP server may list)."""
        return [self.get(t.id) for t in self.tools() if t.enabled]

    # -- consent --------------------------------------------------------------------------

    def consent_status(self, tool: str, version: int | None = None) -> ConsentStatus:
        stored = self.get(tool, version)
        return self._consent_status(self._conn, stored)

    def _consent_status(self, conn: sqlite3.Connection, stored: StoredVersion) -> ConsentStatus:
        tid, ver = stored.tool_id, stored.version
        latest = conn.execute(
            "SELECT version, marks FROM consents WHERE tool_id = ? ORDER BY rowid DESC LIMIT 1",
            (stored.tool_id,),
        ).fetchone()
        growth: dict[str, list[str]] = {}
        basis: int | None = None
        if latest is not None:
            basis = latest[0]
            growth = stored.marks.growth_over(Marks.from_json(orjson.loads(latest[1])))
        if stored.marks.always_asks:
            return ConsentStatus(
                tid, ver, needed=True, reason="always", growth=growth, basis=None, always_asks=True
            )
        own = conn.execute(
            "SELECT 1 FROM consents WHERE tool_id = ? AND version = ?",
            (stored.tool_id, stored.version),
        ).fetchone()
        if own is not None:
            return ConsentStatus(tid, ver, needed=False, reason="covered", basis=stored.version)
        if latest is None:
            return ConsentStatus(tid, ver, needed=True, reason="first", growth=_everything(stored))
        if growth:
            return ConsentStatus(tid, ver, needed=True, reason="grown", growth=growth, basis=basis)
        return ConsentStatus(tid, ver, needed=False, reason="covered", basis=basis)

    def enable(self, tool: str, *, consent: bool = False) -> ConsentStatus:
        """Turn the current version on. Raises `ConsentRequired` when consent is needed and
        CONSENT is false; with CONSENT true the person's yes is recorded (never for R4)."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            stored = self.get(tool_id)
            status = self._consent_status(conn, stored)
            if status.needed and not consent:
                raise ConsentRequired(_consent_message(stored, status), status)
            if not status.always_asks and status.basis != stored.version:
                kind = "granted" if status.needed else "carried"
                self._write(
                    conn,
                    "consents",
                    "INSERT INTO consents (tool_id, version, kind, carried_from, marks,"
                    " granted_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        tool_id,
                        stored.version,
                        kind,
                        status.basis if kind == "carried" else None,
                        orjson.dumps(stored.marks.to_json()).decode(),
                        _now(),
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
            self.tool(tool_id)
            self._write(
                conn,
                "tools",
                "UPDATE tools SET enabled = 0, updated_at = ? WHERE id = ?",
                (_now(), tool_id),
            )

    def rollback(self, tool: str) -> int:
        """Make the previous stored version current and turn the tool off; returns it."""
        tool_id = normalize_id(tool)
        with self._tx() as conn:
            summary = self.tool(tool_id)
            row = conn.execute(
                "SELECT max(version) FROM versions WHERE tool_id = ? AND version < ?",
                (tool_id, summary.version),
            ).fetchone()
            previous = row[0] if row else None
            if previous is None:
                raise StoreError(
                    f"{summary.name} is at its first version ({summary.version}); "
                    "there is no earlier version to roll back to"
                )
            self._write(
                conn,
                "tools",
                "UPDATE tools SET current_version = ?, enabled = 0, updated_at = ? WHERE id = ?",
                (previous, _now(), tool_id),
            )
        return int(previous)

    def has_consent(self, tool: str, version: int | None = None) -> bool:
        """Whether a version (the current one by default) may run without asking: its
        consent is on record and it is not R4."""
        stored = self.get(tool, version)
        if stored.marks.always_asks:
            return False
        rows = self._read(
            "SELECT 1 FROM consents WHERE tool_id = ? AND version = ?",
            (stored.tool_id, stored.version),
        )
        return bool(rows)


def _summary(
    tool_id: str, version: int, enabled: int, marks: str, manifest: str, latest: int
) -> ToolSummary:
    m = Marks.from_json(orjson.loads(marks))
    title = orjson.loads(manifest).get("title") or tool_id
    return ToolSummary(
        id=tool_id,
        version=version,
        latest_version=latest,
        enabled=bool(enabled),
        risk=m.risk,
        powers=m.powers,
        labels=m.labels,
        title=str(title),
    )


def _everything(stored: StoredVersion) -> dict[str, list[str]]:
    """For a first consent, 'what grew' is everything the tool may do."""
    return stored.marks.growth_over(Marks())


def _consent_message(stored: StoredVersion, status: ConsentStatus) -> str:
    name = f"{stored.name} v{stored.version}"
    if status.reason == "always":
        return f"{name} is R4: it asks before it is turned on and before every run"
    if status.reason == "grown":
        grown = "; ".join(f"{k}: {', '.join(v)}" for k, v in status.growth.items())
        return f"{name} may do more than the version you agreed to (v{status.basis}): {grown}"
    return f"{name} has never been turned on; it needs your consent"


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
