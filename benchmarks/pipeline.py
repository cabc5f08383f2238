"""Quick-answer pipeline figures. Prints one JSON line.

1. Overhead: time from request to the first answer token at 10k and 100k chunks with a zero-latency in-process
   model (model time measured inside the model and subtracted), per stage and in total, p50/p95 over N turns,
   and the CPU time of the process per turn (all threads). The real retrieval engine (SQLite by default) and
   the real container are used; chunks are synthetic documents of 10 linked chunks each, embedded with
   ``local:hash``. The keyword engine is reported on its own (``keyword_engine``) so that its cost and the
   pipeline's can be added up: its wall time inside each turn, and the same queries re-run alone afterwards
   for their wall and CPU time; ``excluding_keyword`` is each turn less its keyword search (wall: less the
   part of the keyword search that outlasted the concurrent vector search; CPU: less the keyword query's own
   CPU).
2. Telemetry overhead (``telemetry_overhead``): whole chat turns through the HTTP API with metrics on and off
   (tracing off, the default), interleaved on two services over the same chunks; the ratios on/off of the
   p50 wall time and of the mean CPU per turn.
3. Accuracy of the extractive answerer (no chat model configured) on ../shared/data/xquad-en and xquad-zh: the
   share of questions whose answer contains a gold answer string, end to end (retrieval + answer), and with
   the gold passage given directly (answering alone).
4. Citation precision (``citation_precision``, benchmarks/_citations.py): the share of citation tags whose
   chunk holds the cited sentence, with the extractive answerer and with a model behind the HTTP fake, on
   each QA set as it is and with four passages per document (chunks merged); now and as cited before.

    python benchmarks/pipeline.py [--sizes 10000,100000] [--turns 50] [--qa-limit 0] [--qa-embedder
    local:hash] [--telemetry-size 10000] [--telemetry-turns 100] [--citation-limit 0] [--skip-accuracy]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from _citations import precision as citation_precision  # noqa: E402 - benchmarks/ is on sys.path
from _citations import seed_chunks  # noqa: E402

from knora.adapters.llm.extractive import Passage, compose_answer
from knora.domain.knowledge import Chunk
from knora.domain.models import AgentConfig
from knora.domain.stream import BusEvent, Event
from knora.ports.chat import ChatChunk, ChatMessage, ChatModel, ChatOptions, ChatResponse
from knora.ports.turn import TurnContext, TurnRequest
from knora.root import Services, build_services
from knora.services.citations.registry import ReferenceRegistry
from knora.services.pipeline.runner import QuickAnswerRunner
from knora.services.streaming.bus import EventBus
from knora.settings import Settings

DATA = ROOT.parent / "shared" / "data"


class InstantModel:
    """Zero-latency model: rewrites to the query itself, answers one cited token; records time spent
    inside."""

    generative = True
    model_id = "bench:instant"
    supports_tools = False

    def __init__(self) -> None:
        self.spent = 0.0

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        t = time.perf_counter()
        user = messages[-1].content.rsplit("\n", 3)[-3] if messages else ""
        resp = ChatResponse(content=json.dumps({"rewrite_query": user, "intent": "kb_search"}),
                            finish_reason="stop")
        self.spent += time.perf_counter() - t
        return resp

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        t = time.perf_counter()
        chunk = ChatChunk(content='ok <ref id="c1"/>')
        self.spent += time.perf_counter() - t
        yield chunk
        yield ChatChunk(finish_reason="stop")


class _TimedEngine:
    """The container's retrieval engine, timing each ``search`` call by mode (everything else passed
    through)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.calls: list[tuple[str, float, Any]] = []  # (mode, wall ms, query)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    async def search(self, query: Any) -> Any:
        t = time.perf_counter()
        try:
            return await self._engine.search(query)
        finally:
            self.calls.append((query.mode, (time.perf_counter() - t) * 1000, query))


class _Models:
    def __init__(self, model: ChatModel) -> None:
        self.model = model

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> ChatModel:
        return self.model


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))], 3) if s else 0.0


