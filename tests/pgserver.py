"""A throwaway PostgreSQL server for the daemon's several-daemons tests.

Debian's server binaries (`/usr/lib/postgresql/<v>/bin`, or `initdb` on PATH) run as an
unprivileged user (PostgreSQL refuses root): the current user when it is not root, else
`nobody`, in a fresh temp dir it owns, listening on a free loopback port with trust auth. With
`CI` set a missing server fails the tests instead of skipping them (`.ci/run` installs it).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest


def _bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields a URL base `postgresql://postgres@127.0.0.1:PORT`."""
    binaries = _bin()
    if binaries is None:
        message = "PostgreSQL server binaries (initdb, pg_ctl) are not installed"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    user: str | None = None
    if os.geteuid() == 0:
        user = "nobody"
    folder = Path(tempfile.mkdtemp(prefix="forgec-pg-"))
    if user is not None:
        shutil.chown(folder, user=user)
    data, log = folder / "data", folder / "log"
    port = _free_port()

    def run(*args: str) -> None:
        subprocess.run(
            [str(binaries / args[0]), *args[1:]],
            check=True,
            capture_output=True,
            user=user,
            cwd=folder,
            timeout=120,
        )

    try:
        run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        run("pg_ctl", "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        with suppress(subprocess.SubprocessError, OSError):
            run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)
