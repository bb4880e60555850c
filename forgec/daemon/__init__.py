"""The Talon daemon (`forgec talond`, SPEC §19): schedules fire, personas answer, background
work comes back, messages are delivered — on DBOS Transact.

- `engine`: DBOS (the system database, the turn and delivery workflows, queues, recovery);
- `tables`: the host's tables as the daemon reads and writes them (the truth the engine's
  state is derived from), and what `talond status` shows;
- `agent`: a persona's turn (chat completion with tools, every call through the bridge), its
  model requests and tool calls as steps;
- `connectors`: the outbox and the webhook POST;
- `service`: the glue loop, liveness and takeover, stopping;
- `clock`, `log`: the injected clock and the one-line-per-event log.

docs/talond.md is the guide.
"""
