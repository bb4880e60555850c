"""A check with a budget: `forgec.check` in a worker process that is killed when it overruns.

The servers (MCP, language server, the Tool Forge screen) check what a model or an editor hands
them while they keep answering other requests (SPEC §16). Every pass is bounded by
construction, so a check of any input within the limits ends within 2 s; the budget is the
second wall, for what a bound got wrong: a check over it ends as the error
`FORGEC_CHECK_BUDGET` — the tool is not installed — never a hang, a crash or a server that
stops answering.

Why a process and not a thread (docs/analysis.md "Check budget"): a Python thread cannot be
stopped, and a long call into C (a serialiser on a huge value) holds the interpreter lock, so a
checking thread can stall the event loop it was meant to spare. A worker process can be killed
at the deadline whatever it is doing, and its memory is capped by the kernel (`RLIMIT_AS`), so
an input that needs gigabytes costs the worker, not the server. The worker is a long-lived
`python -m forgec.budget` (started once, reused; about 150 ms to start), so a check pays only
the pickling of its report (about 1 ms for a 64 KiB manifest) on top of the check itself. It
reads requests on stdin and answers on stdout, never the server's own streams.

`check_with_budget` blocks the calling thread until the report is back or the budget is spent;
a server calls it from a worker thread (`anyio.to_thread`, `run_in_executor`), which only waits
on a pipe. Workers are kept per process, a few idle ones reused; concurrent checks each get
their own worker, at most `MAX_WORKERS` at once (a caller past them waits for a slot within
its budget), so a flood of requests cannot start a flood of processes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from typing import Any

from forgec.api import DEFAULT_TARGET, Report, is_forge_source
from forgec.ir.diagnostics import make

__all__ = [
    "BUDGET_CODE",
    "DEFAULT_BUDGET_S",
    "STOPPED_CODE",
    "budget_report",
    "check_with_budget",
    "stopped_report",
]

BUDGET_CODE = "FORGEC_CHECK_BUDGET"  # only for time (SPEC §24)
STOPPED_CODE = "FORGEC_CHECK_STOPPED"  # every other way a budgeted check can stop
DEFAULT_BUDGET_S = 5.0  # SPEC §16
MEMORY_LIMIT = 1 << 30  # the worker's address space (RLIMIT_AS): 2× the checker's 512 MiB bound
START_TIMEOUT_S = 60.0  # a worker that cannot start on a loaded machine within this is a failure
IDLE_WORKERS = 2
# at most this many checks at once per process; a caller past them waits, within its budget, so
# a flood of requests cannot start a flood of workers
MAX_WORKERS = 4
# Test hook: with this set (by the test suite only), a check in a worker whose source holds
# `DELAY_MARKER` sleeps that many seconds first: a slow check on demand, beside fast ones.
DELAY_ENV = "FORGEC_TEST_CHECK_DELAY_S"
DELAY_MARKER = b"slow-check-on-purpose"

_HEADER = struct.Struct(">I")


def check_with_budget(
    source: str | bytes,
    *,
    path: str | None = None,
    target: str = DEFAULT_TARGET,
    budget_s: float | None = DEFAULT_BUDGET_S,
    facts: bool = True,
) -> Report:
    """`forgec.check(source, path=, target=)` in a worker process, within BUDGET_S seconds.

    Returns the check's `Report` (with the flow facts and the canonical manifest already
    computed, so nothing the caller reads next does unbudgeted work), or, when the check did
    not finish in time or its worker died (out of memory), a report holding the one error
    `FORGEC_CHECK_BUDGET`. `budget_s=None` checks in this process, without a budget.

    `facts=False` is for a caller that only shows the diagnostics (the language server): the
    flow facts a check defers (it reports no flow warning) are not computed, and
    `report.facts.flows` of such a report reads empty; the canonical manifest is not made."""
    if budget_s is None:
        from forgec.api import check

        return _complete(check(source, path=path, target=target), facts)
    # waiting for a free slot counts against the budget; starting a worker does not (servers
    # start one ahead, `warm_up`), so the check itself always gets the whole budget
    if not _SLOTS.acquire(timeout=budget_s):
        why = f"the checker was busy with other checks for {_seconds(budget_s)} (the check budget)"
        return budget_report(source, path, target, why)
    try:
        return _budgeted(source, path, target, budget_s, facts)
    finally:
        _SLOTS.release()


def _budgeted(
    source: str | bytes, path: str | None, target: str, budget_s: float, facts: bool
) -> Report:
    worker = _POOL.take()
    if worker is None:
        return budget_report(source, path, target, "the checker could not be started")
    started = time.monotonic()
    answer = worker.ask((source, path, target, facts), deadline=started + budget_s)
    if answer is None:
        worker.kill()
        if time.monotonic() - started >= budget_s:
            why = f"the check did not finish within {_seconds(budget_s)} (the check budget)"
            return budget_report(source, path, target, why)
        why = (
            "the check stopped before it finished: it needed more memory than a check may "
            "use, or its worker crashed"
        )
        return stopped_report(source, path, target, why)
    _POOL.give(worker)
    status, payload = answer
    if status != "ok":
        return stopped_report(source, path, target, f"the check stopped: {payload}")
    report: Report = payload
    return report


def budget_report(source: str | bytes, path: str | None, target: str, why: str) -> Report:
    """The report of a check stopped by its time budget: one `FORGEC_CHECK_BUDGET` error."""
    return _stopped(
        BUDGET_CODE,
        source,
        path,
        target,
        why,
        "split the tool into smaller ones, or ask the operator to raise the check budget",
    )


def stopped_report(source: str | bytes, path: str | None, target: str, why: str) -> Report:
    """The report of a check stopped for anything but time (memory, a crashed worker, a forgec
    bug): one `FORGEC_CHECK_STOPPED` error saying which (SPEC §24)."""
    return _stopped(
        STOPPED_CODE,
        source,
        path,
        target,
        why,
        "`forgec check FILE` on the same source shows what the checker says of it",
    )


def _stopped(
    code: str, source: str | bytes, path: str | None, target: str, why: str, hint: str
) -> Report:
    diag = make(code, "", f"{why}; the tool was not checked, so it cannot be installed", hint=hint)
    form = "forge" if is_forge_source(source, path) else "talostool"
    return Report(path=path, form=form, diagnostics=(diag,), marks=None, target=target)


def _slim(report: Report) -> Report:
    """REPORT with only what can always cross to the server: its diagnostics (exactly the
    check's), path, form and target. Used when the whole report cannot be pickled (a parse
    tree nested deeper than the pickler's recursion allows: the deep input's report is an
    error report anyway, so nothing the server shows is lost)."""
    return Report(
        path=report.path,
        form=report.form,
        diagnostics=report.diagnostics,
        marks=None,
        target=report.target,
    )


def _answer(report: Report, facts: bool) -> bytes:
    """The pickled answer for REPORT: the whole report, else its slim form (`_slim`)."""
    try:
        return pickle.dumps(("ok", _complete(report, facts)), protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        raise
    except Exception as exc:  # RecursionError while pickling, an unpicklable member
        if report.ok:  # a report a server would install from: all of it, or a stop
            why = f"its report could not be sent back ({type(exc).__name__})"
            return pickle.dumps(("error", why), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.dumps(("ok", _slim(report)), protocol=pickle.HIGHEST_PROTOCOL)


def _seconds(s: float) -> str:
    return f"{s:g} s"


def _complete(report: Report, facts: bool = True) -> Report:
    """Do in the worker what a reader of the report would otherwise do later, unbudgeted:
    the deferred flow analysis and the canonical manifest (or, without FACTS, drop the
    deferred analysis, which cannot cross a process boundary)."""
    if report.facts is not None:
        if facts:
            _ = report.facts.flows
            _ = report.facts.flow_joins
        else:
            report.facts.flows_pending = None
    if facts:
        _ = report.manifest
    return report


# ---------------------------------------------------------------------------------------------
# Workers


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "forgec.budget"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        self.ready = False

    def start(self) -> bool:
        """Wait for the worker's ready byte (it has imported the checker)."""
        if self.ready:
            return True
        got = self._read(1, time.monotonic() + START_TIMEOUT_S)
        self.ready = got == b"R"
        return self.ready

    def ask(self, request: Any, *, deadline: float) -> tuple[str, Any] | None:
        """Send one request; the answer, or None when the deadline passed or the worker died."""
        data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(_HEADER.pack(len(data)) + data)
            stdin.flush()
        except OSError:
            return None
        header = self._read(_HEADER.size, deadline)
        if header is None:
            return None
        body = self._read(_HEADER.unpack(header)[0], deadline)
        if body is None:
            return None
        try:
            answer = pickle.loads(body)
        except Exception:
            return None
        return answer if isinstance(answer, tuple) and len(answer) == 2 else None

    def _read(self, n: int, deadline: float) -> bytes | None:
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        chunks: list[bytes] = []
        while n > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                return None  # the worker exited
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def take(self) -> _Worker | None:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        try:
            worker = _Worker()
        except OSError:
            return None
        if not worker.start():
            worker.kill()
            return None
        return worker

    def give(self, worker: _Worker) -> None:
        with self._lock:
            if len(self._idle) < IDLE_WORKERS and worker.alive():
                self._idle.append(worker)
                return
        worker.kill()

    def warm(self) -> None:
        """Start one worker ahead of the first check (servers call this at start-up)."""
        worker = self.take()
        if worker is not None:
            self.give(worker)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOL = _Pool()
