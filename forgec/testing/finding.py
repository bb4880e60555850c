"""Which tests files `forgec test PATH...` runs (folders walked like `check`'s).

A PATH that is a `*.tests.toml` file is run as named; a tool file (`.forge`, `.talostool`) means
the tests file beside it; a folder is walked for `*.tests.toml` files (sorted, hidden folders
and `[tool.forgec] exclude` left out, a symbolic link whose target lies outside the walked
folder skipped and named). Nothing found is `FindError` (exit status 2).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUFFIX = ".tests.toml"


class FindError(ValueError):
    """A PATH that names no tests file (one line)."""


def find_tests(paths: list[str]) -> list[str]:
    from forgec.frontend.settings import SettingsError, settings_for

    out: list[str] = []
    for arg in paths:
        p = Path(arg)
        if p.is_dir():
            root = p.resolve()
            found: list[str] = []
            for folder, dirs, files in os.walk(arg):
                try:
                    dirs[:] = sorted(
                        d
                        for d in dirs
                        if not d.startswith(".")
                        and not settings_for(os.path.join(folder, d)).excluded(Path(folder, d, "_"))
                    )
                except SettingsError as exc:
                    raise FindError(str(exc)) from None
                for name in sorted(files):
                    if not name.endswith(SUFFIX):
                        continue
                    file = os.path.join(folder, name)
                    real = Path(file).resolve()
                    if Path(file).is_symlink() and not real.is_relative_to(root):
                        print(f"forgec: skipped {file}: a link out of {arg}", file=sys.stderr)
                        continue
                    if not settings_for(file).excluded(Path(file)):
                        found.append(os.path.normpath(file))
            if not found:
                raise FindError(f"{arg}: a folder with no {SUFFIX} file")
            out.extend(found)
        elif arg.endswith(SUFFIX):
            if not p.exists():
                raise FindError(f"{arg}: no such file")
            out.append(arg)
        elif arg.endswith((".forge", ".talostool")):
            stem = p.name.rsplit(".", 1)[0]
            beside = p.with_name(stem + SUFFIX)
            if not beside.is_file():
                raise FindError(f"{arg}: no {beside.name} beside it")
            out.append(str(beside))
        else:
            raise FindError(f"{arg}: not a folder, a {SUFFIX} file or a tool file")
    return list(dict.fromkeys(out))
