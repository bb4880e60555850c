"""The secrets pass: `FORGE_SECRET_FOUND` for every string of the manifest that holds a secret.

Every string is scanned (values and object keys alike) with `scan_text`
(`forgec.secretscan.rules`), given the key it sits under so that a value under `password`,
`apiKey` or `Authorization` is judged by the "secret-like name" rule too. The name a value is
judged under is its key, except that `default`, `const`, `enum`, `examples` and `value` pass
their object's own name through (`{"password": {"default": "…"}}` is judged as a password), and
that `{"name": "X-Api-Key", "value": "…"}` pairs (and a `set` step's `target`/`value`) judge
the value under the pair's name.

Speed. A manifest is mostly clean, and walking a few thousand strings in Python costs several
times what `orjson.loads` does, so the pass first screens the whole document at C speed:
`orjson.dumps` of the parsed value, then one search of its ASCII lower-case copy for every
stem and literal at once (an Aho-Corasick automaton, `_NEEDLES`; the one-byte markers with
`bytes.find`) and one for long runs, for the only features any rule needs (see
`forgec.secretscan.rules`): a run of 20+ token characters (found with `bytes.translate` +
`find`), a marker (`@` for URL passwords, `sig=`, `~`) or a secret-like stem (`pass`, `key`,
`token`, …). Each hit is widened to the JSON string
around it, which is decoded and scanned on its own. A secret-like key or pair name has its value
judged on the spot when that value is flat (`_value_may_hold_one`: a header holding a
`$credential` reference costs a few µs, not a walk). Nothing found and no value left unjudged:
done, without a walk. Otherwise the walk runs, to compute JSON Pointers, scanning only the
strings the screen flagged and those under a secret-like name (`_walk_screened`, a leaner
copy of the reference `walk_secrets`). The screen is a superset of the walk by construction; a
hypothesis test compares the screened pass with the full reference walk.
"""

from __future__ import annotations

import re
from typing import Any

import ahocorasick_rs
import attrs
import orjson

from forgec.ir.pointer import escape
from forgec.ir.readable import Readable
from forgec.passes.context import PassContext
from forgec.secretscan.rules import (
    HEADER_USE,
    INVISIBLE,
    LONG_RUN,
    SCREEN_LITERALS,
    SCREEN_STEMS,
    SecretFinding,
    is_headers_name,
    name_matters,
    scan_text,
)

__all__ = [
    "FoldedSecret",
    "SecretFinding",
    "check_secrets",
    "find_folded_secrets",
    "find_secrets",
    "scan_text",
]

CODE = "FORGE_SECRET_FOUND"
HINT = (
    "remove it from the file and rotate it (it has been exposed); declare the credential in "
    '`credentialRequirements` and reference it as `{"$credential": "ID"}` in a `net.http` '
    "step's headers, so the host supplies it at the bridge"
)

# Keys whose string values are judged under their object's own name.
_PASSTHROUGH = frozenset({"default", "const", "enum", "examples", "example", "value", "values"})
# `target`: a `set` step's variable
_PAIR_NAME_KEYS = ("name", "key", "header", "target", "field", "param", "parameter", "variable")
_PAIR_KEYS = tuple(f'"{k}":'.encode() for k in _PAIR_NAME_KEYS)
_PAIR_WINDOW = max(map(len, _PAIR_KEYS))

Located = tuple[str, bool, SecretFinding]  # (JSON Pointer, is the member's key, finding)


def check_secrets(ctx: PassContext) -> None:
    for pointer, is_key, finding in find_secrets(ctx.raw):
        ctx.report(CODE, pointer, _message(pointer, is_key, finding), hint=HINT, key=is_key)
    if ctx.manifest_or_none is not None:
        for folded in find_folded_secrets(ctx.raw, ctx.manifest, ctx.facts):
            f = folded.finding
            what = f"{f.kind} (`{f.preview}`)" if f.preview else f.kind
            message = (
                f"{what} formed by step `{folded.step}` from constants of the flow (the "
                f"template at `{folded.template}`); the value is not shown"
            )
            # SPEC §14: at the path of the step where the secret is formed
            ctx.report(CODE, folded.pointer, message, hint=HINT)


