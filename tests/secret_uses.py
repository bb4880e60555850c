# ruff: noqa: UP031  (templates spell `{{name}}`: %-formatting reads better than doubled braces)
"""A generator of secrets outside the scanner's listed categories, for measuring its miss rate
(SPEC §14: a secret is judged by its shape and by what it is used as, not by a list of
spellings).

Each case is a small JSON document holding one random provider-like token (an unknown
prefix, or none, over a random base62, hex or base64url body) in one *use* — a field, a schema
default, a header value (under a secret-meaning header or any header), an `Authorization`
value with a scheme, URL userinfo, a query parameter, a name/value pair, `name=value` or
`name: value` inside text — under a name drawn from secret-meaning words in many spellings
(camel, snake, kebab, upper, header case, spaces) and languages. `negative_cases` are the
same uses holding ordinary values (prose, identifiers, dates, named hashes, paths), which
must stay clean.

`python tests/secret_uses.py` prints the miss rate and the false-positive rate of the scanner
installed in the environment.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = B62 + "-_"

# heads: what the secret is; qualifiers: what kind (English and the head's own language)
HEADS = (
    "token", "secret", "password", "passwd", "pwd", "pass", "passphrase", "passcode",
    "credential", "apikey", "api key", "access key", "secret key", "private key", "auth token",
    "client secret", "refresh token", "session token", "bearer token", "signing key",
    "contraseña", "clave", "clave secreta", "mot de passe", "mdp", "jeton", "clé api",
    "passwort", "kennwort", "geheimnis", "schlüssel", "senha", "segreto", "parola chiave",
    "wachtwoord", "lösenord", "salasana", "hasło", "şifre", "jelszó", "пароль", "токен",
    "ключ", "密码", "口令", "密钥", "令牌", "パスワード", "トークン", "暗号鍵", "비밀번호", "토큰",
    "cookie", "session id", "sid",
)  # fmt: skip
QUALIFIERS = (
    "", "", "", "api", "app", "client", "service", "bot", "deploy", "integration", "webhook",
    "db", "admin", "github", "openai", "stripe", "my", "prod", "x",
)  # fmt: skip
# header names that mean a secret, and ordinary ones (a token there is judged by its use)
SECRET_HEADERS = (
    "X-Api-Key", "Api-Key", "X-Auth-Token", "X-Access-Token", "Private-Token",
    "X-Vault-Token", "X-Goog-Api-Key", "Ocp-Apim-Subscription-Key", "X-Client-Secret",
    "X-Figma-Token", "X-Session-Token", "Cookie", "X-Secret", "X-Apikey", "Token",
)  # fmt: skip
OTHER_HEADERS = ("X-Custom", "X-Service", "X-Partner", "X-Tenant-Sig", "X-Signature-V2")
SCHEMES = ("Bearer", "Token", "token", "Bot", "ApiKey", "SSWS", "Key", "Bearer")


def _spell(rng: random.Random, words: list[str]) -> str:
    """One of the common spellings of a multi-word name."""
    words = [w for w in words if w]
    style = rng.randrange(7)
    if style == 0:
        return "_".join(words)
    if style == 1:
        return "-".join(words)
    if style == 2:
        return words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:])
    if style == 3:
        return "_".join(words).upper()
    if style == 4:
        return "".join(w[:1].upper() + w[1:] for w in words)
    if style == 5:
        return " ".join(words)
    return "".join(words)


def secret_name(rng: random.Random) -> str:
    head = rng.choice(HEADS).split()
    qualifier = rng.choice(QUALIFIERS)
    words = [qualifier, *head] if rng.random() < 0.8 else [*head, qualifier]
    return _spell(rng, words)


def token(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:  # an unknown provider prefix
        prefix = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 5)))
        body = "".join(rng.choice(B62) for _ in range(rng.randint(24, 48)))
        return prefix + rng.choice("_-") + body
    if kind == 1:
        return "".join(rng.choice(B62) for _ in range(rng.randint(20, 48)))
    if kind == 2:
        return "".join(rng.choice(HEX) for _ in range(rng.choice((32, 40, 64))))
    if kind == 3:
        return "".join(rng.choice(B64URL) for _ in range(43))
    # a password: letters, digits and a symbol
    chars = B62 + "!#%&*+?@^"
    return "".join(rng.choice(chars) for _ in range(rng.randint(12, 20))) + rng.choice("!#%&")


def _uses(rng: random.Random, name: str, value: str) -> list[Any]:
    header = rng.choice(SECRET_HEADERS)
    other = rng.choice(OTHER_HEADERS)
    ident = name.replace(" ", "_")
    in_url = quote(value, safe="")  # as a URL holds it
    return [
        {name: value},
        {"inputSchema": {"properties": {name: {"type": "string", "default": value}}}},
        {"headers": {header: value}},
        {"headers": {other: value}},
        {"headers": {"Authorization": f"{rng.choice(SCHEMES)} {value}"}},
        {"url": f"https://deploy:{in_url}@api.example.org/v1/run"},
        {"url": f"https://api.example.org/v1/items?{quote(ident)}={in_url}&page=2"},
        {"headers": [{"name": name, "value": value}]},
        {"params": [{"key": name, "value": value}]},
        {"description": f"Calls the service with {ident}={value} set."},
        {"description": f"{name}: {value}"},
    ]


# Issue 30: names that say nothing about a secret, and the positions and flows the first
# generator did not produce. A secret there is known by its *use* (a header, a credential
# pair, URL userinfo, an `Authorization` scheme, a query parameter whose name means a secret)
# or by its *shape* (a token with a provider-like prefix), wherever the literal flows.
NEUTRAL = ("value", "data", "x", "config", "opts", "v1", "item", "field", "arg", "param")
QUERY_SECRET_NAMES = (
    "access_token", "api_key", "apikey", "key", "token", "sig", "signature", "auth",
    "client_secret", "password", "pwd", "secret", "code", "session", "X-Amz-Signature",
)  # fmt: skip


def prefixed_token(rng: random.Random) -> str:
    """A token shaped like a provider's: a short lower-case prefix, `_` or `-`, a random body."""
    prefix = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 5)))
    return prefix + rng.choice("_-") + "".join(rng.choice(B62) for _ in range(rng.randint(28, 48)))


