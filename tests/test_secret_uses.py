"""The scanner judges a secret by its shape and its use (SPEC §14, last bullet of "Secrets
after folding"), measured with the generator of `secret_uses` — secrets outside the listed
categories, under secret-meaning names in many spellings and languages, in every use — and
held sound: the pass's fast screen still agrees with the full walk on documents built of
those uses."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secret_uses import (
    HEADS,
    OTHER_HEADERS,
    SECRET_HEADERS,
    cases,
    flow_cases,
    flow_found,
    negative_cases,
    rate,
    wider_cases,
    wider_negative_cases,
)

from forgec.passes.secrets import find_secrets, walk_secrets
from forgec.secretscan.names import name_class

# the generator measured 51% before the scanner judged use and every spelling, 9% after
MISS_RATE_BOUND = 0.12


def test_the_miss_rate_on_generated_secrets_is_low() -> None:
    miss, examples = rate(lambda doc: bool(find_secrets(doc)), cases(1500, seed=7))
    assert miss <= MISS_RATE_BOUND, (miss, examples)


# Issue 30: the generator widened to neutral names, uses (a header pair, Basic credentials, a
# username/password pair, URL userinfo in a value, a template or prose, secret-meaning query
# parameters) and shapes (a prefixed token alone, in a list, at a key, inside `name=value`
# text) missed 19.3% before the scanner judged those (embedded tokens, a password used as a
# header value, `sig`/`signature`/`session` names, prefixed tokens from 27 characters), 3.2%
# after; the original generator 9.3% → 7.2%; secrets assembled across sets, templates,
# defaults and loops 0.7% (2 of 300) → 0.
WIDER_MISS_RATE_BOUND = 0.06
FLOW_MISS_RATE_BOUND = 0.03


def test_the_miss_rate_on_the_wider_generator_is_low() -> None:
    miss, examples = rate(lambda doc: bool(find_secrets(doc)), wider_cases(1200, seed=7))
    assert miss <= WIDER_MISS_RATE_BOUND, (miss, examples)


def test_secrets_assembled_from_literals_are_found_by_the_check() -> None:
    miss, examples = rate(flow_found, flow_cases(120, seed=7))
    assert miss <= FLOW_MISS_RATE_BOUND, (miss, examples)


def test_ordinary_values_in_the_wider_uses_stay_clean() -> None:
    flagged, examples = rate(lambda doc: not find_secrets(doc), wider_negative_cases(seed=7))
    assert flagged == 0, examples


def test_screen_matches_walk_on_the_wider_uses() -> None:
    for _, doc in wider_cases(400, seed=11):
        assert find_secrets(doc) == walk_secrets(doc), doc


def test_ordinary_values_in_the_same_uses_stay_clean() -> None:
    flagged, examples = rate(lambda doc: not find_secrets(doc), negative_cases(seed=7))
    assert flagged == 0, examples


def test_every_head_of_the_vocabulary_means_a_secret() -> None:
    for head in HEADS:
        if head in ("sid", "session id"):
            continue  # an identifier as often as a secret (Twilio's account SID)
        assert name_class(head) is not None, head
        assert name_class("my_" + head.replace(" ", "_")) is not None, head
        if head.isascii():
            # (upper case outside ASCII is a known gap: the screen folds ASCII only)
            assert name_class(head.replace(" ", "_").upper()) is not None, head


_values = st.one_of(
    st.sampled_from(
        [
            "Zk3q9XvL2mPw8RtY6nBc4HfJ",
            "tq_9fKx2LmP8wQ4zR7vY3nB6cH1d",
            "Bearer Zk3q9XvL2mPw8RtY6nBc4HfJ",
            "SSWS 00aBcD3fGh1JkLmN0pQrStUvWxYz",
            "Xr6nlI17lluAS%q",
            "application/json",
            "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
            "the key to a good week",
        ]
    ),
    st.text(max_size=40),
)
_header_names = st.sampled_from([*SECRET_HEADERS, *OTHER_HEADERS, "Authorization", "Accept"])
_names = st.one_of(_header_names, st.sampled_from([*HEADS, "key", "name", "headers"]))
_pair_keys = st.sampled_from(["name", "key", "header", "field", "param", "variable"])


@st.composite
def _documents(draw: st.DrawFn) -> Any:
    """Headers objects and lists, pairs in every layout, secret-meaning names around them."""
    pairs = st.builds(
        lambda k, n, v, first: {k: n, "value": v} if first else {"value": v, k: n},
        _pair_keys,
        _names,
        _values,
        st.booleans(),
    )
    headers = st.one_of(
        st.dictionaries(_header_names, st.one_of(_values, st.just({"$credential": "gh"}))),
        st.lists(pairs, max_size=3),
    )
    member = st.one_of(
        st.tuples(st.sampled_from(["headers", "extraHeaders", "header"]), headers),
        st.tuples(_names, st.one_of(_values, pairs)),
    )
    return {"input": dict(draw(st.lists(member, max_size=4)))}


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(_documents())
def test_screen_matches_walk_on_uses(raw: Any) -> None:
    assert find_secrets(raw) == walk_secrets(raw)


def test_every_text_keyword_holds_a_screen_stem() -> None:
    """The screen finds a string only by a stem, a literal or a long run: a `name=value`
    keyword without a stem would be a finding the screen never looks at."""
    from forgec.secretscan.names import SCREEN_STEMS
    from forgec.secretscan.rules import _MORE_KEYWORDS

    for keyword in _MORE_KEYWORDS:
        low = keyword.encode().lower()
        assert any(stem.encode() in low for stem in SCREEN_STEMS), keyword
