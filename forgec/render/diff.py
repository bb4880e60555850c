"""The consent diff (SPEC §14) as text for a person: `forgec tools enable`, `review`, `diff`.

It reads the JSON that `forgec.store.diff.diff_versions` answers (the one shape the CLI and
the Tool Forge screen share) and lays it out in §14's order: the summary line first ("Only
text changed.", "No change.", or what changed), then effects gained and lost, behaviour step by
step, and text. Every line goes through the one `safe_text`, although the diff's strings are
already safe: a renderer never trusts that its input was escaped.
"""

from __future__ import annotations

from typing import Any

from forgec.render.safe import safe_text
from forgec.runtime.jsontext import dumps_text

AUTHOR_WORDS = {"person": "a person", "model": "a model"}
MARKS = {"added": "+", "removed": "-", "changed": "~"}


def _who(side: dict[str, Any]) -> str:
    author = AUTHOR_WORDS.get(str(side.get("author")), str(side.get("author")))
    number = side.get("version")
    return f"{'v' + str(number) if number is not None else 'the proposal'} ({author})"


def render_verdict(verdict: dict[str, Any] | None, *, indent: str = "") -> str:
    """The verdict (SPEC §23, `forgec.store.verdict`) in lines: the headline, then each gain
    in one sentence, with the input that showed it when there is one. Empty for None."""
    if not verdict:
        return ""
    lines = [str(verdict["headline"])]
    for gain in verdict["gains"]:
        lines.append(f"  + {gain['sentence']}")
        witness = gain.get("witness")
        if witness:
            shown = dumps_text(witness.get("input"))
            lines.append(f"      e.g. input {shown} (from {witness.get('from')})")
    return "\n".join(indent + safe_text(line) for line in lines)


def render_diff(diff: dict[str, Any], *, indent: str = "", verdict: bool = True) -> str:
    """The diff in lines, the verdict first (unless VERDICT is false: the caller printed it
    already); `indent` prefixes every line (the enable prompt nests it)."""
    lines: list[str] = []
    if verdict and diff.get("verdict"):
        head = render_verdict(diff["verdict"], indent=indent)
        return head + "\n\n" + render_diff(diff, indent=indent, verdict=False)
    to = diff["to"]
    if diff.get("from") is None:
        lines.append(f"What {_who(to)} does (nothing agreed to before):")
    else:
        lines.append(f"What changed from {_who(diff['from'])} to {_who(to)}:")
    lines.append(f"  {diff['summary']}")
    effects = diff["effects"]
    if effects["gained"]:
        lines.append("  Effects gained:")
        lines += [f"    + {e['kind']}: {e['text']}" for e in effects["gained"]]
    if effects["lost"]:
        lines.append("  Effects lost:")
        lines += [f"    - {e['kind']}: {e['text']}" for e in effects["lost"]]
    if diff["behaviour"]:
        lines.append("  Behaviour, step by step:")
        lines += [f"    {MARKS.get(b['change'], '~')} {b['text']}" for b in diff["behaviour"]]
    if diff["text"]:
        lines.append("  Text:")
        lines += [
            f"    ~ {t['field']}: {t['old'] or '(none)'} → {t['new'] or '(none)'}"
            for t in diff["text"]
        ]
    return "\n".join(indent + safe_text(line) for line in lines)
