"""The host configuration: one TOML file (`--host-config`), read with `tomllib`.

Every key is optional; a missing file section means the safe default (no channels, no model, no
extra network allowance, no file-searcher roots). Unknown keys are an error, so a typo never
silently turns a restriction off. Relative paths are resolved against the file's folder.
`docs/host.md` has the full example.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs


class ConfigError(Exception):
    """The host configuration is unreadable or invalid (a usage error for the CLI)."""


CONNECTORS = ("outbox", "plain", "html", "slack", "webhook")
# what a webhook channel converts the Markdown to before POSTing it (the other connectors)
WEBHOOK_FORMATS = ("outbox", "plain", "html", "slack")


@attrs.frozen
class ChannelConfig:
    name: str
    connector: str = "outbox"
    thread: str | None = None  # the thread messages to this channel land in
    url: str | None = None  # webhook: where talond POSTs each message
    format: str = "outbox"  # webhook: the conversion applied first (one of WEBHOOK_FORMATS)


@attrs.frozen
class ModelConfig:
    kind: str = "openai"  # openai | replay
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None  # name of an environment variable holding the key
    api_key_credential: str | None = None  # or a credential id from the credential store
    timeout_ms: int = 60_000
    replay: Path | None = None
    # force a locality (for a proxy on loopback forwarding to a remote API, say "remote")
    locality: str | None = None


@attrs.frozen
class PersonaModel:
    provider: str | None = None  # a `[providers.NAME]`; None: the host's `[model]`
    model: str | None = None  # the model id on that endpoint; None: the provider's own


@attrs.frozen
class TalondConfig:
    """`[talond]`: the daemon's bounds (docs/talond.md)."""

    rounds: int = 16  # tool-call rounds per turn
    turn_seconds: int = 300  # wall-clock budget of one turn (every model request within it)
    answer_bytes: int = 1 << 20  # the largest model answer a turn reads (bytes of the body)
    # a peer takes a daemon's work over once its heartbeat is this old (at once when its lock
    # on this machine is free: it is dead)
    lease_seconds: int = 30
    poll_ms: int = 500
    workers: int = 8  # turns at once, per queue (firings, A2A tasks, background tasks)
    consent_policy: Path | None = None  # R4 tools allowed to run unasked (forgec.mcp.policy)
    webhook_backoff_ms: int = 1000  # first retry delay, doubled each time (capped at 5 min)
    webhook_timeout_ms: int = 10_000
    grace_seconds: int = 20  # a stop waits this long for in-flight turns, then hands them back
    # DBOS's system database: None is a SQLite file beside the host database
    system_database_url: str | None = None
    retention_days: int = 30  # finished engine state older than this is pruned (host rows never)
    timezone: str = "UTC"  # the zone cron expressions are read in


@attrs.frozen
class HostConfig:
    db: Path | None = None
    persona: str = "assistant"
    personas_dir: Path | None = None
    labels: tuple[str, ...] | None = None
    thread: str = "default"
    channels: Mapping[str, ChannelConfig] = attrs.field(factory=dict)
    allow_hosts: tuple[str, ...] = ()  # host-side allowlist; empty = the manifest's only
    resolve: tuple[str, ...] = ()  # curl-style HOST:PORT:ADDR overrides
    max_redirects: int = 5
    # SPEC §14: net.http may connect to loopback/private/link-local addresses only for hosts
    # the operator mapped (`resolve`), unless this is set
    allow_private: bool = False
    ca_file: Path | None = None  # an extra trusted CA for https (PEM)
    credentials_file: Path | None = None
    model: ModelConfig | None = None
    file_searcher_roots: tuple[Path, ...] = ()
    spark_coder_base_url: str = "https://api.openai.com/v1"
    spark_coder_model: str = "gpt-5.4-spark"
    db_query_time_ms: int = 2000
    a2a_await_ms: int = 30_000
    # SPEC §15 `[flows] deny`: label rules refused at the bridge with RUN_FLOW_DENIED
    flow_deny: tuple[str, ...] = ()
    # named model endpoints (`[providers.NAME]`, the keys of `[model]`) and, per persona,
    # which provider and model id it uses (`[personas.NAME]`); the daemon reads both
    providers: Mapping[str, ModelConfig] = attrs.field(factory=dict)
    persona_models: Mapping[str, PersonaModel] = attrs.field(factory=dict)
    talond: TalondConfig = attrs.field(factory=lambda: TalondConfig())
    # `[connectors] retry_hours`: how long a webhook message is retried before it is `failed`
    retry_hours: int = 24