# renderings scanned per manifest: a few ms at most, however many templates fold (docs/secrets.md)
FOLDED_SCAN_BUDGET = 256


@attrs.frozen(repr=False, eq=False)
class FoldedSecret(Readable):
    pointer: str  # the step's JSON Pointer: where the secret is formed
    step: str  # the step's id
    template: str  # the pointer of the template that forms it, inside the step
    finding: SecretFinding


def find_folded_secrets(raw: Any, manifest: Any, facts: Any) -> list[FoldedSecret]:
    """Secrets no string of the file holds but a `$template` builds from constants (SPEC §14),
    one per template, in document order of the templates.

    Each rendering (`forgec.passes.folding`) is put in place of its template in a copy of the
    step's JSON, and that step is scanned as the pass scans the file, so the rendering is judged
    under the same name (`Authorization`, a `set` step's `target`, …). A template whose own
    text already holds a finding is reported where it is written, not again here.
    """
    from forgec.passes.folding import folded_templates

    out: list[FoldedSecret] = []
    budget = FOLDED_SCAN_BUDGET
    for folded in folded_templates(manifest, facts):
        if budget <= 0:
            break
        node_pointer, pointer = folded.node.pointer, folded.template.pointer
        if not pointer.startswith(node_pointer) or scan_text(folded.template.text):
            continue
        step = _at(raw, node_pointer)
        if not isinstance(step, dict):
            continue
        tokens = [_unescape(t) for t in pointer[len(node_pointer) :].split("/")[1:]]
        # the names a rendering may be judged under: none secret-like, and its own text must
        # hold the finding, which `scan_text` says without a copy of the step
        named = any(name_matters(n) for n in _names_along(step, tokens))
        best: SecretFinding | None = None
        for text in folded.texts:
            budget -= 1
            if budget < 0:
                break
            if not named and not scan_text(text):
                continue
            copy = orjson.loads(orjson.dumps(step))
            if not _put(copy, tokens, text):
                break
            rel = pointer[len(node_pointer) :]
            for at, is_key, finding in find_secrets(copy):
                if at == rel and not is_key and (best is None or finding.strength > best.strength):
                    best = finding
        if best is not None:
            out.append(FoldedSecret(node_pointer, folded.node.id, pointer, best))
    out.sort(key=lambda item: _document_order(item.template))
    return out


def _names_along(step: Any, tokens: list[str]) -> list[str]:
    """Every key on the path to a value and every pair name beside it (a superset of the name
    the walk judges the value under)."""
    names: list[str] = []
    cur = step
    for token in tokens:
        if isinstance(cur, dict):
            names.append(token)
            names.append(HEADER_USE + token)  # in case the object is a `headers` one
            pair = _pair_name(cur)
            if pair is not None:
                names.extend((pair, HEADER_USE + pair))
            cur = cur.get(token)
        elif isinstance(cur, list) and token.isdigit() and int(token) < len(cur):
            cur = cur[int(token)]
        else:
            break
    return names


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _document_order(pointer: str) -> list[tuple[int, int | str]]:
    return [(0, int(t)) if t.isdigit() else (1, t) for t in pointer.split("/")[1:]]


def _at(raw: Any, pointer: str) -> Any:
    cur = raw
    for token in (_unescape(t) for t in pointer.split("/")[1:]):
        if isinstance(cur, dict):
            cur = cur.get(token)
        elif isinstance(cur, list) and token.isdigit() and int(token) < len(cur):
            cur = cur[int(token)]
        else:
            return None
    return cur


def _put(doc: Any, tokens: list[str], value: str) -> bool:
    """Replace the value at `tokens` (a path into `doc`) by `value`; False when it is absent."""
    if not tokens:
        return False
    parent = _at(doc, "".join("/" + escape(t) for t in tokens[:-1]))
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = value
        return True
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent[int(last)] = value
        return True
    return False


