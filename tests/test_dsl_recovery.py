"""`.forge` syntax errors after the first: recovery reports later ones and never raises."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from forgec.frontend.dsl import load_forge
from forgec.frontend.dsl_recover import MAX_ERRORS

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.forge"))
HEAD = """tool t-recover {
  version 1
  title "T"
  description "d"
  created "2026-11-02T09:00:00Z"
  parent null
  network forbidden
  flow entry a max 16 {
"""


def _errors(text: str) -> list[tuple[int, str]]:
    loaded = load_forge(text, path="t.forge")
    return [(d.span.line, d.message) for d in loaded.diagnostics if d.span is not None]


def test_three_mistakes_three_errors_in_order() -> None:
    text = HEAD + (
        '    a: x = call tasks.create {title: "x" -> b\n'  # line 9: a missing `}`
        "    b: y = = 2 -> c\n"  # line 10
        "    c: retrun $x\n"  # line 11
        "    d: return 1\n  }\n}\n"
    )
    found = _errors(text)
    assert [line for line, _ in found] == [9, 10, 11]
    assert "found `->`" in found[0][1] and "found `=`" in found[1][1]


def test_a_forgotten_brace_is_not_a_cascade() -> None:
    """Recovery inserts the `}` and reads on: the rest of the file raises nothing more."""
    text = HEAD + '    a: x = call tasks.create {title: "x" -> b\n    b: return $x\n  }\n}\n'
    assert [line for line, _ in _errors(text)] == [9]


def test_one_error_per_line_and_at_most_the_cap() -> None:
    text = HEAD + "".join(f"    n{i}: = = = -> x\n" for i in range(60)) + "  }\n}\n"
    found = _errors(text)
    lines = [line for line, _ in found]
    assert lines == sorted(set(lines))
    assert 2 <= len(found) <= MAX_ERRORS


@given(
    st.sampled_from(EXAMPLES),
    st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from(["", "{", "}", "->", "=", "[", ":", '"'])),
        max_size=4,
    ),
)
def test_recovery_never_raises_on_mangled_examples(
    path: Path, edits: list[tuple[float, str]]
) -> None:
    text = path.read_text()
    for where, insert in edits:
        i = int(where * len(text))
        text = text[:i] + insert + text[i + (1 if insert == "" else 0) :]
    loaded = load_forge(text, path="t.forge")
    lines = [
        d.span.line for d in loaded.diagnostics if d.span is not None and "syntax" in d.message
    ]
    assert lines == sorted(lines)
    assert len(lines) <= MAX_ERRORS
