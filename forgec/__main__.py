from forgec.cli import entry

raise SystemExit(entry())
