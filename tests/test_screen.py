"""The Tool Forge screen over plain HTTP: the real `forgec screen` as a subprocess, driven with
httpx as an attacker would (no browser): who may talk to it, what a change needs, and that its
JSON answers are the CLI's. The browser suite is tests/test_screen_browser.py; both share the
`Screen` harness below."""

from __future__ import annotations

import contextlib
import functools
import html
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes
from strategies import manifests, origin_escapes

from forgec.render.safe import UNSAFE_CHARACTERS, safe_text

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"Tool Forge screen: (http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+))\Z")


def forgec(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *argv],
        input=stdin,
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )


class Screen:
    """`forgec screen --no-open --port 0` on a store, until `stop()`."""

    def __init__(self, store: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "forgec", "screen", "--store", str(store), "--no-open", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        first: list[bytes] = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(60)
        line = first[0].decode().rstrip("\n") if first else ""
        m = LINE.match(line)
        if m is None:
            self.stop()
            raise AssertionError(f"first line {line!r}; stderr: {self.proc.stderr.read()!r}")  # type: ignore[union-attr]
        self.first_line = line
        self.url, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        self.origin = f"http://127.0.0.1:{self.port}"

    @contextlib.contextmanager
    def client(self, *, login: bool = True) -> Iterator[httpx.Client]:
        with httpx.Client(base_url=self.origin, timeout=60) as c:
            if login:
                r = c.get(f"/?token={self.token}")
                assert r.status_code == 303, r.text
            yield c

    def csrf(self, c: httpx.Client, page: str = "/import") -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', c.get(page).text)
        assert found, "no CSRF field in the page"
        return found.group(1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return int(self.proc.returncode)


def echo_tool(
    version: int = 1,
    parent: int | None = None,
    *,
    tool_id: str = "echo.tool",
    title: str = "Echo",
    description: str = "Says back what it is given.",
    ui_title: str = "Echo said",
) -> dict[str, Any]:
    """A tool that returns its input (a run's output is whatever the caller typed)."""
    return manifest_with_nodes(
        [{"id": "done", "type": "return", "value": {"said": {"$ref": "input.text"}}}],
        id=tool_id,
        version=version,
        parentVersion=parent,
        title=title,
        description=description,
        inputSchema={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "what to say"}},
            "required": ["text"],
        },
        ui={"title": ui_title, "values": [{"label": "said", "path": "said"}]},
    )


def write(tmp_path: Path, name: str, value: dict[str, Any] | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "tools.db"


@pytest.fixture
def screen(store: Path) -> Iterator[Screen]:
    s = Screen(store)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def empty_screen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Screen]:
    """One server on an empty store for the tests that only read (who may talk to it, what it
    refuses): starting one is most of such a test's time. A test that changes a store, or
    whose promise is about starting or stopping, has a `screen` of its own."""
    s = Screen(tmp_path_factory.mktemp("empty-screen") / "tools.db")
    yield s
    s.stop()


# -- who may talk to it --------------------------------------------------------------------------


