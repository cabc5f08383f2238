"""Fixtures of the pipeline tests: a fake model server, a started container whose chat model is that server,
a knowledge base with real ingested documents, and a bus recorder."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from knora.domain.stream import BusEvent, Event
from knora.ports.turn import TurnContext, TurnRequest
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from knora.settings import Settings

DOCS = {
    "Solar power": "Solar panels convert sunlight into electricity using photovoltaic cells. "
                   "A typical residential panel produces about 400 watts at peak. "
                   "Panels degrade by roughly half a percent per year.",
    "Tea culture": "Green tea is steamed or pan-fired shortly after picking to stop oxidation. "
                   "Oolong tea is partially oxidised. Black tea is fully oxidised before drying.",
    "长城": "长城是中国古代的军事防御工程，总长度超过两万公里。明长城东起山海关，西至嘉峪关。",
}


@dataclass
class Recorder:
    events: list[Event] = field(default_factory=list)

    async def __call__(self, ev: Event) -> None:
        self.events.append(ev)

    def of(self, kind: BusEvent) -> list[Event]:
        return [e for e in self.events if e.type == kind]

    def answer(self) -> str:
        return "".join(str(e.data.get("content", "")) for e in self.of(BusEvent.FINAL_ANSWER))

    def types(self) -> list[str]:
        return [str(e.type) for e in self.events]


def make_ctx(citations: bool = True) -> tuple[TurnContext, Recorder]:
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(None, rec)
    return TurnContext(bus=bus, references=ReferenceRegistry(citations)), rec


def turn(c: Any, query: str, kb_ids: list[str] | None = None, **kw: Any) -> TurnRequest:
    return TurnRequest(tenant_id=c.default_tenant_id, session_id=str(uuid.uuid4()),
                       request_id=str(uuid.uuid4()),
                       user_message_id=str(uuid.uuid4()), assistant_message_id=str(uuid.uuid4()), query=query,
                       knowledge_base_ids=kb_ids or [], **kw)



async def _container(settings: Settings) -> Any:
    from knora.root import build_services

    c = await build_services(settings)
    if not c.jobs.started:
        await c.jobs.start()
    return c


async def add_kb(c: Any, docs: dict[str, str], name: str = "kb", **body: Any) -> str:
    kb = await c.kb_service.create(c.default_tenant_id, {"name": f"{name}-{uuid.uuid4().hex[:6]}", **body})
    for title, text in docs.items():
        await c.ingest_service.add_manual(c.default_tenant_id, kb.id, title, text)
    await c.jobs.wait_idle(timeout=60)
    return str(kb.id)


async def chunks_of(c: Any, kb_id: str) -> dict[str, list[Any]]:
    """document title -> its chunks (in order)."""
    out: dict[str, list[Any]] = {}
    page = await c.repos.knowledge.list(c.default_tenant_id, kb_id, page=1, page_size=100)
    for k in page.items:
        chunks = await c.repos.chunks.list(c.default_tenant_id, k.id, page=1, page_size=100)
        out[k.title] = list(chunks.items)
    return out
