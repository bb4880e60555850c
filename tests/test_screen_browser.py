"""The Tool Forge screen in a real browser: Playwright driving headless Chromium (Debian's
`chromium`) against the real `forgec screen` subprocess, as a person (and an attacker's page)
would use it. Without a browser the tests skip with one line; under CI (CI set) they fail.

Set FORGEC_SCREENSHOTS=DIR to save PNGs of the main pages (docs/screen.md shows them).
"""

from __future__ import annotations

import http.server
import importlib.util
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_screen import ROOT, Screen, echo_tool, forgec, write

from forgec.render.safe import UNSAFE_CHARACTERS

CHROMIUM = os.environ.get("FORGEC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
AXE = ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = os.environ.get("FORGEC_SCREENSHOTS")


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser suite must run in CI: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # rebind.example resolves to 127.0.0.1, as a DNS-rebinding attacker's name would
        # (and evil.example too: a redirect that leaves the origin lands on this machine)
        args = ["--host-resolver-rules=MAP rebind.example 127.0.0.1, MAP evil.example 127.0.0.1"]
        args += ["--no-sandbox"] if os.geteuid() == 0 else []
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        yield b
        b.close()


class Person:
    """One browser context logged in to one screen; every dialog and page error is recorded."""

    def __init__(self, browser: Any, screen: Screen, **context: Any) -> None:
        self.screen = screen
        self.context = browser.new_context(viewport={"width": 1200, "height": 860}, **context)
        self.context.set_default_timeout(30_000)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(screen.url)
        assert self.page.url == screen.origin + "/", "the token must leave the address bar"

    def go(self, path: str) -> Any:
        self.page.goto(self.screen.origin + path)
        return self.page

    def inert(self) -> None:
        """Nothing a tool or a run wrote ran, and no raw control or bidi character is in the
        page."""
        assert self.dialogs == []
        assert self.page.evaluate("() => window.__pwned === undefined")
        html = self.page.content()
        assert not (set(html) & (UNSAFE_CHARACTERS - {"\n"}))
        assert self.page.locator('a[href^="javascript"], [onerror], [onclick], iframe').count() == 0
        assert self.page.locator("main img, main script").count() == 0

    def shot(self, name: str, selector: str | None = None) -> None:
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            where = self.page.locator(selector).first if selector else self.page
            path = Path(SHOTS) / f"{name}.png"
            where.screenshot(path=str(path))
            if shutil.which("pngquant"):  # keep the checked-in pictures small
                subprocess.run(
                    [
                        "pngquant",
                        "--force",
                        "--skip-if-larger",
                        "--quality",
                        "60-85",
                        "--ext",
                        ".png",
                        str(path),
                    ],
                    check=False,
                    timeout=60,
                )

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "tools.db"


@pytest.fixture
def screen(store: Path, tmp_path: Path) -> Iterator[Screen]:
    config = tmp_path / "host.toml"
    config.write_text(f'db = "{tmp_path / "host.db"}"\n', encoding="utf-8")
    s = Screen(store, "--host-config", str(config))
    yield s
    s.stop()


@pytest.fixture
def person(browser: Any, screen: Screen) -> Iterator[Person]:
    p = Person(browser, screen)
    yield p
    p.close()


def install(store: Path, tmp_path: Path, manifest: dict[str, Any], *, enable: bool = False) -> None:
    path = write(tmp_path, f"{manifest['id']}-v{manifest['version']}.talostool", manifest)
    done = forgec("tools", "install", str(path), "--store", str(store))
    assert done.returncode == 0, done.stderr
    if enable:
        on = forgec("tools", "enable", manifest["id"], "--yes", "--store", str(store))
        assert on.returncode == 0, on.stderr


def listed(store: Path) -> dict[str, Any]:
    done = forgec("tools", "list", "--store", str(store), "--format", "json")
    return {t["id"]: t for t in orjson.loads(done.stdout)}


def two_steps(version: int, *, next_id: str = "done", title: str = "Echo") -> dict[str, Any]:
    """Version VERSION of echo.tool with a `set` step first; NEXT_ID names its successor."""
    m = echo_tool(version, version - 1, title=title)
    m["flow"]["nodes"] = [
        {
            "id": "keep",
            "type": "set",
            "target": "said",
            "value": {"$ref": "input.text"},
            "next": next_id,
        },
        {"id": "done", "type": "return", "value": {"said": {"$ref": "said"}}},
    ]
    m["flow"]["entry"] = "keep"
    return m


def pretty(m: dict[str, Any]) -> str:
    return orjson.dumps(m, option=orjson.OPT_INDENT_2).decode()


# -- where data goes, and the R4 ask ----------------------------------------------------------------


def test_an_uploaded_file_shows_its_flows_dashed_and_an_r4_run_asks_in_the_page(
    person: Person, store: Path
) -> None:
    page = person.page
    person.go("/import")
    page.set_input_files("#file", str(ROOT / "examples" / "flows" / "notes-web-answer.talostool"))
    page.select_option("#target", "talon")
    page.get_by_role("button", name="Check").click()
    assert page.locator(".issue-error").count() == 0
    flows = page.locator("svg path.flow")
    assert flows.count() == 2
    assert {flows.nth(i).get_attribute("stroke-dasharray") for i in range(2)} == {"6 4"}
    labels = page.locator("svg text.flow-label").all_text_contents()
    assert sorted(labels) == ["private: notes.list", "untrusted: desk.example.com"]
    assert "private:notes.list" in page.locator("table.flows").inner_text()
    person.shot("import-graph", "figure.graph")
    page.locator("#install").click()
    assert "Installed, off." in page.inner_text("main")
    assert page.locator("svg path.flow").count() == 2  # the tool's page draws the same facts
    page.locator("#enable").click()
    assert "R4" in page.inner_text("main")
    page.check("#confirm")
    page.locator("#confirm-enable").click()
    page.locator("#run").click()
    page.locator("#run-submit").click()  # no input schema: the input is {}
    # R4: the card again and one button for this run; nothing ran yet
    assert "it asks before every run" in page.inner_text("main")
    assert page.locator("#run-once").is_visible()
    assert page.locator("pre.json").inner_text().strip() == "{}"
    person.shot("run-ask")
    person.inert()


# -- a person's whole path ------------------------------------------------------------------------


def test_import_broken_then_fixed_install_enable_run_roll_back(
    person: Person, store: Path, tmp_path: Path
) -> None:
    install(store, tmp_path, echo_tool(), enable=True)
    page = person.page
    person.go("/")
    assert page.get_by_role("link", name="Echo").is_visible()
    person.shot("tools")

    # a broken file: every issue with its code, message, field, line:col and excerpt
    page.get_by_role("link", name="Import").click()
    page.fill("#source", pretty(two_steps(2, next_id="sve")))
    page.get_by_role("button", name="Check").click()
    issue = page.locator(".issue").first
    text = issue.inner_text()
    assert "FORGE_EDGE_MISSING" in text and "sve" in text
    assert "/flow/nodes/0/next" in text
    assert issue.locator(".where").inner_text().count(":") >= 2  # line:col
    assert '"next": "sve"' in issue.locator(".excerpt").inner_text()
    assert page.locator("#install").count() == 0
    person.shot("import-issues")

    # the fixed one: card, marks, flows, worst case, graph, and Install (off)
    page.fill("#source", pretty(two_steps(2, title="Echo, twice")))
    page.get_by_role("button", name="Check").click()
    assert page.locator(".issue-error").count() == 0
    assert page.locator(".card").first.inner_text().startswith("Echo, twice")
    assert page.locator("svg .node").count() == 2
    assert "transitions allowed" in page.inner_text("main")
    person.shot("import-clean")
    page.locator("#install").click()
    assert "Installed, off." in page.inner_text("main")
    assert listed(store)["echo.tool"]["version"] == 2 and not listed(store)["echo.tool"]["enabled"]

    # enable: the card and the diff from the version consented to, then an explicit confirm
    page.locator("#enable").click()
    body = page.inner_text("main")
    assert "What changed: v1 → v2" in body and "Echo, twice" in body
    from playwright.sync_api import expect

    expect(page.locator("#confirm-enable")).to_be_disabled()  # until the box is ticked (JS)
    person.shot("enable")
    page.check("#confirm")
    page.locator("#confirm-enable").click()
    assert "Turned on." in page.inner_text("main")
    assert listed(store)["echo.tool"]["enabled"]
    person.shot("tool")

    # run: a form from the input schema, the result with its ui card
    page.locator("#run").click()
    page.get_by_label("text (required)").fill("hello")
    page.locator("#run-submit").click()
    assert page.locator(".ui-card").inner_text().split() == ["Echo", "said", "said", "hello"]
    assert '"said": "hello"' in page.locator("#output").inner_text()
    person.shot("run-result")

    # roll back: v1 is current again, and the tool is off
    person.go("/tools/echo.tool")
    page.locator("#rollback").click()
    assert "Rolled back; the tool is off." in page.inner_text("main")
    assert listed(store)["echo.tool"] | {"enabled": False} == listed(store)["echo.tool"]
    assert listed(store)["echo.tool"]["version"] == 1
    person.inert()
    assert person.errors == []


def _propose(store: Path, tmp_path: Path, manifest: dict[str, Any]) -> Any:
    """`tool_create` through the real `mcp` client against `forgec mcp serve` on STORE."""
    from mcp_client import run_session

    args = ["mcp", "serve", "--store", str(store), "--db", str(tmp_path / "mcp-host.db")]
    args += ["--persona-labels", "tool.create"]

    async def body(session: Any) -> Any:
        names = {t.name for t in (await session.list_tools()).tools}
        # a model has no tool that could accept, enable or roll back
        assert not {n for n in names if any(w in n for w in ("accept", "enable", "roll"))}
        return await session.call_tool("tool_create", {"manifest": manifest, "target": "talos"})

    # Playwright's sync API keeps an event loop in this thread: the client runs in its own
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(run_session(args, body, timeout=90)))
    worker.start()
    worker.join(120)
    assert got, "the MCP client did not finish"
    return got[0]


