"""The reference host: TALOS on SQLite, the Talon host tools, model providers.

`open_host(HostOptions(...))` builds a `ReferenceHost` (the `forgec.runtime.Host` protocol)
from command-line style options layered over the TOML host configuration:

- the database: `db`, else the config's `db`, else `host.db` in the user's data directory;
- the persona's labels: `persona_labels` (`--persona-labels`), else the config's
  `[persona] labels`, else the persona folder's `labels.txt`, else `default_labels` (the CLI
  passes the labels the tool needs, so a plain `forgec run` works — SPEC §10);
- credentials: `credentials` (`--credentials`), else the config's file, plus the environment;
  with them every key the host reads (the model's `api_key_env`, the sub-agents' variables of
  `credentials.KEY_VARIABLES`), read once here into the same store and checked like them;
- name overrides: the config's `[network] resolve` plus `resolve` (`--resolve`);
- models: `replay` (`--replay`) first, then the config's `[model]`.

Bad options or configuration raise `ConfigError` (the CLI's exit status 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from forgec.host.config import ConfigError, HostConfig, load_config


def _labels(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # "a,b" as typed on the command line
        return tuple(x.strip() for x in value.split(",") if x.strip())
    return tuple(value)


def _labels_or_none(value: Any) -> tuple[str, ...] | None:
    return None if value is None else _labels(value)


@attrs.frozen
class HostOptions:
    db: Path | str | None = None
    host_config: Path | str | None = None
    config: HostConfig | None = None  # for embedders: used instead of reading host_config
    persona_labels: tuple[str, ...] | None = attrs.field(default=None, converter=_labels_or_none)
    default_labels: tuple[str, ...] = attrs.field(default=(), converter=_labels)
    credentials: Path | str | None = None
    resolve: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    replay: Path | str | None = None
    persona: str | None = None
    thread: str | None = None
    subagents: Mapping[str, Any] = attrs.field(factory=dict)
    persona_handlers: Mapping[str, Any] = attrs.field(factory=dict)
    background_runner: Any = None
    environ: Mapping[str, str] | None = None  # credential/API-key lookups (default os.environ)
    # SPEC §22: open the host on a private copy of the database (`forgec.host.staged`)
    staged: bool = False


MEMORY_DB = ":memory:"  # `--db :memory:`: a throwaway database, gone when the host closes


def open_host(options: HostOptions | None = None) -> Any:
    """Open the reference host; the caller closes it (`host.close()` or `with`)."""
    from forgec.host.delegation import PersonaError

    try:
        return _open_host(options)
    except PersonaError as exc:  # a persona file that is not UTF-8: one line naming it
        raise ConfigError(str(exc)) from None


def _open_host(options: HostOptions | None = None) -> Any:
    import os

    from forgec.host import delegation
    from forgec.host.bridge import ReferenceHost
    from forgec.host.credentials import KEY_VARIABLES, CredentialStore, load_credentials_file
    from forgec.host.db import DatabaseError, default_db_path
    from forgec.host.http import parse_resolve
    from forgec.host.models import ModelProvider, ModelRouter, OpenAIProvider, ReplayProvider
    from forgec.runtime.host import HostError

    opts = options or HostOptions()
    if opts.config is not None:
        config = opts.config
    elif opts.host_config is not None:
        config = load_config(opts.host_config)
    else:
        config = HostConfig()
    environ = os.environ if opts.environ is None else opts.environ
    db_path = Path(opts.db) if opts.db is not None else (config.db or default_db_path())
    staged_folder = None
    if str(opts.db) == MEMORY_DB:
        # SQLite's name for a database that vanishes: a private one, removed at close (a real
        # file, since db.query reads it through a connection of its own)
        import tempfile

        staged_folder = Path(tempfile.mkdtemp(prefix="forgec-memory-"))
        db_path = staged_folder / "host.db"
    elif opts.staged:
        from forgec.host.staged import staged_database

        db_path, staged_folder = staged_database(db_path.expanduser())
    persona = opts.persona or config.persona

    if opts.persona_labels is not None:
        labels = opts.persona_labels
    elif config.labels is not None:
        labels = config.labels
    else:
        loaded = delegation.load_personas(config.personas_dir).get(persona)
        labels = loaded.labels if loaded is not None and loaded.labels else opts.default_labels

    cred_file = opts.credentials if opts.credentials is not None else config.credentials_file
    values = load_credentials_file(cred_file) if cred_file is not None else {}
    mc = config.model
    # every key the host reads, in the one registry the boundary's scrub reads (SPEC §14)
    key_variables = dict(KEY_VARIABLES)
    if mc is not None and mc.api_key_env:
        key_variables[mc.api_key_env] = "the model API key"
    for name, provider in sorted(config.providers.items()):
        if provider.api_key_env:
            key_variables.setdefault(provider.api_key_env, f"the API key of [providers.{name}]")
    credentials = CredentialStore(values, environ=environ, key_variables=key_variables)

    try:
        resolve = parse_resolve((*config.resolve, *opts.resolve))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    providers: list[ModelProvider] = []
    try:
        if opts.replay is not None:
            providers.append(ReplayProvider(opts.replay))
        if mc is not None and mc.kind == "replay" and mc.replay is not None:
            providers.append(ReplayProvider(mc.replay))
        elif mc is not None and mc.base_url and mc.model:
            key = None
            if mc.api_key_credential:
                key = credentials.get(mc.api_key_credential)
            elif mc.api_key_env:
                key = credentials.key(mc.api_key_env)
            local = None if mc.locality is None else mc.locality == "local"
            providers.append(
                OpenAIProvider(
                    mc.base_url, mc.model, api_key=key, timeout_ms=mc.timeout_ms, local=local
                )
            )
    except HostError as exc:
        raise ConfigError(exc.message) from None

    try:
        host = ReferenceHost(
            db_path=db_path,
            config=config,
            labels=frozenset(labels),
            credentials=credentials,
            router=ModelRouter(providers),
            resolve=resolve,
            persona=persona,
            thread=opts.thread,
            subagents=opts.subagents,
            persona_handlers=opts.persona_handlers,
            background_runner=opts.background_runner,
        )
    except DatabaseError as exc:
        raise ConfigError(str(exc)) from None
    host.staged_folder = staged_folder
    return host


__all__ = ["ConfigError", "HostConfig", "HostOptions", "load_config", "open_host"]
