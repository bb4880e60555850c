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

import re
from typing import Any

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


def inline(v: Any) -> str | None:
    """The value on one line, or None when it holds a line break."""
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
    if isinstance(v, dict):
        sugar = _sugar(v)
        if sugar is not None:
            return sugar
        parts = []
        for k, x in v.items():
            s = inline(x)
            if s is None:
                return None
            parts.append(f"{_key(k)}: {s}")
        return "{" + ", ".join(parts) + "}"
    if isinstance(v, list):
        items = []
        for x in v:
            s = inline(x)
            if s is None:
                return None
            items.append(s)
        return "[" + ", ".join(items) + "]"
    raise FormatError(f"not a JSON value: {type(v).__name__}")


def value(v: Any, indent: str, used: int) -> str:
    """The value as canonical text, starting at column `used` of a line indented `indent`."""
    one = inline(v)
    if one is not None and used + len(one) <= WIDTH:
        return one
    inner = indent + "  "
    if isinstance(v, str):
        return _triple(v, indent) if "\n" in v else quote(v)
    if isinstance(v, dict):
        if len(v) == 1 and isinstance(v.get("$template"), str) and "{{" in v["$template"]:
            return _triple(v["$template"], indent, template=True)
        if one is not None and _sugar(v) is not None:
            return one
        if not v:
            return "{}"
        members = [
            f"{inner}{_key(k)}: {value(x, inner, len(inner) + len(_key(k)) + 2)}"
            for k, x in v.items()
        ]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    if isinstance(v, list):
        if not v:
            return "[]"
        items = [inner + value(x, inner, len(inner)) for x in v]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    return one if one is not None else "null"


# ---- the tool -------------------------------------------------------------------------------


def _stmt(indent: str, head: str, v: Any) -> str:
    return f"{indent}{head} {value(v, indent, len(indent) + len(head) + 1)}"


def _text_stmt(indent: str, head: str, v: Any) -> str:
    """A header field read as plain text: a string with `{{` needs no escaping there, but the
    escaped form reads back the same, and one rule for every string is easier to trust."""
    return _stmt(indent, head, v)


def format_forge(manifest: dict[str, Any]) -> str:
    """Canonical `.forge` text of a manifest (see the module docstring for what is possible)."""
    if not isinstance(manifest, dict):
        raise FormatError("a manifest is a JSON object")
    for key in ("schema", "execution", "installScope", "credentialRequirements"):
        if key not in manifest:
            raise FormatError(
                f"the manifest has no `{key}`; a .forge file always implies it, so it cannot "
                "say that it is missing"
            )
    ind = "  "
    out: list[str] = []
    tool_id = manifest.get("id")
    done = {"id", "schema", "execution", "installScope"}
    if isinstance(tool_id, str):
        out.append(f"tool {name(tool_id)} {{")
    else:
        out.append("tool {")
        if "id" in manifest:
            out.append(_stmt(ind, "raw id", tool_id))
    for key, const in (
        ("schema", SCHEMA),
        ("execution", EXECUTION),
        ("installScope", INSTALL_SCOPE),
    ):
        if manifest[key] != const or not isinstance(manifest[key], str):
            out.append(_stmt(ind, key, manifest[key]))
    for key, word in _HEADER:
        if key in manifest:
            out.append(_text_stmt(ind, word, manifest[key]))
            done.add(key)
    if "network" in manifest:
        out.append(_network(manifest["network"], ind))
        done.add("network")
    out.extend(_credentials(manifest["credentialRequirements"], ind))
    done.add("credentialRequirements")
    for key, word in (
        ("modelDefaults", "model"),
        ("inputSchema", "input"),
        ("outputSchema", "output"),
    ):
        if key in manifest:
            out.append(_stmt(ind, word, manifest[key]))
            done.add(key)
    if "state" in manifest:
        out.append(_state(manifest["state"], ind))
        done.add("state")
    if "triggers" in manifest:
        out.extend(_triggers(manifest["triggers"], ind))
        done.add("triggers")
    if "ui" in manifest:
        out.append(_ui(manifest["ui"], ind))
        done.add("ui")
    for key, v in manifest.items():
        if key not in done and key != "flow":
            out.append(_stmt(ind, f"raw {name(key)}", v))
    if "flow" in manifest:
        out.append("")
        out.append(_flow(manifest["flow"], ind))
    out.append("}")
    return "\n".join(out) + "\n"


