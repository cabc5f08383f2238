"""The telemetry of a process, from settings: Prometheus metrics unless ``metrics_enabled`` is off, and
OpenTelemetry traces only when ``otlp_endpoint`` is set (the SDK is not even imported otherwise, so tracing
that is off costs nothing)."""

from __future__ import annotations

from knora.ports.telemetry import Metrics, NullMetrics, NullTracer, Telemetry, Tracer
from knora.settings import Settings


def build_telemetry(settings: Settings) -> Telemetry:
    metrics: Metrics = NullMetrics()
    if settings.metrics_enabled:
        from knora.adapters.telemetry.prometheus import PrometheusMetrics

        metrics = PrometheusMetrics()
    tracer: Tracer = NullTracer()
    if settings.otlp_endpoint:
        from knora.adapters.telemetry.otel import OtelTracer

        tracer = OtelTracer(settings.otlp_endpoint, headers=settings.otlp_headers,
                            service_name=settings.trace_service_name,
                            sample_ratio=settings.trace_sample_ratio)
    return Telemetry(metrics=metrics, tracer=tracer)
