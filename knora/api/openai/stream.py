"""A turn's entries → an SSE body of ``chat.completion.chunk`` objects, or one collected answer; and the
client's disconnect while a non-streamed answer is being made.

``abandon`` is called when the reader stops before the turn ended (the client left): the route passes what
stops the turn — cancelling an unsaved turn, or a stop request for a stored one.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.requests import Request

from knora.api.openai.errors import error_body
from knora.api.openai.render import DONE, KEEPALIVE, CompletionRenderer, sse
from knora.domain.stream import TERMINAL_TYPES, StreamEvent
from knora.ports.chat import close_stream

Usage = Callable[[], dict[str, int] | None | Awaitable[dict[str, int] | None]]


async def stream_chunks(events: AsyncIterator[StreamEvent | None] | AsyncIterator[StreamEvent],
                        r: CompletionRenderer, include_usage: bool, usage: Usage,
                        abandon: Callable[[], None]) -> AsyncIterator[bytes]:
    finished = False
    try:
        yield sse(r.chunk({"role": "assistant", "content": ""}, with_usage=include_usage))
        async for event in events:
            if event is None:
                yield KEEPALIVE
                continue
            delta = r.delta(event)
            if event.type in TERMINAL_TYPES:
                break
            if delta:
                yield sse(r.chunk(delta, with_usage=include_usage))
        finished = True
    finally:
        if not finished:
            abandon()
        await close_stream(events)  # now, not at garbage collection (the turn's log follower, the queue)
    if r.failed:
        yield sse(error_body(502, "; ".join(r.errors), type_="server_error", code="answer_failed"))
    else:
        yield sse(r.chunk(r.tail(), "stop", with_usage=include_usage))
        if include_usage:
            counts = usage()
            yield sse(r.usage_chunk(await counts if inspect.isawaitable(counts) else counts))
    yield DONE


async def collect(events: AsyncIterator[StreamEvent | None] | AsyncIterator[StreamEvent],
                  r: CompletionRenderer) -> None:
    """Reads the turn to its end, the renderer keeping what it needs."""
    async for event in events:
        if event is not None:
            r.delta(event)
            if event.type in TERMINAL_TYPES:
                return


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the body is read by then: only the disconnect can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def collect_unless_gone(request: Request, events: AsyncIterator[StreamEvent | None]
                              | AsyncIterator[StreamEvent], r: CompletionRenderer,
                              abandon: Callable[[], None]) -> bool:
    """``collect``, unless the client leaves first: then ``abandon()`` and False."""
    reading = asyncio.ensure_future(collect(events, r))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({reading, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not reading.done():
            reading.cancel()
            abandon()
        await asyncio.gather(reading, gone, return_exceptions=True)
    if reading.cancelled():
        return False
    reading.result()  # a failure of the turn's reader is the route's
    return True
