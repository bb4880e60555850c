"""The small languages inside a manifest's strings: ids, names, paths, templates, hosts, times.

Every frontend and pass that needs to know whether a string is a safe path, a valid host or a
tool id asks here, so the grammar of SPEC §2–§4 is written down once. Nothing here imports
anything heavier than `re`.

All patterns are linear-time: character classes with bounded repeats, anchored with
`fullmatch`, never nested quantifiers. Paths and templates are parsed by a left-to-right loop of
anchored `match` calls, so hostile input (100k brackets, unclosed braces) costs one pass.
"""

from __future__ import annotations

import re
from datetime import datetime

from forgec.ir.rules import (
    FAIL_CODE_RE,
    FORBIDDEN_SEGMENTS,
    MAX_INDEX,
    NAME_PATTERN,
    NAME_RE,
    NODE_ID_RE,
    RESERVED,
    TOOL_ID_RE,
)

__all__ = [
    "FAIL_CODE_RE",
    "FORBIDDEN_SEGMENTS",
    "ID_RE",
    "MAX_INDEX",
    "NAME_RE",
    "NODE_ID_RE",
    "RESERVED",
]

# The rules themselves live in one table (`forgec.ir.rules`); these names are its views.
ID_RE = TOOL_ID_RE  # tool ids and credential ids

_NAME_AT = re.compile(NAME_PATTERN, re.ASCII)
# A path of names only. Linear: after each bounded NAME only `.` or the end may follow.
_DOTTED = re.compile(rf"{NAME_PATTERN}(?:\.{NAME_PATTERN})*", re.ASCII)
# One step after the root: `.NAME` or `[INDEX]`. INDEX has no leading zeros, so each index has
# exactly one spelling; six digits bound it to 0–999999 (`MAX_INDEX`).
_STEP_AT = re.compile(
    rf"\.({NAME_PATTERN})|\[(0|[1-9][0-9]{{0,{len(str(MAX_INDEX)) - 1}}})\]", re.ASCII
)


def is_id(text: object) -> bool:
    return isinstance(text, str) and ID_RE.fullmatch(text) is not None


def parse_path(text: str) -> tuple[str | int, ...] | None:
    """``input.items[0].title`` → ``("input", "items", 0, "title")``; None outside the grammar."""
    if not isinstance(text, str):
        return None
    if "[" not in text:
        # the common path, names only: one anchored match and a split
        if _DOTTED.fullmatch(text) is None:
            return None
        names = text.split(".")
        return tuple(names) if FORBIDDEN_SEGMENTS.isdisjoint(names) else None
    m = _NAME_AT.match(text)
    if m is None:
        return None
    root = m.group()
    if root in FORBIDDEN_SEGMENTS:
        return None
    segments: list[str | int] = [root]
    pos = m.end()
    end = len(text)
    while pos < end:
        m = _STEP_AT.match(text, pos)
        if m is None:
            return None
        name, index = m.group(1), m.group(2)
        if name is not None:
            if name in FORBIDDEN_SEGMENTS:
                return None
            segments.append(name)
        else:
            segments.append(int(index))
        pos = m.end()
    return tuple(segments)


def path_problem(text: object) -> str:
    """Why `text` is not a safe path, in words, for a diagnostic (assumes it is not one)."""
    if not isinstance(text, str):
        return "a path must be a string"
    if text == "":
        return "the path is empty"
    if text != text.strip():
        return "a path may not contain spaces"
    for word in re.split(r"[.\[\]]", text):
        if word in FORBIDDEN_SEGMENTS:
            return f"`{word}` is never allowed in a path"
    if not _NAME_AT.match(text):
        return "a path starts with a name (a letter, then letters, digits or `_`)"
    return "a path is NAME followed by `.NAME` or `[INDEX]` steps (INDEX 0–999999)"


def parse_template(text: str) -> tuple[str | tuple[str | int, ...], ...] | None:
    """``"Hi {{ input.name }}!"`` → ``("Hi ", ("input", "name"), "!")``; None when any
    placeholder is empty, unclosed or not a path."""
    parts, _ = split_template(text)
    return parts


def template_problem(text: str) -> str | None:
    """The first reason `text` is not a valid template, or None when it is one."""
    _, problem = split_template(text)
    return problem


def split_template(
    text: str,
) -> tuple[tuple[str | tuple[str | int, ...], ...] | None, str | None]:
    """Parse a template into text and path parts; on failure (None, reason)."""
    parts, problem = template_paths(text)
    if parts is None:
        return None, problem
    return tuple([p if isinstance(p, str) else p[1] for p in parts]), None


