"""`forgec schema`: print the JSON Schema (draft-07) of `talos.local-tool.v1` (with
`--program`: of a lowered `forgec.program.v1`, generated from the opcode and pool tables).

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
    p.add_argument(
        "--program",
        action="store_true",
        help="the schema of a lowered Program (forgec.program.v1) instead of a manifest",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from forgec.commands import EXIT_OK
    from forgec.commands.common import write_text

    if args.program:
        from forgec.runtime.pools import program_json_schema

        schema = program_json_schema()
    else:
        from forgec.frontend.schema import manifest_json_schema

        schema = manifest_json_schema()
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    write_text(args.output, text)
    return EXIT_OK
