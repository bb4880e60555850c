"""Project settings: `[tool.forgec]` in the nearest `pyproject.toml`, or a `forgec.toml`.

```toml
[tool.forgec]                      # in forgec.toml: the same keys at the top level
target = "talos"                   # the default target
exclude = ["tests/corpus/**"]      # not checked when a folder is walked
[tool.forgec.targets]              # targets by glob, the first match wins
"examples/talon-*" = "talon"
```

The settings of a file are those of the nearest folder, from the file's own up to the root,
that holds a `forgec.toml` or a `pyproject.toml` with a `[tool.forgec]` table (a `forgec.toml`
wins in the same folder). Globs are read relative to that folder, `fnmatch`-style over the
`/`-separated path (`*` also crosses `/`); a glob without `/` is matched against the file name
alone. A folder walk skips hidden folders and any folder an `exclude` glob covers whole
(`dir/**`). One module reads them for every consumer: the command line (`check`, `fmt`, `compile`,
`inspect`, …), the language server and, through the command line, the pre-commit hooks.
"""

from __future__ import annotations

import fnmatch
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from forgec.catalog import TARGETS

SUFFIXES = (".forge", ".talostool")
_KEYS = ("target", "targets", "exclude")


class SettingsError(ValueError):
    """A settings file that cannot be used (its one-line message names the file)."""


class Settings:
    """What one settings file says (or the defaults, with no file)."""

    def __init__(
        self,
        root: Path | None = None,
        source: Path | None = None,
        target: str = "talos",
        targets: tuple[tuple[str, str], ...] = (),
        exclude: tuple[str, ...] = (),
    ) -> None:
        self.root = root
        self.source = source
        self.target = target
        self.targets = targets
        self.exclude = exclude

    def _relative(self, path: Path) -> str | None:
        if self.root is None:
            return None
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    @staticmethod
    def _match(rel: str, pattern: str) -> bool:
        pattern = pattern.removeprefix("./")
        if "/" not in pattern.rstrip("/"):
            return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern)
        return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(
            rel, pattern.rstrip("/") + "/*"
        )

    def target_for(self, path: Path) -> str:
        rel = self._relative(path)
        if rel is not None:
            for pattern, target in self.targets:
                if self._match(rel, pattern):
                    return target
        return self.target

    def excluded(self, path: Path) -> bool:
        rel = self._relative(path)
        return rel is not None and any(self._match(rel, p) for p in self.exclude)


DEFAULT = Settings()


def _read(path: Path, *, pyproject: bool) -> Settings | None:
    import tomllib

    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    table: Any = doc.get("tool", {}).get("forgec") if pyproject else doc
    if table is None:
        return None
    where = f"{path}: [tool.forgec]" if pyproject else str(path)
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise SettingsError(f"{where}: unknown key `{unknown[0]}` (keys: {', '.join(_KEYS)})")
    target = table.get("target", "talos")
    if target not in TARGETS:
        raise SettingsError(f"{where}: target must be one of {', '.join(TARGETS)}; got {target!r}")
    targets = table.get("targets", {})
    if not isinstance(targets, dict) or not all(
        isinstance(k, str) and v in TARGETS for k, v in targets.items()
    ):
        raise SettingsError(
            f"{where}: targets is a table of glob = target ({' or '.join(TARGETS)})"
        )
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise SettingsError(f"{where}: exclude is a list of globs")
    return Settings(path.parent.resolve(), path, target, tuple(targets.items()), tuple(exclude))


@lru_cache(maxsize=256)
def _for_folder(folder: Path) -> Settings:
    for candidate in (folder, *folder.parents):
        own = candidate / "forgec.toml"
        if own.is_file():
            found = _read(own, pyproject=False)
            if found is not None:
                return found
        project = candidate / "pyproject.toml"
        if project.is_file():
            found = _read(project, pyproject=True)
            if found is not None:
                return found
    return DEFAULT


def settings_for(path: str | Path | None) -> Settings:
    """The settings that apply to PATH (a file or a folder; None: the current folder)."""
    p = Path(path) if path is not None else Path.cwd()
    p = p.resolve()
    return _for_folder(p if p.is_dir() else p.parent)


def expand(paths: list[str], *, force_exclude: bool = False) -> list[str]:
    """PATHS with each folder replaced by its `.forge` and `.talostool` files (recursively,
    sorted, excluded globs left out). A file named outright is kept unless FORCE_EXCLUDE (as
    pre-commit passes every staged file by name). A folder with no tool file is an error."""
    out: list[str] = []
    for arg in paths:
        if arg == "-" or not os.path.isdir(arg):
            if force_exclude and arg != "-" and settings_for(arg).excluded(Path(arg)):
                continue
            out.append(arg)
            continue
        found: list[str] = []
        for folder, dirs, files in os.walk(arg):
            # hidden folders (.git, .venv) are never walked, nor a folder whose every file is
            # excluded (`tests/corpus/**`, `**/node_modules/**`)
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and not settings_for(os.path.join(folder, d)).excluded(Path(folder, d, "_"))
            )
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                file = os.path.join(folder, name)
                if not settings_for(file).excluded(Path(file)):
                    found.append(os.path.normpath(file))
        if not found:
            raise SettingsError(f"{arg}: a folder with no .forge or .talostool file")
        out.extend(found)
    return out


def clear_cache() -> None:
    """Forget the settings read so far (a long-running server, after a settings change)."""
    _for_folder.cache_clear()