async def start(embedder: str) -> Services:
    return await build_services(Settings(data_dir=Path(tempfile.mkdtemp(prefix="knora-bench-")),
                                         embedder=embedder, sample_kb=False, api_key="sk-bench"))


async def seed(c: Services, docs: list[tuple[str, list[str]]]) -> tuple[str, list[Chunk]]:
    """One KB; each document's chunks linked pre/next like the chunker links them (_citations.seed_chunks)."""
    return await seed_chunks(c, [(title, [(p, 0, len(p)) for p in parts]) for title, parts in docs])


def synthetic_docs(n_chunks: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    vocab = [f"{a}{b}{c}" for a in "bdfgklmnprstvz" for b in "aeiou" for c in ("n", "r", "s", "l", "x", "m")]
    docs = []
    for d in range(n_chunks // 10):
        # ~500-character chunks, the size the default chunker (512) produces
        parts = [" ".join(rng.choice(vocab) for _ in range(85)) + "." for _ in range(10)]
        docs.append((f"Document {d}", parts))
    return docs


def turn(c: Services, query: str, kb_id: str, agent: AgentConfig | None = None) -> TurnRequest:
    return TurnRequest(tenant_id=c.default_tenant_id, session_id=str(uuid.uuid4()),
                       request_id=str(uuid.uuid4()),
                       user_message_id=str(uuid.uuid4()), assistant_message_id=str(uuid.uuid4()), query=query,
                       knowledge_base_ids=[kb_id], agent=agent)


async def overhead(size: int, turns: int, rng: random.Random) -> dict[str, Any]:
    c = await start("local:hash")
    try:
        t0 = time.perf_counter()
        kb_id, chunks = await seed(c, synthetic_docs(size, rng))
        seed_s = time.perf_counter() - t0
        if hasattr(c.retrieval, "warm_keyword"):  # the keyword index loads at first use; not part of a turn
            await c.retrieval.warm_keyword()
        model = InstantModel()
        runner = QuickAnswerRunner(c.pipeline_deps)  # type: ignore[attr-defined]
        runner.deps = type(runner.deps)(**{**runner.deps.__dict__, "chat_models": _Models(model)})
        runner = QuickAnswerRunner(runner.deps)
        timed = _TimedEngine(c.retrieval)  # type: ignore[attr-defined]
        c.retrieval = timed  # type: ignore[attr-defined]  # the search service resolves the engine per call
        totals: list[float] = []
        cpu: list[float] = []
        kw_in_turn: list[float] = []
        vec_in_turn: list[float] = []
        kw_queries: list[Any] = []
        stages: dict[str, list[float]] = {}
        for i in range(turns + 3):
            words = rng.choice(chunks).content.split()[:40]
            query = " ".join(rng.sample(words, 6))
            bus = EventBus()
            first: list[float] = []

            async def on_answer(ev: Event, first: list[float] = first) -> None:
                if not first:
                    first.append(time.perf_counter())

            bus.subscribe(BusEvent.FINAL_ANSWER, on_answer)
            ctx = TurnContext(bus=bus, references=ReferenceRegistry(True))
            model.spent = 0.0
            timed.calls.clear()
            start_t, start_cpu = time.perf_counter(), time.process_time()
            await runner.run(turn(c, query, kb_id), ctx)
            # whole turn, all threads (the machine is shared)
            cpu_ms = (time.process_time() - start_cpu) * 1000
            if i < 3 or not first:
                continue  # warm-up (jieba, caches)
            totals.append((first[0] - start_t - model.spent) * 1000)
            cpu.append(cpu_ms)
            kw = sum(ms for mode, ms, _ in timed.calls if mode == "keyword")
            vec = max((ms for mode, ms, _ in timed.calls if mode == "vector"), default=0.0)
            kw_in_turn.append(kw)
            vec_in_turn.append(vec)
            kw_queries.append([q for mode, _, q in timed.calls if mode == "keyword"])
            for name, ms in ctx.timings.items():
                if name != "total":
                    stages.setdefault(name, []).append(ms)
        # The same keyword queries alone, one after another: the keyword engine's own wall and CPU time.
        kw_alone: list[float] = []
        kw_cpu: list[float] = []
        for qs in kw_queries:
            t, p = time.perf_counter(), time.process_time()
            for q in qs:
                await timed._engine.search(q)
            kw_alone.append((time.perf_counter() - t) * 1000)
            kw_cpu.append((time.process_time() - p) * 1000)
        wall_ex = [tot - max(0.0, kw - vec) for tot, kw, vec in zip(totals, kw_in_turn, vec_in_turn,
                                                                    strict=True)]
        cpu_ex = [c_ms - k_ms for c_ms, k_ms in zip(cpu, kw_cpu, strict=True)]
        return {"chunks": len(chunks), "seed_s": round(seed_s, 1), "turns": len(totals),
                "first_token_overhead_ms": {"p50": pct(totals, 50), "p95": pct(totals, 95)},
                "turn_cpu_ms": {"p50": pct(cpu, 50), "p95": pct(cpu, 95)},
                "stages_ms_p50": {k: pct(v, 50) for k, v in stages.items()},
                "keyword_engine": {"in_turn_ms_p50": pct(kw_in_turn, 50), "alone_ms_p50": pct(kw_alone, 50),
                                   "alone_cpu_ms_p50": pct(kw_cpu, 50)},
                "vector_engine_in_turn_ms_p50": pct(vec_in_turn, 50),
                "excluding_keyword": {"first_token_overhead_ms_p50": pct(wall_ex, 50),
                                      "turn_cpu_ms_p50": pct(cpu_ex, 50)}}
    finally:
        await c.aclose()
        shutil.rmtree(c.settings.data_dir, ignore_errors=True)  # a 100k run leaves ~0.6 GB otherwise


def load_qa(name: str, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str],
                                              dict[str, list[str]]]:
    path = DATA / name
    corpus = [json.loads(x) for x in (path / "corpus.jsonl").read_text().splitlines() if x.strip()]
    queries = [json.loads(x) for x in (path / "queries.jsonl").read_text().splitlines() if x.strip()]
    qrels = {q: d for q, d, _ in (ln.split("\t") for ln in (path / "qrels.tsv").read_text().splitlines()[1:])}
    answers = {a["_id"]: a["answers"] for a in map(json.loads,
                                                   (path / "answers.jsonl").read_text().splitlines())}
    queries = [q for q in queries if q["_id"] in answers and q["_id"] in qrels]
    return corpus, queries[:limit] if limit else queries, qrels, answers


def contains_gold(answer: str, golds: list[str]) -> bool:
    low = answer.lower()
    return any(g.strip() and g.strip().lower() in low for g in golds)


async def accuracy(name: str, limit: int, embedder: str) -> dict[str, Any]:
    corpus, queries, qrels, answers = load_qa(name, limit)
    by_id = {d["_id"]: d for d in corpus}
    gold_hits = sum(contains_gold(compose_answer(q["text"], [Passage("c1", by_id[qrels[q["_id"]]]["text"],
                                                                     0)]),
                                  answers[q["_id"]]) for q in queries)
    c = await start(embedder)
    try:
        kb_id, chunks = await seed(c, [(d.get("title", ""), [d["text"]]) for d in corpus])
        hits, retrieved, latencies = 0, 0, []
        gold_chunk = {ch.content: ch.id for ch in chunks}
        for q in queries:
            ctx = TurnContext(bus=EventBus(), references=ReferenceRegistry(True))
            t = time.perf_counter()
            out = await c.quick_answer.run(turn(c, q["text"], kb_id), ctx)  # type: ignore[attr-defined]
            latencies.append((time.perf_counter() - t) * 1000)
            hits += contains_gold(out.answer, answers[q["_id"]])
            retrieved += gold_chunk.get(by_id[qrels[q["_id"]]]["text"]) in {r.id for r in out.references}
        n = len(queries)
        return {"questions": n, "embedder": embedder, "answer_contains_gold": round(hits / n, 4),
                "gold_passage_in_references": round(retrieved / n, 4),
                "answer_contains_gold_given_gold_passage": round(gold_hits / n, 4),
                "turn_ms_p50": pct(latencies, 50)}
    finally:
        await c.aclose()
        shutil.rmtree(c.settings.data_dir, ignore_errors=True)  # a 100k run leaves ~0.6 GB otherwise


async def telemetry_overhead(size: int, turns: int, rng: random.Random,
                             control: bool = False) -> dict[str, Any]:
    """What metrics (and tracing that is off, the default) cost a turn: whole chat turns through the HTTP API
    (in-process ASGI: the metrics middleware, the chat service and its turn observer, the pipeline, the
    extractive answerer), on two services over the same synthetic chunks, one with ``metrics_enabled`` and
    one without, turns interleaved (on/off, then off/on) so that drift of the machine falls on both alike.
    Wall time per turn (request to the end of the stream) and process CPU per turn. ``control``: both arms
    without metrics (an A/A run: the ratios then show the noise floor of the comparison)."""
    import httpx

    from knora.api.app import create_app

    docs = synthetic_docs(size, rng)
    arms: dict[str, tuple[Services, str, httpx.AsyncClient]] = {}
    chunks: list[Chunk] = []
    for name, enabled in (("on", not control), ("off", False)):
        c = await build_services(Settings(data_dir=Path(tempfile.mkdtemp(prefix="knora-bench-")),
                                          embedder="local:hash", sample_kb=False, api_key="sk-bench",
                                          metrics_enabled=enabled, rate_limit_per_minute=0,
                                          rate_limit_heavy_per_minute=0))
        kb_id, chunks = await seed(c, docs)
        if hasattr(c.retrieval, "warm_keyword"):
            await c.retrieval.warm_keyword()
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(services=c)),
                                 base_url="http://127.0.0.1", headers={"X-API-Key": "sk-bench"}, timeout=120)
        arms[name] = (c, kb_id, http)
    wall: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for i in range(turns + 3):
            words = rng.choice(chunks).content.split()[:40]
            query = " ".join(rng.sample(words, 6))
            for name in ("on", "off") if i % 2 == 0 else ("off", "on"):
                c, kb_id, http = arms[name]
                sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
                t, p = time.perf_counter(), time.process_time()
                r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={
                    "query": query, "knowledge_base_ids": [kb_id], "disable_title": True})
                await c.chat_service.wait_idle()
                if i < 3:
                    continue  # warm-up
                if r.status_code != 200 or b'"complete"' not in r.content:
                    raise RuntimeError(f"turn failed: {r.text[:200]}")
                wall[name].append((time.perf_counter() - t) * 1000)
                cpu[name].append((time.process_time() - p) * 1000)
        if not control:  # the measured arm did record the turns
            scrape = await arms["on"][2].get("/metrics")
            assert b"knora_stage_duration_seconds" in scrape.content
    finally:
        for c, _kb, http in arms.values():
            await http.aclose()
            await c.aclose()
            shutil.rmtree(c.settings.data_dir, ignore_errors=True)

    def figures(name: str) -> dict[str, float]:
        return {"wall_ms_p50": pct(wall[name], 50), "wall_ms_p95": pct(wall[name], 95),
                "cpu_ms_p50": pct(cpu[name], 50), "cpu_ms_mean": round(sum(cpu[name]) / len(cpu[name]), 3)}

    on, off = figures("on"), figures("off")
    return {"chunks": size, "turns": len(wall["on"]), "control_run": control, "metrics_on": on,
            "metrics_off": off, "recording_us_per_turn": await recording_cost(),
            "ratio_wall_p50": round(on["wall_ms_p50"] / off["wall_ms_p50"], 3),
            "ratio_cpu_p50": round(on["cpu_ms_p50"] / off["cpu_ms_p50"], 3),
            "ratio_cpu_mean": round(on["cpu_ms_mean"] / off["cpu_ms_mean"], 3)}