def find_secrets(raw: Any) -> list[Located]:
    """The strongest finding of every string of `raw` (any JSON value), in document order."""
    try:
        blob = orjson.dumps(raw)
    except (TypeError, ValueError, orjson.JSONEncodeError):
        return walk_secrets(raw)  # not plain JSON (huge int, lone surrogate…): no screen
    screened = screen(blob)
    if screened is None:
        return walk_secrets(raw)
    dirty, names_matter = screened
    if not dirty and not names_matter:
        return []
    return _walk_screened(raw, dirty)


def _message(pointer: str, is_key: bool, f: SecretFinding) -> str:
    what = f"{f.kind} (`{f.preview}`)" if f.preview else f.kind
    if is_key:
        parent = pointer.rsplit("/", 1)[0]
        where = f"a key of the object at `{parent}`" if parent else "a top-level key"
        return f"{what} in {where}; the value is not shown"
    where = f"`{pointer}`" if pointer else "the document root"
    return f"{what} at {where}; the value is not shown"


# ---------------------------------------------------------------------------------------------
# The full walk


def walk_secrets(raw: Any, *, only: set[str] | None = None) -> list[Located]:
    """Scan every string of `raw`; with `only`, just those and the ones under a name that matters.

    `only` comes from the screen: the strings whose own text has a finding. The rest can only
    gain one from their name, so they are scanned when `name_matters(name)`.
    """
    out: list[Located] = []
    # (value, path as a linked list of (parent, token), name it is judged under); pointers are
    # only spelled out for findings
    stack: list[tuple[Any, _Link, str | None]] = [(raw, None, None)]
    seen: set[int] = set()  # containers already walked: a value built in code may be cyclic
    while stack:
        value, link, name = stack.pop()
        if isinstance(value, str):
            if only is None or value in only or name_matters(name):
                best = _strongest(scan_text(value, name=name))
                if best is not None:
                    out.append((_pointer(link), False, best))
        elif isinstance(value, dict):
            if id(value) in seen:
                continue
            seen.add(id(value))
            pair = _pair_name(value, name)
            children: list[tuple[Any, _Link, str | None]] = []
            for key, child in value.items():
                if not isinstance(key, str):
                    continue
                child_link = (link, key)
                if only is None or key in only:
                    best = _strongest(scan_text(key))
                    if best is not None:
                        out.append((_pointer(child_link), True, best))
                children.append((child, child_link, _child_name(key, name, pair)))
            stack.extend(reversed(children))
        elif isinstance(value, list | tuple):
            if id(value) in seen:
                continue
            seen.add(id(value))
            stack.extend((v, (link, i), name) for i, v in reversed(list(enumerate(value))))
    return out


_Link = tuple[Any, str | int] | None


def _walk_screened(raw: Any, only: set[str], name: str | None = None) -> list[Located]:
    """`walk_secrets(raw, only=only)`, faster, for a value `orjson.dumps` accepted.

    Same visit order and the same findings (the hypothesis test holds `find_secrets` equal to
    the full `walk_secrets`); `walk_secrets` stays the plain reference. The savings: recursion
    instead of a stack of tuples (the value is at most orjson's 255 levels deep), scalars and
    strings judged in their parent's loop without a visit of their own, each name judged once
    per walk, and no pass over the keys when the screen flagged no string.
    """
    out: list[Located] = []
    # a value built in code may share a container: walk it once
    _visit(raw, None, name, only, out, set(), {})
    return out


def _scan(text: str, link: _Link, name: str | None, out: list[Located]) -> None:
    best = _strongest(scan_text(text, name=name))
    if best is not None:
        out.append((_pointer(link), False, best))


