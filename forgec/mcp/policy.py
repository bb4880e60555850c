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

    [[allow]]
    tool = "channel_send"         # SPEC §21: a tool may also be allowed under named flows
    flows = ["private->egress"]   # ... that the host's `[flows] deny` would refuse

An entry allows a tool only as far as it is pinned: without `hash` or `version` it covers every
version that is turned on (each still needed a person's `forgec tools enable`). `flows` lifts
those `[flows] deny` rules for that tool's calls only: a host tool the model calls itself (in a
daemon turn or an MCP session), or every step of a forged tool's run; without an entry, the deny
rule holds. Unknown keys, wrong types, a tool that is neither a host tool nor a forged tool's
name and a flow that is not a deny rule are errors, so a typo never widens what runs unasked.
No file allows nothing.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs

from forgec.mcp.names import id_from_mcp_name
from forgec.runtime.sources_and_sinks import DENY_RULES


class PolicyError(Exception):
    """The policy file is unreadable or invalid."""


@attrs.frozen
class Allow:
    tool: str  # normalised: dynamic:<id>, or a host tool's internal or MCP name
    version: int | None = None
    hash: str | None = None
    flows: frozenset[str] = frozenset()  # `[flows] deny` rules lifted for this tool


@attrs.frozen
class ConsentPolicy:
    allow: tuple[Allow, ...] = ()

    def allows(
        self, names: tuple[str, ...], *, version: int | None = None, hash: str | None = None
    ) -> bool:
        """Whether any entry names one of NAMES and matches VERSION/HASH where it pins them."""
        return any(self._matches(entry, names, version, hash) for entry in self.allow)

    def flows_allowed(
        self, names: tuple[str, ...], *, version: int | None = None, hash: str | None = None
    ) -> frozenset[str]:
        """The `[flows] deny` rules lifted for a tool named one of NAMES (SPEC §21)."""
        out: frozenset[str] = frozenset()
        for entry in self.allow:
            if entry.flows and self._matches(entry, names, version, hash):
                out = out | entry.flows
        return out

    def forged_ids(self) -> list[str]:
        """The forged tool ids the entries name (to check against the store at start)."""
        return [e.tool[len("dynamic:") :] for e in self.allow if e.tool.startswith("dynamic:")]

    @staticmethod
    def _matches(
        entry: Allow, names: tuple[str, ...], version: int | None, hash: str | None
    ) -> bool:
        if entry.tool not in names:
            return False
        if entry.version is not None and entry.version != version:
            return False
        return entry.hash is None or entry.hash == hash


def unknown_forged(policy: ConsentPolicy, stored_ids: Any) -> str | None:
    """A one-line error when the policy names a forged tool the store does not hold (a typo
    must never allow a flow for a tool someone creates later under that id), else None."""
    known = set(stored_ids)
    for tool_id in policy.forged_ids():
        if tool_id not in known:
            return (
                f"the consent policy names dynamic:{tool_id}, which the store does not hold "
                "(a typo? list them with `forgec tools list`)"
            )
    return None


def _known_tool(tool: str) -> bool:
    """A host tool's internal or MCP name, or a forged tool's name (`dynamic:<id>`)."""
    from forgec.ir.capabilities import rows_of
    from forgec.ir.rules import TOOL_ID_RE

    if tool.startswith("dynamic:"):
        return bool(TOOL_ID_RE.fullmatch(tool[len("dynamic:") :]))
    return any(tool in (row.name, row.mcp_name) for row in rows_of("talon"))


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
        extra = set(entry) - {"tool", "version", "hash", "flows"}
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
        flows = entry.get("flows", [])
        if not isinstance(flows, list) or not all(isinstance(f, str) for f in flows):
            raise PolicyError(f"{where}: `flows` must be an array of strings")
        for flow in flows:
            if flow not in DENY_RULES:
                raise PolicyError(
                    f"{where}: unknown flow {flow!r} (one of {', '.join(DENY_RULES)})"
                )
        name = _normalise(tool)
        if not _known_tool(name):
            raise PolicyError(
                f"{where}: unknown tool {tool!r} (a host tool by its MCP or internal name, "
                "or a forged tool as dynamic:<id>)"
            )
        out.append(Allow(tool=name, version=version, hash=digest, flows=frozenset(flows)))
    return ConsentPolicy(allow=tuple(out))
