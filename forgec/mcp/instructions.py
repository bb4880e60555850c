"""Tool instructions: `templates/tool-instructions/<name>.md`, sent as the MCP `instructions`.

`<name>` is the internal name (`memory.access`; `dynamic.<id>` for a forged tool; `tool.create`).
A file must start with a `## ` heading; an empty or missing file is ignored silently, and one
without the heading is ignored with a warning (SPEC §13). Only the files of the tools the
persona can see are sent, in the order of the listing.

Without a templates folder the defaults shipped with forgec are used
(`forgec/templates/tool-instructions/`, one file per host tool); a folder given with
`--templates` replaces them entirely, so a deployment controls every word a model is told.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def default_folder() -> Path:
    """The instruction files shipped as package data."""
    return Path(__file__).resolve().parent.parent / "templates" / "tool-instructions"


def instruction_file_name(internal: str) -> str:
    """`dynamic:weekly.review` → `dynamic.weekly.review`; other names are used as they are."""
    return (
        internal.replace("dynamic:", "dynamic.", 1) if internal.startswith("dynamic:") else internal
    )


def collect_instructions(
    directory: Path | None, internal_names: Iterable[str]
) -> tuple[str | None, list[str]]:
    """(instructions text or None, warnings)."""
    if directory is None or not directory.is_dir():
        return None, []
    blocks: list[str] = []
    warnings: list[str] = []
    for internal in internal_names:
        name = instruction_file_name(internal)
        if "/" in name or "\\" in name or name.startswith("."):
            continue  # never a path outside the folder
        path = directory / f"{name}.md"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            warnings.append(f"{path}: ignored, cannot read it: {exc}")
            continue
        body = text.lstrip("\ufeff").strip()
        if not body:
            continue
        if not body.startswith("## "):
            warnings.append(
                f"{path}: ignored, a tool instruction file must start with a `## ` heading"
            )
            continue
        blocks.append(body)
    return ("\n\n".join(blocks) if blocks else None), warnings
