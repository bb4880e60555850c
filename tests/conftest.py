"""Test-wide settings: the hypothesis budget, and isolation (no test reads or writes the user's
real forgec data directory).

Hypothesis profiles: "ci" (chosen when CI is set, as `.ci/run` does) runs a fixed, derandomized
budget so a CI run is reproducible and its time is bounded; "dev" (the default: hypothesis' own
settings without the per-example deadline) draws fresh examples each run. `HYPOTHESIS_PROFILE=name` picks one explicitly. A test's own
`@settings(max_examples=...)` still wins over the profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# hypothesis' own defaults, but no per-example deadline: a deadline is a wall-clock assertion,
# and on a loaded 2-core machine a first example that imports a module or builds a parser
# takes far longer than 200 ms, failing the property for a reason that is not a property
settings.register_profile("dev", deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


# ---- the order tests are handed to pytest-xdist's workers ----------------------------------------

# Files whose single tests are the longest (real daemons through several restarts, a browser,
# pytest or a check in a child process, big property searches), measured with `--durations`
# (docs/performance.md, "The suite's time"). They are collected first so that, with
# `--dist worksteal` (pyproject's addopts), the two workers of a 2-core machine start on them and
# end together, instead of one worker meeting a 20-second test alone at the end of the run. The
# list only orders: a file missing from it, or one no longer long, costs balance, never a test.
LONG_FIRST = (
    "test_verdict_property.py",
    "test_talond_engine.py",
    "test_talond_daemon.py",
    "test_talond_labels.py",
    "test_talond_postgres.py",
    "test_pytest_plugin.py",
    "test_check_worst_case.py",
    "test_downstream.py",
    "test_mcp_clients.py",
    "test_screen_browser.py",
    "test_gt_builder.py",
    "test_install.py",
    "test_flows_bounded.py",
    "test_store_diff.py",
    "test_testing_properties.py",
    "test_verdict_bounds.py",
    "test_verdict.py",
    "test_screen_pages.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole


@pytest.fixture(autouse=True)
def _private_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    return home


@pytest.fixture
def daemons() -> Iterator[list[Any]]:
    """The `talond` processes a test starts (the daemon tests' `Daemon`s): any still running
    when the test ends is killed, so a failed test leaves no daemon behind."""
    started: list[Any] = []
    yield started
    for d in started:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(30)


# ---- outside tools: npm packages and Graphviz -------------------------------------------------


def unavailable(reason: str) -> None:
    """A test needs a tool this machine lacks: skip with REASON (one line), but fail under CI,
    which has every tool and must run every test."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run this test)")
    pytest.skip(reason)


def npm_packages(folder: Path) -> Path:
    """FOLDER's node_modules, installed from its lockfile (`npm ci`) the first time a test needs
    them; one install at a time across pytest-xdist workers (a file lock)."""
    import fcntl
    import hashlib

    marker = folder / "node_modules" / ".package-lock.json"
    if marker.exists():
        return folder / "node_modules"
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        unavailable(f"node and npm are not installed: the {folder.name} tests need them")
    tag = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    lock_path = Path(tempfile.gettempdir()) / f"forgec-npm-{tag}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--silent"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["no output"])[0]
                unavailable(f"`npm ci` in {folder} failed: {first}")
    return folder / "node_modules"


@pytest.fixture(scope="session")
def ts_client_packages() -> Path:
    """The TypeScript MCP client's packages (tests/clients), pinned by its lockfile."""
    return npm_packages(Path(__file__).resolve().parent / "clients")


@pytest.fixture(scope="session")
def graphviz_dot() -> str:
    dot = shutil.which("dot")
    if dot is None:
        unavailable("Graphviz `dot` is not installed (apt-get install graphviz)")
    assert dot is not None
    return dot
