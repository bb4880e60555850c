"""The 1000-schedule minute (SPEC §19 fairness): 50 personas × 20 `* * * * *` schedules, the
default `[talond]` settings, and a model on loopback that answers at once.

The real daemon process runs on its default SQLite system database with the test clock
(`--clock-file`): the clock is set to each slot exactly when the measured minute starts, so
slot → start is real elapsed time from the moment the slot came. For each of `--minutes` slots
it reports how many of the schedules fired within the minute, and the p50 / p99 / max of
slot → start (a firing's start = its log line's arrival − its `elapsed`) and slot → end.

    python benchmarks/bench_talond.py [--personas 50] [--per-persona 20] [--minutes 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.server
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class Instant(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        body = b'{"choices": [{"message": {"role": "assistant", "content": "ok"}}]}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def setup(root: Path, personas: int, per: int, model_port: int, start: dt.datetime) -> Path:
    folder = root / "personas"
    for p in range(personas):
        sub = folder / f"p{p:02d}"
        sub.mkdir(parents=True)
        (sub / "persona.md").write_text(f"# p{p:02d}: a benchmark persona\n")
    config = root / "host.toml"
    config.write_text(
        f'db = "host.db"\n[persona]\nname = "p00"\nfolder = "personas"\n\n'
        f'[model]\nkind = "openai"\nbase_url = "http://127.0.0.1:{model_port}/v1"\n'
        'model = "instant"\n'
    )
    from forgec.daemon.clock import iso
    from forgec.host.db import connect

    conn = connect(root / "host.db")
    stamp = iso(start)
    with conn:
        conn.executemany(
            "INSERT INTO schedules (id, persona, thread_id, cron_expr, label, prompt, enabled,"
            " created_at, updated_at) VALUES (?, ?, 'main', '* * * * *', 'tick', 'tick', 1, ?, ?)",
            [
                (f"sch_{p:02d}_{i:02d}", f"p{p:02d}", stamp, stamp)
                for p in range(personas)
                for i in range(per)
            ],
        )
    conn.close()
    return config


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--personas", type=int, default=50)
    ap.add_argument("--per-persona", type=int, default=20)
    ap.add_argument("--minutes", type=int, default=3)
    args = ap.parse_args()
    total = args.personas * args.per_persona
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Instant)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    root = Path(tempfile.mkdtemp(prefix="bench-talond-"))
    start = dt.datetime(2026, 3, 2, 9, 0, 30, tzinfo=dt.UTC)
    config = setup(root, args.personas, args.per_persona, srv.server_port, start)
    clock = root / "clock"
    clock.write_text(repr(start.timestamp()))
    events: list[tuple[float, dict[str, Any]]] = []
    command = [sys.executable, "-m", "forgec", "talond", "--host-config", str(config)]
    command += ["--store", str(root / "none.db"), "--log-format", "json"]
    proc = subprocess.Popen(
        [*command, "--clock-file", str(clock)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append((time.monotonic(), json.loads(line)))

    threading.Thread(target=read, daemon=True).start()
    while not any(e["event"] == "started" for _, e in events):
        time.sleep(0.1)
    print(f"{total} schedules, {args.personas} personas, default [talond] settings")
    try:
        for minute in range(1, args.minutes + 1):
            slot = (start + dt.timedelta(minutes=minute)).replace(second=0)
            slot_text = slot.isoformat().replace("+00:00", "Z")
            came = time.monotonic()
            clock.write_text(repr(slot.timestamp()))
            deadline = came + 120
            while time.monotonic() < deadline:
                done = [
                    (t, e)
                    for t, e in list(events)
                    if e["event"] == "firing" and e.get("slot") == slot_text
                ]
                if len(done) >= total:
                    break
                time.sleep(0.2)
            ends = [t - came for t, e in done]
            starts = [t - came - float(str(e.get("elapsed", "0s")).rstrip("s")) for t, e in done]
            within = sum(1 for x in ends if x <= 60)
            statuses = {e["status"] for _, e in done}
            print(
                f"slot {slot_text}: {len(done)}/{total} fired ({within} within the minute;"
                f" {sorted(statuses)}); slot→start p50 {statistics.median(starts):.1f} s"
                f" p99 {pct(starts, 0.99):.1f} s max {max(starts):.1f} s;"
                f" slot→end p50 {statistics.median(ends):.1f} s p99 {pct(ends, 0.99):.1f} s"
            )
    finally:
        proc.terminate()
        proc.wait(60)
        srv.shutdown()
    db = root / "host.db"
    engine = db.with_name(db.name + ".dbos.sqlite")
    size = engine.stat().st_size if engine.exists() else 0
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM schedule_firings").fetchone()[0]
    print(
        f"engine state: {size / 1e6:.1f} MB for {rows} firings ({size / max(rows, 1):.0f} B each)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