_TOP = {
    "db",
    "thread",
    "persona",
    "channels",
    "network",
    "credentials",
    "model",
    "subagents",
    "db_query",
    "a2a",
    "flows",
    "providers",
    "personas",
    "talond",
    "connectors",
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _expect(table: Any, where: str, keys: set[str]) -> Mapping[str, Any]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - keys)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    return table


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where} must be an integer between {low} and {high}")
    return value


def _path(value: Any, where: str, base: Path) -> Path:
    p = Path(_str(value, where)).expanduser()
    return p if p.is_absolute() else base / p


def unknown_label(label: str) -> str | None:
    """SPEC §21: a persona label no tool can need is a typo, refused at start (it would
    grant nothing, and a person reading the config would believe it grants something)."""
    from forgec.ir.capabilities import TOOL_CREATE_LABEL, known_persona_label, label_list

    if known_persona_label(label):
        return None
    known = ", ".join([*label_list(), TOOL_CREATE_LABEL])
    return f"unknown label {label!r} (known: {known})"


def load_config(path: Path | str) -> HostConfig:
    """Read and validate a host configuration file."""
    import tomllib

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such host configuration file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    try:
        return parse_config(data, base=p.parent.resolve())
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None


def parse_config(data: Mapping[str, Any], *, base: Path) -> HostConfig:
    """Build a `HostConfig` from parsed TOML (relative paths against `base`)."""
    top = _expect(data, "the configuration", _TOP)
    kw: dict[str, Any] = {}
    if "db" in top:
        kw["db"] = _path(top["db"], "db", base)
    if "thread" in top:
        kw["thread"] = _str(top["thread"], "thread")
    if "persona" in top:
        persona = _expect(top["persona"], "[persona]", {"name", "folder", "labels"})
        if "name" in persona:
            name = _str(persona["name"], "persona.name")
            if not _NAME.match(name):
                raise ConfigError("persona.name must be a simple name (letters, digits, . _ -)")
            kw["persona"] = name
        if "folder" in persona:
            kw["personas_dir"] = _path(persona["folder"], "persona.folder", base)
        if "labels" in persona:
            kw["labels"] = _strs(persona["labels"], "persona.labels")
            for label in kw["labels"]:
                problem = unknown_label(label)
                if problem is not None:
                    raise ConfigError(f"persona.labels: {problem}")
    if "channels" in top:
        channels = top["channels"]
        if not isinstance(channels, Mapping):
            raise ConfigError("[channels] must be a table of channel tables")
        parsed: dict[str, ChannelConfig] = {}
        for name, table in channels.items():
            where = f"[channels.{name}]"
            if not _NAME.match(name):
                raise ConfigError(f"{where}: a channel name is letters, digits, . _ -")
            t = _expect(table, where, {"connector", "thread", "url", "format"})
            connector = t.get("connector", "outbox")
            if connector not in CONNECTORS:
                raise ConfigError(f"{where}.connector must be one of {', '.join(CONNECTORS)}")
            thread = _str(t["thread"], f"{where}.thread") if "thread" in t else None
            parsed[name] = ChannelConfig(
                name=name, connector=connector, thread=thread, **_webhook(t, where, connector)
            )
        kw["channels"] = parsed
    if "network" in top:
        net = _expect(
            top["network"],
            "[network]",
            {"allow", "resolve", "max_redirects", "ca_file", "allow_private"},
        )
        if "ca_file" in net:
            kw["ca_file"] = _path(net["ca_file"], "network.ca_file", base)
        if "allow" in net:
            kw["allow_hosts"] = tuple(h.lower() for h in _strs(net["allow"], "network.allow"))
        if "resolve" in net:
            kw["resolve"] = _strs(net["resolve"], "network.resolve")
        if "allow_private" in net:
            if not isinstance(net["allow_private"], bool):
                raise ConfigError("network.allow_private must be true or false")
            kw["allow_private"] = net["allow_private"]
        if "max_redirects" in net:
            kw["max_redirects"] = _int(net["max_redirects"], "network.max_redirects", 0, 20)
    if "credentials" in top:
        cred = _expect(top["credentials"], "[credentials]", {"file"})
        if "file" in cred:
            kw["credentials_file"] = _path(cred["file"], "credentials.file", base)
    if "model" in top:
        kw["model"] = _model(top["model"], base)
    if "subagents" in top:
        sub = _expect(top["subagents"], "[subagents]", {"file_searcher", "spark_coder"})
        if "file_searcher" in sub:
            fs = _expect(sub["file_searcher"], "[subagents.file_searcher]", {"roots"})
            roots = _strs(fs.get("roots", []), "subagents.file_searcher.roots")
            kw["file_searcher_roots"] = tuple(_path(r, "root", base) for r in roots)
        if "spark_coder" in sub:
            sc = _expect(sub["spark_coder"], "[subagents.spark_coder]", {"base_url", "model"})
            if "base_url" in sc:
                kw["spark_coder_base_url"] = _str(sc["base_url"], "spark_coder.base_url")
            if "model" in sc:
                kw["spark_coder_model"] = _str(sc["model"], "spark_coder.model")
    if "db_query" in top:
        dq = _expect(top["db_query"], "[db_query]", {"time_limit_ms"})
        if "time_limit_ms" in dq:
            kw["db_query_time_ms"] = _int(dq["time_limit_ms"], "db_query.time_limit_ms", 10, 60_000)
    if "a2a" in top:
        a2a = _expect(top["a2a"], "[a2a]", {"await_ms"})
        if "await_ms" in a2a:
            kw["a2a_await_ms"] = _int(a2a["await_ms"], "a2a.await_ms", 0, 600_000)
    if "flows" in top:
        from forgec.runtime.sources_and_sinks import DENY_RULES

        flows = _expect(top["flows"], "[flows]", {"deny"})
        deny = _strs(flows.get("deny", []), "flows.deny")
        for rule in deny:
            if rule not in DENY_RULES:
                raise ConfigError(
                    f"flows.deny: unknown rule {rule!r} (one of {', '.join(DENY_RULES)})"
                )
        kw["flow_deny"] = tuple(dict.fromkeys(deny))
    if "providers" in top:
        providers = top["providers"]
        if not isinstance(providers, Mapping):
            raise ConfigError("[providers] must be a table of provider tables")
        for name in providers:
            if not _NAME.match(name):
                raise ConfigError(f"[providers.{name}]: a provider name is letters, digits, . _ -")
        kw["providers"] = {name: _model(t, base) for name, t in providers.items()}
    if "personas" in top:
        kw["persona_models"] = _persona_models(top["personas"], kw.get("providers", {}))
    if "talond" in top:
        kw["talond"] = _talond(top["talond"], base)
    if "connectors" in top:
        connectors = _expect(top["connectors"], "[connectors]", {"retry_hours"})
        if "retry_hours" in connectors:
            kw["retry_hours"] = _int(
                connectors["retry_hours"], "connectors.retry_hours", 1, 24 * 30
            )
    return HostConfig(**kw)


