"""Test-wide settings: the hypothesis budget, and isolation (no test reads or writes the user's
real forgec data directory).

Hypothesis profiles: "ci" (chosen when CI is set, as `.ci/run` does) runs a fixed, derandomized
budget so a CI run is reproducible and its time is bounded; "dev" (the default: hypothesis' own
settings without the per-example deadline) draws fresh examples each run. `HYPOTHESIS_PROFILE=name` picks one explicitly. A test's own
`@settings(max_examples=...)` still wins over the profile.
"""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture(autouse=True)
def _private_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    return home