def test_a_model_proposal_is_reviewed_accepted_then_enabled(
    person: Person, store: Path, tmp_path: Path
) -> None:
    install(store, tmp_path, echo_tool(), enable=True)
    proposal = echo_tool(2, 1)
    proposal["flow"]["nodes"][0]["value"] = {"said": "always this"}
    result = _propose(store, tmp_path, proposal)
    assert not result.is_error, result
    page = person.page
    person.go("/")
    assert "proposal 1" in page.get_by_role("row", name="Echo").inner_text()  # waiting
    person.go("/tools/echo.tool")
    page.locator("#review-1").click()
    body = page.inner_text("main")
    assert "Proposed by a model" in body and "2. Behaviour, step by step" in body
    # the behaviour diff: the return step's value, old → new
    behaviour = page.locator("table.behaviour").inner_text()
    assert "done" in behaviour and "always this" in behaviour
    assert "dynamic:echo.tool proposal 1" in page.locator(".card").nth(1).inner_text()
    person.shot("review")
    page.locator("#accept").click()
    assert "The proposal is current now" in page.inner_text("main")
    assert not listed(store)["echo.tool"]["enabled"]
    page.locator("#enable").click()
    assert "a model" in page.inner_text("main")
    page.check("#confirm")
    page.locator("#confirm-enable").click()
    assert "Turned on." in page.inner_text("main")
    assert listed(store)["echo.tool"] == {
        **listed(store)["echo.tool"],
        "version": 2,
        "enabled": True,
    }
    person.inert()


