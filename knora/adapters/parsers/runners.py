"""Where parsing runs, by name (``settings.parse_isolation``): ``process`` (worker processes under memory and
time limits, the default) or ``thread`` (this process, unbounded; only where a process cannot be started)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from knora.domain.registry import Registry
from knora.ports.parser import DocumentParsers, ParseLimits

log = logging.getLogger(__name__)

RunnerFactory = Callable[[ParseLimits, int], DocumentParsers]


def _process(limits: ParseLimits, workers: int) -> DocumentParsers:
    if sys.platform == "win32":  # no RLIMIT_AS, no fd passing: the worker cannot be capped there
        log.warning("parse_isolation=process is not available on Windows; parsing in-thread, without memory "
                    "or time limits")
        return _thread(limits, workers)
    from knora.adapters.parsers.pool import ProcessParsers

    return ProcessParsers(limits, workers=workers)


def _thread(limits: ParseLimits, workers: int) -> DocumentParsers:
    from knora.adapters.parsers.inthread import ThreadParsers

    return ThreadParsers(limits, workers=workers)


RUNNERS: Registry[RunnerFactory] = Registry("parse isolation", {"process": _process, "thread": _thread})


def build_document_parsers(name: str, limits: ParseLimits, *, workers: int) -> DocumentParsers:
    return RUNNERS.get(name)(limits, workers)
