"""Folding reaches schema defaults and loop items (SPEC §14 "Secrets after folding", issue 18
measurement 10): a token assembled from an `inputSchema` default, a `state` default, an item of
a literal list a loop walks, or any combination of those is `FORGE_SECRET_FOUND` at the step
that forms it; the same shapes holding harmless pieces stay clean.

Every token is assembled at run time, so this file holds none a scanner would flag.
"""

from __future__ import annotations

import random
import string
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes

from forgec.api import check

_rng = random.Random(18)
BODY = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
PREFIX = "gh" + "p_"


def found(manifest: dict[str, Any]) -> list[str]:
    report = check(orjson.dumps(manifest))
    return [d.path for d in report.diagnostics if d.code == "FORGE_SECRET_FOUND"]


def _with_body(value: Any) -> list[dict[str, Any]]:
    return [
        {"id": "form", "type": "set", "target": "h", "value": value, "next": "r"},
        {"id": "r", "type": "return", "value": {"v": {"$ref": "h"}}},
    ]


def input_default(prefix: str) -> dict[str, Any]:
    m = manifest_with_nodes(_with_body({"$template": "token {{input.pre}}" + BODY}))
    m["inputSchema"] = {
        "type": "object",
        "properties": {"pre": {"type": "string", "default": prefix}},
    }
    return m


def state_default(prefix: str) -> dict[str, Any]:
    m = manifest_with_nodes(_with_body({"$template": "token {{state.pre}}" + BODY}))
    m["state"] = {"fields": {"pre": {"type": "string", "default": prefix}}, "maxBytes": 1024}
    return m


def loop_item(prefix: str) -> dict[str, Any]:
    return manifest_with_nodes(
        [
            {
                "id": "each",
                "type": "foreach",
                "source": ["hello", prefix, "world"],
                "itemVar": "piece",
                "maxItems": 3,
                "body": [
                    {
                        "id": "form",
                        "type": "set",
                        "target": "h",
                        "value": {"$template": "token {{piece}}" + BODY},
                    }
                ],
                "next": "r",
            },
            {"id": "r", "type": "return", "value": {"v": 1}},
        ]
    )


SHAPES = {"input default": input_default, "state default": state_default, "loop item": loop_item}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_token_from_a_default_or_a_loop_item_is_found_at_the_step(shape: str) -> None:
    paths = found(SHAPES[shape](PREFIX))
    assert paths and all(p.startswith("/flow/nodes/0") for p in paths), paths


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_same_shape_with_a_harmless_piece_is_clean(shape: str) -> None:
    assert found(SHAPES[shape]("hello ")) == []


def test_a_combination_of_a_default_a_state_default_and_a_loop_item_is_found() -> None:
    # "gh" from the input default, "p" from state, "_" + the body from a loop item: no two of
    # them spell the token, only the three together
    m = manifest_with_nodes(
        [
            {
                "id": "each",
                "type": "foreach",
                "source": {"$ref": "parts"},
                "itemVar": "tail",
                "indexVar": "i",
                "maxItems": 4,
                "body": [
                    {
                        "id": "form",
                        "type": "set",
                        "target": "h",
                        "value": {"$template": "token {{input.a}}{{state.b}}{{tail}}" + BODY[4:]},
                    }
                ],
                "next": "r",
            },
            {"id": "r", "type": "return", "value": {"v": 1}},
        ]
    )
    m["flow"]["nodes"].insert(
        0,
        {
            "id": "p",
            "type": "set",
            "target": "parts",
            "value": ["x", "_" + BODY[:4]],
            "next": "each",
        },
    )
    m["flow"]["entry"] = "p"
    m["inputSchema"] = {
        "type": "object",
        "properties": {"a": {"type": "string", "default": "gh"}},
    }
    m["state"] = {"fields": {"b": {"type": "string", "default": "p"}}, "maxBytes": 1024}
    assert found(m) == ["/flow/nodes/1/body/0"]


PLACEHOLDER = {"input": "{{input.a}}", "state": "{{state.b}}", "loop": "{{it}}", "set": "{{w}}"}


@settings(deadline=None)  # a whole check each; a loaded machine is slow
@given(st.permutations(list(PLACEHOLDER)), st.integers(1, 3))
def test_any_split_of_the_token_over_the_four_sources_is_found(order: list[str], cut: int) -> None:
    token = PREFIX + BODY
    # the token's head in four short pieces, one from each kind of constant, in ORDER
    bounds = [0, cut, cut + 2, cut + 4, cut + 6]
    pieces = {k: token[bounds[i] : bounds[i + 1]] for i, k in enumerate(order)}
    template = "token " + "".join(PLACEHOLDER[k] for k in order) + token[cut + 6 :]
    m = manifest_with_nodes(
        [
            {"id": "s", "type": "set", "target": "w", "value": pieces["set"], "next": "each"},
            {
                "id": "each",
                "type": "foreach",
                "source": ["zz", pieces["loop"]],
                "itemVar": "it",
                "maxItems": 2,
                "body": [
                    {"id": "form", "type": "set", "target": "h", "value": {"$template": template}}
                ],
                "next": "r",
            },
            {"id": "r", "type": "return", "value": {"v": 1}},
        ]
    )
    m["inputSchema"] = {
        "type": "object",
        "properties": {"a": {"type": "string", "default": pieces["input"]}},
    }
    m["state"] = {"fields": {"b": {"type": "string", "default": pieces["state"]}}, "maxBytes": 64}
    assert found(m) == ["/flow/nodes/1/body/0"]


@pytest.mark.parametrize(("head", "kept"), [("é" * 4095 + "x", True), ("é" * 4096, False)])
def test_a_folded_value_is_unknown_exactly_past_256_kib_of_compact_json(
    head: str, kept: bool
) -> None:
    """SPEC §16: the limit is the run's (compact JSON bytes, two-byte characters included),
    decided before the parts are joined: 32 copies of HEAD are 262,114 bytes or 262,146."""
    from forgec.passes.folding import folded_templates

    nodes = [
        {"id": "s0", "type": "set", "target": "a0", "value": head, "next": "s1"},
        {
            "id": "s1",
            "type": "set",
            "target": "a",
            "value": {"$template": "{{a0}}" * 8},
            "next": "s2",
        },
        {
            "id": "s2",
            "type": "set",
            "target": "h",
            "value": {"$template": "{{a}}" * 4},
            "next": "r",
        },
        {"id": "r", "type": "return", "value": {"v": {"$ref": "h"}}},
    ]
    report = check(orjson.dumps(manifest_with_nodes(nodes)))
    sizes = {
        f.node.id: [len(orjson.dumps(t)) for t in f.texts]
        for f in folded_templates(report.ir, report.facts)
    }
    if kept:
        assert sizes["s2"] == [262_114]
    else:
        assert "s2" not in sizes  # unknown: the run would stop with RUN_VALUE_TOO_LARGE
