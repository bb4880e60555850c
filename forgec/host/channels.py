"""`channel.send`: a Markdown message to a configured channel, kept in the `messages` outbox.

Channels are configured by name, each with a connector that decides the stored format:

- `outbox`: the Markdown as written;
- `plain`: rendered to plain text (emphasis marks dropped, links as `text (url)`, list bullets);
- `html`: rendered with markdown-it-py, raw HTML in the Markdown escaped, not passed through;
- `slack`: Slack mrkdwn (`*bold*`, `_italic_`, `~strike~`, `<url|text>`, `&`, `<`, `>` escaped);
- `webhook`: converted by the channel's `format` (one of the above), then POSTed to its `url` by
  the daemon's connector worker (`forgec.daemon.connectors`), at most once per message id.

The thread is the host's choice (the channel's configured thread, else the current one); the
caller never names it. Unknown channels are an error listing the configured ones.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from forgec.host import handler_errors as v
from forgec.host.config import ChannelConfig
from forgec.host.db import Tx, new_id, now_iso
from forgec.host.handlers import HostCall, handles

CAP = "channel.send"


def render(markdown: str, connector: str) -> str:
    if connector == "outbox":
        return markdown
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")
    if connector == "html":
        return md.render(markdown)
    tokens = md.parse(markdown)
    return _render_blocks(tokens, slack=(connector == "slack")).strip() + "\n"


def _escape_slack(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _render_inline(children: list[Any], slack: bool) -> str:
    out: list[str] = []
    link_stack: list[str] = []
    for tok in children:
        t = tok.type
        if t == "text":
            out.append(_escape_slack(tok.content) if slack else tok.content)
        elif t == "code_inline":
            out.append(f"`{tok.content}`" if slack else tok.content)
        elif t in ("softbreak", "hardbreak"):
            out.append("\n")
        elif t in ("strong_open", "strong_close"):
            out.append("*" if slack else "")
        elif t in ("em_open", "em_close"):
            out.append("_" if slack else "")
        elif t in ("s_open", "s_close"):
            out.append("~" if slack else "")
        elif t == "link_open":
            href = str(tok.attrGet("href") or "")
            link_stack.append(href)
            # a `|` or `>` in the URL would end Slack's link syntax early
            out.append(f"<{_escape_slack(href).replace('|', '%7C')}|" if slack else "")
        elif t == "link_close":
            href = link_stack.pop() if link_stack else ""
            out.append(">" if slack else f" ({href})")
        elif t == "image":
            src = str(tok.attrGet("src") or "")
            if slack:
                out.append(
                    f"<{_escape_slack(src).replace('|', '%7C')}|{_escape_slack(tok.content)}>"
                )
            else:
                out.append(f"{tok.content} ({src})")
        elif t == "html_inline":
            out.append(_escape_slack(tok.content) if slack else tok.content)
    return "".join(out)


def _render_blocks(tokens: list[Any], slack: bool) -> str:
    lines: list[str] = []
    lists: list[list[int]] = []  # one counter per open list; -1 for bullets
    heading = False
    prefix_next = ""
    for tok in tokens:
        t = tok.type
        if t == "bullet_list_open":
            lists.append([-1])
        elif t == "ordered_list_open":
            lists.append([int(tok.attrGet("start") or 1)])
        elif t in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                lines.append("")
        elif t == "list_item_open":
            indent = "  " * (len(lists) - 1)
            counter = lists[-1]
            if counter[0] < 0:
                prefix_next = f"{indent}• " if slack else f"{indent}- "
            else:
                prefix_next = f"{indent}{counter[0]}. "
                counter[0] += 1
        elif t == "heading_open":
            heading = True
        elif t == "heading_close":
            heading = False
            lines.append("")
        elif t == "inline":
            text = _render_inline(tok.children or [], slack)
            if heading and slack:
                text = f"*{text}*"
            lines.append(prefix_next + text)
            prefix_next = ""
        elif t == "paragraph_close" and not lists:
            lines.append("")
        elif t in ("fence", "code_block"):
            body = tok.content.rstrip("\n")
            lines.append(f"```\n{_escape_slack(body) if slack else body}\n```" if slack else body)
            lines.append("")
        elif t == "blockquote_open":
            prefix_next = "> "
        elif t == "hr":
            lines.append("---")
        elif t == "html_block":
            lines.append(_escape_slack(tok.content) if slack else tok.content)
    return "\n".join(lines)


def send(
    conn: sqlite3.Connection,
    inp: Mapping[str, Any],
    *,
    channels: Mapping[str, ChannelConfig],
    persona: str,
    thread: str,
) -> dict[str, Any]:
    f = inp  # checked at the bridge by the row's shape
    channel_id = f["channelId"]
    content = f["content"]
    reply_to = f.get("replyTo")
    channel = channels.get(channel_id)
    if channel is None:
        known = (
            ", ".join(sorted(channels))
            or "none are configured ([channels.NAME] in the host config)"
        )
        v.fail(f"{CAP}: unknown channel {channel_id!r} (configured: {known})")
    thread_id = channel.thread or thread
    # a webhook stores what it will POST: the Markdown converted by its `format`
    fmt = channel.format if channel.connector == "webhook" else channel.connector
    rendered = render(content, fmt)
    mid = new_id("msg")
    now = now_iso()
    with Tx(conn):
        conn.execute(
            "INSERT INTO threads (id, persona, channel_id, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            (thread_id, persona, channel_id, now),
        )
        conn.execute(
            "INSERT INTO messages (id, thread_id, persona, channel_id, connector, content,"
            " markdown, reply_to, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                mid,
                thread_id,
                persona,
                channel_id,
                channel.connector,
                rendered,
                content,
                reply_to,
                now,
            ),
        )
    return {"messageId": mid, "channelId": channel_id}


@handles(CAP)
def handle(call: HostCall) -> dict[str, Any]:
    return send(
        call.conn,
        call.input,
        channels=call.host.config.channels,
        persona=call.persona,
        thread=call.thread,
    )
