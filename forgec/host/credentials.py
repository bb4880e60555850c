"""The credential store: where `{"$credential": id}` headers get their secret values.

Two sources, the explicit one first: a file given with `--credentials` (JSON or TOML, by
extension; a flat table `id = "value"` or `id = {value = "..."}`), then the environment variable
`FORGEC_CREDENTIAL_<ID>` (the id upper-cased, `.` and `-` turned into `_`). Values never leave
this module except into the one request header they were declared for (see `http.py`); the
store's `repr` shows ids only. A value holding a control character is refused when the store
is made, naming the id; `CredentialStore.scrub` removes every value (and the model API key)
from error messages before they leave the host (`bridge.py`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from forgec.host.config import ConfigError

PREFIX = "FORGEC_CREDENTIAL_"
REDACTED = "[redacted]"


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
    """Credential values by id, plus every other secret the host holds (the model API key).

    All values are read and checked when the store is made — the file's and every
    `FORGEC_CREDENTIAL_*` variable of the environment — so a bad value is a one-line error
    naming the id before anything runs, never a value in a message later."""

    def __init__(
        self,
        values: Mapping[str, str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
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
        self._others: list[str] = []

    def __repr__(self) -> str:
        return f"CredentialStore(ids={sorted(self._values)!r}, env=FORGEC_CREDENTIAL_*)"

    def get(self, credential_id: str) -> str | None:
        if credential_id in self._values:
            return self._values[credential_id]
        return self._environ.get(env_name(credential_id))

    def has(self, credential_id: str) -> bool:
        return self.get(credential_id) is not None

    def add_secret(self, value: str, what: str) -> None:
        """Another secret to keep out of messages (the model API key); checked like the rest."""
        problem = control_problem(value)
        if problem is not None:
            raise ConfigError(f"{what} {problem}")
        self._others.append(value)

    def scrub(self, text: str) -> str:
        """`text` with every credential value and secret, in every spelling a library's
        message may use (as is, `repr`-escaped, bytes-escaped, stripped), replaced by
        `[redacted]`. The host calls this on every error message it lets out."""
        return scrub(text, [*self._values.values(), *self._environ.values(), *self._others])


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` without any of `secrets`: the one scrub function at the host boundary."""
    spellings: set[str] = set()
    for secret in secrets:
        for form in (
            secret,
            secret.strip(),
            repr(secret)[1:-1],
            str(secret.encode("utf-8"))[2:-1],
            secret.encode("unicode_escape").decode("ascii"),
        ):
            if form:
                spellings.add(form)
    for form in sorted(spellings, key=len, reverse=True):  # longest first: no partial leftovers
        text = text.replace(form, REDACTED)
    return text


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
