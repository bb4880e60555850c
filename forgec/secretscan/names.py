"""Which names mean a secret, in any common spelling or language: the one vocabulary the
scanner judges keys, header names, pair names and `name=value` text by (SPEC §14).

A name is normalised first: invisible characters dropped, accents stripped (`contraseña` →
`contrasena`, `Schlüssel` → `schlussel`), lower-cased, and split into words at separators
(`_`, `-`, `.`, spaces) and camel-case humps. Then, from the end of the name:

- a **password** word (`password`, `pwd`, `passwort`, `kennwort`, `mot de passe`,
  `contraseña`, `senha`, `пароль`, `密码`, `パスワード`, …) → class `password`;
- `auth` / `authorization` → class `auth` (a header value with a scheme);
- a **token** word (`token`, `secret`, `credential`, `apikey`, `cookie`, `jeton`, `токен`,
  `令牌`, `トークン`, `secreto`, `geheimnis`, …) → class `token`, except after a paging
  qualifier (`nextPageToken`, `cursorToken` are not secrets);
- a **key** word (`key`, `clave`, `clé`, `chiave`, `schlüssel`, `ключ`, `密钥`, …) → class
  `token` (a key is judged by its shape: only a random-looking value is a secret), except
  under a qualifier that says it is not one (`sortKey`, `partitionKey`, `idempotencyKey`,
  `publicKey`, `foreignKey`, `keyId`...).

Only the end of the name counts (`tokenCount`, `passwordPolicy`, `secretHash` are not secrets).
Words of scripts written without spaces (CJK) are matched as suffixes of the name's last word.

Soundness with the pass's screen: a name can only have a class when its ASCII-lower-cased
text contains one of `SCREEN_STEMS` (the screen searches the JSON bytes, lower-cased the same
way, for those stems); `name_class` checks that first, so the two agree by construction.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Lower-case stems, one of which every secret-meaning name holds (as `bytes.lower()` leaves
# it: ASCII lower-cased, everything else as written). Non-ASCII stems skip a letter the
# lower-casing would not touch (`ароль` for `Пароль`).
ASCII_STEMS: tuple[str, ...] = (
    "pass", "pw", "secret", "cred", "key", "token", "auth", "cookie", "session", "header", "sig",
    "contrase", "clave", "mdp", "jeton", "kennw", "geheim", "senha", "segret", "chiave",
    "wachtw", "salasan", "jelsz", "sifre", "haslo", "parol",
)  # fmt: skip
OTHER_STEMS: tuple[str, ...] = (
    "clé", "schlüssel", "senord", "hasł", "şifre", "ароль", "окен", "люч", "密码", "口令", "密钥",
    "秘钥", "令牌", "パスワード", "トークン", "暗号", "비밀번호", "암호", "토큰", "كلمة", "סיסמ",
)  # fmt: skip
SCREEN_STEMS: tuple[str, ...] = ASCII_STEMS + OTHER_STEMS

_PASSWORD: tuple[str, ...] = (
    "password", "passwd", "passphrase", "passcode", "pwd", "pass", "pw", "passe",
    "contrasena", "motdepasse", "mdp", "passwort", "kennwort", "senha", "wachtwoord",
    "losenord", "salasana", "haslo", "sifre", "jelszo", "parola", "parol", "пароль",
    "密码", "口令", "パスワード", "비밀번호", "암호", "كلمةالمرور", "סיסמה",
)  # fmt: skip
_TOKEN: tuple[str, ...] = (
    "token", "tokens", "secret", "secrets", "credential", "credentials", "creds", "cred",
    "apikey", "accesskey", "secretkey", "privatekey", "signingkey", "cookie", "cookies",
    "sessionid", "sessiontoken", "sessionkey", "session", "signature", "sig", "jeton", "secreto", "secreta", "segreto",
    "geheimnis", "geheim", "токен", "令牌", "トークン", "토큰", "秘密", "密钥", "秘钥", "暗号鍵",
)  # fmt: skip
_KEY: tuple[str, ...] = ("key", "clave", "cle", "chiave", "schlussel", "ключ", "키")
_AUTH = ("auth", "authorization", "authorisation")
# A paging or counting qualifier before `token`: not a credential
_NOT_SECRET_TOKEN_QUALIFIERS = frozenset(
    {"page", "next", "continuation", "cursor", "sync", "max", "min", "resume", "pagination",
     "csrf", "xsrf", "count", "limit"}
)  # fmt: skip
# Qualifiers that say a key is not a secret (an identifier, an ordering, a public half)
_NOT_SECRET_KEY_QUALIFIERS = frozenset(
    {"sort", "partition", "primary", "foreign", "idempotency", "cache", "public", "row",
     "hash", "range", "lookup", "dedup", "dedupe", "map", "dict", "object", "s3", "bucket",
     "group", "index", "unique", "composite", "natural", "surrogate", "query", "storage",
     "translation", "i18n", "message", "react", "list", "item", "state", "memory", "field",
     "column", "table", "join", "shard", "routing", "label", "tag", "name", "header", "json"}
)  # fmt: skip
# Words that may follow a head and still name the secret: whose or which one it is
_AFTER_HEAD = frozenset(
    {"api", "app", "client", "service", "bot", "deploy", "integration", "webhook", "db",
     "admin", "user", "root", "github", "gitlab", "openai", "stripe", "slack", "aws", "azure",
     "gcp", "google", "prod", "production", "dev", "test", "staging", "live", "sandbox",
     "old", "new", "main", "primary", "backup", "local", "remote", "x", "my", "secreta",
     "secreto", "segreta", "secrete", "privada", "privee", "acceso", "acces", "accesso"}
)  # fmt: skip

_CAMEL_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", re.ASCII)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_INVISIBLE_DROP = {ord(c): None for c in "\u200b\u200c\u200d\u2060\ufeff\u00ad"}
# letters NFKD does not take apart
_FOLD = str.maketrans({"ł": "l", "Ł": "l", "ø": "o", "Ø": "o", "ß": "ss", "đ": "d", "ı": "i"})


def _strip_accents(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


# the vocabularies as `words` spells them (`パスワード` loses its voicing marks like `é` does)
_PASSWORD = tuple(_strip_accents(w).lower() for w in _PASSWORD)
_TOKEN = tuple(_strip_accents(w).lower() for w in _TOKEN)
_KEY = tuple(_strip_accents(w).lower() for w in _KEY)


def words(name: str) -> list[str]:
    """The name's words, normalised (module doc): `dbPassword` → ["db", "password"]."""
    out: list[str] = []
    for part in re.split(r"[\W_]+", _strip_accents(name)):
        if not part:
            continue
        if part.isascii():
            out.extend(w.translate(_ASCII_LOWER) for w in _CAMEL_RE.findall(part))
        else:
            # a script change (`openaiтокен`) separates words too
            out.extend(w.lower() for w in re.findall(r"[A-Za-z0-9]+|[^A-Za-z0-9]+", part))
    return out