def _raw(key: str, v: Any, ind: str) -> str:
    return _stmt(ind, f"raw {name(key)}", v)


def _network(net: Any, ind: str) -> str:
    if isinstance(net, dict) and isinstance(net.get("mode"), str) and set(net) <= {"mode", "hosts"}:
        head = f"network {name(net['mode'])}"
        return _stmt(ind, head, net["hosts"]) if "hosts" in net else ind + head
    return _raw("network", net, ind)


def _credentials(creds: Any, ind: str) -> list[str]:
    if isinstance(creds, list) and all(
        isinstance(c, dict)
        and isinstance(c.get("id"), str)
        and set(c) <= {"id", "purpose", "hosts"}
        for c in creds
    ):
        lines = []
        for c in creds:
            line = f"{ind}credential {name(c['id'])}"
            if "purpose" in c:
                line += " " + value(c["purpose"], ind, len(line) + 1)
            if "hosts" in c:
                line += " hosts " + value(c["hosts"], ind, len(line) + 7)
            lines.append(line)
        return lines
    return [_raw("credentialRequirements", creds, ind)]


def _state(state: Any, ind: str) -> str:
    if isinstance(state, dict) and set(state) <= {"fields", "maxBytes"} and state:
        line = f"{ind}state"
        if "maxBytes" in state:
            line += " maxBytes " + value(state["maxBytes"], ind, len(line) + 10)
        if "fields" in state:
            line += " " + value(state["fields"], ind, len(line) + 1)
        return line
    return _raw("state", state, ind)


def _triggers(triggers: Any, ind: str) -> list[str]:
    if (
        isinstance(triggers, list)
        and triggers
        and all(
            isinstance(t, dict) and isinstance(t.get("type"), str) and set(t) <= {"type", "cron"}
            for t in triggers
        )
    ):
        lines = []
        for t in triggers:
            head = f"trigger {name(t['type'])}"
            lines.append(_stmt(ind, head, t["cron"]) if "cron" in t else ind + head)
        return lines
    return [_raw("triggers", triggers, ind)]


def _ui(ui: Any, ind: str) -> str:
    if (
        isinstance(ui, dict)
        and set(ui) == {"title", "values"}
        and isinstance(ui["values"], list)
        and all(isinstance(v, dict) and set(v) == {"label", "path"} for v in ui["values"])
    ):
        head = f"{ind}ui " + value(ui["title"], ind, len(ind) + 3)
        if not ui["values"]:
            return head + " {}"
        inner = ind + "  "
        rows = []
        for v in ui["values"]:
            label = value(v["label"], inner, len(inner))
            rows.append(f"{inner}{label}: {value(v['path'], inner, len(inner) + len(label) + 2)}")
        return head + " {\n" + "\n".join(rows) + "\n" + ind + "}"
    return _raw("ui", ui, ind)


# ---- the flow -------------------------------------------------------------------------------


def _flow(flow: Any, ind: str) -> str:
    if not (
        isinstance(flow, dict)
        and set(flow) <= {"entry", "maxTransitions", "nodes"}
        and isinstance(flow.get("nodes"), list)
        and isinstance(flow.get("entry", ""), str)
    ):
        return _raw("flow", flow, ind)
    head = f"{ind}flow"
    if "entry" in flow:
        head += f" entry {name(flow['entry'])}"
    if "maxTransitions" in flow:
        head += " max " + value(flow["maxTransitions"], ind, len(head) + 5)
    return head + _block(flow["nodes"], ind)


def _block(nodes: list[Any], ind: str) -> str:
    if not nodes:
        return " {}"
    inner = ind + "  "
    return " {\n" + "\n".join(_node(n, inner) for n in nodes) + "\n" + ind + "}"


def _is_name(v: Any) -> bool:
    return isinstance(v, str)


