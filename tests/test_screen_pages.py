"""The Tool Forge screen's review, enable, tools and tool pages (SPEC §23), without a browser:
the graph's labels never overlap, the line diff keeps both texts, the tools list's search,
filters and count, the versions table's truth about consent, the ask banner's real reason.
The browser suite (tests/test_screen_browser.py) drives the same pages in Chromium."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import manifests
from test_screen import ROOT, Screen, echo_tool, forgec, write

from forgec.store import Store

# -- the graph: labels laid out without overlap -----------------------------------------------------


def label_boxes(g: dict[str, Any]) -> list[tuple[str, tuple[float, float, float, float]]]:
    from forgec.screen.svg import label_box

    out = [(c["label"], label_box(c["lx"], c["ly"], c["label"])) for c in g["clusters"]]
    out += [(e["label"], label_box(e["lx"], e["ly"], e["label"])) for e in g["edges"]]
    out += [
        (f"{f['kind']}: {f['label']}", label_box(f["lx"], f["ly"], f"{f['kind']}: {f['label']}"))
        for f in g["flows"]
    ]
    return out


def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@st.composite
def graphs_with_flows(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A valid tool's graph parts plus flow edges between any of its steps (as many as the
    facts could give: each pair, either kind, labels of any length)."""
    from forgec.catalog import get_catalog
    from forgec.render.graph import graph_parts

    manifest = draw(manifests())
    parts = graph_parts(manifest, catalog=get_catalog("talos"))
    keys = [n["key"] for n in parts["nodes"]]
    flows = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "src": st.sampled_from(keys),
                    "dst": st.sampled_from(keys),
                    "label": st.sampled_from(
                        ["talon", "notes.list", "desk.example.com", "db.query, tasks.list", "x"]
                    ),
                    "kind": st.sampled_from(["private", "untrusted"]),
                }
            ),
            max_size=6,
        )
    )
    return manifest, {**parts, "flows": flows}


@settings(max_examples=80, deadline=None)
@given(graphs_with_flows())
def test_no_label_overlaps_another_label_or_a_step(drawn: tuple[Any, dict[str, Any]]) -> None:
    from forgec.screen.svg import layout

    _manifest, parts = drawn
    g = layout(parts)
    labels = label_boxes(g)
    for i, (text, box) in enumerate(labels):
        for other, box2 in labels[i + 1 :]:
            assert not overlap(box, box2), (text, other)
        for n in g["nodes"]:
            assert not overlap(box, (n["x"], n["y"], n["x"] + n["w"], n["y"] + n["h"])), text
        assert box[2] <= g["width"] and box[3] <= g["height"], text  # inside the picture


