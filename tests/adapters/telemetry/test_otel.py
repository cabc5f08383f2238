"""OtelTracer against a real OTLP/HTTP receiver: spans arrive as a collector decodes them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from knora.adapters.telemetry.otel import OtelTracer
from knora.ports.telemetry import Tracer
from tests.fakes.otlp_collector import OtlpCollector

pytestmark = pytest.mark.integration


@pytest.fixture
def collector() -> Iterator[OtlpCollector]:
    with OtlpCollector() as c:
        yield c


class TestOtelTracer:
    async def test_a_root_span_with_recorded_and_open_children(self, collector: OtlpCollector) -> None:
        tracer = OtelTracer(collector.endpoint, headers={"x-collector-key": "k1"}, service_name="knora-test")
        assert isinstance(tracer, Tracer)
        assert tracer.enabled
        root = tracer.start("knora.turn", {"knora.runtime": "quick"})
        end = time.time_ns()
        root.record("stage chunk_search_parallel", end - 2_000_000, end, {"knora.kept": 3})
        root.record("tool web_fetch", end - 1_000_000, end, error="timed out")
        child = root.child("load")
        child.set("knora.bytes", 10)
        child.end()
        root.set("knora.outcome", "completed")
        root.end()
        other = tracer.start("knora.ingest")
        other.fail("parse failed")
        other.end()
        await tracer.close()  # shutdown exports what is batched

        spans = {s.name: s for s in collector.received()}
        assert set(spans) == {"knora.turn", "stage chunk_search_parallel", "tool web_fetch", "load",
                              "knora.ingest"}
        turn = spans["knora.turn"]
        assert turn.parent_span_id == ""
        assert turn.attributes == {"knora.runtime": "quick",
                                                                 "knora.outcome": "completed"}
        for name in ("stage chunk_search_parallel", "tool web_fetch", "load"):
            assert spans[name].trace_id == turn.trace_id
            assert spans[name].parent_span_id == turn.span_id
        stage = spans["stage chunk_search_parallel"]
        assert stage.end_ns - stage.start_ns == 2_000_000
        assert stage.attributes == {"knora.kept": 3}
        failed = spans["tool web_fetch"]
        assert failed.status_code == 2
        assert failed.status_message == "timed out"
        assert spans["knora.ingest"].trace_id != turn.trace_id  # each job its own trace
        assert spans["knora.ingest"].status_code == 2
        assert {s.service_name for s in spans.values()} == {"knora-test"}
        assert collector.paths[0] == "/v1/traces"
        assert collector.headers[0]["x-collector-key"] == "k1"

    async def test_sampling_ratio_zero_exports_nothing(self, collector: OtlpCollector) -> None:
        tracer = OtelTracer(collector.endpoint, sample_ratio=0.0)
        span = tracer.start("knora.turn")
        span.record("stage x", time.time_ns() - 10, time.time_ns())
        span.end()
        await tracer.close()
        assert collector.received() == []
