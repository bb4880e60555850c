"""How fast is the secret scanner on an ordinary and on an adversarial 64 KiB manifest?

Prints the median time of:
  - `orjson.loads` of the ordinary manifest (the floor every check is compared with)
  - the secrets pass (`find_secrets`) on the ordinary manifest: the common, clean case, where
    the pass screens the document at C speed and never walks it
  - the pass on the same manifest with an `apiKey` property in its input schema: a secret-like
    key whose flat value is judged on the spot (nothing under it: no walk)
  - the pass with a `{"name": "X-Api-Key", "value": …}` header pair: judged on the spot too
  - the same pair written value first: that layout sends the pass on a walk, which scans only
    the strings the screen found and those under secret-like names
  - the full walk (`walk_secrets`) on the same manifest: what every scan would cost without the
    screen
  - the pass on a 64 KiB manifest of adversarial text (100k spaces, repeated quotes, `a`*60000,
    `-----BEGIN` and `://` and `xoxb-` repeated, long base64 runs)
  - `scan_text` on each adversarial 64 KiB string, worst of them

Run by hand: `python benchmarks/bench_secrets.py`. Not a CI gate.
"""

from __future__ import annotations

import functools
import random
import string
import sys
from pathlib import Path
from typing import Any

import _timing
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from forgec.passes.secrets import find_secrets, walk_secrets  # noqa: E402
from forgec.secretscan.rules import scan_text  # noqa: E402

LIMIT = 65_536

# every measurement here starts after three untimed calls
median_seconds = functools.partial(_timing.median_seconds, warmup=3)


def ordinary_manifest() -> dict[str, Any]:
    """64 nodes with realistic prose, templates, URLs and schemas, just under 64 KiB."""
    nodes: list[dict[str, Any]] = []
    for i in range(63):
        nxt = f"n{i + 1}" if i < 62 else "done"
        if i % 3 == 0:
            nodes.append(
                {
                    "id": f"n{i}",
                    "type": "capability",
                    "capability": "tasks.create",
                    "input": {
                        "title": {"$template": f"Follow up {i} on {{{{input.topic}}}}"},
                        "notes": "Created by the weekly planning tool from the meeting notes; "
                        "it lists what each person owes and the date it is due. " * 22,
                        "due": "2026-12-01",
                    },
                    "target": f"t{i}",
                    "retry": {"attempts": 2, "backoffMs": 250},
                    "compensation": "tasks.setStatus",
                    "next": nxt,
                }
            )
        elif i % 3 == 1:
            nodes.append(
                {
                    "id": f"n{i}",
                    "type": "set",
                    "target": f"v{i}",
                    "value": {
                        "task": {"$ref": f"t{i - 1}.id"},
                        "label": f"step {i}: summarise the open items and their owners",
                        "link": f"https://tasks.example.com/board/{i}?view=week",
                    },
                    "next": nxt,
                }
            )
        else:
            nodes.append(
                {
                    "id": f"n{i}",
                    "type": "llm",
                    "op": "summarize",
                    "input": {"text": {"$ref": f"v{i - 1}.label"}},
                    "target": f"s{i}",
                    "next": nxt,
                }
            )
    nodes.append({"id": "done", "type": "return", "value": {"ok": True}})
    manifest: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "bench.secrets",
        "version": 1,
        "title": "Benchmark tool",
        "description": "Plans the week from open tasks and notes.",
        "createdAt": "2026-11-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": "What the week is about."},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["topic"],
        },
        "flow": {"entry": "n0", "maxTransitions": 256, "nodes": nodes},
    }
    while len(orjson.dumps(manifest)) > LIMIT:
        nodes.pop(-2)
        nodes[-2]["next"] = "done"
    return manifest


def adversarial_strings() -> dict[str, str]:
    rng = random.Random(7)
    b64 = string.ascii_letters + string.digits + "+/"
    return {
        "spaces": " " * 100_000,
        "quotes": '"' * 100_000,
        "a-run": "a" * 60_000,
        "begin": "-----BEGIN " * 6000,
        "scheme": "://" * 22_000,
        "slack": ("xo" + "xb-") * 13_000,
        "base64": "".join(rng.choice(b64) for _ in range(LIMIT)),
    }


def adversarial_manifest() -> dict[str, Any]:
    strings = adversarial_strings()
    share = LIMIT // len(strings) - 64
    raw = {name: text[:share] for name, text in strings.items()}
    while len(orjson.dumps(raw)) > LIMIT:  # quotes double when escaped
        raw["quotes"] = raw["quotes"][: len(raw["quotes"]) // 2]
    return raw


def main() -> None:
    ordinary = ordinary_manifest()
    data = orjson.dumps(ordinary)
    adversarial = adversarial_manifest()
    loads = median_seconds(lambda: orjson.loads(data), repeat=200)
    screened = median_seconds(lambda: find_secrets(ordinary), repeat=200)
    named = ordinary_manifest()
    named["inputSchema"]["properties"]["apiKey"] = {"type": "string"}
    with_key = median_seconds(lambda: find_secrets(named), repeat=100)
    paired = ordinary_manifest()
    paired["inputSchema"]["x-headers"] = [{"name": "X-Api-Key", "value": {"$credential": "k"}}]
    with_pair = median_seconds(lambda: find_secrets(paired), repeat=100)
    walking = ordinary_manifest()
    walking["inputSchema"]["x-headers"] = [{"value": {"$credential": "k"}, "name": "X-Api-Key"}]
    with_walk = median_seconds(lambda: find_secrets(walking), repeat=100)
    walked = median_seconds(lambda: walk_secrets(ordinary), repeat=20)
    attacked = median_seconds(lambda: find_secrets(adversarial), repeat=20)
    print(
        f"ordinary manifest: {len(data)} bytes; adversarial: {len(orjson.dumps(adversarial))} bytes"
    )
    print(f"  orjson.loads                  {loads * 1e6:9.0f} µs   1.0x")
    print(f"  secrets pass (screened)       {screened * 1e6:9.0f} µs  {screened / loads:4.1f}x")
    print(f"  secrets pass, `apiKey` key    {with_key * 1e6:9.0f} µs  {with_key / loads:4.1f}x")
    print(f"  secrets pass, header pair     {with_pair * 1e6:9.0f} µs  {with_pair / loads:4.1f}x")
    print(f"  secrets pass, pair that walks {with_walk * 1e6:9.0f} µs  {with_walk / loads:4.1f}x")
    print(f"  full walk, every string       {walked * 1e6:9.0f} µs  {walked / loads:4.1f}x")
    print(f"  secrets pass, adversarial     {attacked * 1e6:9.0f} µs  {attacked / loads:4.1f}x")
    worst_name, worst = "", 0.0
    for name, text in adversarial_strings().items():
        t = median_seconds(lambda text=text: scan_text(text[:LIMIT]), repeat=10)  # type: ignore[misc]
        if t > worst:
            worst_name, worst = name, t
    print(f"  scan_text, worst 64 KiB adversarial string ({worst_name}): {worst * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
