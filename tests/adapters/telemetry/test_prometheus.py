"""PrometheusMetrics: what it records is what a Prometheus text-format parser reads back."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client.parser import text_string_to_metric_families

from knora.adapters.telemetry.prometheus import MAX_LABEL_VALUES, PrometheusMetrics
from knora.ports.telemetry import Metrics

pytestmark = pytest.mark.unit


def samples(m: PrometheusMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(m.render().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


class TestPrometheusMetrics:
    def test_is_a_metrics_port(self) -> None:
        assert isinstance(PrometheusMetrics(), Metrics)

    def test_records_each_kind(self) -> None:
        m = PrometheusMetrics()
        m.http_request("GET", "/api/v1/knowledge-bases/{id}", 200, 0.004)
        m.http_request("GET", "/api/v1/knowledge-bases/{id}", 503, 0.2)
        m.http_in_flight(1)
        m.http_in_flight(1)
        m.http_in_flight(-1)
        m.turn_started("quick")
        m.turn_ended("quick", "completed", 1.5)
        m.first_token("quick", 0.3)
        m.stage("quick", "chunk_search_parallel", 0.002)
        m.tool_call("smart", "knowledge_search", "ok", 0.05)
        m.model_call("gpt", "stream", "error", 2.0)
        m.tokens("gpt", "prompt", 120)
        m.tokens("gpt", "completion", 0)  # nothing reported: no sample
        m.ingested("completed", 3.0, 12, 4096)
        m.queue_depth(7)
        m.watch_active_turns(lambda: 3)
        s = samples(m)
        assert s[("knora_http_requests_total", (("method", "GET"), ("route", "/api/v1/knowledge-bases/{id}"),
                                                ("status", "200")))] == 1
        assert s[("knora_http_request_duration_seconds_count",
                  (("method", "GET"), ("route", "/api/v1/knowledge-bases/{id}")))] == 2
        assert s[("knora_http_requests_in_flight", ())] == 1
        assert s[("knora_turns_total", (("outcome", "completed"), ("runtime", "quick")))] == 1
        assert s[("knora_turns_started_total", (("runtime", "quick"),))] == 1
        assert s[("knora_turn_first_token_seconds_sum", (("runtime", "quick"),))] == pytest.approx(0.3)
        assert s[("knora_stage_duration_seconds_count",
                  (("runtime", "quick"), ("stage", "chunk_search_parallel")))] == 1
        assert s[("knora_tool_call_duration_seconds_count", (("outcome", "ok"), ("runtime", "smart"),
                                                             ("tool", "knowledge_search")))] == 1
        assert s[("knora_model_tokens_total", (("kind", "prompt"), ("model", "gpt")))] == 120
        assert ("knora_model_tokens_total", (("kind", "completion"), ("model", "gpt"))) not in s
        assert s[("knora_ingest_jobs_total", (("outcome", "completed"),))] == 1
        assert s[("knora_ingest_chunks_total", ())] == 12
        assert s[("knora_ingest_bytes_total", ())] == 4096
        assert s[("knora_job_queue_depth", ())] == 7
        assert s[("knora_active_turns", ())] == 3
        # errors by kind: the 503 and the failed model call
        assert s[("knora_errors_total", (("kind", "http_5xx"),))] == 1
        assert s[("knora_errors_total", (("kind", "model"),))] == 1

    def test_histogram_buckets_place_a_fast_stage(self) -> None:
        m = PrometheusMetrics()
        m.stage("quick", "filter_top_k", 0.0007)
        s = samples(m)
        le = {dict(k[1])["le"]: v for k, v in s.items() if k[0] == "knora_stage_duration_seconds_bucket"}
        assert le["0.0005"] == 0
        assert le["0.001"] == 1
        assert le["+Inf"] == 1

    def test_labels_from_tenant_data_are_bounded(self) -> None:
        m = PrometheusMetrics()
        for i in range(MAX_LABEL_VALUES + 10):
            m.tokens(f"model-{i}", "prompt", 1)
            m.tool_call("smart", f"mcp_service{i}_tool", "ok", 0.01)
        s = samples(m)
        models = {dict(k[1])["model"] for k in s if k[0] == "knora_model_tokens_total"}
        assert len(models) == MAX_LABEL_VALUES + 1
        assert "other" in models
        assert s[("knora_model_tokens_total", (("kind", "prompt"), ("model", "other")))] == 10
        tools = {dict(k[1])["tool"] for k in s if k[0] == "knora_tool_call_duration_seconds_count"}
        assert tools == {"mcp"}

    def test_two_instances_do_not_collide(self) -> None:
        a, b = PrometheusMetrics(), PrometheusMetrics()
        a.error("x")
        assert ("knora_errors_total", (("kind", "x"),)) not in samples(b)

    async def test_probes_run_before_a_scrape_and_a_failing_one_is_skipped(self) -> None:
        m = PrometheusMetrics()
        depth = [4]

        async def good() -> None:
            await asyncio.sleep(0)
            m.queue_depth(depth[0])

        async def bad() -> None:
            raise RuntimeError("database down")

        m.add_probe(bad)
        m.add_probe(good)
        await m.refresh()
        assert samples(m)[("knora_job_queue_depth", ())] == 4
        depth[0] = 9
        await m.refresh()
        assert samples(m)[("knora_job_queue_depth", ())] == 9
