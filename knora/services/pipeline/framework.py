"""Plugin contract, EventManager and PipelineBuilder (spec §1.1, §1.6).

Each event has a chain of plugins in registration order, composed as nested ``next()`` calls: plugin[0] runs
first and receives a ``next`` that runs plugin[1] … the last ``next`` returns ``None``. A plugin that works
before ``next()`` runs in registration order; one that calls ``next()`` first post-processes in reverse order;
one that returns without calling ``next()`` stops the chain. The first plugin's return value is the event's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from knora.ports.turn import TurnContext
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.state import ChatManage, EventType

Next = Callable[[], Awaitable[PluginError | None]]


@runtime_checkable
class Plugin(Protocol):
    def activation_events(self) -> Sequence[EventType]: ...

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        """``ctx`` is ``cm.ctx`` (bus, references, cancellation); ``cm`` holds request and state."""
        ...


async def _done() -> PluginError | None:
    return None


class EventManager:
    def __init__(self) -> None:
        self._listeners: dict[EventType, list[Plugin]] = {}

    def register(self, plugin: Plugin) -> None:
        for event in plugin.activation_events():
            self._listeners.setdefault(EventType(event), []).append(plugin)

    def listeners(self, event: EventType) -> list[Plugin]:
        return list(self._listeners.get(event, []))

    async def trigger(self, cm: ChatManage, event: EventType) -> PluginError | None:
        chain = self._listeners.get(event)
        if not chain:
            return None

        def step(i: int) -> Next:
            if i >= len(chain):
                return _done

            async def run() -> PluginError | None:
                return await chain[i].on_event(cm.ctx, event, cm, step(i + 1))

            return run

        return await step(0)()


class PipelineBuilder:
    """``PipelineBuilder().add(...).add_if(cond, ...).build()`` → the stage list of one turn (spec §1.6)."""

    def __init__(self) -> None:
        self._stages: list[EventType] = []

    def add(self, *stages: EventType) -> PipelineBuilder:
        self._stages.extend(stages)
        return self

    def add_if(self, condition: bool, *stages: EventType) -> PipelineBuilder:
        if condition:
            self._stages.extend(stages)
        return self

    def build(self) -> list[EventType]:
        return list(self._stages)


E = EventType
PRESETS: dict[str, tuple[EventType, ...]] = {
    "chat": (E.CHAT_COMPLETION,),
    "chat_stream": (E.CHAT_COMPLETION_STREAM,),
    "chat_history_stream": (E.LOAD_HISTORY, E.CHAT_COMPLETION_STREAM),
    "rag": (E.CHUNK_SEARCH, E.CHUNK_RERANK, E.CHUNK_MERGE, E.INTO_CHAT_MESSAGE, E.CHAT_COMPLETION),
    "rag_stream": (E.LOAD_HISTORY, E.QUERY_UNDERSTAND, E.CHUNK_SEARCH_PARALLEL, E.CHUNK_RERANK, E.CHUNK_MERGE,
                   E.FILTER_TOP_K, E.DATA_ANALYSIS, E.INTO_CHAT_MESSAGE, E.CHAT_COMPLETION_STREAM),
}


def build_manager(plugins: Iterable[Plugin]) -> EventManager:
    manager = EventManager()
    for plugin in plugins:
        manager.register(plugin)
    return manager
