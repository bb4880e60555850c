"""The TextMate grammar for `.forge` (editors/textmate/forge.tmLanguage.json), tokenised by VS
Code's own engine (vscode-textmate + vscode-oniguruma from npm, pinned by tests/textmate's
lockfile, run by node): on every example, each token gets the scope of what the lexer reads."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from forgec.frontend.dsl import load_forge
from forgec.frontend.dsl_lexer import ForgeLexer

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "editors" / "textmate" / "forge.tmLanguage.json"
HARNESS = ROOT / "tests" / "textmate"
EXAMPLES = sorted((ROOT / "examples").rglob("*.forge"))

KEYWORDS = {"tool", "flow", "version", "title", "input", "call", "llm", "if", "for", "return"}
EXPECT = {
    "COMMENT": "comment.line.number-sign.forge",
    "STRING": "string.quoted",
    "TSTRING": "string.quoted.triple.forge",
    "REF": "variable.other.reference.forge",
    "CREDENTIAL": "support.variable.credential.forge",
    "NUMBER": "constant.numeric.forge",
}


def test_the_vs_code_extension_ships_the_same_grammar() -> None:
    copy = ROOT / "editors" / "vscode" / "syntaxes" / "forge.tmLanguage.json"
    assert copy.read_bytes() == GRAMMAR.read_bytes()
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    (grammar,) = [g for g in package["contributes"]["grammars"] if g["language"] == "forge"]
    assert grammar["scopeName"] == "source.forge" and grammar["language"] == "forge"
    assert (ROOT / "editors" / "vscode" / grammar["path"]).resolve() == copy.resolve()
    (language,) = [x for x in package["contributes"]["languages"] if x["id"] == "forge"]
    assert ".forge" in language["extensions"]
    extension = (ROOT / "editors" / "vscode" / "extension.js").read_text()
    assert '"lsp"' in extension and '"--stdio"' in extension


def test_the_harness_is_pinned() -> None:
    package = json.loads((HARNESS / "package.json").read_text())
    lock = json.loads((HARNESS / "package-lock.json").read_text())
    for name, version in package["dependencies"].items():
        assert version[0].isdigit(), f"{name}: pin an exact version"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


@pytest.fixture(scope="module")
def scopes(request: pytest.FixtureRequest) -> dict[str, list[list[dict]]]:
    from conftest import npm_packages

    npm_packages(HARNESS)
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, str(HARNESS / "tokenize.mjs"), str(GRAMMAR), *map(str, EXAMPLES)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HARNESS,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _scope_at(lines: list[list[dict]]) -> dict[tuple[int, int], list[str]]:
    at = {}
    for n, tokens in enumerate(lines):
        col = 0
        for t in tokens:
            for _ in t["text"]:
                at[(n, col)] = t["scopes"]
                col += 1
    return at


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_token_of_an_example_has_its_scope(path: Path, scopes: dict) -> None:
    text = path.read_text(encoding="utf-8")
    at = _scope_at(scopes[str(path)])
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def where(offset: int) -> tuple[int, int]:
        line = max(i for i, s in enumerate(starts) if s <= offset)
        return line, offset - starts[line]

    pos = 0
    checked = 0
    while pos < len(text):
        m = ForgeLexer._MASTER.match(text, pos)
        assert m is not None
        kind, word = m.lastgroup, m.group()
        got = " ".join(at.get(where(pos), []))
        is_key = kind == "STRING" and text[m.end() :].lstrip().startswith(":")
        if is_key:
            assert "support.type.property-name.forge" in got, (word, got)
            checked += 1
        elif kind in EXPECT:
            assert EXPECT[kind] in got, (kind, word, got)
            checked += 1
        elif kind == "WORD" and word in KEYWORDS and not text[m.end() :].lstrip().startswith(":"):
            assert "keyword" in got or "storage.type" in got, (word, got)
            checked += 1
        assert "invalid" not in got, (word, got)
        pos = m.end()
    assert checked > 5
    # every node id of a sugared node line is named as one
    manifest = load_forge(text).value
    nodes = list(manifest["flow"]["nodes"])
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("body", []))
        found = re.search(rf"^\s*{re.escape(node['id'])}:", text, re.M)
        if found:
            col = found.group().index(node["id"][0]) if node["id"] else 0
            line, _ = where(found.start())
            got = " ".join(at.get((line, col), []))
            assert "entity.name.function.node.forge" in got, (node["id"], got)