# -- text from a tool or a run is data -------------------------------------------------------------

SCRIPT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
LINK = '<a href="javascript:window.__pwned=3">click</a> javascript:window.__pwned=4'


def test_tool_and_run_text_render_inert(person: Person, store: Path, tmp_path: Path) -> None:
    hostile = echo_tool(
        title="T " + SCRIPT, description="D " + LINK + "\nsecond line", ui_title=SCRIPT
    )
    install(store, tmp_path, hostile, enable=True)
    page = person.page
    for path in ("/", "/tools/echo.tool", "/tools/echo.tool/enable", "/tools/echo.tool/run"):
        person.go(path)
        person.inert()
    person.go("/tools/echo.tool")
    assert SCRIPT in page.inner_text("h1")
    assert LINK in page.locator(".desc").first.inner_text()

    # a run's output carrying markup, a javascript: URL, ESC, CSI, C1 and bidi controls
    said = "\u202eevil\x1b[31m red \x9b " + SCRIPT + " " + LINK + " \u2066x\u2069"
    person.go("/tools/echo.tool/run")
    page.get_by_label("text (required)").fill(said)
    page.locator("#run-submit").click()
    person.inert()
    card = page.locator(".ui-card").inner_text()
    output = page.locator("#output").inner_text()
    for shown in (card, output):
        assert "\\u202e" in shown and "\\u2066" in shown
    # the card is safe text (`\\x1b`); the output is JSON text, which spells them its own way
    assert "\\x1b[31m" in card and "\\x9b" in card
    assert "\\u001b[31m" in output and "\\u009b" in output
    assert SCRIPT in card  # the markup is text on the page

    # an import whose node id, title and strings carry the same (raw ESC and bidi in the file)
    broken = pretty(echo_tool(title="X \u202e" + SCRIPT))
    broken = broken.replace('"id": "done"', '"id": "<script>window.__pwned=5</script>"')
    broken = broken.replace('"Echo said"', '"\x1b[2J\u202e' + LINK.replace('"', "'") + '"')
    person.go("/import")
    page.fill("#source", broken)
    page.get_by_role("button", name="Check").click()
    person.inert()
    assert page.locator(".issue").count() >= 1
    excerpts = page.locator(".issues").inner_text()
    assert "<script>" in excerpts or "\\u202e" in excerpts


