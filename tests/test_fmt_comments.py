"""Comments are part of the language (SPEC §20): `fmt` keeps every comment, in order, and is
idempotent on commented text; the language server's formatting and quick fixes do the same."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import commented_forge, raw_forge

from forgec.frontend.canonical import dumps_canonical
from forgec.frontend.dsl import load_forge
from forgec.frontend.dsl_format import format_forge
from forgec.frontend.dsl_trivia import comment_texts, trivia_of

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def fmt(text: str) -> str:
    loaded = load_forge(text, path="t.forge")
    assert not loaded.diagnostics, [d.message for d in loaded.diagnostics]
    return format_forge(loaded.value, trivia_of(loaded.source_map))


@SETTINGS
@given(commented_forge())
def test_fmt_keeps_every_comment_in_order_and_is_idempotent(text: str) -> None:
    once = fmt(text)
    assert comment_texts(once) == comment_texts(text)
    assert fmt(once) == once
    # comments change nothing the tool means
    assert dumps_canonical(load_forge(once).value) == dumps_canonical(load_forge(text).value)


EXAMPLES = sorted((ROOT / "examples").glob("*.forge"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_carry_comments_and_are_canonical(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert comment_texts(text), f"{path.name} carries no comment"
    assert fmt(text) == text


@SETTINGS
@given(commented_forge())
def test_blank_lines_between_items_survive(text: str) -> None:
    once = fmt(text)
    # at most one blank line in a row between items (a text block's own lines are its value)
    outside_text_blocks = re.sub(r'"""[\s\S]*?"""', '""""""', once)
    assert "\n\n\n" not in outside_text_blocks
    assert fmt(once) == once


def test_fmt_write_keeps_the_comment_of_the_language_reference(tmp_path: Path) -> None:
    src = tmp_path / "t.forge"
    src.write_text(
        "# A tool that files a note\n"
        "tool t {\n"
        "  version 1  # bump on every change\n"
        '  title "T"\n'
        "\n"
        "  # the flow\n"
        "  flow entry a max 1 {\n"
        "    a: return 1  # nothing else\n"
        "  }\n"
        "}\n",
        encoding="utf-8",
    )
    before = src.read_text(encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "forgec", "fmt", "--write", str(src)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert src.read_text(encoding="utf-8") == before
    check = subprocess.run(
        [sys.executable, "-m", "forgec", "fmt", "--check", str(src)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_conversion_to_talostool_says_how_many_comments_it_drops(tmp_path: Path) -> None:
    src = tmp_path / "t.forge"
    src.write_text(
        "# one\ntool t {\n  version 1  # two\n  flow entry a max 1 {\n    a: return 1\n  }\n}\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "forgec", "fmt", "--to", "talostool", str(src)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "2 comments not kept" in run.stderr
    assert "#" not in run.stdout


def test_talostool_with_an_editors_extra_line_break_passes_check(tmp_path: Path) -> None:
    src = ROOT / "examples" / "memory-capture.talostool"
    saved = tmp_path / "m.talostool"
    saved.write_text(src.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # as Neovim saves
    run = subprocess.run(
        [sys.executable, "-m", "forgec", "fmt", "--check", str(saved)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


@SETTINGS
@given(commented_forge(base=raw_forge()))
def test_comments_survive_when_fmt_rewrites_raw_json_into_sugar(text: str) -> None:
    """Comments travel with their items when `fmt` reorders statements or turns `raw` JSON into
    sugar: none is lost, and the result is stable."""
    once = fmt(text)
    assert sorted(comment_texts(once)) == sorted(comment_texts(text))
    assert fmt(once) == once


@pytest.mark.parametrize(
    "where",
    ["title", "description", "purpose", "cron", "ui-title", "ui-label", "ui-path", "message"],
)
def test_a_template_in_a_text_field_keeps_its_meaning(where: str) -> None:
    """Found by the raw-JSON property: a template where the language reads plain text was
    written as a `"{{x}}"` string, which reads back as text: fmt changed the tool."""
    import copy
    import json

    base = json.loads((ROOT / "examples" / "daily-planner.talostool").read_text())
    m = copy.deepcopy(base)
    t = {"$template": "a {{x}} b"}
    if where in ("title", "description"):
        m[where] = t
    elif where == "purpose":
        m["credentialRequirements"] = [{"id": "c", "purpose": t}]
    elif where == "cron":
        m["triggers"] = [{"type": "schedule", "cron": t}]
    elif where.startswith("ui-"):
        field = where[3:]
        if field == "title":
            m["ui"]["title"] = t
        else:
            m["ui"]["values"][0][field] = t
    else:
        m["flow"]["nodes"].append({"id": "bad", "type": "fail", "code": "X1", "message": t})
    text = format_forge(m)
    assert dumps_canonical(load_forge(text).value) == dumps_canonical(m)
