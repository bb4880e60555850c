"""Secret detection rules and the pure scanner `scan_text` (used by the pass and by hosts).

Algorithm, in one left-to-right pass over a string:

1. One master regex (`_MASTER`) finds *anchors*: provider prefixes at the start of a token
   (`ghp_`, `AKIA`, `xoxb-`, `sk-ant-`, … from `PROVIDERS`, arranged as a trie so `re` tests few
   branches per character), structural markers that may sit inside a token (`://` before a
   `user:pass@`, `-----BEGIN … PRIVATE KEY`, the `:AA` of a Telegram token, the `Q~` of an
   Azure secret, …) and secret-like keywords followed by an assignment (`api_key=…`,
   `"password": "…"`, `Bearer <token>`). Cheap look-arounds reject most non-candidates inside
   `re`; every quantifier is bounded and none is nested.
2. Each anchor is validated by its rule: the provider's exact shape (bounded lengths, a token
   boundary), then placeholder markers (`xxxx`, `example`, `your`, one repeated character…) and
   a randomness bar (entropy by alphabet, two character classes).
3. The scan resumes past what the validator examined (a rejected match still claims its span),
   or just past the anchor when nothing matched, so every character is examined a bounded
   number of times whatever the input: linear time. Tests check 64 KiB adversarial strings.

A string's key (`name`) adds one rule: a value under a secret-like name (`password`, `apiKey`,
`client_secret`, `Authorization`, …; camel, snake or kebab case) is a secret when it is not a
placeholder, template or reference, not an obvious non-secret shape (URL without password,
path, e-mail, date, version, hash named as such) and is random enough: Shannon entropy above a
threshold that depends on its alphabet (hex or not) and length, and at least two character
classes. Passwords get a lower bar (length 8 with a digit, a symbol or an inner capital) than
tokens (length 16).

Soundness contract with the pass's fast screen (`forgec.passes.secrets`): a finding on a string
`s` with no name always needs `s` to contain a run of 20+ characters of `[A-Za-z0-9_-]`
(`has_long_run`), one of `SCREEN_LITERALS` (ASCII, case-insensitive), or one of
`SCREEN_STEMS`; and a name only matters when it contains a stem. Rules that could fire without
these check it explicitly (`_has_run`). A hypothesis test holds the two paths equal.
"""

from __future__ import annotations

import binascii
import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

import attrs

from forgec.secretscan.names import (
    HEADER_USE,
    SCREEN_STEMS,
    is_headers_name,
    name_class,
    words,
)


class _LazyPattern:
    """A pattern compiled on its first use: most rules only run once the master regex has
    found an anchor, so a clean check (the common case) should not pay to compile them. The
    first attribute read compiles the pattern and keeps its bound methods on the instance, so
    every later `.search`/`.match` is an ordinary attribute read."""

    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        value = getattr(re.compile(self._source, self._flags), name)
        setattr(self, name, value)
        return value


def _lazy(source: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _LazyPattern(source, flags))


__all__ = [
    "HEADER_USE",
    "SCREEN_LITERALS",
    "SCREEN_STEMS",
    "SecretFinding",
    "has_long_run",
    "is_headers_name",
    "is_secret_name",
    "name_matters",
    "redact_text",
    "scan_text",
]


@attrs.frozen
class SecretFinding:
    """One secret-looking span of a string. `preview` never holds more than a public prefix."""

    rule: str  # stable id, e.g. "github-pat"
    kind: str  # for people, e.g. "GitHub personal access token"
    start: int
    end: int
    strength: int  # 3 provider format, 2 structure (PEM, URL password, JWT…), 1 entropy by name
    preview: str = ""  # e.g. "ghp_…"; empty when even a prefix would say too much


STRONG, STRUCTURAL, BY_NAME = 3, 2, 1

# The fast screen's vocabulary (see the module doc): the stems of `names.SCREEN_STEMS`
# `%`: percent-encoding is seen through; `curl`: `curl -u user:password` (no stem, no long run)
SCREEN_LITERALS: tuple[str, ...] = ("@", "sig=", "~", "%", "curl")
# Characters matching ignores (SPEC §14): zero-width space/non-joiner/joiner, word joiner, BOM
# and the soft hyphen. A document holding one defeats the pass's screen (`has_invisible`).
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE_RE = re.compile(f"[{INVISIBLE}]")
_INVISIBLE_DROP = {ord(c): None for c in INVISIBLE}
LONG_RUN = 20
_LONG_RUN_RE = _lazy(rf"[A-Za-z0-9_-]{{{LONG_RUN}}}")


def has_long_run(text: str) -> bool:
    return _LONG_RUN_RE.search(text) is not None


def _has_run(token: str) -> bool:
    return _LONG_RUN_RE.search(token) is not None


# ---------------------------------------------------------------------------------------------
# Shared predicates


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(s)
    if n == 0:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


_PLACEHOLDER_MARKS = (
    "example",
    "your",
    "xxxx",
    "placeholder",
    "redacted",
    "dummy",
    "sample",
    "changeme",
    "change_me",
    "change-me",
    "replace",
    "insert",
    "fake",
    "****",
    "•••",
    "...",
    "…",
    "123456789",
    "abcdefghij",
    "qwerty",
    "lorem",
    "foobar",
)


_PLACEHOLDER_RE = _lazy(
    "|".join(re.escape(m) for m in _PLACEHOLDER_MARKS) + r"|[<>{}*]|\$[({A-Z]", re.IGNORECASE
)


