"""Subcommands of `forgec`; see `forgec.cli` for the contract every module follows.

The exit statuses and `UsageError` live here, below `forgec.cli`, so that a command module
never imports the command line that dispatches to it (no `cli ↔ commands` cycle).
"""

from __future__ import annotations

# Exit status (SPEC §10): 0 no errors, 1 the input has errors or the run failed, 2 bad usage or
# an unreadable file (also: a command whose optional dependencies are not installed).
EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad usage or an unreadable file: printed as one line, exit status 2."""
