"""JSON Pointer (RFC 6901) helpers shared by every frontend and pass."""

from __future__ import annotations


def escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def join(base: str, *tokens: str | int) -> str:
    """``join("/flow", "nodes", 3)`` → ``"/flow/nodes/3"``."""
    return base + "".join("/" + escape(t) for t in tokens)


def split(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def parent(pointer: str) -> str:
    return pointer.rsplit("/", 1)[0] if pointer else ""