def _visit(
    value: Any,
    link: _Link,
    name: str | None,
    only: set[str],
    out: list[Located],
    seen: set[int],
    judged: dict[str | None, bool],
) -> None:
    # module-level functions, not closures of `_walk_screened`: a recursive closure is a
    # reference cycle, which keeps what it reaches alive until the collector runs
    if isinstance(value, dict):
        if id(value) in seen:
            return
        seen.add(id(value))
        if only:
            for key in value:
                if isinstance(key, str) and key in only:
                    best = _strongest(scan_text(key))
                    if best is not None:
                        out.append((_pointer((link, key)), True, best))
        pair = _pair_name(value, name)
        # the common object (no pair, not headers): every member is judged under its key
        plain = pair is None and (name is None or not is_headers_name(name))
        for key, child in value.items():
            if not isinstance(key, str):
                continue
            if plain and (name is None or key not in _PASSTHROUGH):
                child_name: str | None = key
            else:
                child_name = _child_name(key, name, pair)
            if isinstance(child, str):
                matters = judged.get(child_name)
                if matters is None:
                    matters = judged[child_name] = name_matters(child_name)
                if matters or child in only:
                    _scan(child, (link, key), child_name, out)
            elif isinstance(child, dict | list | tuple):
                _visit(child, (link, key), child_name, only, out, seen, judged)
    elif isinstance(value, list | tuple):
        if id(value) in seen:
            return
        seen.add(id(value))
        matters = judged.get(name)
        if matters is None:
            matters = judged[name] = name_matters(name)
        for i, child in enumerate(value):
            if isinstance(child, str):
                if matters or child in only:
                    _scan(child, (link, i), name, out)
            elif isinstance(child, dict | list | tuple):
                _visit(child, (link, i), name, only, out, seen, judged)
    elif isinstance(value, str) and (value in only or name_matters(name)):
        _scan(value, link, name, out)


def _pointer(link: _Link) -> str:
    tokens: list[str | int] = []
    while link is not None:
        link, token = link
        tokens.append(token)
    return "".join("/" + escape(t) for t in reversed(tokens))


def _pair_name(obj: dict[Any, Any], name: str | None = None) -> str | None:
    """The name a `{"name": N, "value": V}` pair judges V under: N, as a header's when the pair
    says so (`{"header": N, ...}`) or sits in a `headers` list."""
    if "value" not in obj:
        return None
    for k in _PAIR_NAME_KEYS:
        v = obj.get(k)
        if isinstance(v, str):
            return HEADER_USE + v if k == "header" or is_headers_name(name) else v
    return None


def _child_name(key: str, name: str | None, pair: str | None) -> str | None:
    """The name a member is judged under: its pair's name for a pair's `value` (and none for
    the member naming the pair), its object's
    name through `default`, `const`, ... (`_PASSTHROUGH`), `HEADER_USE + key` for a member of
    a `headers` object (a value judged by its use), else its key."""
    if pair is not None:
        if key == "value":
            return pair
        if key in _PAIR_NAME_KEYS:
            return None  # the pair's name is a name (`{"key": "apiKey", ...}`), not a value
    if name is not None:
        if key in _PASSTHROUGH:
            return name
        if is_headers_name(name):
            return HEADER_USE + key
    return key


def _strongest(findings: list[SecretFinding]) -> SecretFinding | None:
    if not findings:
        return None
    return max(findings, key=lambda f: f.strength)  # max keeps the first of equals


# ---------------------------------------------------------------------------------------------
# The screen


