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
from collections.abc import Callable
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

    from forgec.frontend.reading import SETTINGS_BYTES, ReadError, read_regular

    try:
        data = read_regular(str(path), limit=SETTINGS_BYTES)
    except ReadError as exc:
        raise SettingsError(str(exc)) from None
    if len(data) > SETTINGS_BYTES:
        raise SettingsError(f"{path}: over {SETTINGS_BYTES // 1024} KiB; not read")
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
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


def expand(
    paths: list[str],
    *,
    force_exclude: bool = False,
    skipped: Callable[[str, str], None] | None = None,
) -> list[str]:
    """PATHS with each folder replaced by its `.forge` and `.talostool` files (recursively,
    sorted, excluded globs left out). A file named outright is kept unless FORCE_EXCLUDE (as
    pre-commit passes every staged file by name). A folder with no tool file is an error.

    A walk never leaves its folder (SPEC §24): a symbolic link — to a file or a folder — whose
    target lies outside the walked folder is not followed, and a tool-named entry that is not a
    regular file (a FIFO, a device, a link to one, a dangling link) is not handed on; each is
    passed to SKIPPED(path, why) for the caller to name. Links are never followed into folders
    (`os.walk`'s default), so a link loop cannot make a walk endless; a link to a file inside
    the folder is read as any file is."""
    out: list[str] = []
    for arg in paths:
        if arg == "-" or not os.path.isdir(arg):
            if force_exclude and arg != "-" and settings_for(arg).excluded(Path(arg)):
                continue
            out.append(arg)
            continue
        root = os.path.realpath(arg)
        found: list[str] = []
        for folder, dirs, files in os.walk(arg):
            # hidden folders (.git, .venv) are never walked, nor a folder whose every file is
            # excluded (`tests/corpus/**`, `**/node_modules/**`)
            kept = []
            for d in sorted(dirs):
                if d.startswith(".") or settings_for(os.path.join(folder, d)).excluded(
                    Path(folder, d, "_")
                ):
                    continue
                link = os.path.join(folder, d)
                if os.path.islink(link) and not _inside(link, root):
                    if skipped is not None:
                        skipped(os.path.normpath(link), f"a link to a folder outside {arg}")
                    continue
                kept.append(d)
            dirs[:] = kept
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                file = os.path.join(folder, name)
                if settings_for(file).excluded(Path(file)):
                    continue
                why = _unreadable(file, root, arg)
                if why is not None:
                    if skipped is not None:
                        skipped(os.path.normpath(file), why)
                    continue
                found.append(os.path.normpath(file))
        if not found:
            raise SettingsError(f"{arg}: a folder with no .forge or .talostool file")
        out.extend(found)
    return out


def _inside(path: str, root: str) -> bool:
    """PATH, every link resolved, lies in ROOT (itself resolved)."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _unreadable(file: str, root: str, arg: str) -> str | None:
    """Why a walk must not hand FILE to the reader, or None (a regular file inside ROOT)."""
    from forgec.frontend.reading import is_regular

    if os.path.islink(file) and not _inside(file, root):
        return f"a link to outside {arg}; not read"
    if not is_regular(file):
        try:
            kind = os.stat(file).st_mode
        except OSError:
            return "a dangling link; not read"
        from forgec.frontend.reading import describe_mode

        return f"{describe_mode(kind)}; not read"
    return None


def clear_cache() -> None:
    """Forget the settings read so far (a long-running server, after a settings change)."""
    _for_folder.cache_clear()
