"""The result of one evaluation run: a typed record, written as JSON and as Markdown."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from knora.services.evaluation.options import EvalOptions
from knora.services.retrieval.fusion import DEFAULT_FUSION


class QueryResult(BaseModel):
    query_id: str
    query: str
    ranked: list[str] = Field(default_factory=list)  # the first 10 corpus ids retrieved (after rerank)
    first_relevant_rank: int | None = None  # 1-based, among all retrieved; None = not retrieved
    retrieval: dict[str, float] = Field(default_factory=dict)
    reranked: dict[str, float] | None = None
    answer: str | None = None
    contains_gold: bool | None = None
    token_f1: float | None = None
    faithfulness: float | None = None
    generation: dict[str, float] | None = None  # BLEU-1/2/4, ROUGE-1/2/L against the gold answers
    error: str | None = None


class AnswerSummary(BaseModel):
    questions: int = 0
    answered: int = 0  # turns that produced an answer (errors excluded)
    contains_gold: float = 0.0
    token_f1: float = 0.0
    faithfulness: float | None = None  # mean over judged answers; None without a generative chat model
    judged: int = 0
    errors: int = 0
    generation: dict[str, float] = Field(default_factory=dict)  # means of QueryResult.generation
    answer_model: str = ""
    judge_model: str = ""


class EvalReport(BaseModel):
    dataset: str
    path: str = ""
    started_at: str
    seconds: float = 0.0
    options: EvalOptions
    knowledge_base_id: str
    knowledge_base_kept: bool
    embedder: str
    passages: int
    queries: int  # queries evaluated
    unjudged_queries: int = 0  # queries in the set without a positive qrel (not evaluated)
    mapped_documents: int = 0
    unmapped_documents: int = 0  # documents of an existing KB that map to no corpus id
    retrieval: dict[str, float]
    reranked: dict[str, float] | None = None
    answers: AnswerSummary | None = None
    per_query: list[QueryResult] = Field(default_factory=list)

    def summary_rows(self) -> list[tuple[str, str]]:
        """(metric, value) rows for the terminal and the Markdown summary."""
        rows = [(k, f"{v:.4f}") for k, v in self.retrieval.items()]
        if self.reranked is not None:
            rows += [(f"reranked {k}", f"{v:.4f}") for k, v in self.reranked.items()]
        a = self.answers
        if a is not None:
            rows += [("answers", f"{a.answered}/{a.questions}"), ("contains-gold", f"{a.contains_gold:.4f}"),
                     ("token F1", f"{a.token_f1:.4f}")]
            rows.append(("faithfulness", f"{a.faithfulness:.4f} ({a.judged} judged)" if a.faithfulness
                         is not None else "not judged (no generative chat model)"))
        return rows

    def _kb_kind(self) -> str:
        if self.options.knowledge_base_id:
            return "existing"
        return "scratch, kept" if self.knowledge_base_kept else "scratch, deleted"

    def markdown(self) -> str:
        o = self.options
        lines = [f"# Evaluation: {self.dataset}", "",
                 f"{self.queries} queries over {self.passages} passages, {self.started_at}, "
                 f"{self.seconds:.1f} s.", "", "| setting | value |", "|---|---|",
                 f"| knowledge base | {self.knowledge_base_id} ({self._kb_kind()}) |",
                 f"| embedder | {self.embedder} |", f"| indexing | {o.indexing} |",
                 f"| mode / fusion | {o.mode} / {o.fusion or f'{DEFAULT_FUSION} (default)'} |",
                 f"| match count | {o.match_count} |",
                 f"| thresholds (vector / keyword) | {o.vector_threshold} / {o.keyword_threshold} |",
                 f"| rerank model | {o.rerank_model or 'none'} |", f"| answer top-k | {o.top_k} |"]
        if self.unmapped_documents:
            lines.append(f"| unmapped documents | {self.unmapped_documents} |")
        lines += ["", "## Summary", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in self.summary_rows()]
        misses = [q for q in self.per_query if q.retrieval.get("mrr@10", 0.0) == 0.0][:50]
        if misses:
            lines += ["", f"## Queries with no relevant passage in the top 10 (first {len(misses)})", "",
                      "| query id | query | first relevant rank |", "|---|---|---|"]
            lines += [f"| {q.query_id} | {q.query.replace('|', '/')[:120]} | "
                      f"{q.first_relevant_rank or 'not retrieved'} |" for q in misses]
        return "\n".join(lines) + "\n"

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        """``<out_dir>/<dataset>-<time>[-n].json`` and ``.md``; returns both paths."""
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{self.dataset}-{self.started_at.replace(':', '').replace('-', '')[:15]}"
        json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
        n = 1
        while json_path.exists() or md_path.exists():  # two runs in one second keep both reports
            n += 1
            json_path, md_path = out_dir / f"{stem}-{n}.json", out_dir / f"{stem}-{n}.md"
        json_path.write_text(self.model_dump_json(indent=2), encoding="utf-8")
        md_path.write_text(self.markdown(), encoding="utf-8")
        return json_path, md_path
