"""The content hash of a stored version, and refusing a row that is not what forgec wrote (§14).

The hash (scheme `forgec-store/2`) is `sha256` over, each followed by a NUL byte: the domain
tag, then the exact stored text of the canonical manifest, the lowered Program, the target, the
forgec version, the marks, the effects and the author. It is computed over the stored bytes, so
checking a row costs one `sha256` of text already read (no parsing), and everything a consent
is judged on (marks, effects, author) is covered, not only what runs.

Every read that could lead to running, enabling, showing or serving a version goes through
`decode_version`, which recomputes the hash and refuses with `StoreDamaged` — a one-line
message, exit status 2 in the CLI — when it differs or the row cannot be read.

Schema-1 stores used `forgec-store/1` (manifest re-canonicalised, Program, forgec version; no
target). `legacy_hash` recomputes it once, when such a store is upgraded.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from forgec.runtime import jsontext
from forgec.store.schema import PROPOSAL_BASE, StoreError

HASH_DOMAIN = b"forgec-store/2"
LEGACY_DOMAIN = b"forgec-store/1"


class StoreDamaged(StoreError):
    """A stored row was changed outside forgec or cannot be read; never run, enable or show it."""


def label(version: Any) -> str:
    """`v3` for a version of the lineage, `proposal 2` for a proposal's row."""
    if isinstance(version, int) and version > PROPOSAL_BASE:
        return f"proposal {version - PROPOSAL_BASE}"
    return f"v{version}"


def changed_message(tool_id: str, version: Any) -> str:
    return f"the stored version of dynamic:{tool_id} {label(version)} was changed outside forgec"


def hash_texts(
    manifest: str,
    program: str,
    target: str,
    forgec_version: str,
    marks: str,
    effects: str,
    author: str,
) -> str:
    digest = hashlib.sha256()
    for part in (HASH_DOMAIN, manifest, program, target, forgec_version, marks, effects, author):
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


def dumps(value: Any) -> str:
    # forgec's JSON text, not orjson's: the same tool gets the same stored text and content
    # hash under every orjson release (3.13 writes floats differently)
    return jsontext.dumps_text(value)


def manifest_text(manifest: dict[str, Any]) -> str:
    """The stored form of a manifest: compact JSON in canonical field order."""
    from forgec.frontend.canonical import canonical_manifest

    return dumps(canonical_manifest(manifest))


def content_hash(
    manifest: dict[str, Any],
    program: dict[str, Any],
    forgec_version: str,
    *,
    target: str,
    marks: dict[str, Any],
    effects: dict[str, Any],
    author: str = "person",
) -> str:
    """The hash of a version from its parts (what `install` stores for them)."""
    return hash_texts(
        manifest_text(manifest),
        dumps(program),
        target,
        forgec_version,
        dumps(marks),
        dumps(effects),
        author,
    )


def legacy_hash(manifest: str, program: str, forgec_version: str) -> str | None:
    """The schema-1 hash of a row's texts, or None when they are not readable JSON."""
    from forgec.frontend.canonical import canonical_manifest

    try:
        m, p = orjson.loads(manifest), orjson.loads(program)
    except (orjson.JSONDecodeError, TypeError):
        return None
    if not isinstance(m, dict):
        return None
    digest = hashlib.sha256()
    for part in (
        LEGACY_DOMAIN,
        # schema 1 hashed orjson's text as orjson < 3.13 wrote it: exactly jsontext's, with
        # orjson's own strings (before the SPEC §14 escapes)
        jsontext.dumps(canonical_manifest(m), escape=False),
        jsontext.dumps(p, escape=False),
        forgec_version.encode(),
    ):
        digest.update(part)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()


# the columns `decode_version` reads, in order
VERSION_COLUMNS = (
    "version",
    "parent_version",
    "target",
    "manifest",
    "program",
    "marks",
    "hash",
    "forgec_version",
    "installed_at",
    "author",
    "author_name",
    "status",
    "effects",
)
_TEXT = ("target", "manifest", "program", "marks", "hash", "forgec_version", "author", "effects")


def check_row(tool_id: str, row: dict[str, Any]) -> None:
    """Refuse a row whose hash does not match what it holds, or that lacks a field."""
    version = row.get("version")
    if type(version) is not int:
        raise StoreDamaged(
            f"a stored version of dynamic:{tool_id} is damaged (its version number is missing)"
        )
    missing = [k for k in _TEXT if not isinstance(row.get(k), str)]
    if missing:
        raise StoreDamaged(
            f"the stored version of dynamic:{tool_id} {label(version)} is damaged "
            f"(missing {', '.join(missing)})"
        )
    expected = hash_texts(
        row["manifest"],
        row["program"],
        row["target"],
        row["forgec_version"],
        row["marks"],
        row["effects"],
        row["author"],
    )
    if expected != row["hash"]:
        raise StoreDamaged(changed_message(tool_id, version))


def loads(tool_id: str, version: int, what: str, text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise StoreDamaged(
            f"the stored version of dynamic:{tool_id} {label(version)} is damaged "
            f"(its {what} is not readable JSON)"
        ) from None