def _ends_with(flat: str, vocabulary: tuple[str, ...]) -> str | None:
    """The vocabulary word `flat` ends with, for words a name spells as one (`motdepasse`,
    `mypassword`): only words of five letters or more, or of a script without spaces, so
    `bypass` or `compass` do not end in a password."""
    for word in vocabulary:
        if flat.endswith(word) and (len(word) >= 5 or not word.isascii()):
            return word
    return None


# A value's use, carried in the name it is judged under: a header value (under a `headers`
# object, or a pair whose key is `header`) is `HEADER_USE + the header's name`
HEADER_USE = "header:"


@functools.lru_cache(maxsize=4096)
def is_headers_name(name: str | None) -> bool:
    """`headers`, `extraHeaders`, `header`: an object whose members are HTTP headers."""
    if not name or len(name) > 128 or "header" not in name.translate(_ASCII_LOWER):
        return False
    ws = words(name)
    return bool(ws) and ws[-1] in ("headers", "header")


def stem_in(name: str) -> bool:
    low = name.translate(_ASCII_LOWER)
    return any(stem in low for stem in SCREEN_STEMS)


@functools.lru_cache(maxsize=4096)
def name_class(name: str | None) -> str | None:
    """`"password"`, `"auth"` or `"token"` for a name that means a secret, `"header"` for a
    header value under a name that does not; None otherwise."""
    if not name or len(name) > 128:
        return None
    if name.startswith(HEADER_USE):
        # a header value: its name's class, else judged by its shape alone (`header`)
        return name_class(name[len(HEADER_USE) :]) or "header"
    name = name.translate(_INVISIBLE_DROP)  # `pass\u00adword` is a password
    if not stem_in(name):
        return None
    return _class_of(tuple(words(name)))


def _class_of(ws: tuple[str, ...], qualified: bool = False) -> str | None:
    """The class of a name's words (module doc); `qualified`: a last word was already read as
    whose or which secret it is (`token_prod`), so it is not read again."""
    if not ws:
        return None
    last = ws[-1]
    prev = ws[-2] if len(ws) > 1 else ""
    if last in _AUTH:
        return "auth"
    if last in _PASSWORD:
        return "password"
    if last in ("token", "tokens") and prev in _NOT_SECRET_TOKEN_QUALIFIERS:
        return None
    if last in _TOKEN:
        return "token"
    if last in _KEY:
        return None if prev in _NOT_SECRET_KEY_QUALIFIERS else "token"
    flat = "".join(ws)
    if _ends_with(flat, _PASSWORD):
        return "password"
    if _ends_with(flat, _TOKEN):
        return "token"
    # the head first, then whose or which it is: `clave_api`, `clé secrète`, `token_prod`,
    # `Password2`, `MotDePasseIntegration` (never an attribute: `tokenCount`, `passwordPolicy`)
    if not qualified and len(ws) >= 2 and (last.isdigit() or last in _AFTER_HEAD):
        return _class_of(ws[:-1], qualified=True)
    return None
