"""``Tracer`` on the OpenTelemetry SDK, exporting spans by OTLP over HTTP (protobuf) in batches.

Built only when ``otlp_endpoint`` is set (``knora/adapters/telemetry/registry.py``); otherwise nothing here is
imported. A turn and an ingestion job are each a trace of their own (a root span); the quick-answer stages and
the agent's tool calls are recorded as child spans from the timings the services already take, with their real
start and end times. The provider is this instance's own, not the global one, so an embedding application's
tracing is left alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Status, StatusCode

from knora import __version__
from knora.ports.telemetry import Attr, Span


class OtelSpan:
    def __init__(self, tracer: trace.Tracer, span: trace.Span) -> None:
        self._tracer = tracer
        self._span = span

    def set(self, key: str, value: Attr) -> None:
        self._span.set_attribute(key, value)

    def fail(self, message: str) -> None:
        self._span.set_status(Status(StatusCode.ERROR, message))

    def _start_child(self, name: str, attributes: Mapping[str, Attr] | None,
                     start_ns: int | None) -> trace.Span:
        return self._tracer.start_span(name, context=trace.set_span_in_context(self._span),
                                       attributes=dict(attributes or {}), start_time=start_ns)

    def record(self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, Attr] | None = None,
               error: str = "") -> None:
        span = self._start_child(name, attributes, start_ns)
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=max(start_ns, end_ns))

    def child(self, name: str, attributes: Mapping[str, Attr] | None = None) -> Span:
        return OtelSpan(self._tracer, self._start_child(name, attributes, time.time_ns()))

    def end(self) -> None:
        self._span.end()


class OtelTracer:
    def __init__(self, endpoint: str, *, headers: Mapping[str, str] | None = None,
                 service_name: str = "knora", sample_ratio: float = 1.0,
                 timeout_seconds: float = 10.0) -> None:
        resource = Resource.create({"service.name": service_name, "service.version": __version__})
        sampler = ParentBased(TraceIdRatioBased(sample_ratio))
        self._provider = TracerProvider(resource=resource, sampler=sampler)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
            endpoint=endpoint, headers=dict(headers or {}), timeout=timeout_seconds)))
        self._tracer = self._provider.get_tracer("knora", __version__)

    @property
    def enabled(self) -> bool:
        return True

    def start(self, name: str, attributes: Mapping[str, Attr] | None = None) -> Span:
        span = self._tracer.start_span(name, context=Context(), attributes=dict(attributes or {}))
        return OtelSpan(self._tracer, span)

    async def flush(self) -> None:
        """Exports what is batched now (tests; a shutdown does it too)."""
        await asyncio.to_thread(self._provider.force_flush)

    async def close(self) -> None:
        await asyncio.to_thread(self._provider.shutdown)