def _node(node: Any, ind: str) -> str:
    text = _sugared_node(node, ind) if isinstance(node, dict) else None
    return text if text is not None else _stmt(ind, "raw", node)


def _tail(node: dict[str, Any], line: str) -> str:
    if "next" in node:
        return line + f" -> {name(node['next'])}"
    return line


def _sugared_node(node: dict[str, Any], ind: str) -> str | None:
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
    head = f"{ind}{name(node['id'])}: "
    if kind == "set":
        if "target" not in node or "value" not in node:
            return None
        line = head + f"{name(node['target'])} = "
        return _tail(node, line + value(node["value"], ind, len(line)))
    if kind in ("capability", "llm"):
        word, what = ("call", "capability") if kind == "capability" else ("llm", "op")
        if what not in node or "input" not in node:
            return None
        line = head + (f"{name(node['target'])} = " if "target" in node else "")
        line += f"{word} {name(node[what])} "
        line += value(node["input"], ind, len(line))
        if kind == "capability":
            retry = node.get("retry")
            if "retry" in node:
                if not (
                    isinstance(retry, dict)
                    and "attempts" in retry
                    and set(retry) <= {"attempts", "backoffMs"}
                ):
                    return None
                line = _clause(line, "retry", retry["attempts"], ind)
                if "backoffMs" in retry:
                    line = _clause(line, "backoff", retry["backoffMs"], ind)
            if "compensation" in node:
                line = _clause_text(line, f"undo {name(node['compensation'])}", ind)
        else:
            if "requirements" in node:
                line = _clause(line, "requires", node["requirements"], ind)
            if "outputSchema" in node:
                line = _clause(line, "returns", node["outputSchema"], ind)
        if "next" in node:
            line = _clause_text(line, f"-> {name(node['next'])}", ind)
        return line
    if kind == "if":
        if "condition" not in node:
            return None
        line = head + "if " + _condition(node["condition"], ind, len(head) + 3)
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
        line += value(node["source"], ind, len(line))
        if "maxItems" in node:
            line += " max " + value(node["maxItems"], ind, len(line) + 5)
        return _tail(node, line + _block(node["body"], ind))
    if kind == "return":
        if "value" not in node:
            return None
        return head + "return " + value(node["value"], ind, len(head) + 7)
    if kind == "fail":
        if "code" not in node or "message" not in node:
            return None
        line = head + f"fail {name(node['code'])} "
        return line + value(node["message"], ind, len(line))
    return None  # pragma: no cover - every kind is handled above


def _last_line_len(text: str) -> int:
    return len(text) - text.rfind("\n") - 1


def _clause(line: str, word: str, v: Any, ind: str) -> str:
    """Append `word VALUE`, on the same line when it fits, else on a continuation line."""
    one = inline(v)
    used = _last_line_len(line)
    if one is not None and used + len(word) + 2 + len(one) <= WIDTH:
        return f"{line} {word} {one}"
    cont = ind + "  "
    return f"{line}\n{cont}{word} " + value(v, cont, len(cont) + len(word) + 1)


def _clause_text(line: str, text: str, ind: str) -> str:
    if _last_line_len(line) + 1 + len(text) <= WIDTH:
        return f"{line} {text}"
    return f"{line}\n{ind}  {text}"


def _condition(cond: Any, ind: str, used: int) -> str:
    if isinstance(cond, dict) and isinstance(cond.get("op"), str) and "left" in cond:
        op = cond["op"]
        if op == "truthy" and set(cond) == {"op", "left"}:
            # a bare object on the left would read as `condition {...}`-less truthy: fine, but
            # keep it unambiguous with the keyword
            return value(cond["left"], ind, used)
        if op == "exists" and set(cond) == {"op", "left"}:
            return "exists " + value(cond["left"], ind, used + 7)
        if op in _CMP and set(cond) == {"op", "left", "right"}:
            left = value(cond["left"], ind, used)
            sym = _CMP[op]
            return f"{left} {sym} " + value(cond["right"], ind, _last_line_len(left) + len(sym) + 2)
    return "condition " + value(cond, ind, used + 10)


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
