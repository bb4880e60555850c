"""Subcommands of `forgec`; see `forgec.cli` for the contract every module follows."""
