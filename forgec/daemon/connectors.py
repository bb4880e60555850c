"""Connector workers: the outbox, and the webhook connector (SPEC §19).

A message of a store-only connector (`outbox`, `plain`, `html`, `slack`) is delivered by being
in the outbox (the `messages` table, already converted by `channel.send`): the daemon marks it
delivered. A `webhook` channel's message is a workflow of the engine (`deliver:<messageId>`)
that POSTs it to the channel's `url` as JSON `{"messageId", "channelId", "threadId", "persona",
"content"}` (content converted by the channel's `format`) with an `Idempotency-Key:
<messageId>` header:

- a 2xx answer: delivered;
- any other answer — the connection refused, a timeout, an HTTP error status, the daemon killed
  during the POST (the step runs again when the workflow is recovered) — is retried with capped
  exponential backoff (`[talond] webhook_backoff_ms`, doubled per attempt, at most 5 minutes
  apart) for `[connectors] retry_hours` (default 24) from the first attempt; then the message is
  `failed`, shown by `talond status`, and `forgec talond deliveries retry [ID]` sends it again.

So a message is sent at least once and the receiver, deduplicating by the key, applies it once.
The URL is the operator's own configuration, so it is not held to net.http's private-address
rule (a webhook receiver on this machine is a normal setup); redirects are not followed.
"""

from __future__ import annotations

import time
from typing import Any

from forgec.daemon.tables import Delivery
from forgec.host.config import HostConfig

MAX_BACKOFF_S = 300.0


def backoff_s(config: HostConfig, attempt: int) -> float:
    """The wait after the ATTEMPT-th failed POST (1-based): doubled each time, capped."""
    first = config.talond.webhook_backoff_ms / 1000
    return float(min(first * 2 ** min(attempt - 1, 32), MAX_BACKOFF_S))


def post(item: Delivery, config: HostConfig) -> tuple[str, str | None]:
    """One POST: (delivered | retry | failed, why)."""
    import httpx

    from forgec.host.http_client import make_client

    channel = config.channels.get(item.channel_id)
    if channel is None or channel.connector != "webhook" or channel.url is None:
        return "failed", f"channel {item.channel_id!r} is no longer a configured webhook"
    payload: dict[str, Any] = {
        "messageId": item.message_id,
        "channelId": item.channel_id,
        "threadId": item.thread_id,
        "persona": item.persona,
        "content": item.content,
    }
    headers = {"content-type": "application/json", "idempotency-key": item.message_id}
    deadline = time.monotonic() + config.talond.webhook_timeout_ms / 1000
    try:
        with make_client(deadline=deadline) as client:
            resp = client.post(channel.url, json=payload, headers=headers)
    except httpx.HTTPError as exc:
        return "retry", f"no answer ({type(exc).__name__})"
    if 200 <= resp.status_code < 300:
        return "delivered", None
    return "retry", f"HTTP {resp.status_code}"
