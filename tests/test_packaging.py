"""Packaging (issue 22): `python -m build` makes an sdist and a wheel that carry the LICENSE (the
real Apache-2.0 text pyproject names), the grammar and its table cache, the instruction
templates and `py.typed`, with the version of `forgec.__version__`. `.ci/run` installs both
and runs a smoke test; this test reads what was built."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import forgec

ROOT = Path(__file__).resolve().parent.parent


def test_the_license_is_the_apache_2_text_pyproject_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert len(text.splitlines()) > 190  # the whole text, not a pointer to it


@pytest.mark.slow
def test_build_makes_an_sdist_and_a_wheel_with_everything(tmp_path: Path) -> None:
    pytest.importorskip("build")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    version = forgec.__version__
    wheel = tmp_path / f"forgec-{version}-py3-none-any.whl"
    sdist = tmp_path / f"forgec-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in tmp_path.iterdir())
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(f"forgec-{version}.dist-info/METADATA").decode()
    for wanted in (
        "forgec/grammar/forge.lark",
        "forgec/grammar/forge.lalr",
        "forgec/py.typed",
        f"forgec-{version}.dist-info/licenses/LICENSE",
    ):
        assert wanted in names, wanted
    assert any(n.startswith("forgec/templates/tool-instructions/") for n in names)
    assert f"Version: {version}" in meta and "License-Expression: Apache-2.0" in meta
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert f"forgec-{version}/LICENSE" in members
    assert f"forgec-{version}/forgec/grammar/forge.lalr" in members