def _more_uses(rng: random.Random, value: str, shaped: str) -> list[Any]:
    """VALUE (any token) in a use that makes it a secret; SHAPED (a prefixed token) in a
    position that says nothing but its shape; all under neutral names."""
    neutral = rng.choice(NEUTRAL)
    other = rng.choice(OTHER_HEADERS)
    in_url = quote(value, safe="")
    user = rng.choice(("deploy", "admin", "ci", "bot", neutral))
    basic = __import__("base64").b64encode(f"{user}:{value}".encode()).decode()
    qname = rng.choice(QUERY_SECRET_NAMES)
    return [
        # a use under a neutral name
        {neutral: {"headers": [{"name": other, "value": value}]}},
        {"headers": {"Authorization": f"Basic {basic}"}},
        {neutral: {"username": user, "password": value}},
        {neutral: f"https://{user}:{in_url}@api.example.org/"},
        {"description": f"Fetches https://{user}:{in_url}@api.example.org/v1 nightly."},
        {neutral: f"https://api.example.org/v1/run?page=2&{qname}={in_url}"},
        {"url": {"$template": f"https://api.example.org/{{{{input.p}}}}?{qname}={in_url}"}},
        {neutral: [{"key": qname, "value": value}]},
        # shape alone, where the name says nothing
        {neutral: shaped},
        {neutral: ["first", shaped, "last"]},
        {neutral: {shaped: True}},
        {neutral: f"{rng.choice(NEUTRAL)}={shaped}"},
    ]


def _flow(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "schema": "talos.local-tool.v1",
        "id": "secret.flow",
        "version": 1,
        "title": "Secret flow",
        "description": "A secret assembled from literals.",
        "createdAt": "2026-12-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {},
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 64, "nodes": nodes},
    }
    m.update(extra)
    return m


