"""The decompiler: a manifest (JSON value) → canonical `.forge` text.

One function per construct, each writing the fixed canonical layout (two-space indent, header
fields in the manifest's order, the flow last, one node per line unless a value needs more).
Layout of a value is decided from the value alone: it is written inline when that fits in 100
columns and holds no line break, else one member per line; a string with a line break becomes a
`\"\"\"` block. So the text is a function of the manifest, and `fmt(compile(T)) == T` holds for
any text this module wrote.

Whatever the sugar cannot say exactly (an unknown field, a node of an odd shape, a network with
an extra key) is written with `raw`, as plain JSON, so any JSON object becomes text that compiles
back to the same manifest. Only the absence of a field the language implies (`schema`,
`execution`, `installScope`, `credentialRequirements`) cannot be written; that raises
`FormatError`.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from forgec.ir.pointer import escape
from forgec.ir.rules import EXECUTION, INSTALL_SCOPE, NODE_ORDER, OP_SYMBOLS, SCHEMA_ID
from forgec.ir.text_rules import ESCAPED_ON_OUTPUT_CHARS
from forgec.runtime.jsontext import format_float

WIDTH = 100
SCHEMA = SCHEMA_ID

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.-][A-Za-z0-9_]+)*\Z")
_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*\Z")
_CRED = re.compile(r"[A-Za-z0-9._-]+\Z")
KEYWORDS = frozenset(
    [
        "tool",
        "version",
        "title",
        "description",
        "created",
        "parent",
        "schema",
        "execution",
        "installScope",
        "network",
        "credential",
        "hosts",
        "model",
        "input",
        "output",
        "state",
        "maxBytes",
        "trigger",
        "ui",
        "raw",
        "flow",
        "entry",
        "max",
        "call",
        "retry",
        "backoff",
        "undo",
        "llm",
        "requires",
        "returns",
        "if",
        "then",
        "else",
        "condition",
        "for",
        "in",
        "return",
        "fail",
        "true",
        "false",
        "null",
        "contains",
        "truthy",
        "exists",
    ]
)
_CMP = {**OP_SYMBOLS, "contains": "contains"}
_HEADER = (
    ("version", "version"),
    ("title", "title"),
    ("description", "description"),
    ("createdAt", "created"),
    ("parentVersion", "parent"),
)
# the fields each node type's sugar can say; anything else is written with `raw`
_NODE_FIELDS = {typ: frozenset(order) for typ, order in NODE_ORDER.items()}


class FormatError(ValueError):
    """The manifest lacks a field the `.forge` language always implies."""


def same_text(written: str, canonical: str) -> bool:
    """Whether a file holds the canonical text. Canonical text ends with one line break; what
    editors add or drop at the end (a second line break, as Neovim writes a buffer that ends in
    an empty line, or none at all) is not a difference worth failing a check for."""
    return written.rstrip("\r\n") == canonical.rstrip("\n")


# ---- strings, names, values ---------------------------------------------------------------


def _escape(s: str, braces: bool, newlines: bool = True) -> str:
    out = []
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "{" and braces:
            out.append("\\{")
        elif ch == "\n" and not newlines:
            out.append("\n")
        elif ch in ESCAPED_ON_OUTPUT_CHARS:
            # SPEC §14: control (C0, DEL, C1) and bidi characters, line separators and
            # (unencodable) lone surrogates are spelled as escapes, never written raw
            out.append(
                {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}.get(
                    ch, f"\\u{ord(ch):04x}"
                )
            )
        else:
            out.append(ch)
    return "".join(out)


def quote(s: str, *, template: bool = False) -> str:
    """A one-line string literal; a literal (non-template) `{{` is escaped so it stays text."""
    return '"' + _escape(s, braces=not template and "{{" in s) + '"'


def _triple(s: str, indent: str, *, template: bool = False) -> str:
    indent += "  "  # the block sits one level in from the line that opens it
    body = _escape(s, braces=not template and "{{" in s, newlines=False)
    lines = [(indent + line if line else "") for line in body.split("\n")]
    return '"""\n' + "\n".join(lines) + "\n" + indent + '"""'


def name(s: str) -> str:
    """A name (node id, variable, capability): bare when the lexer reads it back as one."""
    if _IDENT.match(s) and s not in KEYWORDS:
        return s
    return quote(s)


def _key(s: str) -> str:
    return s if _IDENT.match(s) else quote(s)


def _number(v: int | float) -> str:
    return str(v) if isinstance(v, int) else format_float(v)


def _sugar(v: dict[str, Any]) -> str | None:
    if len(v) != 1:
        return None
    ((k, x),) = v.items()
    if not isinstance(x, str):
        return None
    if k == "$ref" and _REF.match(x):
        return "$" + x
    if k == "$credential" and _CRED.match(x):
        return f"$credential({x})"
    if k == "$template" and "{{" in x and "\n" not in x:
        return quote(x, template=True)
    return None


class _Emit:
    """Writes the comments of the text being reformatted (`dsl_trivia.Trivia`) back.

    Every slot is taken once; whatever the layout could not place where it was (a comment inside
    a construct written on one line by a sugar the source did not use) is written before the
    nearest item that holds it, so no comment is ever dropped.
    """

    def __init__(self, trivia: Any) -> None:
        self.slots: dict[tuple[str, str], list[Any]] = dict(trivia.slots)
        self.blank: set[str] = trivia.blank
        self.trivia = trivia
        # blocks that must be written one member per line: those holding a comment
        self.dirty: set[str] = set()
        for kind, pointer in self.slots:
            p = pointer if kind == "end" else _parent(pointer)
            while p not in self.dirty:
                self.dirty.add(p)
                if not p:
                    break
                p = _parent(p)
        self.keys = sorted(p for _, p in self.slots)
        # comments of a construct that wrote nothing (an empty `raw credentialRequirements []`):
        # they lead the next item written, which is where the next read would put them
        self.pending: list[Any] = []

    def take(self, kind: str, pointer: str) -> list[Any]:
        return self.slots.pop((kind, pointer), [])

    def under(self, pointer: str) -> list[Any]:
        """Take every slot left at or below POINTER, in the file's order."""
        found: list[Any] = []
        lo = bisect.bisect_left(self.keys, pointer)
        prefix = pointer + "/"
        for key in self.keys[lo:]:
            if key != pointer and not key.startswith(prefix):
                if key > prefix:
                    break
                continue
            for kind in ("lead", "end", "trail"):
                found.extend(self.slots.pop((kind, key), []))
        return sorted(found, key=lambda c: c.order)

    def item(
        self, pointer: str, indent: str, text: str, *, first: bool, comma: str = "",
        force_blank: bool = False, top_level: bool = False,
    ) -> list[str]:  # fmt: skip
        """The lines of one item: its blank line and comments, the item, its trailing comment."""
        lead = self.take("lead", pointer)
        if top_level:
            lead = self.pending + lead
            self.pending = []
        trail = self.take("trail", pointer)
        lead.extend(self.under(pointer))
        lead.extend(trail[1:])
        lead.sort(key=lambda c: c.order)
        out: list[str] = []
        if force_blank:
            out.append("")
        out.extend(self.comment_lines(lead, indent, first=first or force_blank))
        if not force_blank and pointer in self.blank and (out or not first):
            out.append("")
        line = text + comma
        if trail:
            line += "  " + trail[0].text
        out.append(line)
        return out

    def end(self, pointer: str, indent: str, *, first: bool) -> list[str]:
        return self.comment_lines(self.take("end", pointer), indent, first=first)

    @staticmethod
    def comment_lines(comments: list[Any], indent: str, *, first: bool) -> list[str]:
        out: list[str] = []
        for c in comments:
            if c.blank and (out or not first):
                out.append("")
            out.append(indent + c.text)
        return out


