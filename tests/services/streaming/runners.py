"""Small TurnRunners that emit realistic bus events, for tests and the two-process server script."""

from __future__ import annotations

import asyncio
import uuid

from knora.domain.search import SearchResult
from knora.domain.stream import BusEvent
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest

KB_ID = "bbbbbbbb-0000-0000-0000-00000000000b"
CHUNK_1 = "c0000000-0000-0000-0000-000000000001"
CHUNK_2 = "c0000000-0000-0000-0000-000000000002"
DOC_1 = "d0000000-0000-0000-0000-000000000001"

RESULTS = [
    SearchResult(id=CHUNK_1, content="Knora streams answers.", knowledge_id=DOC_1, knowledge_title="Manual",
                 knowledge_base_id=KB_ID, score=0.9),
    SearchResult(id=CHUNK_2, content="Stops work across replicas.", knowledge_id=DOC_1,
                 knowledge_title="Manual",
                 knowledge_base_id=KB_ID, score=0.8),
]
ANSWER = 'Knora streams answers<ref id="c1"/> and stops anywhere<ref id="c2"/>. Bogus<ref id="c9"/>.'
EXPANDED = (f'Knora streams answers<kb doc="Manual" chunk_id="{CHUNK_1}" kb_id="{KB_ID}" />'
            f' and stops anywhere<kb doc="Manual" chunk_id="{CHUNK_2}" kb_id="{KB_ID}" />. Bogus.')


def split(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


class ScriptedRunner:
    """Retrieval progress, references, then the answer in ``chunk``-sized deltas, ``delay`` seconds apart.

    ``gate`` (if given) is awaited after the first delta, so a test can act while the turn is mid-stream.
    """

    def __init__(self, answer: str = ANSWER, *, chunk: int = 4, delay: float = 0.0,
                 gate: asyncio.Event | None = None, fail: str | None = None, stream: bool = True,
                 thinking: str = "") -> None:
        self.answer, self.chunk, self.delay, self.gate, self.fail = answer, chunk, delay, gate, fail
        self.stream, self.thinking = stream, thinking
        self.requests: list[TurnRequest] = []
        self.started = asyncio.Event()

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        self.requests.append(req)
        bus = ctx.bus
        call_id = f"ragpipe-{uuid.uuid4()}"
        await bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": call_id, "tool_name": "knowledge_search",
                                            "arguments": {"query": req.query, "search_source": "knowledge"}})
        ctx.references.register_search_results(RESULTS)
        await bus.emit(BusEvent.TOOL_RESULT, {"tool_call_id": call_id, "tool_name": "knowledge_search",
                                              "success": True, "output": "检索到 2 条相关内容", "count": 2})
        await bus.emit(BusEvent.STAGE_TIMING, {"stage": "chunk_search", "ms": 1.5, "kept": 2})
        ctx.timings["chunk_search"] = 1.5
        await bus.emit(BusEvent.REFERENCES, {"references": [r.model_dump() for r in RESULTS]})
        if self.thinking:
            await bus.emit(BusEvent.THOUGHT, {"content": self.thinking, "done": False,
                                              "event_id": "t-thinking"})
            await bus.emit(BusEvent.THOUGHT, {"content": "", "done": True, "event_id": "t-thinking"})
        self.started.set()
        if self.fail:
            raise RuntimeError(self.fail)
        event_id = f"{uuid.uuid4().hex[:8]}-answer"
        if self.stream:
            for i, delta in enumerate(split(self.answer, self.chunk)):
                if self.delay:
                    await asyncio.sleep(self.delay)
                await bus.emit(BusEvent.FINAL_ANSWER, {"content": delta, "done": False, "event_id": event_id})
                if i == 0 and self.gate is not None:
                    await self.gate.wait()
            await bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "event_id": event_id})
        return TurnOutcome(answer=self.answer, references=RESULTS, model_id="scripted:test",
                           rendered_content=f"[prompt] {req.query}")