def long_flow(steps: int = 64) -> dict[str, Any]:
    """A tool of STEPS steps, each a branch on the input, as the issue's 64-step measurement."""
    from manifests import manifest_with_nodes

    nodes: list[dict[str, Any]] = []
    for i in range(steps - 1):
        nodes.append(
            {
                "id": f"s{i}",
                "type": "if",
                "condition": {"op": "eq", "left": {"$ref": "input.text"}, "right": f"w{i}"},
                "then": f"s{i + 1}",
                "else": f"s{i + 1}",
            }
        )
    nodes.append({"id": f"s{steps - 1}", "type": "return", "value": {"ok": True}})
    m = manifest_with_nodes(
        nodes,
        id="long.flow",
        title="Long flow",
        inputSchema={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    m["flow"]["maxTransitions"] = steps * 2
    return m


def test_a_64_step_flow_draws_its_labels_apart() -> None:
    from forgec.catalog import get_catalog
    from forgec.render.graph import graph_parts
    from forgec.screen.svg import layout

    g = layout(graph_parts(long_flow(), catalog=get_catalog("talos")))
    labels = label_boxes(g)
    assert len(labels) == 2 * 63
    assert not any(overlap(a, b) for i, (_, a) in enumerate(labels) for _, b in labels[i + 1 :])


# -- the text and its line diff -----------------------------------------------------------------------

LINES = st.lists(
    st.sampled_from(["a b c", "limit: 20", "limit: 50", "  x = 1", "", "channel #team", "y"]),
    max_size=14,
)


@settings(max_examples=200, deadline=None)
@given(old=LINES, new=LINES)
def test_the_line_diff_keeps_both_texts_and_marks_only_changes(
    old: list[str], new: list[str]
) -> None:
    from forgec.screen.textdiff import line_diff

    rows = line_diff("\n".join(old), "\n".join(new), context=10**6)
    text = {
        k: ["".join(p for p, _ in r["parts"]) for r in rows if r["kind"] in k]
        for k in ("same del", "same ins")
    }
    assert text["same del"] == "\n".join(old).splitlines()
    assert text["same ins"] == "\n".join(new).splitlines()
    for r in rows:
        if r["kind"] == "same":
            assert not any(m for _, m in r["parts"])
        else:
            assert any(m for _, m in r["parts"]) or not "".join(p for p, _ in r["parts"])


def test_changed_words_are_marked_not_the_whole_line() -> None:
    from forgec.screen.textdiff import line_diff

    rows = line_diff("sql: x\nlimit: 20\nend", "sql: x\nlimit: 50\nend")
    changed = {r["kind"]: r["parts"] for r in rows if r["kind"] in ("del", "ins")}
    assert changed == {
        "del": [("limit: ", False), ("20", True)],
        "ins": [("limit: ", False), ("50", True)],
    }


# -- pages over a real screen ---------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "tools.db"


@pytest.fixture
def screen(store: Path) -> Iterator[Screen]:
    s = Screen(store)
    yield s
    s.stop()


def text_of(page: str) -> str:
    """The page's text, tags dropped and entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def digest(sql: str, channel: str, limit: int, version: int = 1) -> dict[str, Any]:
    """talon-db-digest (R3; it asks every run because of its flows, SPEC §15) with its query,
    channel and limit chosen: the issue's measurement-1 proposal changes all three."""
    m = orjson.loads((ROOT / "examples" / "talon-db-digest.talostool").read_bytes())
    m["version"], m["parentVersion"] = version, (version - 1 if version > 1 else None)
    for node in m["flow"]["nodes"]:
        if node.get("capability") == "db.query":
            node["input"]["sql"], node["input"]["limit"] = sql, limit
        if node.get("capability") == "channel.send":
            node["input"]["channelId"] = channel
    return m


SQL_V1 = (
    "SELECT role, content, created_at FROM messages WHERE role = 'user' ORDER BY created_at DESC"
)
SQL_V2 = "SELECT role, content, created_at FROM messages ORDER BY created_at DESC"


def install_talon(store: Path, tmp_path: Path, m: dict[str, Any], *, enable: bool) -> None:
    path = write(tmp_path, f"digest-v{m['version']}.talostool", m)
    done = forgec("tools", "install", str(path), "--target", "talon", "--store", str(store))
    assert done.returncode == 0, done.stderr
    if enable:
        on = forgec("tools", "enable", m["id"], "--yes", "--store", str(store))
        assert on.returncode == 0, on.stderr


def propose(store: Path, m: dict[str, Any], target: str = "talos") -> int:
    """What `tool_create` does for an id that has versions: a model's proposal."""
    with Store(store) as s:
        done = s.install(orjson.dumps(m), author="model", target=target)
    assert done.installed is not None, done.report.to_json()
    return done.installed[1]


def test_an_r3_tool_that_asks_every_run_is_never_called_r4(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    install_talon(store, tmp_path, digest(SQL_V1, "team", 20), enable=True)
    with screen.client() as c:
        for path in ("/tools/talon-db-digest", "/tools/talon-db-digest/enable"):
            page = text_of(c.get(path).text)
            assert (
                "This tool asks before every run: it sends your private data off the device" in page
            )
            assert "(it is R3)" in page
            assert "is R4" not in page and "R4:" not in page, path
        run = c.post(
            "/tools/talon-db-digest/run",
            data={"csrf": screen.csrf(c, "/tools/talon-db-digest/run")},
            headers={"Origin": screen.origin},
        )
        ask = text_of(run.text)
        assert "(it is R3)" in ask and "is R4" not in ask


def test_the_versions_table_says_when_and_whether_the_person_agreed(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    # v1 asks every run and was turned on: not "none"; v2 was never agreed to
    install_talon(store, tmp_path, digest(SQL_V1, "team", 20), enable=True)
    install_talon(store, tmp_path, digest(SQL_V1, "team", 10, version=2), enable=False)
    with screen.client() as c:
        rows = re.findall(r"<tr[^>]*>(.*?)</tr>", c.get("/tools/talon-db-digest").text, re.S)
        cells = {text_of(r).split()[0]: " ".join(text_of(r).split()) for r in rows[1:]}
    # the CLI's words (`VersionInfo.consent_words`): v1 was turned on, v2 never was
    assert re.search(r"asks every run; turned on \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", cells["v1"])
    assert "turned on" not in cells["v2"] and "asks every run" in cells["v2"]
    assert "none" not in cells["v1"]
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", cells["v2"])  # installed when


def test_the_tools_list_searches_filters_and_counts_what_waits(screen: Screen, store: Path) -> None:
    with Store(store) as s:
        for i in range(500):
            s.install(orjson.dumps(echo_tool(tool_id=f"tool-{i:03d}", title=f"Tool number {i}")))
    propose(store, echo_tool(2, 1, tool_id="tool-042", title="Changed"))
    propose(store, echo_tool(2, 1, tool_id="tool-042", title="Changed again"))
    propose(store, echo_tool(2, 1, tool_id="tool-300", title="Other"))
    with screen.client() as c:
        every = c.get("/")
        assert every.status_code == 200
        assert "3 proposals wait for your review, in 2 tools" in text_of(every.text)
        assert every.text.count('<a href="/tools/tool-') == 500 + 2  # each row, and its proposals
        found = text_of(c.get("/", params={"q": "TOOL-042"}).text)
        assert "1 of 500 tools shown." in found and "dynamic:tool-042" in found
        some = text_of(c.get("/", params={"q": "number 42"}).text)  # every word, anywhere
        both = sum(1 for i in range(500) if "42" in f"Tool number {i}\ntool-{i:03d}")
        assert f"{both} of 500 tools shown." in some
        waiting = text_of(c.get("/", params={"waiting": "1"}).text)
        assert "2 of 500 tools shown." in waiting
        assert "dynamic:tool-300" in waiting and "dynamic:tool-001" not in waiting
        assert "0 of 500" in text_of(c.get("/", params={"risk": "R4"}).text)
        assert "500 of 500" in text_of(c.get("/", params={"risk": "R0"}).text)
        # whatever is typed is text: no markup, and the count still says what was found
        odd = c.get("/", params={"q": '<script>x</script>"'})
        assert "<script>x" not in odd.text and "0 of 500 tools shown." in text_of(odd.text)


def test_the_review_page_shows_both_texts_and_a_line_diff(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    install_talon(store, tmp_path, digest(SQL_V1, "team", 20), enable=True)
    number = propose(store, digest(SQL_V2, "general", 50, version=2), target="talon")
    with screen.client() as c:
        page = c.get(f"/tools/talon-db-digest/review/{number}").text
    assert "v1 — current, you agreed to it" in text_of(page)
    assert f"proposal {number} — proposed by a model" in text_of(page)
    assert re.search(r'<mark class="w-del">[^<]*team', page)
    assert re.search(r'<mark class="w-ins">[^<]*general', page)
    assert re.search(r'<mark class="w-del">[^<]*20', page)
    assert re.search(r'<mark class="w-ins">[^<]*50', page)
    assert 'class="row differs"' in page
    assert 'id="accept" class="accept"' in page and 'id="reject" class="reject"' in page
    assert page.count('<pre class="source">') == 2  # each version's whole text


def test_comparing_two_versions_answers_first_too(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    install_talon(store, tmp_path, digest(SQL_V1, "team", 20), enable=True)
    install_talon(store, tmp_path, digest(SQL_V1, "general", 20, version=2), enable=False)
    retitled = digest(SQL_V1, "team", 20, version=3)
    retitled["title"] = "Digest of the thread"
    install_talon(store, tmp_path, retitled, enable=False)
    with screen.client() as c:
        page = c.get("/tools/talon-db-digest/diff", params={"a": "1", "b": "2"}).text
        narrower = c.get("/tools/talon-db-digest/diff", params={"a": "1", "b": "3"}).text
    h1 = text_of(re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S).group(1))  # type: ignore[union-attr]
    assert h1.startswith("New power: this version can do 1 thing") and h1.endswith("v1 could not.")
    assert "can post to #general (v1: #team)" in text_of(page)
    assert re.search(r'<mark class="w-ins">[^<]*general', page)
    assert 'class="node node-capability gained"' in page
    # only the title changed: nothing new
    h1 = text_of(re.search(r"<h1[^>]*>(.*?)</h1>", narrower, re.S).group(1))  # type: ignore[union-attr]
    assert h1.startswith("No new power")
    assert 'gained"' not in narrower


def test_a_hostile_proposal_renders_as_text_on_the_review_page(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    from forgec.render.safe import UNSAFE_CHARACTERS

    path = write(tmp_path, "echo.talostool", echo_tool())
    assert forgec("tools", "install", str(path), "--store", str(store)).returncode == 0
    script = "<script>window.__pwned=1</script>"
    hostile = echo_tool(
        2, 1, title="T " + script, description="D " + script + "\nline", ui_title=script
    )
    hostile["flow"]["nodes"][0]["value"] = {"said": "\x1b[31m" + script + "\u2066"}
    number = propose(store, hostile)
    with screen.client() as c:
        for where in (
            f"/tools/echo.tool/review/{number}",
            f"/tools/echo.tool/diff?a=1&b=p{number}",
        ):
            page = c.get(where)
            assert page.status_code == 200, where
            assert "<script>window" not in page.text, where
            assert not (set(page.text) & (UNSAFE_CHARACTERS - {"\n"})), where
            assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page.text, where
