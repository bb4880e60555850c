"""The Talon daemon (`forgec talond`, SPEC §19): schedules fire, personas answer, background
work comes back, messages are delivered.

- `queue`: the one module over the schedule and queue tables (leased rows, the turn journal,
  deliveries, the status report) — what a durable-workflow engine would replace;
- `agent`: a persona's turn (chat completion with tools, every call through the bridge);
- `connectors`: the outbox and webhook workers;
- `service`: the loop, the workers, stopping;
- `clock`, `log`: the injected clock and the one-line-per-event log.

docs/talond.md is the guide.
"""
