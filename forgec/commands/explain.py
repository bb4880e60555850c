"""`forgec explain CODE`: what a diagnostic or run code checks, why, and an example."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser("explain", help="explain a diagnostic or run-time code")
    p.add_argument("code", nargs="?", help="e.g. FORGE_CYCLE; omit to list every code")
    p.set_defaults(handler=run)


def _wrap(text: str, *, width: int) -> str:
    """Wrap prose without breaking inside `code spans` (they are copied as written)."""
    import re
    import textwrap

    glue = "\x00"
    protected = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", glue), text)
    return textwrap.fill(protected, width=width, break_on_hyphens=False).replace(glue, " ")


def run(args: argparse.Namespace) -> int:

    from forgec.commands import EXIT_OK, UsageError
    from forgec.ir.codes import REGISTRY

    if args.code is None:
        for code, entry in REGISTRY.items():
            print(f"{code:<44} {entry.severity.value:<8} {entry.summary}")
        return EXIT_OK
    code = args.code.strip().upper()
    doc = REGISTRY.get(code)
    if doc is None:
        from forgec.ir.suggest import closest

        close = closest(code, REGISTRY)
        hint = f"; did you mean {close}?" if close else "; `forgec explain` lists every code"
        raise UsageError(f"unknown code {args.code!r}{hint}")
    kind = "run-time error" if doc.kind == "run" else doc.severity.value
    print(f"{doc.code} ({kind})")
    print(f"{doc.summary}\n")
    print(_wrap(doc.doc, width=88))
    return EXIT_OK
