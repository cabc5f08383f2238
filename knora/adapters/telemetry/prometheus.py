"""``Metrics`` on prometheus_client, served as text at ``/metrics`` (``knora/api/routes/metrics.py``).

Each instance has its own ``CollectorRegistry``: a process may build several ``Services`` (tests, the CLI next
to a server), and prometheus_client's global registry refuses a second metric of one name. Labels that come
from tenants' data (model names, MCP tool names) are bounded: past ``MAX_LABEL_VALUES`` distinct values a
label reads ``other``, so a tenant cannot grow the scrape without limit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from knora.ports.telemetry import Probe

log = logging.getLogger(__name__)

MAX_LABEL_VALUES = 64
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Seconds. Stages and tool calls run from a fraction of a millisecond (a keyword search) to minutes (an
# agent's web fetch); turns and ingestion jobs from a second to many minutes.
FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SLOW = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)


class _BoundedLabel:
    """The first ``limit`` distinct values pass; later ones read ``other``."""

    def __init__(self, limit: int = MAX_LABEL_VALUES) -> None:
        self.limit = limit
        self.seen: set[str] = set()

    def __call__(self, value: str) -> str:
        if value in self.seen:
            return value
        if len(self.seen) >= self.limit:
            return "other"
        self.seen.add(value)
        return value


def tool_label(name: str) -> str:
    """MCP tools are named per tenant service (``mcp_<service>_<tool>``): one label for all of them."""
    return "mcp" if name.startswith("mcp_") else name


class PrometheusMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self._models = _BoundedLabel()
        self._tools = _BoundedLabel()
        self._probes: list[Probe] = []
        self._http_total = Counter("knora_http_requests", "HTTP requests answered",
                                   ["method", "route", "status"], registry=r)
        self._http_seconds = Histogram("knora_http_request_duration_seconds",
                                       "HTTP request time, to the end of the response body (a chat stream: "
                                       "the whole turn as the client read it)", ["method", "route"],
                                       buckets=FAST, registry=r)
        self._in_flight = Gauge("knora_http_requests_in_flight", "HTTP requests being answered (open SSE "
                                "streams included)", registry=r)
        self._turns_started = Counter("knora_turns_started", "Chat turns started", ["runtime"], registry=r)
        self._turns = Counter("knora_turns", "Chat turns ended", ["runtime", "outcome"], registry=r)
        self._turn_seconds = Histogram("knora_turn_duration_seconds", "Chat turn time, start to end",
                                       ["runtime"], buckets=SLOW, registry=r)
        self._first_token = Histogram("knora_turn_first_token_seconds",
                                      "Time from a turn's start to its first answer text", ["runtime"],
                                      buckets=FAST, registry=r)
        self._active = Gauge("knora_active_turns", "Chat turns running in this process", registry=r)
        self._stage = Histogram("knora_stage_duration_seconds", "Quick-answer pipeline stage time",
                                ["runtime", "stage"], buckets=FAST, registry=r)
        self._tool = Histogram("knora_tool_call_duration_seconds", "Tool call time (the agent's tools; "
                               "in quick answer, its search and web steps)", ["runtime", "tool", "outcome"],
                               buckets=FAST, registry=r)
        self._model = Histogram("knora_model_call_duration_seconds", "Chat model call time (a stream: to its "
                                "last chunk)", ["model", "kind", "outcome"], buckets=SLOW, registry=r)
        self._tokens = Counter("knora_model_tokens", "Tokens the chat models reported", ["model", "kind"],
                               registry=r)
        self._ingest = Counter("knora_ingest_jobs", "Ingestion jobs ended", ["outcome"], registry=r)
        self._ingest_seconds = Histogram("knora_ingest_duration_seconds", "Ingestion job time (parse, chunk, "
                                         "embed, index)", ["outcome"], buckets=SLOW, registry=r)
        self._ingest_chunks = Counter("knora_ingest_chunks", "Chunks indexed by ingestion", registry=r)
        self._ingest_bytes = Counter("knora_ingest_bytes", "Bytes of originals ingested", registry=r)
        self._errors = Counter("knora_errors", "Errors by kind", ["kind"], registry=r)
        self._queue = Gauge("knora_job_queue_depth", "Jobs queued or running (all processes)", registry=r)

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._http_total.labels(method, route, str(status)).inc()
        self._http_seconds.labels(method, route).observe(seconds)
        if status >= 500:
            self._errors.labels("http_5xx").inc()

    def http_in_flight(self, delta: int) -> None:
        self._in_flight.inc(delta)

    def turn_started(self, runtime: str) -> None:
        self._turns_started.labels(runtime).inc()

    def turn_ended(self, runtime: str, outcome: str, seconds: float) -> None:
        self._turns.labels(runtime, outcome).inc()
        self._turn_seconds.labels(runtime).observe(seconds)

    def first_token(self, runtime: str, seconds: float) -> None:
        self._first_token.labels(runtime).observe(seconds)

    def stage(self, runtime: str, stage: str, seconds: float) -> None:
        self._stage.labels(runtime, stage).observe(seconds)

    def tool_call(self, runtime: str, tool: str, outcome: str, seconds: float) -> None:
        self._tool.labels(runtime, self._tools(tool_label(tool)), outcome).observe(seconds)

    def model_call(self, model: str, kind: str, outcome: str, seconds: float) -> None:
        self._model.labels(self._models(model), kind, outcome).observe(seconds)
        if outcome != "ok":
            self._errors.labels("model").inc()

    def tokens(self, model: str, kind: str, count: int) -> None:
        if count > 0:
            self._tokens.labels(self._models(model), kind).inc(count)

    def ingested(self, outcome: str, seconds: float, chunks: int, size: int) -> None:
        self._ingest.labels(outcome).inc()
        self._ingest_seconds.labels(outcome).observe(seconds)
        if chunks > 0:
            self._ingest_chunks.inc(chunks)
        if size > 0:
            self._ingest_bytes.inc(size)

    def error(self, kind: str) -> None:
        self._errors.labels(kind).inc()

    def queue_depth(self, depth: int) -> None:
        self._queue.set(depth)

    def add_probe(self, probe: Probe) -> None:
        self._probes.append(probe)

    def watch_active_turns(self, count: Callable[[], int]) -> None:
        self._active.set_function(lambda: float(count()))

    async def refresh(self) -> None:
        for probe in self._probes:
            try:
                await probe()
            except Exception:  # noqa: BLE001 - a scrape still answers with what the other metrics hold
                log.warning("metrics probe failed", exc_info=True)

    def render(self) -> bytes:
        return generate_latest(self.registry)