def _template(v: Any) -> bool:
    """A template the sugar would write as a `"...{{x}}..."` string. In a field the language
    reads as plain text (the header's texts, a credential's purpose, a cron, the ui card, a fail
    message) that string reads back as text, not a template, so such a value is written `raw`."""
    return (
        isinstance(v, dict)
        and len(v) == 1
        and isinstance(v.get("$template"), str)
        and "{{" in v["$template"]
    )


def _parent(pointer: str) -> str:
    return pointer.rsplit("/", 1)[0] if pointer else ""


def _child(pointer: str, key: str | int) -> str:
    return pointer + "/" + escape(key)


def _dirty(e: _Emit | None, pointer: str) -> bool:
    return e is not None and pointer in e.dirty


def inline(v: Any, e: _Emit | None = None, ptr: str = "") -> str | None:
    """The value on one line, or None when it holds a line break (or a comment)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int | float):
        return _number(v)
    if isinstance(v, str):
        return None if "\n" in v else quote(v)
    if e is not None and not e.dirty:
        e = None
    if e is not None and ptr in e.dirty:
        return None
    if isinstance(v, dict):
        sugar = _sugar(v)
        if sugar is not None:
            return sugar
        parts = []
        for k, x in v.items():
            s = inline(x, e, _child(ptr, k) if e is not None else "")
            if s is None:
                return None
            parts.append(f"{_key(k)}: {s}")
        return "{" + ", ".join(parts) + "}"
    if isinstance(v, list):
        items = []
        for i, x in enumerate(v):
            s = inline(x, e, _child(ptr, i) if e is not None else "")
            if s is None:
                return None
            items.append(s)
        return "[" + ", ".join(items) + "]"
    raise FormatError(f"not a JSON value: {type(v).__name__}")


def value(v: Any, indent: str, used: int, e: _Emit | None = None, ptr: str = "") -> str:
    """The value as canonical text, starting at column `used` of a line indented `indent`."""
    one = inline(v, e, ptr)
    if one is not None and used + len(one) <= WIDTH:
        return one
    inner = indent + "  "
    dirty = _dirty(e, ptr)
    if isinstance(v, str):
        return _triple(v, indent) if "\n" in v else quote(v)
    if isinstance(v, dict):
        if (
            not dirty
            and len(v) == 1
            and isinstance(v.get("$template"), str)
            and "{{" in v["$template"]
        ):
            return _triple(v["$template"], indent, template=True)
        if one is not None and _sugar(v) is not None:
            return one
        if not v and not dirty:
            return "{}"
        if e is None:
            members = [
                f"{inner}{_key(k)}: {value(x, inner, len(inner) + len(_key(k)) + 2)}"
                for k, x in v.items()
            ]
            return "{\n" + ",\n".join(members) + "\n" + indent + "}"
        lines: list[str] = []
        last = len(v) - 1
        for i, (k, x) in enumerate(v.items()):
            cp = _child(ptr, k)
            head = f"{inner}{_key(k)}: "
            body = head + value(x, inner, len(head), e, cp)
            lines += e.item(cp, inner, body, first=i == 0, comma="," if i < last else "")
        lines += e.end(ptr, inner, first=not v)
        return "{\n" + "\n".join(lines) + "\n" + indent + "}"
    if isinstance(v, list):
        if not v and not dirty:
            return "[]"
        if e is None:
            items = [inner + value(x, inner, len(inner)) for x in v]
            return "[\n" + ",\n".join(items) + "\n" + indent + "]"
        lines = []
        last = len(v) - 1
        for i, x in enumerate(v):
            cp = _child(ptr, i)
            body = inner + value(x, inner, len(inner), e, cp)
            lines += e.item(cp, inner, body, first=i == 0, comma="," if i < last else "")
        lines += e.end(ptr, inner, first=not v)
        return "[\n" + "\n".join(lines) + "\n" + indent + "]"
    return one if one is not None else "null"


# ---- the tool -------------------------------------------------------------------------------


def _stmt(indent: str, head: str, v: Any, e: _Emit | None = None, ptr: str = "") -> str:
    return f"{indent}{head} {value(v, indent, len(indent) + len(head) + 1, e, ptr)}"


def format_forge(manifest: dict[str, Any], trivia: Any = None) -> str:
    """Canonical `.forge` text of a manifest (see the module docstring for what is possible).

    TRIVIA (`dsl_trivia.collect` of the text the manifest was read from) puts that text's
    comments and blank lines back where they were.
    """
    if not isinstance(manifest, dict):
        raise FormatError("a manifest is a JSON object")
    for key in ("schema", "execution", "installScope", "credentialRequirements"):
        if key not in manifest:
            raise FormatError(
                f"the manifest has no `{key}`; a .forge file always implies it, so it cannot "
                "say that it is missing"
            )
    e = _Emit(trivia) if trivia is not None else None
    ind = "  "
    out: list[str] = []
    if e is not None and trivia.head:
        out.extend(_Emit.comment_lines(trivia.head, "", first=True))
        if trivia.head_blank:
            out.append("")
    top = len(out) + 1  # the first line inside the tool's braces

    def emit(pointer: str, text: str, *, force_blank: bool = False) -> None:
        if e is None:
            if force_blank:
                out.append("")
            out.append(text)
        else:
            first = len(out) == top
            out.extend(
                e.item(pointer, ind, text, first=first, force_blank=force_blank, top_level=True)
            )

    def emit_group(pointer: str, texts: list[tuple[str, str]]) -> None:
        """Items written for one manifest key (a statement per credential, say); comments
        filed under the key itself (its `raw` form) go before the first of them."""
        at = len(out)
        for p, text in texts:
            emit(p, text)
        if e is not None:
            rest = e.under(pointer)
            if rest and not texts:
                e.pending.extend(rest)
            elif rest:
                out[at:at] = _Emit.comment_lines(rest, ind, first=at == top)

    tool_id = manifest.get("id")
    done = {"id", "schema", "execution", "installScope"}
    if isinstance(tool_id, str):
        out.append(f"tool {name(tool_id)} {{")
    else:
        out.append("tool {")
        if "id" in manifest:
            emit("/id", _stmt(ind, "raw id", tool_id, e, "/id"))
    for key, const in (
        ("schema", SCHEMA),
        ("execution", EXECUTION),
        ("installScope", INSTALL_SCOPE),
    ):
        if manifest[key] != const or not isinstance(manifest[key], str):
            emit("/" + key, _stmt(ind, key, manifest[key], e, "/" + key))
    for key, word in _HEADER:
        if key in manifest:
            text = (
                _raw(key, manifest[key], ind, e)
                if _template(manifest[key])
                else _stmt(ind, word, manifest[key], e, "/" + key)
            )
            emit("/" + key, text)
            done.add(key)
    if "network" in manifest:
        emit_group("/network", [("/network", _network(manifest["network"], ind, e))])
        done.add("network")
    emit_group("/credentialRequirements", _credentials(manifest["credentialRequirements"], ind, e))
    done.add("credentialRequirements")
    for key, word in (
        ("modelDefaults", "model"),
        ("inputSchema", "input"),
        ("outputSchema", "output"),
    ):
        if key in manifest:
            emit("/" + key, _stmt(ind, word, manifest[key], e, "/" + key))
            done.add(key)
    if "state" in manifest:
        emit_group("/state", [("/state", _state(manifest["state"], ind, e))])
        done.add("state")
    if "triggers" in manifest:
        emit_group("/triggers", _triggers(manifest["triggers"], ind, e))
        done.add("triggers")
    if "ui" in manifest:
        emit_group("/ui", [("/ui", _ui(manifest["ui"], ind, e))])
        done.add("ui")
    for key, v in manifest.items():
        if key not in done and key != "flow":
            emit(_child("", key), _raw(key, v, ind, e))
    if "flow" in manifest:
        at = len(out)
        emit("/flow", _flow(manifest["flow"], ind, e), force_blank=True)
        if e is not None:
            rest = e.under("/flow")
            if rest:
                out[at + 1 : at + 1] = _Emit.comment_lines(rest, ind, first=True)
    if e is not None:
        out.extend(e.end("", ind, first=len(out) == top))
        out.extend(_Emit.comment_lines(e.pending, ind, first=len(out) == top))
        out.extend(_Emit.comment_lines(e.under(""), ind, first=len(out) == top))
    out.append("}")
    if e is not None and trivia.tail:
        out.extend(_Emit.comment_lines(trivia.tail, "", first=True))
    return "\n".join(out) + "\n"


def _raw(key: str, v: Any, ind: str, e: _Emit | None = None) -> str:
    return _stmt(ind, f"raw {name(key)}", v, e, _child("", key))


def _network(net: Any, ind: str, e: _Emit | None) -> str:
    if isinstance(net, dict) and isinstance(net.get("mode"), str) and set(net) <= {"mode", "hosts"}:
        head = f"network {name(net['mode'])}"
        if "hosts" in net:
            return _stmt(ind, head, net["hosts"], e, "/network/hosts")
        return ind + head
    return _raw("network", net, ind, e)


def _credentials(creds: Any, ind: str, e: _Emit | None) -> list[tuple[str, str]]:
    if isinstance(creds, list) and all(
        isinstance(c, dict)
        and isinstance(c.get("id"), str)
        and set(c) <= {"id", "purpose", "hosts"}
        and not _template(c.get("purpose"))
        for c in creds
    ):
        lines = []
        for i, c in enumerate(creds):
            ptr = f"/credentialRequirements/{i}"
            line = f"{ind}credential {name(c['id'])}"
            if "purpose" in c:
                line += " " + value(c["purpose"], ind, len(line) + 1, e, ptr + "/purpose")
            if "hosts" in c:
                line += " hosts " + value(c["hosts"], ind, len(line) + 7, e, ptr + "/hosts")
            lines.append((ptr, line))
        return lines
    return [("/credentialRequirements", _raw("credentialRequirements", creds, ind, e))]


def _state(state: Any, ind: str, e: _Emit | None) -> str:
    if isinstance(state, dict) and set(state) <= {"fields", "maxBytes"} and state:
        line = f"{ind}state"
        if "maxBytes" in state:
            line += " maxBytes " + value(
                state["maxBytes"], ind, len(line) + 10, e, "/state/maxBytes"
            )
        if "fields" in state:
            line += " " + value(state["fields"], ind, len(line) + 1, e, "/state/fields")
        return line
    return _raw("state", state, ind, e)


def _triggers(triggers: Any, ind: str, e: _Emit | None) -> list[tuple[str, str]]:
    if (
        isinstance(triggers, list)
        and triggers
        and all(
            isinstance(t, dict)
            and isinstance(t.get("type"), str)
            and set(t) <= {"type", "cron"}
            and not _template(t.get("cron"))
            for t in triggers
        )
    ):
        lines = []
        for i, t in enumerate(triggers):
            ptr = f"/triggers/{i}"
            head = f"trigger {name(t['type'])}"
            lines.append(
                (ptr, _stmt(ind, head, t["cron"], e, ptr + "/cron") if "cron" in t else ind + head)
            )
        return lines
    return [("/triggers", _raw("triggers", triggers, ind, e))]


def _ui(ui: Any, ind: str, e: _Emit | None) -> str:
    if (
        isinstance(ui, dict)
        and set(ui) == {"title", "values"}
        and isinstance(ui["values"], list)
        and all(isinstance(v, dict) and set(v) == {"label", "path"} for v in ui["values"])
        and not _template(ui["title"])
        and not any(_template(v["label"]) or _template(v["path"]) for v in ui["values"])
    ):
        head = f"{ind}ui " + value(ui["title"], ind, len(ind) + 3, e, "/ui/title")
        if not ui["values"] and not _dirty(e, "/ui/values"):
            return head + " {}"
        inner = ind + "  "
        rows: list[str] = []
        for i, v in enumerate(ui["values"]):
            ptr = f"/ui/values/{i}"
            label = value(v["label"], inner, len(inner), e, ptr + "/label")
            row = f"{inner}{label}: " + value(
                v["path"], inner, len(inner) + len(label) + 2, e, ptr + "/path"
            )
            rows += [row] if e is None else e.item(ptr, inner, row, first=i == 0)
        if e is not None:
            rows += e.end("/ui/values", inner, first=not ui["values"])
        return head + " {\n" + "\n".join(rows) + "\n" + ind + "}"
    return _raw("ui", ui, ind, e)


# ---- the flow -------------------------------------------------------------------------------


def _flow(flow: Any, ind: str, e: _Emit | None) -> str:
    if not (
        isinstance(flow, dict)
        and set(flow) <= {"entry", "maxTransitions", "nodes"}
        and isinstance(flow.get("nodes"), list)
        and isinstance(flow.get("entry", ""), str)
    ):
        return _raw("flow", flow, ind, e)
    head = f"{ind}flow"
    if "entry" in flow:
        head += f" entry {name(flow['entry'])}"
    if "maxTransitions" in flow:
        head += " max " + value(
            flow["maxTransitions"], ind, len(head) + 5, e, "/flow/maxTransitions"
        )
    return head + _block(flow["nodes"], ind, e, "/flow/nodes")


def _block(nodes: list[Any], ind: str, e: _Emit | None, ptr: str) -> str:
    if not nodes and not _dirty(e, ptr):
        return " {}"
    inner = ind + "  "
    if e is None:
        return " {\n" + "\n".join(_node(n, inner, None, "") for n in nodes) + "\n" + ind + "}"
    lines: list[str] = []
    for i, n in enumerate(nodes):
        cp = _child(ptr, i)
        lines += e.item(cp, inner, _node(n, inner, e, cp), first=i == 0)
    lines += e.end(ptr, inner, first=not nodes)
    return " {\n" + "\n".join(lines) + "\n" + ind + "}"


def _is_name(v: Any) -> bool:
    return isinstance(v, str)


def _node(node: Any, ind: str, e: _Emit | None, ptr: str) -> str:
    text = _sugared_node(node, ind, e, ptr) if isinstance(node, dict) else None
    return text if text is not None else _stmt(ind, "raw", node, e, ptr)


def _tail(node: dict[str, Any], line: str) -> str:
    if "next" in node:
        return line + f" -> {name(node['next'])}"
    return line


def _sugared_node(node: dict[str, Any], ind: str, e: _Emit | None, ptr: str) -> str | None:
    kind = node.get("type")
    if not (_is_name(node.get("id")) and isinstance(kind, str) and kind in _NODE_FIELDS):
        return None
    if not set(node) <= _NODE_FIELDS[kind]:
        return None
    for k in (
        "target",
        "next",
        "then",
        "else",
        "capability",
        "op",
        "compensation",
        "itemVar",
        "indexVar",
        "code",
    ):
        if k in node and not _is_name(node[k]):
            return None

    def at(field: str) -> str:
        return ptr + "/" + field if e is not None else ""

    head = f"{ind}{name(node['id'])}: "
    if kind == "set":
        if "target" not in node or "value" not in node:
            return None
        line = head + f"{name(node['target'])} = "
        return _tail(node, line + value(node["value"], ind, len(line), e, at("value")))
    if kind in ("capability", "llm"):
        word, what = ("call", "capability") if kind == "capability" else ("llm", "op")
        if what not in node or "input" not in node:
            return None
        line = head + (f"{name(node['target'])} = " if "target" in node else "")
        line += f"{word} {name(node[what])} "
        line += value(node["input"], ind, len(line), e, at("input"))
        if kind == "capability":
            retry = node.get("retry")
            if "retry" in node:
                if not (
                    isinstance(retry, dict)
                    and "attempts" in retry
                    and set(retry) <= {"attempts", "backoffMs"}
                ):
                    return None
                line = _clause(line, "retry", retry["attempts"], ind, e, at("retry/attempts"))
                if "backoffMs" in retry:
                    line = _clause(
                        line, "backoff", retry["backoffMs"], ind, e, at("retry/backoffMs")
                    )
            if "compensation" in node:
                line = _clause_text(line, f"undo {name(node['compensation'])}", ind)
        else:
            if "requirements" in node:
                line = _clause(line, "requires", node["requirements"], ind, e, at("requirements"))
            if "outputSchema" in node:
                line = _clause(line, "returns", node["outputSchema"], ind, e, at("outputSchema"))
        if "next" in node:
            line = _clause_text(line, f"-> {name(node['next'])}", ind)
        return line
    if kind == "if":
        if "condition" not in node:
            return None
        line = head + "if " + _condition(node["condition"], ind, len(head) + 3, e, at("condition"))
        if "then" in node:
            line = _clause_text(line, f"then {name(node['then'])}", ind)
        if "else" in node:
            line = _clause_text(line, f"else {name(node['else'])}", ind)
        return line
    if kind == "foreach":
        if not ("source" in node and "itemVar" in node and isinstance(node.get("body"), list)):
            return None
        line = head + f"for {name(node['itemVar'])}"
        if "indexVar" in node:
            line += f", {name(node['indexVar'])}"
        line += " in "
        line += value(node["source"], ind, len(line), e, at("source"))
        if "maxItems" in node:
            line += " max " + value(node["maxItems"], ind, len(line) + 5, e, at("maxItems"))
        return _tail(node, line + _block(node["body"], ind, e, at("body")))
    if kind == "return":
        if "value" not in node:
            return None
        return head + "return " + value(node["value"], ind, len(head) + 7, e, at("value"))
    if kind == "fail":
        if "code" not in node or "message" not in node or _template(node["message"]):
            return None
        line = head + f"fail {name(node['code'])} "
        return line + value(node["message"], ind, len(line), e, at("message"))
    return None  # pragma: no cover - every kind is handled above


def _last_line_len(text: str) -> int:
    return len(text) - text.rfind("\n") - 1


def _clause(line: str, word: str, v: Any, ind: str, e: _Emit | None = None, ptr: str = "") -> str:
    """Append `word VALUE`, on the same line when it fits, else on a continuation line."""
    one = inline(v, e, ptr)
    used = _last_line_len(line)
    if one is not None and used + len(word) + 2 + len(one) <= WIDTH:
        return f"{line} {word} {one}"
    cont = ind + "  "
    return f"{line}\n{cont}{word} " + value(v, cont, len(cont) + len(word) + 1, e, ptr)


def _clause_text(line: str, text: str, ind: str) -> str:
    if _last_line_len(line) + 1 + len(text) <= WIDTH:
        return f"{line} {text}"
    return f"{line}\n{ind}  {text}"


def _condition(cond: Any, ind: str, used: int, e: _Emit | None = None, ptr: str = "") -> str:
    if isinstance(cond, dict) and isinstance(cond.get("op"), str) and "left" in cond:
        op = cond["op"]
        left_ptr = ptr + "/left" if e is not None else ""
        if op == "truthy" and set(cond) == {"op", "left"}:
            # a bare object on the left would read as `condition {...}`-less truthy: fine, but
            # keep it unambiguous with the keyword
            return value(cond["left"], ind, used, e, left_ptr)
        if op == "exists" and set(cond) == {"op", "left"}:
            return "exists " + value(cond["left"], ind, used + 7, e, left_ptr)
        if op in _CMP and set(cond) == {"op", "left", "right"}:
            left = value(cond["left"], ind, used, e, left_ptr)
            sym = _CMP[op]
            return f"{left} {sym} " + value(
                cond["right"],
                ind,
                _last_line_len(left) + len(sym) + 2,
                e,
                ptr + "/right" if e is not None else "",
            )
    return "condition " + value(cond, ind, used + 10, e, ptr)


# ---- one line, for a person reading a change ---------------------------------------------------


def one_line(v: Any) -> str:
    """The value in `.forge` notation on one line, whatever it holds (a line break inside a
    string is spelled `\\n`): how the consent diff shows an old and a new value."""
    one = inline(v)
    if one is not None:
        return one
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, dict):
        sugar = _sugar(v)
        if sugar is not None:
            return sugar
        if len(v) == 1 and isinstance(v.get("$template"), str):
            return quote(v["$template"], template=True)
        return "{" + ", ".join(f"{_key(k)}: {one_line(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(one_line(x) for x in v) + "]"
    return "null"


def condition_line(cond: Any) -> str:
    """A condition as the `.forge` text writes it (`$x == 1`, `exists $y`), on one line."""
    if isinstance(cond, dict) and isinstance(cond.get("op"), str) and "left" in cond:
        op = cond["op"]
        if op == "truthy" and set(cond) == {"op", "left"}:
            return one_line(cond["left"])
        if op == "exists" and set(cond) == {"op", "left"}:
            return "exists " + one_line(cond["left"])
        if op in _CMP and set(cond) == {"op", "left", "right"}:
            return f"{one_line(cond['left'])} {_CMP[op]} {one_line(cond['right'])}"
    return "condition " + one_line(cond)
