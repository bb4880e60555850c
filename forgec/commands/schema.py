"""`forgec schema`: print the JSON Schema (draft-07) of `talos.local-tool.v1`.

Point an editor at the output (e.g. VS Code's `json.schemas` setting for `*.talostool`) for
completion and inline errors; `forgec check` remains the full check.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "schema",
        help="print the manifest's JSON Schema (draft-07)",
        description="Print the JSON Schema (draft-07) of talos.local-tool.v1 manifests, "
        "2-space indented, for editors and other validators.",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE instead of standard output"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from forgec.commands import EXIT_OK
    from forgec.commands.common import write_text
    from forgec.frontend.schema import manifest_json_schema

    text = json.dumps(manifest_json_schema(), indent=2, ensure_ascii=False) + "\n"
    write_text(args.output, text)
    return EXIT_OK
