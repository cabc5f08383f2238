"""SSE frames exactly as WeKnora writes them (api §2.1–2.2), and the log → frames loop of a response.

``event:message`` with no space, one-line JSON, ``id`` = the request id on every frame. Between frames a
comment line keeps proxies from closing an idle connection (WeKnora sends none; every SSE parser skips
comments). The loop only reads the log, so a client leaving ends the loop and nothing else.

A resume with a cursor (``Last-Event-ID``/``offset``) at or past the turn's terminal event (``complete`` or
``stop``) ends at once with no frame: the cursor says the client already holds the end, so re-sending it would
break "exactly the frames after the cursor", and WeKnora's own clients never send a cursor (they replay from
0 and get the terminal frame in the replay). Before this, such a resume followed the log past its end and sent
keep-alives until the log expired (issue 20, 6a).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from knora.domain.stream import TERMINAL_TYPES, StreamEvent
from knora.ports.stream_log import StreamLog

KEEPALIVE = b": keep-alive\n\n"
TITLE_WAIT_S = 3.0
LIVE_STOP_TEXT = "Generation stopped by user"
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # one-line JSON, built once


def frame(event: StreamEvent, request_id: str, *, live: bool = False) -> bytes:
    payload: dict[str, Any] = {"id": request_id, "response_type": event.type, "content": event.content,
                               "done": event.done}
    data = event.data
    if event.type == "references":
        refs = data.get("references") or []
        if refs:
            payload["knowledge_references"] = refs
    elif event.type == "agent_query":
        payload["session_id"] = data.get("session_id", "")
        payload["assistant_message_id"] = data.get("assistant_message_id", "")
    elif event.type == "stop" and live:
        payload["content"] = LIVE_STOP_TEXT
        data = {}
    if data:
        payload["data"] = data
    return b"event:message\ndata:" + _encode(payload).encode() + b"\n\n"


async def stream_frames(log: StreamLog, session_id: str, message_id: str, request_id: str, *, after: int = -1,
                        live: bool = False, wait_for_title: bool = False,
                        keepalive: float = 15.0) -> AsyncIterator[bytes]:
    """Frames of the log from ``after`` on, live until complete/stop; then (if asked) ≤3 s for the title."""
    if after >= 0:
        cursor = await resume_cursor(log, session_id, message_id, after)
        if cursor is None:
            return
        after = cursor
    last = after
    completed = False
    async for item in log.follow(session_id, message_id, after, heartbeat=keepalive):
        if item is None:
            yield KEEPALIVE
            continue
        last = item.seq
        yield frame(item, request_id, live=live)
        if item.type == "stop" and live:
            return
        completed = item.type == "complete"
    if not (completed and wait_for_title):
        return
    # Never yield inside asyncio.timeout(): the deadline would fire in the consumer. Wait per event instead.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TITLE_WAIT_S
    async for item in log.follow(session_id, message_id, last, heartbeat=TITLE_WAIT_S / 6):
        if loop.time() >= deadline:
            return
        if item is None:
            continue
        yield frame(item, request_id, live=live)
        if item.type == "session_title":
            return


async def resume_cursor(log: StreamLog, session_id: str, message_id: str, after: int) -> int | None:
    """Where a resume with cursor ``after`` follows from; None when the turn ended at or before it.

    A cursor past the log's last event is clamped to it: every frame a client received came from this log, so
    a larger cursor is a client's miscount (``offset=9999``), and following from beyond the end would skip the
    terminal event when it is appended and never end. Reads the log once; only resumes with a cursor pay it.
    """
    events = await log.read(session_id, message_id)
    if not events:
        return after  # not started (or gone): the follower waits for it / ends as it always did
    ended = next((e.seq for e in events if e.type in TERMINAL_TYPES), None)
    cursor = min(after, events[-1].seq)
    return None if ended is not None and ended <= cursor else cursor