def test_first_line_is_the_launch_url_on_loopback(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    assert LINE.match(screen.first_line)
    assert len(screen.token) >= 32


def test_without_the_token_nothing_is_served(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    with screen.client(login=False) as c:
        for path in ("/", "/import", "/static/screen.js", "/api/tools", "/tools/echo.tool"):
            r = c.get(path)
            assert r.status_code == 403, path
            assert "forgec screen" in r.text
        assert c.get("/?token=" + "x" * 43).status_code == 403
        c.cookies.set(f"forgec_screen_{screen.port}", "nope")
        assert c.get("/").status_code == 403


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_url(
    empty_screen: Screen,
) -> None:
    screen = empty_screen  # reads only: the module's server
    with screen.client(login=False) as c:
        r = c.get(f"/import?token={screen.token}")
        assert r.status_code == 303
        assert r.headers["location"] == "/import"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"forgec_screen_{screen.port}={screen.token};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        page = c.get("/import")
        assert page.status_code == 200 and screen.token not in page.text


def test_a_foreign_host_is_refused_even_with_the_cookie(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    with screen.client() as c:
        for host in ("evil.example", f"evil.example:{screen.port}", "127.0.0.1", "localhost:1"):
            assert c.get("/", headers={"Host": host}).status_code == 421, host
        assert c.get("/", headers={"Host": f"localhost:{screen.port}"}).status_code == 200


def test_every_answer_carries_the_policy(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    with screen.client() as c:
        for r in (c.get("/"), c.get("/static/screen.css"), c.get("/tools/no.such.tool")):
            csp = r.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "script-src 'self'" in csp
            assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
            assert r.headers["x-frame-options"] == "DENY"
        assert "<script>" not in c.get("/").text  # scripts only by src, from this origin
        assert ' style="' not in c.get("/import").text


def _install(store: Path, tmp_path: Path, manifest: dict[str, Any], name: str) -> None:
    done = forgec("tools", "install", str(write(tmp_path, name, manifest)), "--store", str(store))
    assert done.returncode == 0, done.stderr


def test_a_change_needs_this_origin_and_the_csrf_token(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    _install(store, tmp_path, echo_tool(), "echo.talostool")
    with screen.client() as c:
        token = screen.csrf(c, "/tools/echo.tool/enable")
        page = c.get("/tools/echo.tool/enable").text
        shown = re.search(r'name="hash" value="([^"]+)"', page)
        assert shown
        form = {"csrf": token, "hash": shown.group(1), "confirm": "yes"}
        attempts = [
            ({}, form),  # no Origin
            ({"Origin": "http://evil.example"}, form),
            ({"Origin": f"http://127.0.0.1:{screen.port + 1}"}, form),  # same site, other origin
            ({"Origin": "null"}, form),
            ({"Origin": screen.origin}, {**form, "csrf": "wrong"}),
            ({"Origin": screen.origin}, {k: v for k, v in form.items() if k != "csrf"}),
        ]
        for headers, data in attempts:
            r = c.post("/tools/echo.tool/enable", data=data, headers=headers)
            assert r.status_code == 403, (headers, data)
        assert not _enabled(store)
        # the same request from the page itself turns it on
        r = c.post("/tools/echo.tool/enable", data=form, headers={"Origin": screen.origin})
        assert r.status_code == 303
        assert _enabled(store)


def _enabled(store: Path) -> bool:
    listed = forgec("tools", "list", "--store", str(store), "--format", "json")
    return bool(orjson.loads(listed.stdout)[0]["enabled"])


def test_an_api_post_needs_the_csrf_header(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    body = orjson.dumps(echo_tool())
    with screen.client() as c:
        token = screen.csrf(c)
        assert (
            c.post("/api/check", content=body, headers={"Origin": screen.origin}).status_code == 403
        )
        ok = c.post(
            "/api/check", content=body, headers={"Origin": screen.origin, "X-CSRF-Token": token}
        )
        assert ok.status_code == 200


def test_a_huge_body_is_refused(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    with screen.client() as c:
        token = screen.csrf(c)
        r = c.post(
            "/api/check",
            content=b"{" + b" " * (2 * 1024 * 1024) + b"}",
            headers={"Origin": screen.origin, "X-CSRF-Token": token},
        )
        assert r.status_code == 413


def test_every_post_route_checks_the_csrf_token() -> None:
    # by construction: a POST route is made with `pages.action` (form field) or lives under
    # /api/ (the header, checked by the Guard); no other way exists
    from forgec.screen.app import ScreenConfig, build_app, route_table

    routes = route_table(build_app(ScreenConfig()))
    posts = [r for r in routes if "POST" in (r.methods or ())]
    assert posts
    for r in posts:
        assert r.path.startswith("/api/") or getattr(r.endpoint, "screen_action", False), r.path
    # the JSON API only checks text or tries a tool on a copy of the data (SPEC §22, a staged
    # run): nothing there accepts, rejects, enables or rolls back
    assert {r.path for r in posts if r.path.startswith("/api/")} == {
        "/api/check",
        "/api/inspect",
        "/api/tools/{tool:str}/try",
    }


# -- one code path with the CLI ------------------------------------------------------------------


def test_the_api_answers_in_the_cli_json_shapes(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    broken = echo_tool()
    broken["flow"]["nodes"][0]["next"] = "nowhere"
    for name, value in (("good.talostool", echo_tool()), ("bad.talostool", broken)):
        path = write(tmp_path, name, value)
        with screen.client() as c:
            token = screen.csrf(c)
            headers = {"Origin": screen.origin, "X-CSRF-Token": token}
            for what in ("check", "inspect"):
                cli = forgec(what, str(path), "--format", "json")
                api = c.post(f"/api/{what}?path={path}", content=path.read_bytes(), headers=headers)
                assert api.status_code == 200
                # the API names the file by its base name (the screen never reads a path)
                want = orjson.loads(cli.stdout.replace(str(path).encode(), path.name.encode()))
                assert api.json() == want, what
    _install(store, tmp_path, echo_tool(), "echo.talostool")
    cli = forgec("tools", "versions", "echo.tool", "--store", str(store), "--format", "json")
    with screen.client() as c:
        assert c.get("/api/tools/echo.tool/versions").json() == orjson.loads(cli.stdout)
        listed = forgec("tools", "list", "--store", str(store), "--format", "json")
        assert c.get("/api/tools").json() == orjson.loads(listed.stdout)


def test_a_cli_change_shows_on_the_next_load(screen: Screen, store: Path, tmp_path: Path) -> None:
    with screen.client() as c:
        assert "No tool is installed yet" in c.get("/").text
        _install(store, tmp_path, echo_tool(), "echo.talostool")
        page = c.get("/").text
        assert "dynamic:echo.tool" in page and ">off<" in page
        assert (
            forgec("tools", "enable", "echo.tool", "--yes", "--store", str(store)).returncode == 0
        )
        assert ">on<" in c.get("/").text


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_it(store: Path, signum: int) -> None:
    s = Screen(store)
    with s.client() as c:
        assert c.get("/").status_code == 200
    started = time.monotonic()
    s.proc.send_signal(signum)
    assert s.proc.wait(20) == 0
    assert time.monotonic() - started < 15
    s.stop()


def test_a_store_it_cannot_use_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-store"
    bad.write_bytes(b"this is not sqlite" * 100)
    done = forgec("screen", "--store", str(bad), "--no-open")
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("forgec: error:"), lines


# -- text from a tool is data --------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_every_printed_value_is_safe_text_then_escaped(text: str) -> None:
    # the one `finalize` hook: any text, in any template position, reaches the page escaped
    from forgec.screen.app import make_templates

    env = make_templates()
    page = env.from_string('<p title="{{ v }}">{{ v }}</p><pre>{{ Lines(v) }}</pre>').render(v=text)
    assert not (set(page) & UNSAFE_CHARACTERS - {"\n"})
    shown = re.match(r'<p title="(.*)">(.*)</p><pre>', page, re.S)
    assert shown
    assert html.unescape(shown.group(1)) == safe_text(text)
    assert html.unescape(shown.group(2)) == safe_text(text)
    assert "<" not in shown.group(2) and '"' not in shown.group(1)


# -- the check budget ----------------------------------------------------------------------------


def test_over_budget_through_the_real_server(store: Path) -> None:
    # the shared budgeted check (a worker process killed at the budget), its test hook making
    # one file slow: the import answers FORGEC_CHECK_BUDGET at the budget, nothing is
    # installed, and another page is answered while the slow check runs
    s = Screen(store, "--check-budget", "2", env={"FORGEC_TEST_CHECK_DELAY_S": "12"})
    try:
        with s.client() as c, s.client() as other:
            token = s.csrf(c)
            source = orjson.dumps(echo_tool(description="slow-check-on-purpose"))
            form = {"csrf": token, "source": source.decode(), "kind": "auto"}
            answered: list[float] = []

            def meanwhile() -> None:
                time.sleep(0.5)
                t = time.monotonic()
                assert other.get("/").status_code == 200
                answered.append(time.monotonic() - t)

            side = threading.Thread(target=meanwhile)
            started = time.monotonic()
            side.start()
            r = c.post(
                "/install", data=form, headers={"Origin": s.origin}, files={"file": ("", b"")}
            )
            took = time.monotonic() - started
            side.join(30)
            assert took < 9  # the budget (2 s) and a worker start on a loaded machine, not 12 s
            assert r.status_code == 422 and "FORGEC_CHECK_BUDGET" in r.text
            assert answered and answered[0] < 1.5
            assert "No tool is installed yet" in c.get("/").text
    finally:
        s.stop()


# -- any tool, any file: the pages hold ------------------------------------------------------------


@functools.cache
def _templates() -> Any:
    """The screen's templates, built once as the server builds them once (compiling a template
    was a third of an example's time)."""
    from forgec.screen.app import make_templates

    return make_templates()


def _page_of(template: str, **context: Any) -> str:
    return _templates().get_template(template).render(csrf="t", **context)


def _clean(page: str) -> None:
    # a newline and a tab are layout (the paste box keeps a source's tabs); nothing else raw
    assert not (set(page) & (UNSAFE_CHARACTERS - {"\n", "\t"}))
    assert "<script" not in page.split("</head>", 1)[1]


@settings(max_examples=40, deadline=None)
@given(manifests(), st.sampled_from(["T <script>alert(1)</script>", "\u202ex", "a\u2028b", "ok"]))
def test_any_valid_tool_renders_its_import_result(manifest: dict[str, Any], title: str) -> None:
    # a random valid tool, its title hostile: the import page's result (issues, card, facts,
    # graph as SVG) renders, every number in the SVG is finite, nothing unsafe reaches the page
    from forgec.api import check
    from forgec.screen import views

    manifest = {**manifest, "title": title}
    source = orjson.dumps(manifest)
    result = views.report_view(check(source), source)
    page = _page_of("import.html", result=result, source=views.source_text(source), exact="")
    _clean(page)
    if result["ok"]:
        graph = result["graph"]
        assert len(graph["nodes"]) >= 1
        for n in graph["nodes"]:
            assert all(map(math.isfinite, (n["x"], n["y"], n["w"], n["h"])))
        assert page.count('class="node ') == len(graph["nodes"])


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_any_bytes_render_as_issues(source: bytes) -> None:
    from forgec.api import check
    from forgec.screen import views

    result = views.report_view(check(source, path="x.talostool"), source)
    _clean(_page_of("import.html", result=result, source=views.source_text(source), exact=""))
    for issue in result["issues"]:
        assert issue["code"] and issue["message"]


# -- what the person saw is what is turned on, and what runs ---------------------------------------


def test_enable_turns_on_only_the_version_whose_card_was_shown(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    _install(store, tmp_path, echo_tool(), "v1.talostool")
    with screen.client() as c:
        page = c.get("/tools/echo.tool/enable").text
        shown = re.search(r'name="hash" value="([^"]+)"', page)
        assert shown
        token = screen.csrf(c)
        # meanwhile, another shell installs a version that sends data away
        v2 = echo_tool(2, 1, title="Echo v2")
        _install(store, tmp_path, v2, "v2.talostool")
        form = {"csrf": token, "hash": shown.group(1), "confirm": "yes"}
        r = c.post("/tools/echo.tool/enable", data=form, headers={"Origin": screen.origin})
        assert r.status_code == 409 and "changed since the page was shown" in r.text
        assert "Echo v2" in r.text  # the new card, to read again
        assert not _enabled(store)
        # and without the confirm box nothing happens either
        r = c.post(
            "/tools/echo.tool/enable",
            data={"csrf": token, "hash": shown.group(1)},
            headers={"Origin": screen.origin},
        )
        assert r.status_code == 422 and not _enabled(store)


def test_an_r4_run_asks_in_the_page_and_runs_only_the_version_shown(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    r4 = echo_tool()
    r4["flow"]["nodes"] = [
        {
            "id": "ask",
            "type": "capability",
            "capability": "net.http",
            "input": {"method": "GET", "url": "https://api.example.com/x"},
            "target": "got",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"said": {"$ref": "input.text"}}},
    ]
    r4["flow"]["entry"] = "ask"
    r4["network"] = {"mode": "allowlist", "hosts": ["api.example.com"]}
    path = write(tmp_path, "r4.talostool", r4)
    assert (
        forgec("tools", "install", str(path), "--store", str(store), "--target", "talon").returncode
        == 0
    )
    assert forgec("tools", "enable", "echo.tool", "--yes", "--store", str(store)).returncode == 0
    with screen.client() as c:
        token = screen.csrf(c)
        post = {"csrf": token, "in.text": "hi"}
        ask = c.post("/tools/echo.tool/run", data=post, headers={"Origin": screen.origin})
        assert ask.status_code == 200 and 'id="run-once"' in ask.text
        assert "it asks before every run" in ask.text
        # a confirm bound to another hash is asked again, never run
        again = c.post(
            "/tools/echo.tool/run",
            data={**post, "confirm": "yes", "hash": "sha256:" + "0" * 64},
            headers={"Origin": screen.origin},
        )
        assert 'id="run-once"' in again.text and "Status" not in again.text


def test_a_missing_screen_extra_is_one_line() -> None:
    code = (
        "import sys\n"
        "sys.modules['starlette'] = None\n"
        "from forgec.cli import main\n"
        "sys.exit(main(['screen', '--no-open']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "forgec: error: forgec screen needs the Tool Forge screen: pip install 'forgec[screen]'"
    ]


def test_help_imports_nothing_of_the_screen() -> None:
    code = (
        "import sys\n"
        "from forgec.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('starlette', 'jinja2', 'uvicorn', 'python_multipart', 'ada_url', 'forgec.screen')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _answer(guard: Any, method: str, headers: list[tuple[bytes, bytes]], query: bytes = b"") -> int:
    import anyio

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": "/x",
        "query_string": query,
        "headers": headers,
    }
    anyio.run(guard, scope, receive, send)
    return int(sent[0]["status"])


_HEADER_TEXT = st.text(st.characters(codec="latin-1"), max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    host=_HEADER_TEXT, origin=_HEADER_TEXT, method=st.sampled_from(["GET", "POST", "PUT", "DELETE"])
)
def test_the_guard_lets_through_only_this_host_token_and_origin(
    host: str, origin: str, method: str
) -> None:
    # any Host and Origin an attacker can send: only the exact pair of this server reaches the
    # app, and a change needs the exact Origin too (the CSRF token is the app's own check)
    from forgec.screen.security import Guard, Secrets

    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["method"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    keys = Secrets(port=4242)
    guard = Guard(app, keys)
    cookie = (b"cookie", f"{keys.cookie_name}={keys.token}".encode())
    for h in (host, "127.0.0.1:4242"):
        headers = [(b"host", h.encode("latin-1")), (b"origin", origin.encode("latin-1")), cookie]
        status = _answer(guard, method, headers)
        good_host = h in ("127.0.0.1:4242", "localhost:4242")
        good_origin = origin == f"http://{h}"
        allowed = good_host and (method in ("GET", "HEAD") or good_origin)
        assert (status == 200) == allowed, (h, origin, method, status)
    # without the cookie nothing passes, whatever the Host and Origin
    headers = [(b"host", b"127.0.0.1:4242"), (b"origin", b"http://127.0.0.1:4242")]
    assert _answer(guard, method, headers) == 403
    # a token in the URL that is not this run's is refused, a right one only becomes a cookie
    assert _answer(guard, "GET", headers, b"token=" + host.encode("latin-1")[:20]) in (403, 303)


def test_a_version_changed_outside_forgec_is_named_never_shown(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    import sqlite3

    _install(store, tmp_path, echo_tool(), "echo.talostool")
    _install(store, tmp_path, echo_tool(tool_id="other.tool", title="Other"), "other.talostool")
    with sqlite3.connect(store) as db:
        db.execute(
            "UPDATE versions SET manifest = replace(manifest, 'Says back', 'Sends away')"
            " WHERE tool_id = 'echo.tool'"
        )
    with screen.client() as c:
        tools = c.get("/")
        assert tools.status_code == 200
        assert "changed outside forgec" in tools.text and "Other" in tools.text
        assert "Sends away" not in tools.text
        for path in ("/tools/echo.tool", "/tools/echo.tool/enable", "/tools/echo.tool/run"):
            page = c.get(path)
            assert page.status_code == 409, path
            assert "changed outside forgec" in page.text and "Traceback" not in page.text
            assert "Sends away" not in page.text


def test_every_template_and_asset_ships_in_the_wheel() -> None:
    # a fresh install serves the screen only if pyproject's package-data names every file the
    # app reads from its package (no CDN, no build step)
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]["forgec"]
    package = ROOT / "forgec"
    assets = [
        p.relative_to(package).as_posix()
        for d in ("screen/templates", "screen/static")
        for p in (package / d).iterdir()
        if p.is_file()
    ]
    assert assets
    missing = [a for a in assets if not any(fnmatch.fnmatch(a, g) for g in globs)]
    assert missing == []


@settings(max_examples=40, deadline=None)
@given(manifests())
def test_a_loop_body_is_boxed_and_what_follows_the_loop_comes_after_it(
    manifest: dict[str, Any],
) -> None:
    from forgec.catalog import get_catalog
    from forgec.render.graph import graph_parts
    from forgec.screen.svg import layout

    parts = graph_parts(manifest, catalog=get_catalog("talos"))
    g = layout(parts)
    boxes = {n["key"]: n for n in g["nodes"]}
    loops = {n["loop"] for n in g["nodes"] if n["loop"] is not None}
    assert len(g["clusters"]) == len(loops)
    for loop in loops:
        inside = [n for n in g["nodes"] if n["loop"] == loop]
        bottom = max(n["y"] + n["h"] for n in inside)
        for e in parts["edges"]:
            if e["src"] == loop and e["label"] != "body" and e["dst"] in boxes:
                assert boxes[e["dst"]]["y"] > bottom  # the loop's successor is below its body


def test_reject_keeps_a_proposal_that_never_becomes_current(
    screen: Screen, store: Path, tmp_path: Path
) -> None:
    from forgec.store import Store

    _install(store, tmp_path, echo_tool(), "echo.talostool")
    with Store(store) as s:  # what `tool_create` does for an id that has versions
        s.install(orjson.dumps(echo_tool(2, 1, title="Model's")), author="model")
    with screen.client() as c:
        review = c.get("/tools/echo.tool/review/1")
        assert review.status_code == 200 and "Model&#39;s" in review.text
        token = screen.csrf(c, "/tools/echo.tool/review/1")
        origin = {"Origin": screen.origin}
        r = c.post("/tools/echo.tool/reject/1", data={"csrf": token}, headers=origin)
        assert r.status_code == 303
        assert 'id="review-1"' not in c.get("/tools/echo.tool").text
        again = c.post("/tools/echo.tool/accept/1", data={"csrf": token}, headers=origin)
        assert again.status_code == 409 and "rejected" in again.text
    versions = forgec("tools", "versions", "echo.tool", "--store", str(store), "--format", "json")
    rows = orjson.loads(versions.stdout)
    assert [r["status"] for r in rows if r["proposal"] == 1] == ["rejected"]
    assert [r["version"] for r in rows if r["current"]] == [1]


# -- the login redirect stays on this origin (issue 30) ---------------------------------------------


def raw_get(screen: Screen, target: str) -> tuple[int, str | None]:
    """GET TARGET on a raw socket, spelled exactly as given (httpx would mend it), with this
    screen's Host: the status and the Location."""
    import socket

    with socket.create_connection(("127.0.0.1", screen.port), timeout=30) as sock:
        sock.sendall(
            b"GET " + target.encode("latin-1") + b" HTTP/1.1\r\n"
            b"Host: 127.0.0.1:" + str(screen.port).encode() + b"\r\nConnection: close\r\n\r\n"
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    location = [h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("location:")]
    return status, location[0] if location else None


def as_browser_sends(path: str) -> str:
    """PATH as a browser puts it on the wire: printable ASCII as it is, every other byte
    percent-encoded (UTF-8)."""
    return "".join(
        c if 0x21 <= ord(c) <= 0x7E else "".join(f"%{b:02X}" for b in c.encode()) for c in path
    )


def test_the_login_redirect_of_a_backslash_path_stays_here(empty_screen: Screen) -> None:
    screen = empty_screen  # reads only: the module's server
    # the issue's measurement: `/%5Cevil.example/` was answered `Location: /\evil.example/`,
    # which a browser reads as http://evil.example/
    status, location = raw_get(screen, f"/%5Cevil.example/?token={screen.token}&a=1")
    assert status == 303
    assert location is not None and "\\" not in location
    assert location == "/%5Cevil.example/?a=1"  # the same page, as the request spelled it
    for target in ("/\\evil.example/", "//evil.example/", "/\\\\evil/", "/\\/evil"):
        assert raw_get(screen, f"{target}?token={screen.token}") == (303, "/"), target
    # a path that is `//host` only once its dots are resolved is still this origin, as sent
    assert (
        raw_get(screen, f"/x/..//evil.example/?token={screen.token}")[1] == "/x/..//evil.example/"
    )


@settings(max_examples=300, deadline=None)
@given(path=origin_escapes(), raw=st.booleans())
def test_no_path_makes_the_login_redirect_leave_the_origin(path: str, raw: bool) -> None:
    # the guard on any request path, raw or as a browser sends it: the Location it answers
    # resolves (WHATWG, as a browser resolves it) to this origin; the browser suite asks
    # Chromium itself the same question of the real server's answers
    import anyio
    from ada_url import URL

    from forgec.screen.security import Guard, Secrets

    keys = Secrets(port=4242)
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the login answers by itself")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    target = path if raw else as_browser_sends(path)
    scope = {
        "type": "http",
        "method": "GET",
        "path": urllib.parse.unquote(target),
        "raw_path": target.encode("utf-8", "surrogatepass"),
        "query_string": f"token={keys.token}".encode(),
        "headers": [(b"host", b"127.0.0.1:4242")],
    }
    anyio.run(Guard(app, keys), scope, receive, send)
    assert sent[0]["status"] == 303
    location = dict(sent[0]["headers"])[b"location"].decode("ascii")
    assert URL(location, "http://127.0.0.1:4242/").origin == "http://127.0.0.1:4242"
    if location != "/":
        assert location == target  # when it stays, it is the very path that was asked for


def test_an_upload_is_read_by_the_bounded_reader(empty_screen: Screen) -> None:
    """SPEC §24: the screen's upload goes through `forgec.frontend.reading` (at most the
    form's limit + 1 bytes, then FORGE_MANIFEST_TOO_LARGE), never read whole."""
    screen = empty_screen  # reads only: the module's server
    with screen.client() as c:
        token = screen.csrf(c)
        big = b"{" + b" " * (70 * 1024) + b"}"  # within the screen's body limit, over 64 KiB
        r = c.post(
            "/import",
            data={"csrf": token, "kind": "auto"},
            headers={"Origin": screen.origin},
            files={"file": ("big.talostool", big)},
        )
        assert "FORGE_MANIFEST_TOO_LARGE" in r.text, r.text[-2000:]
        assert "65,537 bytes or more" in r.text