def _placeholder_body(body: str) -> bool:
    """True for bodies that are obviously not real: marker words, one repeated char, `<…>`."""
    if _PLACEHOLDER_RE.search(body) is not None:
        return True
    return len(set(body)) <= min(10, max(3, len(body) // 8))


def _randomish(body: str, *, min_entropy: float = 3.0) -> bool:
    return not _placeholder_body(body) and entropy(body) >= min_entropy


# Values that reference or stand in for a secret rather than hold one.
_REFERENCE_PREFIXES = (
    "$",
    "%",
    "env:",
    "env.",
    "process.env",
    "os.environ",
    "vault:",
    "secret:",
    "secretref:",
    "secrets.",
    "arn:aws:secretsmanager",
    "arn:aws:ssm",
    "op://",
    "keyring:",
    "file:",
    "@",
)
_ENV_NAME_RE = _lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", re.ASCII)
_VALUE_WORDS = ("test", "password", "passwd", "secret", "token", "apikey", "api_key", "here")
_VALUE_PLACEHOLDER_RE = _lazy(
    "|".join(
        re.escape(m) for m in (*_PLACEHOLDER_MARKS, *_VALUE_WORDS, "{{", "}}", "${", "$(", "%(")
    )
    + "|[<>]",
    re.IGNORECASE,
)


def is_placeholder(value: str) -> bool:
    """Placeholders, templates, references and masked values: never a secret by themselves."""
    v = value.strip().strip("'\"")
    if not v:
        return True
    if v.lower().startswith(_REFERENCE_PREFIXES):
        return True
    if (v[0], v[-1]) in (("{", "}"), ("[", "]"), ("(", ")")):
        return True
    if _VALUE_PLACEHOLDER_RE.search(v) is not None:
        return True
    if _ENV_NAME_RE.fullmatch(v):
        return True
    return len(set(v)) <= 2


_UUID_RE = _lazy(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", re.ASCII)
_NOT_SECRET_SHAPES = _lazy(
    r"""
    \d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?   # ISO date / date-time
    | v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]{1,40})?          # semver
    | [-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?                       # number
    | [^@\s]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}  # e-mail address
    | (?:sha(?:1|224|256|384|512)|md5|blake2[bs]?|sha3-\d{3})[:-][A-Za-z0-9+/=]{8,200}  # named hash
    """,
    re.ASCII | re.VERBOSE,
)


# Public keys and certificates: published on purpose.
_PUBLIC_KEY_PREFIXES = (
    "ssh-",
    "ecdsa-sha2-",
    "sk-ssh-",
    "sk-ecdsa-",
    "-----BEGIN PUBLIC",
    "-----BEGIN CERTIFICATE",
    "-----BEGIN SSH2 PUBLIC",
    "-----BEGIN PGP PUBLIC",
    "MIIBIjAN",
    "MIICIjAN",
    "MFkwEwYH",
    "MHYwEAYH",
    "MCowBQYDK2Vw",
    "age1",
)


# Paths, JSON Pointers, URLs (a URL with a password is its own rule) and public keys.
_NOT_SECRET_PREFIXES = ("/", "./", "../", "~/", "#/", "http://", "https://", *_PUBLIC_KEY_PREFIXES)


def _not_secret_shape(v: str) -> bool:
    return v.startswith(_NOT_SECRET_PREFIXES) or _NOT_SECRET_SHAPES.fullmatch(v) is not None


def _classes(v: str) -> int:
    lower = upper = digit = False
    for ch in v:
        if "a" <= ch <= "z":
            lower = True
        elif "A" <= ch <= "Z":
            upper = True
        elif "0" <= ch <= "9":
            digit = True
    return lower + upper + digit


_WORD_PARTS_RE = _lazy(r"[A-Za-z]{2,40}(?:[./_-][A-Za-z]{2,40}){1,8}", re.ASCII)


def _password_like(v: str) -> bool:
    """A digit or a symbol, or a capital past the first letter: not `required`, `Configured`,
    nor words joined by separators (`application/json`, `notes.lastId`, `sort-by-date`)."""
    if _WORD_PARTS_RE.fullmatch(v) is not None:
        return False
    if any(not c.isalpha() for c in v):
        return True
    return any("A" <= c <= "Z" for c in v[1:]) and any("a" <= c <= "z" for c in v)


_HEXISH_RE = _lazy(r"[0-9a-fA-F-]+", re.ASCII)
# The commonest English letter pairs: about half the pairs of words, a few % of random text.
_BIGRAMS_TEXT = (
    "th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le "
    "ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur"
)
_COMMON_BIGRAMS = frozenset(_BIGRAMS_TEXT.split())


def _englishy(v: str) -> bool:
    """Made of words (`learncompatiblewrapper`), not random: common letter pairs dominate.

    Random base62 of 20 characters passes for words about once in 2 000 (measured).
    """
    if _HEXISH_RE.fullmatch(v) or sum(c.isdigit() for c in v) * 12 > len(v):
        return False
    low = v.translate(_ASCII_LOWER)
    pairs = [low[i : i + 2] for i in range(len(low) - 1)]
    letter_pairs = [p for p in pairs if p.isalpha()]
    if len(letter_pairs) < 10:
        return False
    common = sum(p in _COMMON_BIGRAMS for p in letter_pairs)
    return common >= 0.35 * len(letter_pairs)


def _strong_password(v: str) -> bool:
    """A generated password: 12+ characters holding lower and upper case letters and digits
    (symbols too, often), random enough and not words (`Summer2026!` is short and words,
    `user-preferences-2026` has no capital; `Xr6nlI17lluAS%` is a password)."""
    n = len(v)
    if not 12 <= n <= 128 or any(c.isspace() for c in v):
        return False
    if _classes(v) < 3 or _englishy(v) or _placeholder_body(v):
        return False
    return entropy(v) >= min(3.3, math.log2(n) - 0.4)


def _high_entropy_token(v: str, *, min_len: int = 16) -> bool:
    """Random enough to be a token: two character classes, entropy above the bar, not words."""
    n = len(v)
    if n < min_len or n > 4096 or _classes(v) < 2 or _englishy(v[:256]):
        return False
    if _HEXISH_RE.fullmatch(v):
        threshold = 3.0
    else:
        threshold = min(4.0, math.log2(n) - 0.6)
    return entropy(v) >= threshold


# ---------------------------------------------------------------------------------------------
# Secret-like names


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_words = words
_name_class = name_class


def is_secret_name(name: str | None) -> bool:
    """A name that means a secret (`forgec.secretscan.names`), a header's included."""
    cls = name_class(name)
    return cls is not None and cls != "header"


def name_matters(name: str | None) -> bool:
    """Whether `scan_text(…, name=name)` may find more than `scan_text(…)`, or the name's
    value holds strings that may (a `headers` object): the pass's screen needs it."""
    return name_class(name) is not None or is_headers_name(name)


# ---------------------------------------------------------------------------------------------
# Provider formats: (rule id, kind, prefixes, pattern after the prefix)

_B62 = "A-Za-z0-9"

# prefix → (rule, kind, pattern source from the prefix to the token end, prefix length); the
# patterns compile on first use (compiling all ~150 at import would slow every cold start)
_Provider = tuple[str, str, str, int]

_PROVIDER_TABLE: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("github-pat", "GitHub personal access token", ("ghp_",), r"[A-Za-z0-9]{36,251}"),
    ("github-oauth", "GitHub OAuth access token", ("gho_",), r"[A-Za-z0-9]{36,251}"),
    ("github-user-token", "GitHub user-to-server token", ("ghu_",), r"[A-Za-z0-9]{36,251}"),
    ("github-app-token", "GitHub app installation token", ("ghs_",), r"[A-Za-z0-9]{36,251}"),
    ("github-refresh-token", "GitHub refresh token", ("ghr_",), r"[A-Za-z0-9]{36,251}"),
    ("github-fine-grained-pat", "GitHub fine-grained personal access token", ("github_pat_",), r"[A-Za-z0-9_]{40,251}"),
    ("gitlab-pat", "GitLab personal access token", ("glpat-",), r"[A-Za-z0-9_.-]{20,255}"),
    ("gitlab-deploy-token", "GitLab deploy token", ("gldt-",), r"[A-Za-z0-9_.-]{20,255}"),
    ("gitlab-runner-token", "GitLab runner token", ("glrt-", "glrtr-", "GR1348941"), r"[A-Za-z0-9_.-]{20,255}"),
    ("gitlab-token", "GitLab token", ("glptt-", "glcbt-", "gloas-", "glsoat-", "glffct-", "glft-", "glimt-", "glagent-", "glwt-"), r"[A-Za-z0-9_.-]{20,255}"),
    ("slack-token", "Slack token", ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xoxe.xoxp-", "xoxe.xoxb-"), r"[0-9]{1,16}-[A-Za-z0-9-]{8,250}"),
    ("slack-app-token", "Slack app-level token", ("xapp-",), r"[0-9]-[A-Z0-9]{8,15}-[0-9]{8,16}-[a-z0-9]{32,80}"),
    ("stripe-secret-key", "Stripe secret key", ("sk_live_", "sk_test_"), r"[A-Za-z0-9]{16,247}"),
    ("stripe-restricted-key", "Stripe restricted key", ("rk_live_", "rk_test_"), r"[A-Za-z0-9]{16,247}"),
    ("stripe-webhook-secret", "Stripe webhook signing secret", ("whsec_",), r"[A-Za-z0-9+/=]{24,128}"),
    ("anthropic-api-key", "Anthropic API key", ("sk-ant-",), r"[A-Za-z0-9_-]{32,300}"),
    ("openrouter-api-key", "OpenRouter API key", ("sk-or-v1-",), r"[A-Za-z0-9]{40,100}"),
    ("openai-api-key", "OpenAI API key", ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"), r"[A-Za-z0-9_-]{20,300}"),
    ("openai-style-api-key", "OpenAI-style API key", ("sk-",), r"[A-Za-z0-9_-]{32,300}"),
    ("google-api-key", "Google API key", ("AIza",), r"[A-Za-z0-9_-]{35}"),
    ("google-oauth-client-secret", "Google OAuth client secret", ("GOCSPX-",), r"[A-Za-z0-9_-]{28}"),
    ("google-oauth-token", "Google OAuth access token", ("ya29.",), r"[A-Za-z0-9_-]{30,2048}"),
    ("sendgrid-api-key", "SendGrid API key", ("SG.",), r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("npm-token", "npm access token", ("npm_",), r"[A-Za-z0-9]{36}"),
    ("pypi-token", "PyPI API token", ("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"), r"[A-Za-z0-9_-]{40,400}"),
    ("mailgun-api-key", "Mailgun API key", ("key-",), r"[0-9a-f]{32}"),
    ("shopify-token", "Shopify access token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"[a-fA-F0-9]{32}"),
    ("square-token", "Square access token", ("sq0atp-",), r"[A-Za-z0-9_-]{22}"),
    ("square-oauth-secret", "Square OAuth secret", ("sq0csp-",), r"[A-Za-z0-9_-]{43}"),
    ("square-token", "Square access token", ("EAAA",), r"[A-Za-z0-9_-]{60,250}"),
    ("heroku-api-key", "Heroku API key", ("HRKU-",), r"[A-Za-z0-9_-]{20,100}"),
    ("digitalocean-token", "DigitalOcean token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"[a-f0-9]{64}"),
    ("vault-token", "HashiCorp Vault token", ("hvs.", "hvb.", "hvr."), r"[A-Za-z0-9_-]{24,400}"),
    ("vault-token", "HashiCorp Vault token (legacy)", ("s.",), r"[A-Za-z0-9]{24}"),
    ("huggingface-token", "Hugging Face token", ("hf_", "api_org_"), r"[A-Za-z0-9]{30,40}"),
    ("databricks-token", "Databricks access token", ("dapi",), r"[a-f0-9]{32}(?:-[0-9])?"),
    ("linear-api-key", "Linear API key", ("lin_api_",), r"[A-Za-z0-9]{40}"),
    ("linear-oauth-token", "Linear OAuth token", ("lin_oauth_",), r"[a-f0-9]{64}"),
    ("notion-token", "Notion integration token", ("secret_",), r"[A-Za-z0-9]{43}"),
    ("notion-token", "Notion integration token", ("ntn_",), r"[A-Za-z0-9]{40,50}"),
    ("atlassian-api-token", "Atlassian API token", ("ATATT3", "ATCTT3"), r"[A-Za-z0-9_=-]{60,400}"),
    ("doppler-token", "Doppler token", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."), r"(?:[a-z0-9_-]{1,35}\.)?[A-Za-z0-9]{40,100}"),
    ("pulumi-token", "Pulumi access token", ("pul-",), r"[a-f0-9]{40}"),
    ("postman-api-key", "Postman API key", ("PMAK-",), r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("age-secret-key", "age secret key", ("AGE-SECRET-KEY-1",), r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("grafana-service-account-token", "Grafana service account token", ("glsa_",), r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana-cloud-token", "Grafana Cloud token", ("glc_",), r"[A-Za-z0-9+/]{32,400}={0,2}"),
    ("grafana-api-key", "Grafana API key", ("eyJrIjoi",), r"[A-Za-z0-9+/]{40,400}={0,2}"),
    ("sentry-token", "Sentry auth token", ("sntrys_", "sntryu_"), r"[A-Za-z0-9_+/=]{40,400}"),
    ("figma-token", "Figma access token", ("figd_",), r"[A-Za-z0-9_-]{40,50}"),
    ("mapbox-secret-token", "Mapbox secret token", ("sk.eyJ",), r"[A-Za-z0-9_.-]{50,400}"),
    ("newrelic-key", "New Relic API key", ("NRAK-", "NRII-"), r"[A-Z0-9]{27,32}"),
    ("dynatrace-token", "Dynatrace API token", ("dt0c01.",), r"[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    ("supabase-token", "Supabase access token", ("sbp_",), r"[a-f0-9]{40}"),
    ("netlify-token", "Netlify access token", ("nfp_",), r"[A-Za-z0-9]{36,40}"),
    ("planetscale-token", "PlanetScale token", ("pscale_tkn_", "pscale_pw_", "pscale_oauth_"), r"[A-Za-z0-9_=.-]{32,64}"),
    ("replicate-token", "Replicate API token", ("r8_",), r"[A-Za-z0-9]{37}"),
    ("groq-api-key", "Groq API key", ("gsk_",), r"[A-Za-z0-9]{52}"),
    ("xai-api-key", "xAI API key", ("xai-",), r"[A-Za-z0-9]{80}"),
    ("perplexity-api-key", "Perplexity API key", ("pplx-",), r"[A-Za-z0-9]{48}"),
    ("docker-hub-token", "Docker Hub access token", ("dckr_pat_", "dckr_oat_"), r"[A-Za-z0-9_-]{27,100}"),
    ("rubygems-api-key", "RubyGems API key", ("rubygems_",), r"[a-f0-9]{48}"),
    ("clojars-token", "Clojars deploy token", ("CLOJARS_",), r"[a-z0-9]{60}"),
    ("contentful-token", "Contentful personal access token", ("CFPAT-",), r"[A-Za-z0-9_-]{43}"),
    ("alibaba-access-key-id", "Alibaba Cloud access key id", ("LTAI",), r"[A-Za-z0-9]{20}"),
    ("tencent-secret-id", "Tencent Cloud secret id", ("AKID",), r"[A-Za-z0-9]{32}"),
    ("brevo-api-key", "Brevo (Sendinblue) API key", ("xkeysib-", "xsmtpsib-"), r"[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("langsmith-api-key", "LangSmith API key", ("lsv2_pt_", "lsv2_sk_"), r"[a-f0-9]{32}_[a-f0-9]{10}"),
    ("onepassword-service-token", "1Password service account token", ("ops_eyJ",), r"[A-Za-z0-9+/=_-]{100,2000}"),
    ("buildkite-token", "Buildkite API token", ("bkua_",), r"[a-f0-9]{40}"),
    ("prefect-api-key", "Prefect API key", ("pnu_",), r"[A-Za-z0-9]{36}"),
    ("jfrog-token", "JFrog API key", ("AKCp",), r"[A-Za-z0-9]{69}"),
    ("jfrog-token", "JFrog reference token", ("cmVmdGtu",), r"[A-Za-z0-9]{56,80}"),
    ("aws-access-key-id", "AWS access key id", ("AKIA", "ASIA", "ABIA", "ACCA"), r"[A-Z0-9]{16}"),
    ("aws-session-token", "AWS session token", ("FwoGZXIvYXdz", "IQoJb3JpZ2lu"), r"[A-Za-z0-9+/=]{80,2000}"),
    ("twitter-bearer-token", "X (Twitter) bearer token", ("AAAAAAAAAAAAAAAAAAAAA",), r"[A-Za-z0-9%]{30,200}"),
    ("dropbox-token", "Dropbox access token", ("sl.", "sl.u."), r"[A-Za-z0-9_-]{130,1500}"),
    ("airtable-token", "Airtable personal access token", ("pat",), r"[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("bitbucket-app-password", "Bitbucket app password", ("ATBB",), r"[A-Za-z0-9_=.-]{32,100}"),
    ("meta-access-token", "Meta (Facebook) access token", ("EAAB", "EAAC", "EAAG", "EAAI", "EAAJ", "EAAM", "EAAU"), r"[A-Za-z0-9]{80,400}"),
    ("flyio-token", "Fly.io token", ("fo1_", "fm1r_", "fm2_"), r"[A-Za-z0-9_+/=,-]{40,2000}"),
    ("shippo-token", "Shippo API token", ("shippo_live_", "shippo_test_"), r"[a-f0-9]{40}"),
    ("flutterwave-key", "Flutterwave secret key", ("FLWSECK-", "FLWSECK_TEST-"), r"[a-h0-9]{32}-X"),
    ("typeform-token", "Typeform personal access token", ("tfp_",), r"[A-Za-z0-9_.-]{40,64}"),
    ("frameio-token", "Frame.io token", ("fio-u-",), r"[A-Za-z0-9_=-]{64}"),
    ("readme-api-key", "ReadMe API key", ("rdme_",), r"[a-z0-9]{70}"),
    ("pinecone-api-key", "Pinecone API key", ("pcsk_",), r"[A-Za-z0-9_]{40,120}"),
    ("paypal-braintree-token", "PayPal Braintree access token", ("access_token$production$",), r"[a-z0-9]{16}\$[a-f0-9]{32}"),
    ("private-key-der", "private key (base64 DER)", ("MII",), r"[A-Za-z0-9+/]{3}(?:IBADAN|IBAAKC)[A-Za-z0-9+/]{40,8000}={0,2}"),
    ("private-key-der", "private key (base64 DER)", ("MHcCAQEE", "MC4CAQAwBQYDK2Vw"), r"[A-Za-z0-9+/]{20,400}={0,2}"),
)  # fmt: skip


def _compile_providers() -> dict[str, _Provider]:
    table: dict[str, _Provider] = {}
    for rule, kind, prefixes, body in _PROVIDER_TABLE:
        for prefix in prefixes:
            full = re.escape(prefix) + f"(?:{body})(?![{_B62}])"
            table[prefix] = (rule, kind, full, len(prefix))
    return table


@functools.cache
def _provider_pattern(source: str) -> re.Pattern[str]:
    return re.compile(source, re.ASCII)


PROVIDERS = _compile_providers()

# ---------------------------------------------------------------------------------------------
# The master anchor regex


def _trie(words: list[str]) -> str:
    """A regex alternation of literals shaped as a trie, so `re` tests few branches per char."""
    if len(words) == 1:  # a chain: what the recursion below would spell, a char at a time
        return re.escape(words[0])
    ends = "" in words
    children: dict[str, list[str]] = {}
    for w in words:
        if w:
            children.setdefault(w[0], []).append(w[1:])
    alts = [re.escape(c) + _trie(rest) for c, rest in sorted(children.items())]
    if not alts:
        return ""
    group = alts[0] if len(alts) == 1 and not ends else "(?:" + "|".join(alts) + ")"
    return group + "?" if ends else group


_SPECIAL_PREFIXES = {
    "eyJ": "jwt",
    "LS0tLS1CRUdJTi": "b64-pem",
    **{p: "discord" for p in ("MD", "MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz")},
    "SK": "twilio",
    "AC": "twilio",
}
# Structural anchors that may sit inside a token. Their lookarounds reject most non-candidates
# inside `re`, so a string of 20 000 `://` costs no Python call per anchor.
_FREE_PATTERNS = {
    "url": r"://(?<=[A-Za-z0-9+.-]://)(?=[^\s/?#@\"'<>\\]{1,256}@)",
    "pem": r"-----BEGIN (?=[A-Z0-9 ]{0,40}PRIVATE KEY)",
    "putty": r"PuTTY-User-Key-File-[23]:",
    "slack_webhook": r"[/.]hooks\.slack\.com/(?=(?:services|workflows|triggers)/)",
    "discord_webhook": r"[/.]discord(?:app)?\.com/api/webhooks/(?=[0-9]{17,20}/)",
    "telegram": r":(?<=[0-9]{8}:)(?=AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-]))",
    "azure_ad": r"Q~(?<=[A-Za-z0-9_~.-]{3}[0-9]Q~)(?=[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-]))",
    "terraform": r"\.atlasv1\.(?<=[A-Za-z0-9]{14}\.atlasv1\.)(?=[A-Za-z0-9_-]{60})",
    "fcm": r":APA91b(?=[A-Za-z0-9_-]{120})",
    "mailchimp": r"-us(?<=[0-9a-f]{32}-us)(?=[0-9]{1,2}(?![A-Za-z0-9]))",
    # `.netrc`: `machine HOST [login USER] password PASS`, on one line or several
    "netrc": r"(?<![A-Za-z0-9_-])machine(?=\s{1,8}\S)",
    # `curl -u user:password` / `--user user:password`
    "curl": r"(?<![A-Za-z0-9_-])curl(?=[ \t])",
}
# the other spellings and languages of `names` (each holds one of its stems), as a trie so the
# master regex tries few branches per character: a name is judged by `names.name_class` once
# its assignment is found. Each holds one of `names.SCREEN_STEMS` (the screen's soundness);
# Cyrillic ones start past a capital the ASCII-only case folding would miss (`ароль`).
_MORE_KEYWORDS = (
    "key", "cookie", "session", "cred", "contrase", "clave", "mdp", "jeton", "kennw", "geheim",
    "senha", "segret", "chiave", "wachtw", "salasan", "jelsz", "sifre", "haslo", "parol",
    "clé", "schlüssel", "lösenord", "hasło", "şifre", "ароль", "окен", "люч", "密码",
    "口令", "密钥", "秘钥", "令牌", "パスワード", "トークン", "暗号", "비밀번호", "암호", "토큰",
)  # fmt: skip
_KEYWORDS = (
    r"pass(?:word|wd|phrase|code)?|pwd?|secret|token|api[_-]?key|access[_-]?key|auth(?:[_-]?key)?|"
    r"private[_-]?key|secret[_-]?key|account[_-]?key|shared[_-]?access[_-]?key|sig|"
    + _trie(list(_MORE_KEYWORDS))
)
# first characters of the keywords, for the master regex's cheap gates
_KW_FIRST = "".join(sorted(set("pstaPSTA") | {w[0] for w in _MORE_KEYWORDS}))
_KEYWORD_AT = _lazy(rf"(?i:{_KEYWORDS}|bearer|basic)", re.ASCII)
_TOK_FIRST = "".join(sorted({p[0] for p in PROVIDERS} | set("eLSAMN")))
# A provider prefix must start a token (not follow a letter, digit, `_`, `.` or `-`) and be
# followed by a plausible body; anything finer is the validator's job. Each branch opens with
# cheap assertions that fail fast inside ordinary words (measured: order matters for `re`).
_TOK = (
    rf"(?<![A-Za-z0-9_.-])(?=[{_TOK_FIRST}])(?:(?:"
    + _trie([*PROVIDERS, "eyJ", "LS0tLS1CRUdJTi"])
    + r")(?=[A-Za-z0-9_-]{2}[A-Za-z0-9_.+/=-]{4})"
    + r"|(?:SK|AC)(?=[0-9a-f]{32}(?![A-Za-z0-9]))"
    + r"|[MN][DTjz](?=[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{6}\.))"
)
# A keyword counts only when an assignment follows (`api_key=…`, `"password": "…"`) or, for
# `Bearer`/`Basic`, a credential-looking word. `dbPassword=…` starts at the camel-case hump.
_ASSIGNMENT = (
    r"(?=[^\s\"'=:<>,;&(){}\[\]]{0,24}[\"']?[ \t]{0,3}(?:=|:)[ \t]{0,3}[\"']?[^\s\"'<>,;&)}\]])"
)
_KW_BODY = (
    rf"(?:(?i:{_KEYWORDS}){_ASSIGNMENT}|(?i:bearer|basic)(?=[ \t]{{1,3}}[A-Za-z0-9._~+/-]{{8}}))"
)
_MASTER = re.compile(
    rf"(?P<tok>{_TOK})"
    + r"|(?=[:\-P/.Qmc])(?:"
    + "|".join(f"(?P<{k}>{v})" for k, v in _FREE_PATTERNS.items())
    + ")"
    # a keyword at a word's start, or at a camel-case hump: the two lookbehinds exclude each
    # other, so the body, written once, is tried once at a position (compiling it twice was
    # a sixth of the import's cost)
    + rf"|(?:(?<![A-Za-z0-9])(?=[{_KW_FIRST}{_KW_FIRST.upper()}Bb])"
    + rf"|(?<=[a-z0-9])(?=[{_KW_FIRST.upper()}B]))(?P<kw>{_KW_BODY})",
    re.ASCII,
)


class _Context:
    """Whole-string facts a few validators need, computed at most once per scan."""

    __slots__ = ("_auth", "_conn", "_twilio", "memo", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.memo: dict[tuple[str, str], SecretFinding | None] = {}
        self._twilio: bool | None = None
        self._conn: bool | None = None
        self._auth: bool | None = None

    @property
    def mentions_twilio(self) -> bool:
        if self._twilio is None:
            self._twilio = _TWILIO_WORD.search(self.text) is not None
        return self._twilio

    @property
    def mentions_auth(self) -> bool:
        if self._auth is None:
            self._auth = _AUTH_WORD.search(self.text) is not None
        return self._auth

    @property
    def is_connection_string(self) -> bool:
        if self._conn is None:
            self._conn = _CONN_STRING_KEYS.search(self.text) is not None
        return self._conn


_TWILIO_WORD = _lazy(r"twilio", re.ASCII | re.IGNORECASE)
_AUTH_WORD = _lazy(r"auth", re.ASCII | re.IGNORECASE)
_CONN_STRING_KEYS = _lazy(
    r"(?:server|host|data source|user id|uid|database|initial catalog)[ \t]*=",
    re.ASCII | re.IGNORECASE,
)

# ---------------------------------------------------------------------------------------------
# Validators: each takes (text, anchor start, anchor end, name) and returns (finding | None,
# resume position). The resume position is past everything the validator looked at.

_Result = tuple[SecretFinding | None, int]


def _finding(
    rule: str, kind: str, start: int, end: int, strength: int, preview: str = ""
) -> SecretFinding:
    return SecretFinding(
        rule=rule, kind=kind, start=start, end=end, strength=strength, preview=preview
    )


def _provider(text: str, start: int, anchor: str) -> _Result:
    rule, kind, source, plen = PROVIDERS[anchor]
    m = _provider_pattern(source).match(text, start)
    if m is None:
        return None, start + plen
    token = m.group()
    body = token[plen:]
    # A rejected match still claims its span: re-examining it from inside could be quadratic.
    if _placeholder_body(body) or not _has_run(token):
        return None, m.end()
    if rule == "aws-access-key-id":
        if token.endswith("EXAMPLE"):
            return None, m.end()
    elif anchor == "s." and (_classes(body) < 3 or entropy(body) < 3.8):
        # `s.` + 24 is short and generic: only a body using all three classes, random enough
        return None, m.end()
    elif _englishy(body[:256]) or (
        _ALNUM_RUN_RE.search(body) is None and not _high_entropy_token(body[:1024], min_len=8)
    ):
        # words (`sk-learn-compatible-wrapper`, `hf_transformersAutoModel`): a prefix alone
        # proves nothing; a long unbroken random run (any alphabet) is what tokens are made of
        return None, m.end()
    return _finding(rule, kind, start, m.end(), STRONG, anchor + "…"), m.end()


_ALNUM_RUN_RE = _lazy(r"[A-Za-z0-9]{20}", re.ASCII)
_JWT_RE = _lazy(
    r"(eyJ[A-Za-z0-9_-]{4,8000})\.([A-Za-z0-9_-]{2,16000})\.([A-Za-z0-9_-]{16,8000})", re.ASCII
)


def _b64decode(seg: str, *, urlsafe: bool = True) -> bytes | None:
    import base64  # only once a candidate is decoded

    try:
        padded = seg + "=" * (-len(seg) % 4)
        if urlsafe:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _jwt(text: str, start: int) -> _Result:
    m = _JWT_RE.match(text, start)
    if m is None:
        return None, start + 3
    stop = m.end()
    if not _has_run(m.group()):
        return None, stop
    header = _b64decode(m.group(1)[:2000])
    if header is None or b'"alg"' not in header.replace(b" ", b""):
        return None, stop
    if _placeholder_body(m.group(3)):
        return None, stop
    return _finding("jwt", "JWT", start, m.end(), STRUCTURAL, "eyJ…"), stop


_B64_PEM_RE = _lazy(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{180,20000}={0,2}", re.ASCII)


def _b64_pem(text: str, start: int) -> _Result:
    m = _B64_PEM_RE.match(text, start)
    if m is None:
        return None, start + 3
    decoded = _b64decode(m.group()[:120], urlsafe=False)
    if decoded and b"PRIVATE KEY" in decoded:
        kind = "private key block (base64 encoded)"
        return _finding("private-key-base64-pem", kind, start, m.end(), STRONG), m.end()
    return None, m.end()


_DISCORD_RE = _lazy(
    r"[MN][A-Za-z0-9_-]{22,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])", re.ASCII
)


def _discord(text: str, start: int) -> _Result:
    m = _DISCORD_RE.match(text, start)
    if m is None:
        return None, start + 2
    stop = m.end()
    first = m.group().split(".", 1)[0]
    user_id = _b64decode(first)
    if user_id is None or not user_id.isdigit() or not 15 <= len(user_id) <= 21:
        return None, stop
    if not _randomish(m.group().rsplit(".", 1)[1]):
        return None, stop
    return _finding("discord-bot-token", "Discord bot token", start, m.end(), STRONG), stop


_TWILIO_RE = _lazy(r"(?:SK|AC)[0-9a-f]{32}(?![A-Za-z0-9])", re.ASCII)
_HEX32_RE = _lazy(r"(?<![A-Za-z0-9])[0-9a-f]{32}(?![A-Za-z0-9])", re.ASCII)


def _twilio(text: str, start: int, name: str | None, ctx: _Context) -> _Result:
    m = _TWILIO_RE.match(text, start)
    if m is None:
        return None, start + 2
    stop = m.end()
    if _placeholder_body(m.group()[2:]):
        return None, stop
    paired = _HEX32_RE.search(text[max(0, start - 200) : start + 300]) is not None
    # an API key SID (`SK…`) is a key's public half, issued with its secret: flagged alone; an
    # account SID (`AC…`) is an identifier, flagged only with what makes it a credential
    if m.group().startswith("SK") or is_secret_name(name) or ctx.mentions_twilio or paired:
        kind = (
            "Twilio API key"
            if m.group().startswith("SK")
            else "Twilio account SID with credentials"
        )
        return _finding("twilio", kind, start, m.end(), STRONG, m.group()[:2] + "…"), stop
    return None, stop


_PEM_HEADER = _lazy(r"-----BEGIN ([A-Z0-9 ]{0,40}?)PRIVATE KEY(?: BLOCK)?-----", re.ASCII)
_PEM_BODY = _lazy(r"[A-Za-z0-9+/=]{20}", re.ASCII)


def _pem(text: str, start: int, end: int) -> _Result:
    m = _PEM_HEADER.match(text, start, start + 80)
    if m is None:
        return None, end
    window = min(len(text), m.end() + 400)
    body = _PEM_BODY.search(text, m.end(), window)
    if body is None:
        return None, window
    label = m.group(1).strip()
    kind = f"{label} private key block" if label else "private key block"
    return _finding("private-key", kind, start, body.end(), STRONG, "-----BEGIN …"), body.end()


def _putty(text: str, start: int, end: int) -> _Result:
    line_end = text.find("\n", end, end + 200)
    stop = line_end if line_end >= 0 else min(len(text), end + 200)
    return _finding("putty-private-key", "PuTTY private key file", start, stop, STRONG), stop


_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_USERINFO_RE = _lazy(r"([^\s/?#@\"'<>\\]{1,256})@", re.ASCII)
_DB_SCHEMES = {
    "postgres": "postgres",
    "postgresql": "postgres",
    "mysql": "MySQL",
    "mariadb": "MariaDB",
    "mongodb": "MongoDB",
    "mongodb+srv": "MongoDB",
    "redis": "Redis",
    "rediss": "Redis",
    "amqp": "AMQP",
    "amqps": "AMQP",
    "mssql": "SQL Server",
    "sqlserver": "SQL Server",
    "jdbc:postgresql": "postgres",
    "jdbc:mysql": "MySQL",
    "clickhouse": "ClickHouse",
    "kafka": "Kafka",
    "nats": "NATS",
    "ldap": "LDAP",
    "ldaps": "LDAP",
}


def _url(text: str, start: int, end: int) -> _Result:
    s = start
    while s > 0 and start - s < 32 and text[s - 1] in _SCHEME_CHARS:
        s -= 1
    scheme = text[s:start].lower()
    if s > 0 and text[s - 1] == ":" and text[max(0, s - 4) : s - 1].lower() == "jdbc":
        scheme = "jdbc:" + scheme
    m = _USERINFO_RE.match(text, end)
    if not scheme or m is None:
        return None, end
    userinfo = m.group(1)
    user, sep, password = userinfo.partition(":")
    if sep:
        if (
            not password
            or is_placeholder(password)
            or password.lower() in ("x-oauth-basic", "pass", "anonymous", "guest")
        ):
            return None, end
        db = _DB_SCHEMES.get(scheme)
        kind = f"password in {db} connection string" if db else "password in URL"
        return _finding("url-password", kind, s, m.end() - 1, STRUCTURAL), end
    if _high_entropy_token(user, min_len=20) and not is_placeholder(user):
        return _finding("url-token", "token in URL", s, m.end() - 1, STRUCTURAL), end
    return None, end


_SLACK_HOOK_RE = _lazy(
    r"(?:services|workflows|triggers)/[A-Za-z0-9]{8,12}/[A-Za-z0-9/_-]{8,200}", re.ASCII
)


def _slack_webhook(text: str, start: int, end: int) -> _Result:
    m = _SLACK_HOOK_RE.match(text, end)
    if m is None:
        return None, end
    secret = m.group().rsplit("/", 1)[-1]
    if len(secret) < 16 or _placeholder_body(secret):
        return None, m.end()
    return _finding(
        "slack-webhook", "Slack webhook URL", start, m.end(), STRONG, "hooks.slack.com/…"
    ), m.end()


_DISCORD_HOOK_RE = _lazy(r"[0-9]{17,20}/([A-Za-z0-9_-]{60,100})", re.ASCII)


def _discord_webhook(text: str, start: int, end: int) -> _Result:
    m = _DISCORD_HOOK_RE.match(text, end)
    if m is None or _placeholder_body(m.group(1)):
        return None, end if m is None else m.end()
    return _finding(
        "discord-webhook",
        "Discord webhook URL",
        start,
        m.end(),
        STRONG,
        "discord.com/api/webhooks/…",
    ), m.end()


_TELEGRAM_BODY = _lazy(r"AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", re.ASCII)


def _telegram(text: str, start: int, end: int) -> _Result:
    d = start
    while d > 0 and start - d < 12 and "0" <= text[d - 1] <= "9":
        d -= 1
    if not 8 <= start - d <= 10 or (d > 0 and text[d - 1].isalnum()):
        return None, end
    m = _TELEGRAM_BODY.match(text, start + 1)
    if m is None or _placeholder_body(m.group()[2:]):
        return None, end
    return _finding("telegram-bot-token", "Telegram bot token", d, m.end(), STRONG), m.end()


_AZURE_AD_BODY = _lazy(r"[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", re.ASCII)


def _azure_ad(text: str, start: int, end: int) -> _Result:
    head = text[max(0, start - 4) : start]
    if len(head) != 4 or not head[3].isdigit() or not all(c.isalnum() or c in "_~.-" for c in head):
        return None, end
    if start >= 5 and (text[start - 5].isalnum() or text[start - 5] in "_~.-"):
        return None, end
    m = _AZURE_AD_BODY.match(text, end)
    if m is None or not _randomish(m.group()):
        return None, end if m is None else m.end()
    return _finding(
        "azure-ad-client-secret", "Azure AD client secret", start - 4, m.end(), STRONG
    ), m.end()


_TF_BODY = _lazy(r"[A-Za-z0-9_-]{60,120}", re.ASCII)


def _terraform(text: str, start: int, end: int) -> _Result:
    head = text[max(0, start - 14) : start]
    m = _TF_BODY.match(text, end)
    if len(head) != 14 or not head.isalnum() or m is None or _placeholder_body(m.group()):
        return None, end if m is None else m.end()
    return _finding(
        "terraform-cloud-token", "Terraform Cloud token", start - 14, m.end(), STRONG
    ), m.end()


_FCM_BODY = _lazy(r"[A-Za-z0-9_-]{120,200}", re.ASCII)


def _fcm(text: str, start: int, end: int) -> _Result:
    m = _FCM_BODY.match(text, end)
    if m is None or _placeholder_body(m.group()):
        return None, end if m is None else m.end()
    return _finding(
        "firebase-server-key", "Firebase Cloud Messaging server key", start, m.end(), STRONG
    ), m.end()


_MAILCHIMP_SUFFIX = _lazy(r"[0-9]{1,2}", re.ASCII)


def _mailchimp(text: str, start: int, end: int) -> _Result:
    s = start - 32
    if s > 0 and (text[s - 1].isalnum() or text[s - 1] in "_-"):
        return None, end
    m = _MAILCHIMP_SUFFIX.match(text, end)
    stop = m.end() if m else end
    if not _randomish(text[s:start]):
        return None, stop
    return _finding("mailchimp-api-key", "Mailchimp API key", s, stop, STRONG), stop


_NETRC_RE = _lazy(
    r"machine\s{1,8}[^\s]{1,253}\s{1,8}(?:login\s{1,8}[^\s]{1,256}\s{1,8})?"
    r"(?:account\s{1,8}[^\s]{1,256}\s{1,8})?password\s{1,8}([^\s]{1,512})",
    re.ASCII,
)


def _netrc(text: str, start: int, end: int) -> _Result:
    m = _NETRC_RE.match(text, start)
    if m is None:
        return None, end
    password = m.group(1).strip("'\"")
    if len(password) < 4 or is_placeholder(password):
        return None, m.end()
    return _finding(
        "netrc-password", "password in a .netrc entry", start, m.end(), STRUCTURAL, "machine …"
    ), m.end()


_CURL_USER_RE = _lazy(
    r"[ \t](?:-u|--user)(?:[ \t]{1,4}|=)['\"]?([^\s:'\"]{1,256}):([^\s'\"]{1,512})", re.ASCII
)


@functools.lru_cache(maxsize=4)
def _curl_users(text: str) -> tuple[list[int], list[re.Match[str]], list[int]]:
    """Every `-u user:password` of `text` and its newlines, found once per string: each `curl`
    anchor then looks its option up instead of searching ahead (linear time)."""
    users = list(_CURL_USER_RE.finditer(text))
    newlines = [i for i, ch in enumerate(text) if ch == "\n"] if "\n" in text else []
    return [u.start() for u in users], users, newlines


def _curl(text: str, start: int, end: int) -> _Result:
    starts, users, newlines = _curl_users(text)
    i = bisect.bisect_left(starts, end - 1)
    if i == len(starts) or starts[i] - end > 400:
        return None, end
    m = users[i]
    j = bisect.bisect_left(newlines, end)
    if j < len(newlines) and newlines[j] < m.start():
        return None, end  # the option belongs to another line
    password = m.group(2)
    if len(password) < 4 or is_placeholder(password):
        return None, end  # resume inside: the user part may be a provider key (`sk_test_…:`)
    return _finding(
        "curl-user-password", "password in `curl -u user:password`", start, m.end(), STRUCTURAL
    ), end


_FREE_VALIDATORS: dict[str, Callable[[str, int, int], _Result]] = {
    "url": _url,
    "pem": _pem,
    "putty": _putty,
    "slack_webhook": _slack_webhook,
    "discord_webhook": _discord_webhook,
    "telegram": _telegram,
    "azure_ad": _azure_ad,
    "terraform": _terraform,
    "fcm": _fcm,
    "mailchimp": _mailchimp,
    "netrc": _netrc,
    "curl": _curl,
}

# Keyword anchors: `password=…`, `"api_key": "…"`, `Bearer …`, `Basic …`, `AccountKey=…`, `sig=…`

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_ASSIGN_RE = _lazy(r"[\w-]{0,24}[\"']?[ \t]{0,3}(?:=|:|=>)[ \t]{0,3}[\"']?")
_VALUE_RE = _lazy(r"[^\s\"'<>,;&)}\]=:@]{1,512}={0,3}", re.ASCII)
_TEXT_VALUE_RE = _lazy(r"[^\s\"'<>,;)}\]]{1,512}", re.ASCII)
_AUTH_CRED_RE = _lazy(r"[ \t]{1,3}([A-Za-z0-9._~+/-]{1,4096}=*)", re.ASCII)


def _keyword(text: str, start: int, end: int, ctx: _Context) -> _Result:
    word = text[start:end].translate(_ASCII_LOWER)
    if word in ("bearer", "basic"):
        m = _AUTH_CRED_RE.match(text, end)
        if m is None:
            return None, end
        if word == "basic" and not ctx.mentions_auth:
            return None, m.end()  # "Basic plan", "basic summary": needs an Authorization nearby
        # resume inside: a provider token as the credential is the stronger finding
        return _auth_credential(word, m.group(1), start, m.end()), end
    s = start
    while s > 0 and start - s < 32 and (text[s - 1] in _NAME_CHARS or text[s - 1].isalnum()):
        s -= 1
    m = _ASSIGN_RE.match(text, end)
    if m is None:
        return None, end
    # in a URL's query a value ends at `&`; in text it runs to the next space or quote
    in_query = s > 0 and text[s - 1] in "?&;"
    v = (_VALUE_RE if in_query else _TEXT_VALUE_RE).match(text, m.end())
    if v is None:
        return None, m.end()
    value = v.group()
    if len(value) < 8:
        return None, m.end()
    key = text[s:end] + text[end : m.end()].rstrip("\"' \t:=>")
    low_key = key.translate(_ASCII_LOWER).replace("_", "").replace("-", "")
    if low_key.endswith(("accountkey", "sharedaccesskey")):
        if len(value) >= 40 and _randomish(value):
            return _finding(
                "azure-storage-key", "Azure storage account key", s, v.end(), STRONG, key + "=…"
            ), v.end()
        return None, v.end()
    if word == "sig" and text.startswith("=", end):
        if len(value) >= 30 and _randomish(value) and text[max(0, s - 1) : s] in ("?", "&", ";"):
            return _finding(
                "azure-sas", "Azure shared access signature", s, v.end(), STRONG, "sig=…"
            ), v.end()
        return None, v.end()
    memo_key = (key, value)
    if memo_key in ctx.memo:
        found = ctx.memo[memo_key]  # an input repeating one assignment costs one evaluation
    else:
        found = ctx.memo[memo_key] = _by_name(value, key)
    if found is None:
        return None, m.end()  # the value may still hold a provider token
    if found.rule == "password-by-name" and ctx.is_connection_string:
        kind = "password in connection string"
    else:
        kind = f"{found.kind} (assigned in text)"
    return attrs.evolve(found, kind=kind, start=s, end=v.end()), m.end()


def _auth_credential(scheme: str, cred: str, start: int, end: int) -> SecretFinding | None:
    if is_placeholder(cred):
        return None
    if scheme == "basic":
        raw = _b64decode(cred, urlsafe=False)
        if raw is None or len(cred) < 8:
            return None
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        _user, sep, password = decoded.partition(":")
        if not sep or not password or not decoded.isprintable() or is_placeholder(password):
            return None
        return _finding("basic-auth", "HTTP Basic credentials", start, end, STRUCTURAL, "Basic …")
    if _not_secret_shape(cred):
        return None
    if cred.startswith("eyJ"):
        jwt, _ = _jwt(cred, 0)
        if jwt is not None:
            return _finding(
                "bearer-token", "bearer token (JWT)", start, end, STRUCTURAL, "Bearer …"
            )
    if (_high_entropy_token(cred) and _has_run(cred)) or _strong_password(cred):
        return _finding("bearer-token", "bearer token", start, end, STRUCTURAL, "Bearer …")
    return None


# ---------------------------------------------------------------------------------------------
# By name


# an `Authorization` value: any one-word scheme (`Bearer`, `Basic`, `Token`, `Bot`, `SSWS`,
# `ApiKey`, `sso-key`, one nobody listed) and its credential
_SCHEME_VALUE_RE = _lazy(r"([A-Za-z][A-Za-z0-9._-]{0,24})[ \t]+(\S{1,4096})", re.ASCII)
_VAULT_LEGACY_RE = _lazy(r"s\.[A-Za-z0-9]{24}", re.ASCII)
_AWS_SECRET_RE = _lazy(r"[A-Za-z0-9/+]{40}", re.ASCII)


# last words of header names whose hex values are digests, ids or trace context
_DIGEST_HEADER_WORDS = frozenset(
    {"etag", "match", "id", "ids", "trace", "traceparent", "tracestate", "parent", "span",
     "request", "correlation", "digest", "md5", "sha", "sha1", "sha256", "hash", "checksum",
     "version", "revision", "commit", "nonce", "fingerprint"}
)  # fmt: skip


def _digest_like_header(name: str) -> bool:
    ws = [w for w in _words(name.removeprefix(HEADER_USE)) if not w.isdigit()]
    return not ws or ws[-1] in _DIGEST_HEADER_WORDS or ws[-1] in _DIGEST_WORDS


def _by_name(value: str, name: str) -> SecretFinding | None:
    """The rule for a value sitting under a secret-like name (a key or an assignment)."""
    cls = _name_class(name)
    if cls is None:
        return None
    v = value.strip()
    n = len(v)
    label = f"`{name.removeprefix(HEADER_USE)}`"
    if cls == "auth":
        m = _SCHEME_VALUE_RE.fullmatch(v)
        if m is not None:
            scheme = m.group(1).lower()
            found = _auth_credential("basic" if scheme == "basic" else "bearer", m.group(2), 0, n)
            if found is None:
                return None
            kind = "HTTP Basic credentials" if scheme == "basic" else "token"
            return attrs.evolve(found, kind=f"{kind} in the {label} header value")
        # Docker's `auths` entries (`{"auths": {"host": {"auth": "<base64 user:password>"}}}`)
        # and alike: the value itself is Basic credentials without the scheme
        found = _auth_credential("basic", v, 0, n) if 8 <= n <= 4096 else None
        if found is not None:
            return attrs.evolve(found, kind=f"base64 user:password under {label}", preview="")
    if n < 8 or n > 4096 or is_placeholder(v) or _not_secret_shape(v):
        return None
    if any(c.isspace() for c in v):
        return None  # prose, or a passphrase of words, which cannot be told apart
    if cls == "header":
        # a header whose name says nothing: judged by its shape alone, and only a long random
        # token (not hex: digests, ids, trace context; not a UUID) counts
        if not (n >= 20 and _has_run(v) and _high_entropy_token(v)):
            # a generated password used as a header value is a credential too (issue 30):
            # three classes, a symbol, random enough and not words (`_strong_password`)
            if (
                _strong_password(v)
                and any(not c.isalnum() and c not in "._-:/" for c in v)
                and not _digest_like_header(name)
            ):
                return _finding("header-password", f"password in the {label} header", 0, n, BY_NAME)
            return None
        if _UUID_RE.fullmatch(v) or (
            _HEXISH_RE.fullmatch(v) and (n < 32 or _digest_like_header(name))
        ):
            return None  # an id, a digest or trace context, as often as a key
        return _finding("header-token", f"token in the {label} header", 0, n, BY_NAME)
    low = name.translate(_ASCII_LOWER)
    if "aws" in low and _AWS_SECRET_RE.fullmatch(v) and _high_entropy_token(v):
        return _finding("aws-secret-access-key", "AWS secret access key", 0, n, STRONG)
    if "vault" in low and _VAULT_LEGACY_RE.fullmatch(v) and _randomish(v[2:]):
        return _finding("vault-token", "HashiCorp Vault token", 0, n, STRONG, "s.…")
    if "heroku" in low and _UUID_RE.fullmatch(v) and _randomish(v):
        return _finding("heroku-api-key", "Heroku API key", 0, n, STRONG)
    if cls == "password":
        if _password_like(v):
            return _finding("password-by-name", f"password under {label}", 0, n, BY_NAME)
        return None
    if _high_entropy_token(v) or _strong_password(v):
        return _finding("entropy-by-name", f"high-entropy value under {label}", 0, n, BY_NAME)
    return None


# ---------------------------------------------------------------------------------------------
# The scanner


def scan_text(text: str, *, name: str | None = None) -> list[SecretFinding]:
    """Every secret-looking span of `text`, in order; `name` is the key the string sits under.

    Pure, linear in `len(text)`, never raises on any `str`. Overlapping findings keep the
    strongest (then the first). Sees through invisible characters and percent-encoding (the
    text is normalised and scanned again, findings mapped back to the original offsets) and
    through base64 of the provider formats (`_base64_findings`).
    """
    if not isinstance(text, str) or len(text) < 8:
        return []
    findings = _scan_plain(text, name)
    normal, where = _normalised(text)
    if normal is not None:
        seen = {(f.start, f.end) for f in findings}
        for f in _scan_plain(normal, name):
            start, end = where[f.start], where[f.end - 1] + 1
            if (start, end) not in seen:
                kind = f"{f.kind} (hidden by invisible characters or percent-encoding)"
                findings.append(attrs.evolve(f, kind=kind, start=start, end=end))
    if not any(f.strength == STRONG for f in findings):
        findings.extend(_base64_findings(text))
    if not findings:
        bare = _bare_base64(text, name)
        if bare is not None:
            findings.append(bare)
        else:
            findings.extend(_embedded_base64(text, name))
    return _strongest_first_of_overlaps(findings)


_EMBEDDED_RE = _lazy(
    r"(?<![A-Za-z0-9_+/-])[A-Za-z0-9_+/-]{30,510}={0,2}(?![A-Za-z0-9_+/=-])", re.ASCII
)


def _embedded_base64(text: str, name: str | None) -> list[SecretFinding]:
    """`_bare_base64` for each token of a text that is more than one token (`opts=ab_Zk3q…`,
    a key inside a sentence): a secret is judged by its shape wherever it stands (SPEC §14).
    Linear: each character belongs to at most one token. Only tokens holding a 20-character
    run of `[A-Za-z0-9_-]` are judged (the pass's screen finds a string by such a run)."""
    if len(text) < 34:  # a single token is `_bare_base64`'s
        return []
    if _not_secret_shape(text.lstrip()) or "PUBLIC KEY" in text or "CERTIFICATE" in text:
        return []  # a public key (`ssh-ed25519 AAAA…`), a certificate, a URL, a path
    out: list[SecretFinding] = []
    for m in _EMBEDDED_RE.finditer(text):
        if m.start() == 0 and m.end() == len(text):
            continue
        piece = m.group()
        if not _has_run(piece):
            continue
        found = _bare_base64(piece, name)
        if found is not None:
            out.append(attrs.evolve(found, start=m.start(), end=m.end()))
    return out


_PERCENT_RE = _lazy(r"%[0-7][0-9A-Fa-f]")  # an ASCII byte, percent-encoded
_PERCENT_RUN_RE = _lazy(r"(?:%[0-9A-Fa-f]{2}){1,1024}")


def _percent_decoded(run: str) -> list[tuple[str, int]]:
    """(character, offset in `run`) for a run of `%XX` escapes: UTF-8 sequences become their
    characters (`%C3%B1` → `ñ`), ASCII bytes theirs, anything else stays as written."""
    raw = bytes(int(run[i + 1 : i + 3], 16) for i in range(0, len(run), 3))
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(raw):
        b = raw[i]
        if b < 0x80:
            out.append((chr(b), 3 * i))
            i += 1
            continue
        width = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        try:
            ch = raw[i : i + width].decode("utf-8")
        except UnicodeDecodeError:
            ch = ""
        if len(ch) == 1:
            out.append((ch, 3 * i))
            i += width
        else:  # not UTF-8: the escape stays as written
            out.extend((run[3 * i + k], 3 * i + k) for k in range(3))
            i += 1
    return out


def _normalised(text: str) -> tuple[str | None, list[int]]:
    """`text` without invisible characters and with percent-escapes decoded (ASCII and UTF-8),
    and the offset in `text` of each of its characters; (None, []) when there is nothing to
    undo."""
    invisible = _INVISIBLE_RE.search(text) is not None
    percent = "%" in text and _PERCENT_RUN_RE.search(text) is not None
    if not invisible and not percent:
        return None, []
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in INVISIBLE:
            i += 1
            continue
        if ch == "%" and percent:
            m = _PERCENT_RUN_RE.match(text, i)
            if m is not None:
                for decoded, offset in _percent_decoded(m.group()):
                    out.append(decoded)
                    where.append(i + offset)
                i = m.end()
                continue
        out.append(ch)
        where.append(i)
        i += 1
    return "".join(out), where


# A base64 run long enough to hold a provider token (the shortest formats encode to 24+).
_B64_RUN_RE = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,8192}={0,2}(?![A-Za-z0-9+/_=-])")


def _base64_findings(text: str) -> list[SecretFinding]:
    """Provider tokens (and private keys) hidden in base64: each run of the base64 alphabet is
    decoded once and, when it is text, scanned for the strong rules alone. Linear: the runs do
    not overlap and each decoded text is scanned once, without decoding again."""
    out: list[SecretFinding] = []
    for m in _B64_RUN_RE.finditer(text):
        run = m.group()
        raw = _b64decode(run, urlsafe="-" in run or "_" in run)
        if raw is None or len(raw) < 16:
            continue
        try:
            decoded = raw.decode("ascii")
        except UnicodeDecodeError:
            continue
        if not decoded.isprintable():
            decoded = decoded.strip()
            if not decoded.isprintable():
                continue
        for f in _scan_plain(decoded, None):
            if f.strength == STRONG:
                kind = f"{f.kind} (base64 encoded)"
                out.append(attrs.evolve(f, kind=kind, start=m.start(), end=m.end(), preview=""))
                break
    return out


_BARE_B64_RE = re.compile(
    r"[A-Za-z0-9+/]{27,4096}={0,2}|[A-Za-z0-9_-]{27,4096}", re.ASCII
)  # length: above
# names under which a random base64 value is a digest or a public value, not a secret
_DIGEST_WORDS = frozenset(
    {"sha", "sha1", "sha256", "sha384", "sha512", "md5", "hash", "digest", "checksum",
     "integrity", "etag", "commit", "fingerprint", "signature", "nonce", "salt", "id"}
)  # fmt: skip


_PREFIXED_RE = _lazy(r"[a-z]{2,8}[_-][A-Za-z0-9]{24,500}", re.ASCII)


def _bare_base64(text: str, name: str | None) -> SecretFinding | None:
    """A value that is nothing but 32+ characters of random base64: a key, whatever its name.

    Base64 means it holds one of `+/=` (or `-_` for base64url): plain base62 is as often an
    opaque id, a cursor or a page token as a key. Random enough means all three classes (lower, upper, digit), entropy of at least
    min(4.2, log2(len) - 0.8) bits per character, not words (`_englishy`), not hex (digests are
    hex), and not base64 of text (prose or JSON encoded is not a secret). Under a digest-like
    name (`sha256`, `integrity`, `etag`, `signature`…) it is a digest.
    """
    v = text.strip()
    n = len(v)
    # a provider-like prefix (`xy_`, `abcd-`) before 24+ random characters is a token's shape
    # from 27 characters on (issue 30: a 31-character `hx-…` key assembled across two sets)
    if n < (27 if _PREFIXED_RE.fullmatch(v) else 32):
        return None
    if _BARE_B64_RE.fullmatch(v) is None or _classes(v) < 3:
        return None
    if not any(c in v for c in "+/=_-"):
        return None  # plain base62: an opaque id or page token as often as a key
    if _HEXISH_RE.fullmatch(v) or _placeholder_body(v) or _not_secret_shape(v):
        return None
    body = v.rstrip("=")
    if entropy(body) < min(4.2, math.log2(len(body)) - 0.8) or _englishy(body[:256]):
        return None
    if name is not None:
        words = [w for w in _words(name) if not w.isdigit()]  # `sha256` is ["sha", "256"]
        if words and words[-1] in _DIGEST_WORDS:
            return None
    raw = _b64decode(body, urlsafe="-" in body or "_" in body)
    if raw is not None:
        try:
            if raw.decode("utf-8").isprintable():
                return None  # base64 of text: the text itself is scanned where it matters
        except UnicodeDecodeError:
            pass
    start = text.index(v[0])
    return _finding("high-entropy-base64", "high-entropy base64 value", start, start + n, BY_NAME)


def _scan_plain(text: str, name: str | None) -> list[SecretFinding]:
    """`scan_text` on `text` as it is: the rules, no normalisation."""
    findings: list[SecretFinding] = []
    ctx = _Context(text)
    pos = 0
    n = len(text)
    search = _MASTER.search
    while pos < n:
        m = search(text, pos)
        if m is None:
            break
        start, end = m.span()
        group = m.lastgroup or "kw"
        anchor = m.group()
        found: SecretFinding | None
        if group == "tok":
            special = _SPECIAL_PREFIXES.get(anchor)
            if special is None:
                found, resume = _provider(text, start, anchor)
            elif special == "jwt":
                found, resume = _jwt(text, start)
            elif special == "discord":
                found, resume = _discord(text, start)
            elif special == "twilio":
                found, resume = _twilio(text, start, name, ctx)
            else:
                found, resume = _b64_pem(text, start)
            if found is None:
                # `secret_key=…` starts like a Notion token, `ACCESS_KEY=…` like a Twilio SID
                kw = _KEYWORD_AT.match(text, start)
                if kw is not None:
                    found, kw_resume = _keyword(text, start, kw.end(), ctx)
                    resume = max(resume, kw_resume)
        elif group != "kw":
            found, resume = _FREE_VALIDATORS[group](text, start, end)
        else:
            found, resume = _keyword(text, start, end, ctx)
        if found is not None:
            findings.append(found)
        pos = max(resume, end, pos + 1)
    if name is not None and not findings:
        by_name = _by_name(text, name)
        if by_name is not None:
            findings.append(by_name)
    return findings


def redact_text(text: str, *, name: str | None = None) -> str:
    """`text` with every finding replaced by its public preview (or `[REDACTED]`): for logs."""
    findings = scan_text(text, name=name)
    if not findings:
        return text
    out: list[str] = []
    pos = 0
    for f in findings:
        out.append(text[pos : f.start])
        out.append(f"[REDACTED {f.preview}]" if f.preview else "[REDACTED]")
        pos = f.end
    out.append(text[pos:])
    return "".join(out)


def _strongest_first_of_overlaps(findings: list[SecretFinding]) -> list[SecretFinding]:
    if len(findings) < 2:
        return findings
    findings.sort(key=lambda f: (f.start, -f.strength))
    out: list[SecretFinding] = []
    for f in findings:
        if out and f.start < out[-1].end:
            if f.strength > out[-1].strength:
                out[-1] = f
            continue
        out.append(f)
    return out