# `+` and `/` too: a base64 run (of a provider token, or a bare key) must not slip through
# because those characters cut it into runs shorter than 20
_RUN_TABLE = bytes(
    0x61 if (chr(b).isascii() and (chr(b).isalnum() or chr(b) in "_-+/")) else 0x20
    for b in range(256)
)
# UTF-8 of the characters matching ignores (`forgec.secretscan.rules.INVISIBLE`): they can cut a token or
# a name anywhere, so a document holding one is scanned in full
_ZERO_WIDTH = re.compile(rb"\xe2(?:\x80[\x8b-\x8d]|\x81\xa0)").search
_OTHER_INVISIBLE = (b"\xc2\xad", b"\xef\xbb\xbf")  # soft hyphen, BOM
assert all(_ZERO_WIDTH(c.encode()) or c.encode() in _OTHER_INVISIBLE for c in INVISIBLE)
_RUN_NEEDLE = b"a" * LONG_RUN
# Every stem and literal of two bytes or more in one automaton (UTF-8; a non-ASCII stem as
# `bytes.lower()` leaves it): one pass over the lower-cased document finds them all. The `re`
# searches it replaced, one per first byte, each cost about 15 µs over 52 KB whatever the
# needle (the scan for the first byte is the cost), and there were 16 of them: 270 µs; the
# automaton takes 28 µs. Leftmost-first: with those semantics the library runs a SIMD
# prefilter (three times faster than its standard semantics here); a needle of one byte
# (`@`, `~`, `%`) would turn that prefilter off, and `bytes.find` (memchr) finds one in a µs.
# Non-overlapping matches suffice: every string holding a needle holds a reported match (no
# needle holds a quote, so a match never spans two strings, and the search resumes where a
# match ends, before the next string starts).
_SCREEN_WORDS = tuple(w.encode("utf-8") for w in SCREEN_STEMS + SCREEN_LITERALS)
assert not any(b'"' in w or b"\\" in w for w in _SCREEN_WORDS)
_NEEDLES = ahocorasick_rs.BytesAhoCorasick(
    [w for w in _SCREEN_WORDS if len(w) > 1], matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST
)
_BYTES = tuple(w for w in _SCREEN_WORDS if len(w) == 1)
_QUOTE, _BACKSLASH = 0x22, 0x5C


def screen(blob: bytes) -> tuple[set[str], bool] | None:
    """Judge every string of the compact JSON `blob` that has a screen feature (module doc).

    Returns the strings with a finding of their own and whether some key or pair name is
    secret-like (then values need judging under it), or None when the blob defeats the screen.
    """
    if not blob.isascii() and (
        _ZERO_WIDTH(blob) is not None or any(c in blob for c in _OTHER_INVISIBLE)
    ):
        return None
    checked: set[int] = set()  # opening-quote offsets of strings already judged
    budget = _NAMED_VALUE_BUDGET
    dirty: set[str] = set()
    names_matter = False

    def judge(i: int) -> int:
        """Judge the string around offset `i`; its closing quote's offset, or -1 when the
        blob defeats the screen."""
        nonlocal budget, names_matter
        span = _enclosing_string(blob, i)
        if span is None:
            return -1
        q0, q1 = span
        if q0 in checked:
            return q1
        checked.add(q0)
        try:
            text = orjson.loads(blob[q0 : q1 + 1])
        except orjson.JSONDecodeError:
            return -1
        if not isinstance(text, str):
            return -1
        if scan_text(text):
            dirty.add(text)
        # a secret-like key judges its value, and so does a pair's name
        if blob[q1 + 1 : q1 + 2] == b":":
            value_at = q1 + 2  # a key: its value follows
        elif blob[max(0, q0 - _PAIR_WINDOW) : q0].endswith(_PAIR_KEYS):
            # a pair's name, judged on the spot only when `"value"` comes next (the value may
            # be judged under another member's name: judging it under this one scans a
            # superset); any other layout walks
            value_at = q1 + 10 if blob.startswith(b',"value":', q1 + 1) else -1
        else:
            value_at = 0
        if value_at and text == "header":
            names_matter = True  # a `{"header": N, "value": V}` pair: N is elsewhere
        if value_at and not names_matter and name_matters(text):
            value = None
            if value_at > 0:
                value = _value_at(blob, value_at, value_at + budget)
                budget -= 0 if value is None else len(value)
            names_matter = value is None or _value_may_hold_one(value, text)
        return q1

    low = blob.lower()
    after = 0  # the matches before it lie in strings already judged
    for _needle, i, _end in _NEEDLES.find_matches_as_indexes(low):
        if i >= after:
            q1 = judge(i)
            if q1 < 0:
                return None
            after = q1 + 1
    for byte in _BYTES:
        i = low.find(byte)
        while i >= 0:
            q1 = judge(i)
            if q1 < 0:
                return None
            i = low.find(byte, q1 + 1)
    # `bytes.find` here: a needle of one repeated byte makes `re` stop at every token character
    runs = blob.translate(_RUN_TABLE)
    i = runs.find(_RUN_NEEDLE)
    while i >= 0:
        q1 = judge(i)
        if q1 < 0:
            return None
        i = runs.find(_RUN_NEEDLE, q1 + 1)
    return dirty, names_matter