# -- an attacker's page ----------------------------------------------------------------------------


@pytest.fixture
def attacker(screen: Screen) -> Iterator[str]:
    """A page on another origin of this machine (same site: 127.0.0.1) that posts a form
    turning a tool on, the moment it loads."""
    evil = (
        "<!doctype html><title>win a prize</title>"
        f'<form id="f" method="post" action="{screen.origin}/tools/echo.tool/enable">'
        '<input name="confirm" value="yes"><input name="csrf" value="guess">'
        '<input name="hash" value="x"></form>'
        '<script>document.getElementById("f").submit()</script>'
    ).encode()

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(evil)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Evil)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_cross_origin_post_is_refused(
    person: Person, store: Path, tmp_path: Path, attacker: str
) -> None:
    install(store, tmp_path, echo_tool())
    page = person.page
    with page.expect_navigation(url=person.screen.origin + "/tools/echo.tool/enable"):
        page.goto(attacker)
    assert "refused" in page.inner_text("body")
    assert not listed(store)["echo.tool"]["enabled"]
    # the same page in a browser that never opened the launch link: no token, refused first
    stranger = person.context.browser.new_context()
    try:
        page = stranger.new_page()
        with page.expect_navigation(url=person.screen.origin + "/tools/echo.tool/enable"):
            page.goto(attacker)
        assert "no token" in page.inner_text("body")
    finally:
        stranger.close()
    assert not listed(store)["echo.tool"]["enabled"]


