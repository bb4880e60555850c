"""A templated URL's literal parts are checked like a literal URL's (SPEC §24, issue 30):
`http://status.test:99999/{{input.path}}` checked clean while the same URL without the template
was refused for its port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from forgec.catalog.urls import check_url, check_url_template
from forgec.ir.nodes import Ref

ROOT = Path(__file__).resolve().parent.parent

TOOL = """tool url-port {
  version 1
  title "Status"
  description "Checks a status page."
  created "2026-11-02T09:00:00Z"
  parent null
  network allowlist ["status.test"]
  input {type: "object", properties: {path: {type: "string"}}}
  flow entry fetch max 8 {
    fetch: resp = call net.http {method: "GET", url: "URL"} -> done
    done: return $resp.status
  }
}
"""


def _check(tmp_path: Path, url: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "status.forge"
    path.write_text(TOOL.replace("URL", url))
    return subprocess.run(
        [sys.executable, "-m", "forgec", "check", "--target", "talon", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        timeout=60,
        check=False,
    )


def test_the_port_of_a_templated_url_is_checked_through_the_cli(tmp_path: Path) -> None:
    for url, problem in (
        ("http://status.test:99999/{{input.path}}", "port 99999 is out of range"),
        ("http://status.test:0/{{input.path}}?q=1", "port 0 is out of range"),
        ("ftp://status.test/{{input.path}}", "only http: and https:"),
        ("https://user:pw@status.test/{{input.path}}", "user:password@"),
        ("https://status.test/a\\\\b/{{input.path}}", "backslash"),
        ("https://status..test/{{input.path}}", "empty label"),
    ):
        literal = _check(tmp_path, url.replace("{{input.path}}", "x"))
        templated = _check(tmp_path, url)
        for proc in (literal, templated):
            assert proc.returncode == 1, (url, proc.stdout, proc.stderr)
            assert "FORGEC_CAPABILITY_INPUT" in proc.stdout and problem in proc.stdout, url
    for fine in (
        "https://status.test/{{input.path}}",
        "https://status.test:8443/{{input.path}}",
        "http://status.test:{{input.path}}/",  # the port is the run's to judge
    ):
        proc = _check(tmp_path, fine)
        assert "FORGEC_CAPABILITY_INPUT" not in proc.stdout, (fine, proc.stdout)


SCHEMES = st.sampled_from(["http", "https", "HTTPS", "ftp", "javascript", "file"])
HOSTS = st.sampled_from(
    ["status.test", "a..b", "x%41.test", "bücher.de", "[::1]", "u:p@h.test", "h.test.", "1.2.3.4"]
)
PORTS = st.sampled_from(["", ":0", ":80", ":65535", ":65536", ":99999", ":x", ":"])
PATHS = st.sampled_from(["/", "/a/", "?q=", "#f", "/a b/", "/a\\b/", "/%2e/"])


@settings(max_examples=300, deadline=None)
@given(SCHEMES, HOSTS, PORTS, PATHS, st.sampled_from(["", "tail", "/x?y=1"]))
def test_a_placeholder_after_the_authority_changes_no_verdict(
    scheme: str, host: str, port: str, path: str, tail: str
) -> None:
    """Generator: a URL whose placeholder stands after the authority (in the path, query or
    fragment) is refused from its literal parts exactly when the URL with a harmless value in
    the placeholder's place is refused."""
    prefix = f"{scheme}://{host}{port}{path}"
    template = (prefix, Ref("input.path", ("input", "path"), ""), tail)
    assert bool(check_url_template(template)) == bool(check_url(prefix + "v" + tail)), prefix
