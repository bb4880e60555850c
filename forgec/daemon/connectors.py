"""Connector workers: the outbox, and the webhook connector (SPEC §19).

A message of a store-only connector (`outbox`, `plain`, `html`, `slack`) is delivered by being
in the outbox (the `messages` table, already converted by `channel.send`): the worker marks it
delivered. A `webhook` channel's message is POSTed to the channel's `url` as JSON
`{"messageId", "channelId", "threadId", "persona", "content"}` (content converted by the
channel's `format`) with an `Idempotency-Key: <messageId>` header, and:

- a 2xx answer: delivered;
- a definite refusal — the connection refused, HTTP 408, 429 or 5xx — is retried with backoff
  (`[talond] webhook_backoff_ms`, doubled per attempt, at most 5 minutes) up to
  `webhook_attempts` POSTs, then failed; any other status fails at once;
- no answer (a timeout or a connection dropped after the request went out) is `uncertain` and
  never sent again, as is a POST the daemon died during (`forgec.daemon.queue`): a receiver gets
  each message id at most once.

The URL is the operator's own configuration, so it is not held to net.http's private-address
rule (a webhook receiver on this machine is a normal setup); redirects are not followed.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from forgec.daemon.clock import iso
from forgec.daemon.log import Log
from forgec.daemon.queue import Delivery, Queue
from forgec.host.config import HostConfig

MAX_BACKOFF_S = 300.0


def deliver_outbox(queue: Queue, log: Log) -> None:
    for mid in queue.outbox_delivered():
        log.event("delivered", message=mid, connector="outbox")


def deliver_webhooks(queue: Queue, config: HostConfig, log: Log, *, limit: int = 8) -> int:
    """POST what is due; the number of messages attempted."""
    batch = queue.claim_deliveries(limit)
    for item in batch:
        outcome, error = _post(item, config)
        retry_at = None
        if outcome == "retry":
            bounds = config.talond
            if item.attempts >= bounds.webhook_attempts:
                outcome, error = "failed", f"{error}; gave up after {item.attempts} attempts"
            else:
                delay = min(
                    bounds.webhook_backoff_ms / 1000 * 2 ** (item.attempts - 1), MAX_BACKOFF_S
                )
                retry_at = iso(queue.clock.now() + _dt.timedelta(seconds=delay))
                outcome = "pending"
        queue.delivery_done(item.message_id, outcome, error, retry_at)
        log.event(
            "delivery",
            message=item.message_id,
            channel=item.channel_id,
            connector="webhook",
            attempt=item.attempts,
            status="retry" if outcome == "pending" else outcome,
            error=error,
            retry_at=retry_at,
        )
    return len(batch)


def _post(item: Delivery, config: HostConfig) -> tuple[str, str | None]:
    """(delivered | retry | failed | uncertain, why)."""
    import httpx

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
    timeout = config.talond.webhook_timeout_ms / 1000
    try:
        with httpx.Client(timeout=timeout, trust_env=False, follow_redirects=False) as client:
            resp = client.post(channel.url, json=payload, headers=headers)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        return "retry", f"cannot connect: {type(exc).__name__}"
    except httpx.HTTPError as exc:
        return "uncertain", f"no answer ({type(exc).__name__}); not sent again (at most once)"
    if 200 <= resp.status_code < 300:
        return "delivered", None
    if resp.status_code in (408, 429) or resp.status_code >= 500:
        return "retry", f"HTTP {resp.status_code}"
    return "failed", f"HTTP {resp.status_code}"
