"""Staged runs (SPEC §22): the real Program on the real host's data, with every write and send
held back, and nothing visible afterwards.

`staged_database(path)` copies the host's SQLite database (the main file and its WAL, by
file copy: the real files are only read) into a private temporary folder; the reference host
is opened on the copy, so every read sees the real rows and every write lands in the copy —
an overlay that later steps of the same run read (a created task is listed by a later
`tasks.list`), the tool's saved state and the rows' labels included. The copy is deleted when
the host closes.

`StagedHost` wraps that host and lists each held-back effect — every call that is a write or
a send (the flow table's sinks, `forgec.runtime.sources_and_sinks.call_sink`) — as
`{"node", "capability", "input", "labels"}`. A send (`net.http`, `channel.send`,
`persona.send`, `subagent.*`) is never made: its answer comes from a mock given for its step
(the tests file's mock format), or the run stops there and is reported as `"status":
"staged"`. Model steps, credentials and reads go to the host as in a real run.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from forgec.runtime import sources_and_sinks
from forgec.runtime.host import CallContext, ForwardingHost, HostError


def staged_database(path: Path) -> tuple[Path, Path]:
    """(the copy's path, its temporary folder): the database at PATH and its WAL, copied.
    A database that does not exist yet is an empty one (nothing is created at PATH)."""
    folder = Path(tempfile.mkdtemp(prefix="forgec-staged-"))
    copy = folder / "host.db"
    if path.is_file():
        shutil.copyfile(path, copy)
        for suffix in ("-wal",):
            side = path.with_name(path.name + suffix)
            if side.is_file():
                shutil.copyfile(side, copy.with_name(copy.name + suffix))
    return copy, folder


class StagedHost(ForwardingHost):
    """A reference host on a staged copy (see the module doc). `staged` lists the held-back
    effects in order; `stopped_at` names the send the run stopped at (None: it did not)."""

    def __init__(self, inner: Any, mocks: Iterable[Mapping[str, Any]] = ()) -> None:
        super().__init__(inner)
        self.mocks: dict[str, list[Mapping[str, Any]]] = {}
        for mock in mocks:
            self.mocks.setdefault(str(mock["step"]), []).append(mock)
        self.staged: list[dict[str, Any]] = []
        self.stopped_at: str | None = None

    def __getattr__(self, name: str) -> Any:  # labels, persona, db path, credential_hint, …
        return getattr(self.inner, name)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> StagedHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, capability: str, input: Any, context: CallContext) -> Any:
        sink = sources_and_sinks.call_sink(capability, input)
        if sink is None:
            return super().call(capability, input, context)
        entry = {
            "node": context.node_id,
            "capability": capability,
            "input": input,
            "labels": sorted(context.all_labels()),
        }
        if sources_and_sinks.sink_kind(sink) == "egress":
            if context.attempt == 1:
                self.staged.append(entry)
            queue = self.mocks.get(context.node_id)
            if queue:
                mock = queue.pop(0)
                if mock.get("error") is not None:
                    raise HostError(
                        "RUN_CAPABILITY_FAILED",
                        f"{capability}: {mock.get('message', 'mocked failure')}",
                        transient=mock.get("error") == "transient",
                    )
                return mock.get("result")
            self.stopped_at = context.node_id
            raise HostError(
                "RUN_CAPABILITY_FAILED",
                f"{capability} at `{context.node_id}` is held back (a staged run sends "
                "nothing); give the step a mock to go on",
            )
        result = super().call(capability, input, context)  # on the copy
        self.staged.append(entry)
        return result

    def result_json(self, result: Any) -> dict[str, Any]:
        """The run result (SPEC §8) with the held-back effects; `"status": "staged"` when the
        run stopped at a send (no error, no compensation: nothing happened)."""
        out: dict[str, Any] = result.to_json()
        if self.stopped_at is not None:
            out.update(status="staged", output=None, error=None, compensations=[])
            out["stoppedAt"] = self.stopped_at
        out["staged"] = list(self.staged)
        return out