async def recording_cost(rounds: int = 2000) -> float:
    """Microseconds of CPU that recording one turn costs with metrics on and tracing off, measured directly
    (the on/off turn ratios above are within the machine's noise): a turn's worth of what the observer and
    the HTTP middleware record — the request counted, the turn started and ended, 9 stage timings, 2 tool
    calls, 40 answer deltas — replayed ``rounds`` times on a real bus, with a real ``TurnObserver`` and
    ``PrometheusMetrics`` and without them; the difference per turn."""
    from knora.adapters.telemetry.prometheus import PrometheusMetrics
    from knora.ports.telemetry import Telemetry
    from knora.services.streaming.observe import TurnObserver

    telemetry = Telemetry(metrics=PrometheusMetrics())
    stages = ["query_understand", "chunk_search_parallel", "chunk_rerank", "wiki_boost", "chunk_merge",
              "filter_top_k", "data_analysis", "into_chat_message", "chat_completion_stream"]

    async def turn(recorded: bool) -> None:
        if recorded:
            telemetry.metrics.http_in_flight(1)
        bus = EventBus()
        observer = TurnObserver(telemetry, "quick", {"knora.tenant_id": 1, "knora.session_id": "s"}) \
            if recorded else None
        if observer is not None:
            observer.subscribe(bus)
        for stage in stages:
            await bus.emit(BusEvent.STAGE_TIMING, {"stage": stage, "ms": 1.5, "kept": 5})
        for call in ("t1", "t2"):
            await bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": call, "tool_name": "knowledge_search"})
            await bus.emit(BusEvent.TOOL_RESULT, {"tool_call_id": call, "tool_name": "knowledge_search",
                                                  "success": True, "duration_ms": 3})
        for _delta in range(40):
            await bus.emit(BusEvent.FINAL_ANSWER, {"content": "word ", "event_id": "a"})
        if observer is not None:
            observer.end("completed")
            telemetry.metrics.http_in_flight(-1)
            telemetry.metrics.http_request("POST", "/api/v1/knowledge-chat/{session_id}", 200, 0.03)

    spent = {True: 0.0, False: 0.0}
    for i in range(rounds):
        for recorded in (True, False) if i % 2 else (False, True):
            t = time.process_time()
            await turn(recorded)
            spent[recorded] += time.process_time() - t
    return round((spent[True] - spent[False]) / rounds * 1e6, 1)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--qa-sets", default="xquad-en,xquad-zh")
    ap.add_argument("--qa-limit", type=int, default=0)
    ap.add_argument("--qa-embedder", default="local:hash")
    ap.add_argument("--telemetry-size", type=int, default=10000,
                    help="chunks for the metrics-on/off turn comparison (0 = skip it)")
    ap.add_argument("--telemetry-turns", type=int, default=100)
    ap.add_argument("--citation-limit", type=int, default=0, help="questions per set (0 = all; -1 = skip)")
    ap.add_argument("--skip-accuracy", action="store_true", help="leave out the extractive accuracy")
    ap.add_argument("--telemetry-control", action="store_true",
                    help="both arms without metrics: the noise floor of the on/off ratios")
    args = ap.parse_args()
    rng = random.Random(7)
    out: dict[str, Any] = {"benchmark": "pipeline", "overhead": {}, "extractive_accuracy": {}}
    for size in [int(s) for s in args.sizes.split(",") if s]:
        out["overhead"][str(size)] = await overhead(size, args.turns, rng)
    if args.telemetry_size:
        out["telemetry_overhead"] = await telemetry_overhead(args.telemetry_size, args.telemetry_turns, rng,
                                                             args.telemetry_control)
    for name in [s for s in args.qa_sets.split(",") if s]:
        if not args.skip_accuracy:
            out["extractive_accuracy"][name] = await accuracy(name, args.qa_limit, args.qa_embedder)
        if args.citation_limit >= 0:
            corpus, queries, _qrels, _answers = load_qa(name, args.citation_limit)
            out.setdefault("citation_precision", {})[name] = await citation_precision(
                name, queries, corpus, args.qa_embedder, turn)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