_SLOTS = threading.BoundedSemaphore(MAX_WORKERS)


def warm_up() -> None:
    """Start a worker now, so the first budgeted check does not wait for one (call it from a
    thread: it blocks until the worker has imported the checker)."""
    _POOL.warm()


def close_workers() -> None:
    """Stop the idle workers (a server shutting down; they also exit when this process does)."""
    _POOL.close()


# ---------------------------------------------------------------------------------------------
# The worker side: `python -m forgec.budget`


def _serve() -> None:  # pragma: no cover - runs in the worker process
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):
        pass
    # import what a check needs now, so the first one pays for the check only
    import forgec.backend
    import forgec.catalog
    import forgec.frontend.build
    import forgec.passes
    from forgec.api import check

    forgec.catalog.get_catalog("talos")
    forgec.catalog.get_catalog("talon")
    delay = float(os.environ.get(DELAY_ENV) or 0)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a check prints can corrupt the answers
    stdout.write(b"R")
    stdout.flush()
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        body = stdin.read(_HEADER.unpack(header)[0])
        try:
            source, path, target, facts = pickle.loads(body)
            if delay and DELAY_MARKER in (source.encode() if isinstance(source, str) else source):
                time.sleep(delay)
            report = check(source, path=path, target=target)
            data = _answer(report, facts)
        except MemoryError:
            return  # the parent sees the exit: over the memory a check may use
        except Exception as exc:  # a forgec bug: one line for the caller, never a traceback
            why = f"the checker failed ({type(exc).__name__}: {exc})"[:500]
            data = pickle.dumps(("error", why))
        stdout.write(_HEADER.pack(len(data)) + data)
        stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    _serve()