def _webhook(t: Mapping[str, Any], where: str, connector: str) -> dict[str, Any]:
    if connector != "webhook":
        if "url" in t or "format" in t:
            raise ConfigError(f'{where}: `url` and `format` are for connector = "webhook"')
        return {}
    url = _str(t.get("url"), f"{where}.url")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http:// or https:// URL")
    fmt = t.get("format", "outbox")
    if fmt not in WEBHOOK_FORMATS:
        raise ConfigError(f"{where}.format must be one of {', '.join(WEBHOOK_FORMATS)}")
    return {"url": url, "format": fmt}


def _persona_models(table: Any, providers: Mapping[str, Any]) -> dict[str, PersonaModel]:
    if not isinstance(table, Mapping):
        raise ConfigError("[personas] must be a table of persona tables")
    out: dict[str, PersonaModel] = {}
    for name, entry in table.items():
        where = f"[personas.{name}]"
        t = _expect(entry, where, {"provider", "model"})
        provider = _str(t["provider"], f"{where}.provider") if "provider" in t else None
        if provider is not None and provider not in providers:
            known = ", ".join(sorted(providers)) or "none are configured"
            raise ConfigError(f"{where}.provider {provider!r} is not a [providers.NAME] ({known})")
        model = _str(t["model"], f"{where}.model") if "model" in t else None
        out[name] = PersonaModel(provider=provider, model=model)
    return out


