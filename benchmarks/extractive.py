"""The extractive answerer (no chat model) before and after a change, side by side in one run. Prints JSON.

For each set (``../shared/data/xquad-en``, ``xquad-zh``): every question goes through a real quick-answer turn
(real container, retrieval with ``--embedder``); the passages the pipeline hands the answerer are recorded and
the baseline answerer (``knora/adapters/llm/extractive.py`` at ``--baseline`` plus the modules it imports from
that commit) answers the same question from the same passages, so only the answerer differs. Also both on the
gold passage alone (answering without retrieval).

Figures per answerer: contains-gold as ``knora eval`` computes it (SQuAD normalisation, token-aligned:
``metrics.contains_gold``), the plain lower-case substring test ``benchmarks/pipeline.py`` uses, the share of
"the documents do not answer" replies, mean answer length (characters) and mean time to compose an answer.

    python benchmarks/extractive.py [--baseline a3a5614] [--sets xquad-en,xquad-zh] [--limit 0]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import shutil
import subprocess
import sys
import time
import types
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pipeline import _Models, load_qa, seed, start, turn

from knora.adapters.llm import extractive
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse
from knora.ports.turn import TurnContext
from knora.services.citations.registry import ReferenceRegistry
from knora.services.evaluation.metrics import contains_gold
from knora.services.pipeline.runner import QuickAnswerRunner
from knora.services.streaming.bus import EventBus

Compose = Callable[[str, Sequence[Any]], str]


def baseline_module(ref: str) -> types.ModuleType:
    """``knora.adapters.llm.extractive`` as it was at ``ref``, loaded under another name."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:knora/adapters/llm/extractive.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(f"extractive_at_{ref}", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, f"extractive.py@{ref}", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


class Recorder:
    """The extractive answerer, recording what each call was given."""

    generative = False
    supports_tools = False
    model_id = extractive.EXTRACTIVE_MODEL_ID

    def __init__(self) -> None:
        self.inner = extractive.ExtractiveAnswerer()
        self.calls: list[tuple[str, list[dict[str, str]]]] = []

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        return await self.inner.chat(messages, options)

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        extra = (options or ChatOptions()).extra
        if extra.get("purpose") != "session_title" and extra.get("passages") is not None:
            self.calls.append((str(extra.get("query") or ""), list(extra["passages"])))
        async for chunk in self.inner.stream(messages, options):
            yield chunk


@dataclass
class Tally:
    n: int = 0
    gold: int = 0
    substring: int = 0
    no_answer: int = 0
    chars: int = 0
    ms: list[float] = field(default_factory=list)

    def add(self, answer: str, golds: list[str], ms: float, no_answer_texts: tuple[str, ...]) -> None:
        self.n += 1
        self.gold += contains_gold(answer, golds)
        low = answer.lower()
        self.substring += any(g.strip() and g.strip().lower() in low for g in golds)
        self.no_answer += any(answer.startswith(t) for t in no_answer_texts)
        self.chars += len(answer)
        self.ms.append(ms)

    def report(self) -> dict[str, float]:
        n = self.n or 1
        return {"contains_gold": round(self.gold / n, 4),
                "contains_gold_substring": round(self.substring / n, 4),
                "no_answer": round(self.no_answer / n, 4), "mean_chars": round(self.chars / n, 1),
                "compose_ms_mean": round(sum(self.ms) / n, 3)}


def timed(compose: Compose, query: str, passages: Sequence[Any]) -> tuple[str, float]:
    t = time.perf_counter()
    answer = compose(query, passages)
    return answer, (time.perf_counter() - t) * 1000


def _no_answer_texts(module: types.ModuleType) -> tuple[str, ...]:
    names = ("NOTHING_EN", "NOTHING_ZH", "NO_ANSWER_EN", "NO_ANSWER_ZH")
    return tuple(str(getattr(module, n)) for n in names if hasattr(module, n))


async def run_set(name: str, limit: int, embedder: str, old: types.ModuleType) -> dict[str, Any]:
    corpus, queries, qrels, answers = load_qa(name, limit)
    by_id = {d["_id"]: d for d in corpus}
    new_texts, old_texts = _no_answer_texts(extractive), _no_answer_texts(old)
    tallies = {k: Tally() for k in ("before", "after", "before_gold_passage", "after_gold_passage")}
    for q in queries:
        gold_text = by_id[qrels[q["_id"]]]["text"]
        golds = answers[q["_id"]]
        a, ms = timed(extractive.compose_answer, q["text"], [extractive.Passage("c1", gold_text, 0)])
        tallies["after_gold_passage"].add(a, golds, ms, new_texts)
        a, ms = timed(old.compose_answer, q["text"], [old.Passage("c1", gold_text, 0)])
        tallies["before_gold_passage"].add(a, golds, ms, old_texts)
    c = await start(embedder)
    try:
        kb_id, _ = await seed(c, [(d.get("title", ""), [d["text"]]) for d in corpus])
        recorder = Recorder()
        deps = QuickAnswerRunner(c.pipeline_deps).deps  # type: ignore[attr-defined]
        runner = QuickAnswerRunner(type(deps)(**{**deps.__dict__, "chat_models": _Models(recorder)}))
        for q in queries:
            golds = answers[q["_id"]]
            recorder.calls.clear()
            ctx = TurnContext(bus=EventBus(), references=ReferenceRegistry(True))
            out = await runner.run(turn(c, q["text"], kb_id), ctx)
            if not recorder.calls:  # nothing retrieved: the pipeline's fallback text, for both
                for key, texts in (("after", new_texts), ("before", old_texts)):
                    tallies[key].add(out.answer, golds, 0.0, texts)
                continue
            query, raw = recorder.calls[-1]
            new_passages = [extractive.Passage(p["handle"], p["content"], i) for i, p in enumerate(raw)]
            old_passages = [old.Passage(p["handle"], p["content"], i) for i, p in enumerate(raw)]
            a, ms = timed(extractive.compose_answer, query, new_passages)
            tallies["after"].add(a, golds, ms, new_texts)
            a, ms = timed(old.compose_answer, query, old_passages)
            tallies["before"].add(a, golds, ms, old_texts)
    finally:
        await c.aclose()
        shutil.rmtree(c.settings.data_dir, ignore_errors=True)
    return {"questions": len(queries), "embedder": embedder, **{k: t.report() for k, t in tallies.items()}}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="a3a5614", help="git ref of the answerer to compare against")
    ap.add_argument("--sets", default="xquad-en,xquad-zh")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--embedder", default="local:hash")
    args = ap.parse_args()
    old = baseline_module(args.baseline)
    out: dict[str, Any] = {"benchmark": "extractive", "baseline": args.baseline, "sets": {}}
    for name in [s for s in args.sets.split(",") if s]:
        out["sets"][name] = await run_set(name, args.limit, args.embedder, old)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
