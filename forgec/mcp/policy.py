"""The consent policy file: which always-asking (R4) tools an MCP client may run unasked.

An R4 tool asks a person before every run. Over MCP the server asks through elicitation when
the client supports it; when it does not, the call is refused — unless the person who started
the server wrote down, ahead of time, that a given tool may run. That is this file (TOML):

    # forgec consent policy
    [[allow]]
    tool = "dynamic:web.digest"   # a forged tool (dynamic:<id> or its MCP name) ...
    hash = "sha256:3f1c…"         # ... optionally pinned to one content hash (recommended)
    version = 3                   # ... or to one version

    [[allow]]
    tool = "net_http"             # a host tool, by MCP or internal name

An entry allows a tool only as far as it is pinned: without `hash` or `version` it covers every
version that is turned on (each still needed a person's `forgec tools enable`). Unknown keys and
wrong types are errors, so a typo never widens what runs unasked. No file allows nothing.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs

from forgec.mcp.names import id_from_mcp_name


class PolicyError(Exception):
    """The policy file is unreadable or invalid."""


@attrs.frozen
class Allow:
    tool: str  # normalised: dynamic:<id>, or a host tool's internal or MCP name
    version: int | None = None
    hash: str | None = None


@attrs.frozen
class ConsentPolicy:
    allow: tuple[Allow, ...] = ()

    def allows(
        self, names: tuple[str, ...], *, version: int | None = None, hash: str | None = None
    ) -> bool:
        """Whether any entry names one of NAMES and matches VERSION/HASH where it pins them."""
        for entry in self.allow:
            if entry.tool not in names:
                continue
            if entry.version is not None and entry.version != version:
                continue
            if entry.hash is not None and entry.hash != hash:
                continue
            return True
        return False


def _normalise(tool: str) -> str:
    tool_id = id_from_mcp_name(tool)
    return f"dynamic:{tool_id}" if tool_id is not None else tool


def load_policy(path: str | Path | None) -> ConsentPolicy:
    if path is None:
        return ConsentPolicy()
    p = Path(path)
    try:
        data: dict[str, Any] = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PolicyError(f"{p}: no such consent policy file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{p}: cannot read the consent policy: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{p}: not valid TOML: {exc}") from None
    unknown = set(data) - {"allow"}
    if unknown:
        raise PolicyError(f"{p}: unknown key(s) {', '.join(sorted(unknown))}; only [[allow]]")
    entries = data.get("allow", [])
    if not isinstance(entries, list):
        raise PolicyError(f"{p}: `allow` must be an array of tables ([[allow]])")
    out: list[Allow] = []
    for i, entry in enumerate(entries):
        where = f"{p}: allow[{i}]"
        if not isinstance(entry, dict):
            raise PolicyError(f"{where}: must be a table")
        extra = set(entry) - {"tool", "version", "hash"}
        if extra:
            raise PolicyError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        tool = entry.get("tool")
        if not isinstance(tool, str) or not tool:
            raise PolicyError(f"{where}: `tool` must be a non-empty string")
        version = entry.get("version")
        if version is not None and (type(version) is not int or version < 1):
            raise PolicyError(f"{where}: `version` must be a positive integer")
        digest = entry.get("hash")
        if digest is not None and (not isinstance(digest, str) or not digest.startswith("sha256:")):
            raise PolicyError(f"{where}: `hash` must be a string `sha256:<hex>`")
        out.append(Allow(tool=_normalise(tool), version=version, hash=digest))
    return ConsentPolicy(allow=tuple(out))