def test_a_rebound_name_is_refused_even_with_the_token(browser: Any, screen: Screen) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        answer = page.goto(f"http://rebind.example:{screen.port}/?token={screen.token}")
        assert answer is not None and answer.status == 421
        assert context.cookies() == []  # no cookie was handed to the other name
    finally:
        context.close()


# -- accessibility ---------------------------------------------------------------------------------


def test_axe_finds_no_serious_violation_on_the_main_pages(
    browser: Any, screen: Screen, store: Path, tmp_path: Path
) -> None:
    if not AXE.exists():
        if os.environ.get("CI"):
            pytest.fail("axe-core is missing: npm ci in tests/browser")
        pytest.skip("axe-core is not installed (npm ci in tests/browser)")
    install(store, tmp_path, echo_tool(), enable=True)
    proposal = echo_tool(2, 1, title="Echo again")
    proposal["flow"]["nodes"][0]["value"] = {"said": "x"}
    _propose(store, tmp_path, proposal)
    # axe is injected as a script: this context alone lets the test's script past the CSP
    p = Person(browser, screen, bypass_csp=True)
    try:
        page = p.page
        checked = []
        for path in (
            "/",
            "/import",
            "/tools/echo.tool",
            "/tools/echo.tool/run",
            "/tools/echo.tool/review/1",
            "/tools/echo.tool/diff?a=1&b=p1",
        ):
            p.go(path)
            checked.append(_axe(page, path))
        p.go("/import")
        page.fill("#source", pretty(echo_tool(3, 2)))
        page.get_by_role("button", name="Check").click()
        checked.append(_axe(page, "/import (result)"))
        p.go("/tools/echo.tool/run")
        page.get_by_label("text (required)").fill("hi")
        page.locator("#run-submit").click()
        checked.append(_axe(page, "run result"))
        bad = [v for page_v in checked for v in page_v]
        assert bad == []
    finally:
        p.close()


