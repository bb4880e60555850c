"""The host's one registry of secret values: credentials, and every key the host reads.

Credentials (what `{"$credential": id}` headers get) come from two sources, the explicit one
first: a file given with `--credentials` (JSON or TOML, by extension; a flat table
`id = "value"` or `id = {value = "..."}`), then the environment variable
`FORGEC_CREDENTIAL_<ID>` (the id upper-cased, `.` and `-` turned into `_`).

Keys are the other secrets the host reads for its own use: the model's API key (`[model]
api_key_env`, or a credential id) and each sub-agent's (`KEY_VARIABLES`: spark-coder's
`OPENAI_API_KEY`). They are read from the environment once, when the host opens, into this same
store; a sub-agent asks the store (`key`), never `os.environ`.

Every value — credential or key — is checked when the store is made or the key added: one
holding a control character is refused naming its id or variable, never its value (a trailing
CR would make the HTTP library raise an error quoting the header). Values never leave this module
except into the one request header they were declared for (`http.py`) or the provider that owns
the key; the store's `repr` shows ids only. `CredentialStore.scrub` removes every value the
store holds, in every spelling a library's message may use, from whatever the host lets out
(`bridge.py` calls it on every error and every result at the boundary): the registry is the
one list the scrub reads, so a secret the host knows is a secret the scrub knows.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from forgec.host.config import ConfigError

PREFIX = "FORGEC_CREDENTIAL_"
REDACTED = "[redacted]"
# a "secret" of one to three characters (`x`, `abc`) protects nothing, and replacing it
# everywhere would garble every output: shorter spellings are not scrubbed
MIN_SCRUBBED = 4

# environment variables holding keys the host's own parts read, and who reads each: read once
# when the host opens, checked and scrubbed like credentials
KEY_VARIABLES: dict[str, str] = {"OPENAI_API_KEY": "the spark-coder sub-agent's key"}


def env_name(credential_id: str) -> str:
    return PREFIX + re.sub(r"[.\-]", "_", credential_id).upper()


def how_to_supply(credential_id: str) -> str:
    """How a person gives the reference host a credential: the one sentence every
    `RUN_CREDENTIAL_MISSING` of this host ends with."""
    return (
        f'give it with `--credentials FILE` (TOML `{credential_id} = "..."`, or JSON '
        f'`{{"{credential_id}": "..."}}` in a .json file) or the environment variable '
        f"{env_name(credential_id)}"
    )


def control_problem(value: str) -> str | None:
    """Why a secret value cannot be sent as a header, or None.

    A control character (a trailing newline pasted with the token, most often) would make the
    HTTP library raise an error that quotes the header — the secret with it."""
    for ch in value:
        if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F:
            return "holds a control character (a line break or tab?); remove it"
    return None


class CredentialStore:
    """Credential values by id, plus every key the host holds (the model's, the sub-agents').

    All values are read and checked when the store is made — the file's, every
    `FORGEC_CREDENTIAL_*` variable of the environment and every variable of `KEY_VARIABLES`
    that is set — so a bad value is a one-line error naming the id before anything runs, never
    a value in a message later."""

    def __init__(
        self,
        values: Mapping[str, str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        key_variables: Mapping[str, str] | None = None,
    ) -> None:
        self._values = dict(values or {})
        for key, value in self._values.items():
            problem = control_problem(value)
            if problem is not None:
                raise ConfigError(f"credential {key!r} {problem}")
        env = os.environ if environ is None else environ
        self._environ = {k: v for k, v in env.items() if k.startswith(PREFIX) and v}
        for key, value in self._environ.items():
            problem = control_problem(value)
            if problem is not None:
                raise ConfigError(f"credential from ${key} {problem}")
        self._keys: dict[str, str] = {}
        readers = KEY_VARIABLES if key_variables is None else key_variables
        for variable, reader in readers.items():
            key_value = env.get(variable)
            if key_value:
                self.add_key(variable, key_value, f"${variable} ({reader})")

    def __repr__(self) -> str:
        return (
            f"CredentialStore(ids={sorted(self._values)!r}, env=FORGEC_CREDENTIAL_*, "
            f"keys={sorted(self._keys)!r})"
        )

    def get(self, credential_id: str) -> str | None:
        if credential_id in self._values:
            return self._values[credential_id]
        return self._environ.get(env_name(credential_id))

    def has(self, credential_id: str) -> bool:
        return self.get(credential_id) is not None

    def add_key(self, name: str, value: str, what: str) -> None:
        """A key the host reads (named `name`, shown as `what` in a refusal), checked and kept."""
        problem = control_problem(value)
        if problem is not None:
            raise ConfigError(f"{what} {problem}")
        self._keys[name] = value

    def key(self, name: str) -> str | None:
        """The key read from the environment variable `name` when the host opened, or None."""
        return self._keys.get(name)

    def secrets(self) -> list[str]:
        """Every secret value the store holds: what the scrub removes."""
        return [*self._values.values(), *self._environ.values(), *self._keys.values()]

    def scrub(self, text: str) -> str:
        """`text` with every credential value and key, in every spelling a library's message
        may use (as is, `repr`-escaped, bytes-escaped, stripped), replaced by `[redacted]`.
        The host calls this on every error message it lets out."""
        return scrub(text, self.secrets())

    def scrub_value(self, value: Any) -> Any:
        """A JSON value with `scrub` applied to every string in it, keys included (a capability
        result or a model answer leaving the host)."""
        secrets = self.secrets()
        if not secrets:
            return value
        return _scrub_value(value, _Scrubber(secrets))


class _Scrubber:
    """The spellings of a set of secrets (as is, stripped, `repr`- and bytes-escaped, JSON-
    escaped, percent-encoded), longest first."""

    def __init__(self, secrets: Iterable[str]) -> None:
        spellings: set[str] = set()
        for secret in secrets:
            for form in (
                secret,
                secret.strip(),
                repr(secret)[1:-1],
                str(secret.encode("utf-8"))[2:-1],
                secret.encode("unicode_escape").decode("ascii"),
                json.dumps(secret)[1:-1],  # quoted back in a JSON error body
                json.dumps(secret, ensure_ascii=False)[1:-1],
                quote(secret, safe=""),  # echoed from a URL
                quote(secret),
            ):
                if len(form) >= MIN_SCRUBBED:
                    spellings.add(form)
        self.forms = sorted(spellings, key=len, reverse=True)  # longest first: no leftovers

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text


def _scrub_value(value: Any, scrubber: _Scrubber) -> Any:
    """A copy of `value` with every string scrubbed; iterative, so any depth is fine."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, slot = stack.pop()
        item = container[slot]
        if isinstance(item, str):
            container[slot] = scrubber(item)
        elif isinstance(item, list):
            copy = list(item)
            container[slot] = copy
            stack.extend((copy, i) for i in range(len(copy)))
        elif isinstance(item, dict):
            copied = {scrubber(k): v for k, v in item.items()}
            container[slot] = copied
            stack.extend((copied, k) for k in copied)
    return root[0]


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` without any of `secrets`: the one scrub function at the host boundary."""
    return _Scrubber(secrets)(text)


def load_credentials_file(path: Path | str) -> dict[str, str]:
    """Read a JSON (`.json`) or TOML (anything else) credentials file into id → value."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such credentials file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read credentials: {exc}") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except ValueError as exc:
        # the parser's message may quote the file, which holds secrets: keep only the position
        where = getattr(exc, "lineno", None)
        raise ConfigError(
            f"{p}: not valid {'JSON' if p.suffix.lower() == '.json' else 'TOML'}"
            + (f" (line {where})" if where else "")
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: credentials must be an object of id → value")
    out: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, dict) and set(value) == {"value"}:
            value = value["value"]
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{p}: credential {key!r} must be a non-empty string")
        out[str(key)] = value
    return out
