"""What Knora reports about itself: metrics (counters, histograms, gauges) and traces (spans).

Services record through these two Protocols and never learn who listens: Prometheus behind ``Metrics``
(``knora/adapters/telemetry/prometheus.py``), OpenTelemetry behind ``Tracer`` (``…/otel.py``). Either may be
the null object below, and then recording costs one method call. Figures come from what the services already
measure (the pipeline's stage timings, tool-call durations, the model's usage counts), so the stream's debug
view, ``/metrics`` and a trace agree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

Attr = str | int | float | bool
Probe = Callable[[], Awaitable[None]]  # refreshes gauges that need I/O (queue depth), run before a scrape


@runtime_checkable
class Metrics(Protocol):
    """Labels are small closed sets (route templates, stage names, tool names, outcomes): never ids."""

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None: ...

    def http_in_flight(self, delta: int) -> None:
        """+1 when a request starts, -1 when its response ends (an SSE stream counts while it is read)."""
        ...

    def turn_started(self, runtime: str) -> None: ...

    def turn_ended(self, runtime: str, outcome: str, seconds: float) -> None:
        """``outcome``: completed | stopped | failed | shutdown."""
        ...

    def first_token(self, runtime: str, seconds: float) -> None: ...

    def stage(self, runtime: str, stage: str, seconds: float) -> None: ...

    def tool_call(self, runtime: str, tool: str, outcome: str, seconds: float) -> None: ...

    def model_call(self, model: str, kind: str, outcome: str, seconds: float) -> None:
        """``kind``: chat | stream; ``outcome``: ok | error."""
        ...

    def tokens(self, model: str, kind: str, count: int) -> None:
        """``kind``: prompt | completion."""
        ...

    def ingested(self, outcome: str, seconds: float, chunks: int, size: int) -> None:
        """One ingestion job ended: ``outcome`` completed | failed."""
        ...

    def error(self, kind: str) -> None: ...

    def queue_depth(self, depth: int) -> None: ...

    def add_probe(self, probe: Probe) -> None: ...

    def watch_active_turns(self, count: Callable[[], int]) -> None: ...

    async def refresh(self) -> None:
        """Runs the probes (gauges read from the database); a failing probe is logged, not raised."""
        ...

    def render(self) -> bytes:
        """The Prometheus text exposition format (``text/plain; version=0.0.4``)."""
        ...


@runtime_checkable
class Span(Protocol):
    def set(self, key: str, value: Attr) -> None: ...

    def fail(self, message: str) -> None:
        """Marks the span as failed (status error) with ``message``."""
        ...

    def record(self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, Attr] | None = None,
               error: str = "") -> None:
        """A finished child span from a measurement taken elsewhere (a stage timing, a tool call)."""
        ...

    def child(self, name: str, attributes: Mapping[str, Attr] | None = None) -> Span:
        """An open child span; the caller ends it."""
        ...

    def end(self) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    @property
    def enabled(self) -> bool: ...

    def start(self, name: str, attributes: Mapping[str, Attr] | None = None) -> Span:
        """A new root span (each turn and each ingestion job is its own trace)."""
        ...

    async def close(self) -> None: ...


class NullSpan:
    def set(self, key: str, value: Attr) -> None:
        return None

    def fail(self, message: str) -> None:
        return None

    def record(self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, Attr] | None = None,
               error: str = "") -> None:
        return None

    def child(self, name: str, attributes: Mapping[str, Attr] | None = None) -> Span:
        return NULL_SPAN

    def end(self) -> None:
        return None


NULL_SPAN = NullSpan()


class NullTracer:
    """Tracing off: no exporter configured, nothing imported, each call a no-op."""

    @property
    def enabled(self) -> bool:
        return False

    def start(self, name: str, attributes: Mapping[str, Attr] | None = None) -> Span:
        return NULL_SPAN

    async def close(self) -> None:
        return None


class NullMetrics:
    """Metrics off (``metrics_enabled = false``)."""

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        return None

    def http_in_flight(self, delta: int) -> None:
        return None

    def turn_started(self, runtime: str) -> None:
        return None

    def turn_ended(self, runtime: str, outcome: str, seconds: float) -> None:
        return None

    def first_token(self, runtime: str, seconds: float) -> None:
        return None

    def stage(self, runtime: str, stage: str, seconds: float) -> None:
        return None

    def tool_call(self, runtime: str, tool: str, outcome: str, seconds: float) -> None:
        return None

    def model_call(self, model: str, kind: str, outcome: str, seconds: float) -> None:
        return None

    def tokens(self, model: str, kind: str, count: int) -> None:
        return None

    def ingested(self, outcome: str, seconds: float, chunks: int, size: int) -> None:
        return None

    def error(self, kind: str) -> None:
        return None

    def queue_depth(self, depth: int) -> None:
        return None

    def add_probe(self, probe: Probe) -> None:
        return None

    def watch_active_turns(self, count: Callable[[], int]) -> None:
        return None

    async def refresh(self) -> None:
        return None

    def render(self) -> bytes:
        return b""


@dataclass(frozen=True)
class Telemetry:
    """The pair a service is handed; the default records nothing."""

    metrics: Metrics = field(default_factory=NullMetrics)
    tracer: Tracer = field(default_factory=NullTracer)


NO_TELEMETRY = Telemetry()
