"""Where parsing runs, by name (``settings.parse_isolation``): ``process`` (worker processes under memory and
time limits, the default) or ``thread`` (this process, unbounded; only where a process cannot be started)."""

from __future__ import annotations

from collections.abc import Callable

from knora.domain.registry import Registry
from knora.ports.parser import DocumentParsers, ParseLimits

RunnerFactory = Callable[[ParseLimits, int], DocumentParsers]


def _process(limits: ParseLimits, workers: int) -> DocumentParsers:
    from knora.adapters.parsers.pool import ProcessParsers

    return ProcessParsers(limits, workers=workers)


def _thread(limits: ParseLimits, workers: int) -> DocumentParsers:
    from knora.adapters.parsers.inthread import ThreadParsers

    return ThreadParsers(limits, workers=workers)


RUNNERS: Registry[RunnerFactory] = Registry("parse isolation", {"process": _process, "thread": _thread})


def build_document_parsers(name: str, limits: ParseLimits, *, workers: int) -> DocumentParsers:
    return RUNNERS.get(name)(limits, workers)