def _axe(page: Any, where: str) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => {
            const r = await axe.run(document);
            return {passes: r.passes.length, bad: r.violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.map(n => n.target).join(' '))};
        }"""
    )
    assert found["passes"] > 10, f"axe did not really run on {where}"
    return [f"{where}: {v}" for v in found["bad"]]


def test_enable_with_the_keyboard_alone(person: Person, store: Path, tmp_path: Path) -> None:
    install(store, tmp_path, echo_tool())
    page = person.page
    person.go("/tools/echo.tool")

    def tab_to(element_id: str) -> None:
        for _ in range(60):
            page.keyboard.press("Tab")
            if (
                page.evaluate("() => document.activeElement && document.activeElement.id")
                == element_id
            ):
                return
        raise AssertionError(f"Tab never reached #{element_id}")

    tab_to("enable")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_to("confirm")
    page.keyboard.press("Space")
    assert page.is_checked("#confirm")
    tab_to("confirm-enable")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Turned on." in page.inner_text("main")
    assert listed(store)["echo.tool"]["enabled"]


# -- the login redirect stays on this origin (issue 30) ---------------------------------------------


def test_the_login_link_with_a_backslash_path_stays_on_this_origin(
    browser: Any, screen: Screen
) -> None:
    # the issue's measurement, in the browser: `/%5Cevil.example/?token=T` was answered
    # `Location: /\evil.example/`, which Chromium follows to http://evil.example/ (mapped to
    # this machine here, so a wrong redirect would land on a page we can see, not time out)
    context = browser.new_context()
    try:
        page = context.new_page()
        for path in ("/%5Cevil.example/", "/%5C%5Cevil.example/", "/%2F%2Fevil.example/"):
            page.goto(f"{screen.origin}{path}?token={screen.token}")
            assert page.url.startswith(screen.origin + "/"), (path, page.url)
    finally:
        context.close()


def test_chromium_reads_every_login_redirect_as_this_origin(browser: Any, screen: Screen) -> None:
    # the browser is the judge: for generated spellings (slashes, backslashes, encoded or not,
    # tabs, newlines, controls, dot segments, schemes, look-alikes), the real server's Location,
    # resolved by Chromium's own URL parser against the page, names this origin
    from hypothesis import given, settings
    from strategies import origin_escapes
    from test_screen import as_browser_sends, raw_get

    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{screen.origin}/?token={screen.token}")
        resolve = "([l, base]) => new URL(l, base).origin"

        @settings(max_examples=200, deadline=None)
        @given(path=origin_escapes())
        def check(path: str) -> None:
            target = as_browser_sends(path)
            status, location = raw_get(screen, f"{target}?token={screen.token}")
            if status != 303:  # the HTTP parser refused the request line: nothing to follow
                assert location is None
                return
            assert location is not None
            assert page.evaluate(resolve, [location, screen.origin + "/"]) == screen.origin

        check()
        # and the same for the raw spellings a browser never sends but a script or a proxy can
        for raw in ("/\\evil.example/", "/\\\\evil.example", "//evil.example/", "/\\/evil"):
            status, location = raw_get(screen, f"{raw}?token={screen.token}")
            assert status == 303 and location is not None
            assert page.evaluate(resolve, [location, screen.origin + "/"]) == screen.origin
    finally:
        context.close()


# -- the review and enable pages, the tools list, the graph (SPEC §23) --------------------------------


def _boxes_overlap(page: Any, selector: str) -> list[str]:
    """Pairs of SVG texts under SELECTOR whose boxes, as Chromium lays the text out, overlap."""
    return page.evaluate(
        """(sel) => {
            const boxes = [...document.querySelectorAll(sel)].map(t => [t.textContent, t.getBBox()]);
            const out = [];
            for (let i = 0; i < boxes.length; i++)
              for (let j = i + 1; j < boxes.length; j++) {
                const [ta, a] = boxes[i], [tb, b] = boxes[j];
                if (a.x < b.x + b.width && b.x < a.x + a.width &&
                    a.y < b.y + b.height && b.y < a.y + a.height) out.push(ta + ' / ' + tb);
              }
            return out;
        }""",
        selector,
    )


def test_a_64_step_graph_scrolls_in_its_frame_and_fits_on_demand(
    person: Person, store: Path, tmp_path: Path
) -> None:
    from test_screen_pages import long_flow

    install(store, tmp_path, long_flow(64))
    page = person.page
    person.go("/tools/long.flow")
    frame = page.locator(".graph-frame")
    height = frame.evaluate("f => f.getBoundingClientRect().height")
    assert height <= 0.7 * 860 + 2  # the frame holds the graph, however long the flow
    assert frame.evaluate("f => f.scrollHeight > f.clientHeight")  # and scrolls inside
    # Versions and Compare follow the frame, within a screen or so of its top
    top = frame.evaluate("f => f.getBoundingClientRect().top + window.scrollY")
    versions = page.locator("#versions-h").evaluate(
        "h => h.getBoundingClientRect().top + window.scrollY"
    )
    assert versions - top < height + 400
    assert _boxes_overlap(page, "svg text.edge-label, svg text.flow-label") == []
    page.get_by_role("button", name="Fit the whole flow").click()
    svg_h = page.locator(".graph-frame svg").evaluate("s => s.getBoundingClientRect().height")
    assert svg_h <= frame.evaluate("f => f.clientHeight")
    page.get_by_role("button", name="Actual size").click()
    assert page.locator(".graph-frame svg").evaluate("s => s.getBoundingClientRect().height") > 2000
    person.shot("long-graph")
    page.locator("#versions-h").scroll_into_view_if_needed()
    assert page.locator("#versions-h").is_visible()
    assert person.errors == []


def test_labels_drawn_by_chromium_do_not_overlap(person: Person, store: Path) -> None:
    # flow labels beside branch labels: the issue saw "unprivate: talon query"
    page = person.page
    for example, target in (
        ("flows/notes-web-answer.talostool", "talon"),
        ("talon-db-digest.talostool", "talon"),
        ("flows/mail-triage-cancel.talostool", "talon"),
        ("weekly-review.talostool", "talos"),
    ):
        person.go("/import")
        page.set_input_files("#file", str(ROOT / "examples" / example))
        page.select_option("#target", target)
        page.get_by_role("button", name="Check").click()
        page.locator("figure.graph svg").wait_for()  # the result page, not the form
        page.wait_for_load_state("load")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        texts = "svg text.edge-label, svg text.flow-label, svg text.cluster-label"
        assert page.locator(texts).count() > 0, example
        assert _boxes_overlap(page, texts) == [], example
        # and no label sits on a step's box
        on_nodes = page.evaluate(
            """(sel) => {
                const rects = [...document.querySelectorAll('svg .node rect')].map(r => r.getBBox());
                return [...document.querySelectorAll(sel)].filter(t => {
                    const a = t.getBBox();
                    return rects.some(b => a.x < b.x + b.width && b.x < a.x + a.width &&
                                           a.y < b.y + b.height && b.y < a.y + a.height);
                }).map(t => t.textContent);
            }""",
            texts,
        )
        assert on_nodes == [], example


def _digest(store: Path, tmp_path: Path) -> int:
    """The issue's measurement 1: talon-db-digest v1 turned on, and a model's proposal that
    drops `WHERE role = 'user'`, posts to #general instead of #team and reads 50 rows, not 20."""
    from test_screen_pages import SQL_V1, SQL_V2, digest, install_talon, propose

    install_talon(store, tmp_path, digest(SQL_V1, "team", 20), enable=True)
    return propose(store, digest(SQL_V2, "general", 50, version=2), target="talon")