def _chained(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, node in enumerate(nodes[:-1]):
        node["next"] = nodes[i + 1]["id"]
    return nodes


def flow_cases(n: int, seed: int = 18) -> Iterator[tuple[str, dict[str, Any]]]:
    """`n` manifests in which a prefixed token is assembled from literals under neutral names:
    split across `set`s and templates, across input and state defaults, over a literal loop's
    items, inside a list or an object built by a `set`, and at a key. Judged by `forgec.check`
    (FORGE_SECRET_FOUND: SPEC §14 "Secrets after folding")."""
    rng = random.Random(seed)
    made = 0
    while made < n:
        tok = prefixed_token(rng)
        cut = rng.randint(3, len(tok) - 3)
        a, b = tok[:cut], tok[cut:]
        na, nb, nc = rng.sample(NEUTRAL, 3)
        ret = {"id": "done", "type": "return", "value": {"$ref": nc}}
        kind = made % 6
        if kind == 0:  # set + set + template
            nodes = [
                {"id": "s1", "type": "set", "target": na, "value": a},
                {"id": "s2", "type": "set", "target": nb, "value": b},
                {"id": "s3", "type": "set", "target": nc,
                 "value": {"$template": "{{%s}}{{%s}}" % (na, nb)}},
                ret,
            ]  # fmt: skip
            doc = _flow(_chained(nodes))
        elif kind == 1:  # input default + state default
            nodes = [
                {"id": "s3", "type": "set", "target": nc,
                 "value": {"$template": "{{input.%s}}{{state.%s}}" % (na, nb)}},
                ret,
            ]  # fmt: skip
            doc = _flow(
                _chained(nodes),
                inputSchema={
                    "type": "object",
                    "properties": {na: {"type": "string", "default": a}},
                },
                state={"fields": {nb: {"type": "string", "default": b}}, "maxBytes": 4096},
            )
        elif kind == 2:  # a literal loop's items, accumulated
            pieces = [tok[i : i + 6] for i in range(0, len(tok), 6)]
            nodes = [
                {"id": "s1", "type": "set", "target": nc, "value": ""},
                {"id": "l", "type": "foreach", "source": [a], "itemVar": "it",
                 "maxItems": 4, "body": [
                     {"id": "b", "type": "set", "target": nc,
                      "value": {"$template": "{{it}}%s" % b}}]},
                ret,
            ]  # fmt: skip
            del pieces
            doc = _flow(_chained(nodes))
        elif kind == 3:  # a list built by a set, the token whole in it
            nodes = [
                {"id": "s1", "type": "set", "target": na, "value": a},
                {"id": "s3", "type": "set", "target": nc,
                 "value": ["x", {"$template": "{{%s}}%s" % (na, b)}]},
                ret,
            ]  # fmt: skip
            doc = _flow(_chained(nodes))
        elif kind == 4:  # an object built by a set
            nodes = [
                {"id": "s1", "type": "set", "target": na, "value": b},
                {"id": "s3", "type": "set", "target": nc,
                 "value": {nb: {"$template": "%s{{%s}}" % (a, na)}}},
                ret,
            ]  # fmt: skip
            doc = _flow(_chained(nodes))
        else:  # a template of three literal pieces through two sets
            c = rng.randint(1, len(b) - 1)
            nodes = [
                {"id": "s1", "type": "set", "target": na, "value": a},
                {"id": "s2", "type": "set", "target": nb,
                 "value": {"$template": "{{%s}}%s" % (na, b[:c])}},
                {"id": "s3", "type": "set", "target": nc,
                 "value": {"$template": "{{%s}}%s" % (nb, b[c:])}},
                ret,
            ]  # fmt: skip
            doc = _flow(_chained(nodes))
        made += 1
        yield f"flow {kind} ({na}, {nb}, {nc})", doc


def wider_cases(n: int, seed: int = 18) -> Iterator[tuple[str, Any]]:
    """`n` positive documents of the widened generator (`_more_uses`)."""
    rng = random.Random(seed)
    made = 0
    while made < n:
        docs = _more_uses(rng, token(rng), prefixed_token(rng))
        use = rng.randrange(len(docs))
        made += 1
        yield f"wider use {use}", docs[use]


def wider_negative_cases(seed: int = 18) -> Iterator[tuple[str, Any]]:
    """The widened uses holding ordinary values (identifiers, words, paths): must stay clean."""
    rng = random.Random(seed)
    for value in (*ORDINARY, "page_2", "user-preferences", "item_count"):
        if " " in value:
            continue
        for use, doc in enumerate(_more_uses(rng, value, value)):
            if use in (1, 2, 3, 4, 5, 6, 7):
                continue  # a value in a credential's use is a secret whatever it spells
            yield f"wider use {use}: {value!r}", doc


def cases(n: int, seed: int = 18) -> Iterator[tuple[str, Any]]:
    """`n` positive cases: (what it is, the JSON document)."""
    rng = random.Random(seed)
    made = 0
    while made < n:
        name = secret_name(rng)
        docs = _uses(rng, name, token(rng))
        use = rng.randrange(len(docs))
        made += 1
        yield f"use {use} under {name!r}", docs[use]


ORDINARY = (
    "the key to a good week is rest",
    "Press the key on the left",
    "notes.lastId",
    "sort-by-date",
    "2026-12-01",
    "v2.4.1",
    "/api/v1/tokens",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "application/json",
    "Pagination cursor for the next page",
    "Introduzca su contraseña en la aplicación",
    "Passwort vergessen? Hier klicken",
    "请输入您的密码",
    "パスワードを入力してください",
)


def negative_cases(seed: int = 18) -> Iterator[tuple[str, Any]]:
    rng = random.Random(seed)
    # (a UUID is not among them: under a secret-meaning name it is a key, as many API keys are)
    for value in ORDINARY:
        for _ in range(4):
            name = secret_name(rng)
            for use, doc in enumerate(_uses(rng, name, value)):
                if use in (5, 6, 9):
                    continue  # a value with spaces in a URL or inside prose is not a use
                yield f"use {use} under {name!r}: {value!r}", doc


def rate(found: Callable[[Any], bool], docs: Iterator[tuple[str, Any]]) -> tuple[float, list[str]]:
    """(fraction of docs where `found` is False, the first few of them)."""
    total = 0
    missed: list[str] = []
    for what, doc in docs:
        total += 1
        if not found(doc):
            missed.append(what)
    return len(missed) / max(total, 1), missed[:10]


def flow_found(doc: dict[str, Any]) -> bool:
    """Whether `forgec.check` of the manifest DOC reports FORGE_SECRET_FOUND."""
    import orjson

    from forgec.api import check

    report = check(orjson.dumps(doc), path="t.talostool")
    return any(d.code == "FORGE_SECRET_FOUND" for d in report.diagnostics)


if __name__ == "__main__":
    from forgec.passes.secrets import find_secrets

    by_use: dict[str, list[int]] = {}
    for what, doc in wider_cases(1200):
        use = what.split()[2]
        by_use.setdefault(use, [0, 0])[0] += 1
        by_use[use][1] += not find_secrets(doc)
    total = sum(m for _, m in by_use.values()) / sum(t for t, _ in by_use.values())
    print(f"wider generator: missed {total:.1%}")
    for use, (t, m) in sorted(by_use.items(), key=lambda x: int(x[0])):
        print(f"  use {use}: {m}/{t} missed")
    flow = [(what, flow_found(doc)) for what, doc in flow_cases(300)]
    per: dict[str, list[int]] = {}
    for what, ok in flow:
        kind = what.split()[1]
        per.setdefault(kind, [0, 0])[0] += 1
        per[kind][1] += not ok
    print(f"flows: missed {sum(m for _, m in per.values()) / len(flow):.1%}", per)
    flagged, examples = rate(lambda d: not find_secrets(d), wider_negative_cases())
    print(f"wider negatives flagged: {flagged:.1%}", examples)

    miss, examples = rate(lambda d: bool(find_secrets(d)), cases(2000))
    print(f"miss rate over 2000 generated secrets: {miss:.1%}")
    for e in examples:
        print("  missed:", e)
    flagged, examples = rate(lambda d: not find_secrets(d), negative_cases())
    print(f"false positives over the negative uses: {flagged:.1%}")
    for e in examples:
        print("  flagged:", e)
