"""Where each value of a TOML document was written: JSON Pointer → span, for diagnostics.

`tomllib` gives values without positions. This scanner reads the same text once more, only to
record where every key and value starts and ends (`[[case]]` headers counted as arrays of
tables, dotted keys, inline tables and arrays at any depth), so a diagnostic about
`/case/1/mock/0/step` points at the line and column the person typed. It runs only after
`tomllib` accepted the text, so it never has to judge the syntax: on anything it does not
follow it stops recording and the nearest enclosing position is used.

Worst case: one pass over the text, linear in its length (docs/analysis.md).
"""

from __future__ import annotations

import contextlib

from forgec.frontend.jsonpos import LineIndex
from forgec.ir.pointer import join
from forgec.ir.span import Span

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Stop(Exception):
    pass


class TomlSourceMap:
    """A `forgec.ir.span.SourceMap` over TOML text."""

    def __init__(self, text: str, file: str | None = None) -> None:
        self._text = text
        self._file = file
        self._lines = LineIndex(text)
        # pointer → (key start, key end, value start, value end); key -1 for a table header
        self.entries: dict[str, tuple[int, int, int, int]] = {}
        self._arrays: dict[str, int] = {}
        with contextlib.suppress(_Stop, IndexError, ValueError):
            self._document()

    @property
    def file(self) -> str | None:
        return self._file

    @property
    def text(self) -> str | None:
        return self._text

    def span(self, pointer: str, *, key: bool = False) -> Span | None:
        p = pointer
        while True:
            entry = self.entries.get(p)
            if entry is not None:
                if key and p == pointer and entry[0] >= 0:
                    return self._span(entry[0], entry[1])
                return self._span(entry[2], entry[3])
            if not p:
                return None
            p = p.rsplit("/", 1)[0]

    def _span(self, start: int, end: int) -> Span:
        line, col = self._lines.line_col(start)
        end_line, end_col = self._lines.line_col(max(end, start))
        return Span(self._file, line, col, end_line, end_col)

    # --- the scanner ---------------------------------------------------------------------

    def _skip(self, i: int, newlines: bool) -> int:
        t = self._text
        while i < len(t):
            c = t[i]
            if c in " \t\r" or (newlines and c == "\n"):
                i += 1
            elif c == "#":
                while i < len(t) and t[i] != "\n":
                    i += 1
            else:
                break
        return i

    def _document(self) -> None:
        t = self._text
        i = 0
        table = ""
        while True:
            i = self._skip(i, True)
            if i >= len(t):
                return
            if t[i] == "[":
                many = t.startswith("[[", i)
                start = i
                i += 2 if many else 1
                keys, i = self._key(i)
                i = self._skip(i, False)
                i += 2 if many else 1
                table = self._resolve(keys, many)
                self.entries[table] = (-1, -1, start, i)
                continue
            start = i
            keys, i = self._key(i)
            key_end = i
            i = self._skip(i, False)
            if t[i] != "=":
                raise _Stop
            i = self._skip(i + 1, False)
            pointer = self._resolve_within(table, keys)
            i = self._value(pointer, start, key_end, i)

    def _resolve(self, keys: list[str], many: bool) -> str:
        p = ""
        for k, key in enumerate(keys):
            p = join(p, key)
            last = k == len(keys) - 1
            if last and many:
                count = self._arrays.get(p, 0)
                self._arrays[p] = count + 1
                p = join(p, count)
            elif p in self._arrays:
                p = join(p, self._arrays[p] - 1)
        return p

    @staticmethod
    def _resolve_within(table: str, keys: list[str]) -> str:
        return join(table, *keys)

    def _key(self, i: int) -> tuple[list[str], int]:
        t = self._text
        keys: list[str] = []
        while True:
            i = self._skip(i, False)
            if t[i] in "\"'":
                quote = t[i]
                j = i + 1
                buf = []
                while t[j] != quote:
                    if quote == '"' and t[j] == "\\":
                        buf.append(t[j + 1])
                        j += 2
                        continue
                    if t[j] == "\n":
                        raise _Stop
                    buf.append(t[j])
                    j += 1
                keys.append("".join(buf))
                i = j + 1
            else:
                j = i
                while j < len(t) and t[j] in _BARE:
                    j += 1
                if j == i:
                    raise _Stop
                keys.append(t[i:j])
                i = j
            i = self._skip(i, False)
            if i < len(t) and t[i] == ".":
                i += 1
                continue
            return keys, i

    def _value(self, pointer: str, key_start: int, key_end: int, i: int) -> int:
        t = self._text
        start = i
        c = t[i]
        if c == "[":
            i += 1
            index = 0
            while True:
                i = self._skip(i, True)
                if t[i] == "]":
                    i += 1
                    break
                i = self._value(join(pointer, index), -1, -1, i)
                index += 1
                i = self._skip(i, True)
                if t[i] == ",":
                    i += 1
        elif c == "{":
            i += 1
            while True:
                i = self._skip(i, True)
                if t[i] == "}":
                    i += 1
                    break
                ks = i
                keys, i = self._key(i)
                ke = i
                i = self._skip(i, False)
                if t[i] != "=":
                    raise _Stop
                i = self._skip(i + 1, False)
                i = self._value(join(pointer, *keys), ks, ke, i)
                i = self._skip(i, True)
                if t[i] == ",":
                    i += 1
        elif t.startswith('"""', i) or t.startswith("'''", i):
            quote = t[i : i + 3]
            j = i + 3
            while True:
                k = t.index(quote, j)
                if quote == '"""' and _escaped(t, k):
                    j = k + 1
                    continue
                break
            i = k + 3
            while i < len(t) and t[i] == quote[0]:  # up to two quotes may end the content
                i += 1
        elif c in "\"'":
            j = i + 1
            while t[j] != c:
                if t[j] == "\n":
                    raise _Stop
                j += 2 if (c == '"' and t[j] == "\\") else 1
            i = j + 1
        else:
            while i < len(t) and t[i] not in ",]}\n#":
                i += 1
            end = i
            while end > start and t[end - 1] in " \t\r":
                end -= 1
            self.entries[pointer] = (key_start, key_end, start, end)
            return i
        self.entries[pointer] = (key_start, key_end, start, i)
        return i


def _escaped(text: str, at: int) -> bool:
    """Whether the character at AT follows an odd run of backslashes."""
    n = 0
    k = at - 1
    while k >= 0 and text[k] == "\\":
        n += 1
        k -= 1
    return n % 2 == 1