def test_the_review_page_answers_first_and_shows_both_versions(
    person: Person, store: Path, tmp_path: Path
) -> None:
    number = _digest(store, tmp_path)
    page = person.page
    person.go("/")
    assert "1 proposal waits for your review, in 1 tool" in page.inner_text("#waiting-count")
    person.go(f"/tools/talon-db-digest/review/{number}")
    # the first line answers the question (SPEC §23), the gains listed in words below it
    first = page.locator("main > *").first
    assert first.evaluate("e => e.tagName") == "H1"
    assert first.inner_text().startswith("New power: this version can do ")
    assert first.inner_text().endswith(" v1 could not.")
    gains = page.locator("#verdict .gains").inner_text()
    assert "can post to #general (v1: #team)" in gains
    assert "can read up to 50 rows a query (v1: 20)" in gains
    # the gained steps are highlighted in the proposal's graph
    gained = page.locator("svg .node.gained .node-id").all_text_contents()
    assert "post" in gained and "query" in gained
    person.shot("review")
    # the cards: distinct headings, the differing rows marked on both sides
    current, proposed = page.locator(".card-current"), page.locator(".card-proposal")
    assert current.locator(".which").inner_text() == "v1 — current, you agreed to it"
    assert proposed.locator(".which").inner_text() == f"proposal {number} — proposed by a model"
    assert current.locator(".row.differs").count() >= 1
    assert proposed.locator(".row.differs").count() >= 1
    # Accept and Reject do not look alike
    colours = [
        page.locator(b).evaluate(
            "b => { const s = getComputedStyle(b); return [s.backgroundColor, s.color]; }"
        )
        for b in ("#accept", "#reject")
    ]
    assert colours[0] != colours[1]
    assert colours[1][0] in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")  # Reject is not filled
    # each version's text, and the line diff with the changed words marked
    marked = {
        kind: page.locator(f"table.textdiff mark.w-{kind}").all_inner_texts()
        for kind in ("del", "ins")
    }
    assert any("team" in m for m in marked["del"]) and any("general" in m for m in marked["ins"])
    assert any("20" in m for m in marked["del"]) and any("50" in m for m in marked["ins"])
    assert any("WHERE" in m for m in marked["del"])
    page.get_by_text("The whole text of v1").click()
    assert "WHERE role = 'user'" in page.locator("pre.source").first.inner_text()
    # the banner names the real reason: R3, asked every run for its flows
    banner = page.locator("#ask-banner").inner_text()
    assert "it sends your private data off the device" in banner and "(it is R3)" in banner
    assert "R4" not in banner
    person.inert()


