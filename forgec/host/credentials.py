"""The credential store: where `{"$credential": id}` headers get their secret values.

Two sources, the explicit one first: a file given with `--credentials` (JSON or TOML, by
extension; a flat table `id = "value"` or `id = {value = "..."}`), then the environment variable
`FORGEC_CREDENTIAL_<ID>` (the id upper-cased, `.` and `-` turned into `_`). Values never leave
this module except into the one request header they were declared for (see `http.py`); the
store's `repr` shows ids only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from forgec.host.config import ConfigError


def env_name(credential_id: str) -> str:
    return "FORGEC_CREDENTIAL_" + re.sub(r"[.\-]", "_", credential_id).upper()


class CredentialStore:
    def __init__(
        self,
        values: Mapping[str, str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._values = dict(values or {})
        self._environ = os.environ if environ is None else environ

    def __repr__(self) -> str:
        return f"CredentialStore(ids={sorted(self._values)!r}, env=FORGEC_CREDENTIAL_*)"

    def get(self, credential_id: str) -> str | None:
        if credential_id in self._values:
            return self._values[credential_id]
        value = self._environ.get(env_name(credential_id))
        return value if value else None

    def has(self, credential_id: str) -> bool:
        return self.get(credential_id) is not None


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