# unrolled and possessive, so `re` runs through a string or a member list in tight loops
_JSON_STRING = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_FLAT_MEMBERS = rb"(?:[^\"{}\[\]]++|" + _JSON_STRING + rb")*+"
# a value with no container inside a container: a string, a flat object or array, a scalar;
# or a list of flat objects (a `headers` list of name/value pairs). Possessive, and each
# alternative opens with its own byte, so matching is linear.
_FLAT_OBJECTS = rb"(?:[^\"{}\[\]]++|" + _JSON_STRING + rb"|\{" + _FLAT_MEMBERS + rb"\})*+"
_SIMPLE_VALUE = re.compile(
    _JSON_STRING + rb"|\{" + _FLAT_MEMBERS + rb"\}|\[" + _FLAT_OBJECTS + rb"\]|[-+.0-9A-Za-z]+",
    re.DOTALL,
)


_BRACKET = re.compile(_JSON_STRING + rb"|[\[\]{}]", re.DOTALL)


def _value_at(blob: bytes, start: int, stop: int) -> bytes | None:
    """The JSON value of compact `blob` starting at `start`, if it ends before `stop` (a few
    nested objects: a header pair holding a `$credential`); else None. Linear in its length."""
    m = _SIMPLE_VALUE.match(blob, start, stop)
    if m is not None:
        return m.group()
    if blob[start : start + 1] not in (b"[", b"{"):
        return None
    depth = 0
    for token in _BRACKET.finditer(blob, start, stop):
        first = token.group()[:1]
        if first in (b"[", b"{"):
            depth += 1
        elif first in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                return blob[start : token.end()]
    return None


_NAMED_VALUE_BUDGET = 4096  # bytes of values under secret-like keys judged without the walk


def _value_may_hold_one(value_json: bytes, name: str) -> bool:
    """Whether the value `value_json` (a `_SIMPLE_VALUE`) under the secret-like key `name`
    needs the walk.

    Every string a name judges lies in the value of a secret-like key or of a pair, and a
    value's strings are judged by its key (or pair name) and what is inside it, so a value
    judged here to hold nothing needs no walk for its name's sake. The commonest
    secret-like key in a good manifest is a header holding a reference
    (`"Authorization": {"$credential": "github"}`): judged here in a few µs instead of a walk
    of the whole document. A value with a container inside a container, or past the
    document's budget of `_NAMED_VALUE_BUDGET` bytes (many or long values: the walk costs
    the same then), is left to the walk.
    """
    try:
        value = orjson.loads(value_json)
    except orjson.JSONDecodeError:
        return True
    return bool(_walk_screened(value, set(), name))


def screen_is_clean(blob: bytes) -> bool:
    """True when no string of the compact JSON `blob` can hold a finding."""
    screened = screen(blob)
    return screened is not None and not screened[0] and not screened[1]


def _escaped(blob: bytes, j: int) -> bool:
    k = j - 1
    while k >= 0 and blob[k] == _BACKSLASH:
        k -= 1
    return (j - 1 - k) % 2 == 1


def _enclosing_string(blob: bytes, i: int) -> tuple[int, int] | None:
    """Offsets of the quotes around position `i` of a compact JSON document."""
    q1 = blob.find(b'"', i)
    while q1 >= 0 and _escaped(blob, q1):
        q1 = blob.find(b'"', q1 + 1)
    q0 = blob.rfind(b'"', 0, i)
    while q0 >= 0 and _escaped(blob, q0):
        q0 = blob.rfind(b'"', 0, q0)
    if q0 < 0 or q1 < 0:
        return None
    return q0, q1