def test_the_enable_and_run_pages_of_an_r3_tool_never_say_r4(
    person: Person, store: Path, tmp_path: Path
) -> None:
    from test_screen_pages import SQL_V1, digest, install_talon

    install_talon(store, tmp_path, digest(SQL_V1, "team", 20), enable=False)
    page = person.page
    person.go("/tools/talon-db-digest/enable")
    body = page.inner_text("main")
    assert "R4" not in body
    assert "(it is R3)" in page.inner_text("#ask-banner")
    assert (
        page.locator("main > *")
        .first.inner_text()
        .startswith("Turn on dynamic:talon-db-digest v1: everything it may do is new to you")
    )
    person.shot("enable")
    page.check("#confirm")
    page.locator("#confirm-enable").click()
    page.locator("#run").click()
    page.locator("#run-submit").click()
    ask = page.inner_text("#ask-banner")
    assert "(it is R3)" in ask and "R4" not in ask
    assert page.locator("#run-once").is_visible()


def test_the_tools_list_search_and_filters_in_the_browser(
    person: Person, store: Path, tmp_path: Path
) -> None:
    from forgec.store import Store

    with Store(store) as s:
        for i in range(500):
            s.install(orjson.dumps(echo_tool(tool_id=f"tool-{i:03d}", title=f"Tool number {i}")))
    _digest(store, tmp_path)
    from playwright.sync_api import expect

    page = person.page
    person.go("/")
    expect(page.locator("table.tools tbody tr")).to_have_count(501)
    assert "1 proposal waits for your review" in page.inner_text("#waiting-count")
    page.get_by_label("Search title or name").fill("digest")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#shown-count")).to_have_text("1 of 501 tools shown.")
    expect(page.locator("table.tools tbody tr")).to_have_count(1)
    page.get_by_role("link", name="Show all").first.click()
    page.get_by_label("only with proposals waiting").check()
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#shown-count")).to_have_text("1 of 501 tools shown.")
    expect(page.locator("table.tools tbody tr")).to_have_count(1)
    page.get_by_label("only with proposals waiting").uncheck()
    page.get_by_label("Risk").select_option("R3")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#risk")).to_have_value("R3")
    expect(page.locator("table.tools tbody tr")).to_have_count(1)
    rows = page.locator("table.tools tbody tr").all_inner_texts()
    assert len(rows) == 1 and "R3" in rows[0]
    person.shot("tools-filtered")
    person.inert()


def test_axe_finds_no_serious_violation_on_the_review_pages(
    browser: Any, screen: Screen, store: Path, tmp_path: Path
) -> None:
    if not AXE.exists():
        if os.environ.get("CI"):
            pytest.fail("axe-core is missing: npm ci in tests/browser")
        pytest.skip("axe-core is not installed (npm ci in tests/browser)")
    from test_screen_pages import long_flow

    number = _digest(store, tmp_path)
    install(store, tmp_path, long_flow(64))
    p = Person(browser, screen, bypass_csp=True)
    try:
        checked = []
        for path in (
            f"/tools/talon-db-digest/review/{number}",
            "/tools/talon-db-digest/enable",
            "/tools/long.flow",
            "/tools/long.flow/enable",
            "/?q=digest&waiting=1&risk=R3",
            "/?q=nothing-matches",
        ):
            p.go(path)
            checked.append(_axe(p.page, path))
        assert [v for page_v in checked for v in page_v] == []
    finally:
        p.close()