def template_paths(
    text: str,
) -> tuple[tuple[str | tuple[str, tuple[str | int, ...]], ...] | None, str | None]:
    """Like `split_template`, each placeholder as (its path text, its segments): the path text
    is canonical (a path has exactly one spelling once the spaces around it are dropped)."""
    if not isinstance(text, str):
        return None, "a template must be a string"
    parts: list[str | tuple[str, tuple[str | int, ...]]] = []
    pos = 0
    end = len(text)
    while pos < end:
        start = text.find("{{", pos)
        if start < 0:
            parts.append(text[pos:])
            break
        if start > pos:
            parts.append(text[pos:start])
        close = text.find("}}", start + 2)
        if close < 0:
            return None, f"the placeholder at character {start + 1} is not closed with `}}}}`"
        inner = text[start + 2 : close].strip(" \t\r\n")
        if not inner:
            return None, f"the placeholder at character {start + 1} is empty"
        segments = parse_path(inner)
        if segments is None:
            shown = inner if len(inner) <= 60 else inner[:57] + "..."
            return None, f"placeholder `{{{{{shown}}}}}` is not a safe path: {path_problem(inner)}"
        parts.append((inner, segments))
        pos = close + 2
    return tuple(parts), None


_LABEL_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", re.ASCII)
# A last label a URL parser would read as an IPv4 number (decimal, or hex with 0x).
_NUMERIC_LABEL_RE = re.compile(r"[0-9]+|0x[0-9a-f]*", re.ASCII)


def host_problem(name: object) -> str | None:
    """Why `name` is not an exact DNS name per SPEC §2.1, or None when it is one."""
    if not isinstance(name, str):
        return "a host must be a string"
    if name == "":
        return "the host is empty"
    if len(name) > 253:
        return "a host name has at most 253 characters"
    if "://" in name:
        return "a host is a bare name, without a scheme such as `https://`"
    if "*" in name:
        return "wildcards are not allowed; list each exact host"
    if ":" in name or name.startswith("["):
        return "a host has no port and is not an IP address"
    if "/" in name or "@" in name or "?" in name or "#" in name:
        return "a host is a bare name, without a path or user info"
    if name != name.lower():
        return "a host is written in lowercase"
    if name.endswith("."):
        return "a host has no trailing dot"
    if not name.isascii():
        return "international names are written as punycode (`xn--...`)"
    labels = name.split(".")
    if len(labels) < 2:
        return "a host has at least two labels (like `example.org`)"
    if _NUMERIC_LABEL_RE.fullmatch(labels[-1]):
        return "IP addresses are not allowed; list a DNS name"
    for label in labels:
        if not label:
            return "a host has no empty label (`..`)"
        if len(label) > 63:
            return "each label of a host has at most 63 characters"
        if not _LABEL_RE.fullmatch(label):
            return (
                f"label `{label}` may hold only letters, digits and inner hyphens "
                "(no leading or trailing hyphen)"
            )
        if label.startswith("xn--") and not _is_punycode(label[4:]):
            return f"label `{label}` is not valid punycode"
    return None


def is_valid_host(name: object) -> bool:
    return host_problem(name) is None


def _is_punycode(body: str) -> bool:
    try:
        decoded = body.encode("ascii").decode("punycode")
    except (UnicodeError, ValueError, OverflowError, IndexError):
        return False
    return bool(decoded) and not decoded.isascii()


# Extended ISO 8601 with a mandatory offset; the fields are range-checked by `datetime`.
_DATETIME_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)


def is_iso_datetime(text: object) -> bool:
    """``2026-01-31T09:30:00Z`` or with an offset (``+02:00``); seconds and fraction optional."""
    if not isinstance(text, str) or _DATETIME_RE.fullmatch(text) is None:
        return False
    core = text[:-1] + "+00:00" if text.endswith("Z") else text
    dot = core.find(".")
    if dot >= 0:
        # `datetime` takes at most 6 fraction digits; the digits were checked above.
        end = dot + 1
        while end < len(core) and core[end].isdigit():
            end += 1
        core = core[:dot] + core[end:]
    try:
        parsed = datetime.fromisoformat(core)
    except ValueError:
        return False
    offset = parsed.utcoffset()
    return offset is not None and abs(offset.total_seconds()) < 24 * 3600
