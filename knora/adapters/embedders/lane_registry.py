"""Where ingestion embeds passages, by name (``settings.embed_isolation``): ``process`` (one niced worker
process, the default: chat keeps the interpreter as well as the CPU) or ``thread`` (a niced thread of the
server; no process to start, but the embedding's Python work shares the server's interpreter lock)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from knora.domain.registry import Registry

LaneFactory = Callable[[int], Executor]


def _process(nice: int) -> Executor:
    from knora.adapters.embedders.process_lane import ProcessLane

    return ProcessLane(nice)


def _thread(nice: int) -> Executor:
    from knora.adapters.embedders.lanes import BackgroundLane

    return BackgroundLane(nice)


LANES: Registry[LaneFactory] = Registry("embed isolation", {"process": _process, "thread": _thread})


def build_embed_lane(name: str, nice: int) -> Executor:
    return LANES.get(name)(nice)
