"""The installed-tools store (SPEC §9): versions, enable/disable, rollback and consent.

`Store(path)` opens (or creates) a SQLite store; see `forgec.store.core` for the rules and
`forgec.store.schema` for the file. Importing this package costs only the stdlib and attrs.
"""

from forgec.store.core import (
    ConsentRequired,
    ConsentStatus,
    InstallResult,
    Store,
    StoredVersion,
    ToolNotFound,
    ToolSummary,
    VersionInfo,
    default_store_path,
    normalize_id,
)
from forgec.store.integrity import StoreDamaged, content_hash
from forgec.store.schema import SCHEMA_VERSION, StoreError

__all__ = [
    "SCHEMA_VERSION",
    "ConsentRequired",
    "ConsentStatus",
    "InstallResult",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoredVersion",
    "ToolNotFound",
    "ToolSummary",
    "VersionInfo",
    "content_hash",
    "default_store_path",
    "normalize_id",
]