def _talond(table: Any, base: Path) -> TalondConfig:
    bounds = {
        "rounds": (1, 256),
        "turn_seconds": (1, 24 * 3600),
        "answer_bytes": (1024, 1 << 30),
        "lease_seconds": (5, 3600),
        "poll_ms": (10, 60_000),
        "workers": (1, 64),
        "webhook_backoff_ms": (1, 600_000),
        "webhook_timeout_ms": (100, 600_000),
        "grace_seconds": (0, 3600),
        "retention_days": (1, 36_500),
    }
    texts = {"consent_policy", "system_database_url", "timezone"}
    t = _expect(table, "[talond]", set(bounds) | texts)
    kw: dict[str, Any] = {
        key: _int(t[key], f"talond.{key}", low, high)
        for key, (low, high) in bounds.items()
        if key in t
    }
    if "consent_policy" in t:
        kw["consent_policy"] = _path(t["consent_policy"], "talond.consent_policy", base)
    if "system_database_url" in t:
        url = _str(t["system_database_url"], "talond.system_database_url")
        if not url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
            raise ConfigError(
                "talond.system_database_url must be a postgresql:// URL (leave it out for the "
                "SQLite file beside the host database)"
            )
        kw["system_database_url"] = url
    if "timezone" in t:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        zone = _str(t["timezone"], "talond.timezone")
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"talond.timezone {zone!r} is not a known time zone") from None
        kw["timezone"] = zone
    return TalondConfig(**kw)


def _model(table: Any, base: Path) -> ModelConfig:
    keys = {"kind", "base_url", "model", "api_key_env", "api_key_credential", "timeout_ms"}
    t = _expect(table, "[model]", keys | {"replay", "locality"})
    kind = t.get("kind", "openai")
    if kind not in ("openai", "replay"):
        raise ConfigError("model.kind must be 'openai' or 'replay'")
    kw: dict[str, Any] = {"kind": kind}
    for key in ("base_url", "model", "api_key_env", "api_key_credential"):
        if key in t:
            kw[key] = _str(t[key], f"model.{key}")
    if "timeout_ms" in t:
        kw["timeout_ms"] = _int(t["timeout_ms"], "model.timeout_ms", 100, 600_000)
    if "replay" in t:
        kw["replay"] = _path(t["replay"], "model.replay", base)
    if "locality" in t:
        if t["locality"] not in ("local", "remote"):
            raise ConfigError("model.locality must be 'local' or 'remote'")
        kw["locality"] = t["locality"]
    if kind == "openai" and ("base_url" not in kw or "model" not in kw):
        raise ConfigError("an openai model needs model.base_url and model.model")
    if kind == "replay" and "replay" not in kw:
        raise ConfigError("a replay model needs model.replay (a JSON file of recorded answers)")
    return ModelConfig(**kw)
