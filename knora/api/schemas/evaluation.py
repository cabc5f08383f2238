"""``/evaluation`` bodies and answers: WeKnora's field names (``EvaluationRequest``, ``EvaluationDetail``)
plus Knora's options (the knobs of ``knora eval``) and its full report."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class EvaluationRequest(BaseModel):
    dataset_id: str = ""  # a folder under the operator's evaluation_data_dir ('' = "default", as WeKnora)
    knowledge_base_id: str = ""  # a template: the scratch KB takes its models (WeKnora)
    chat_id: str = ""  # chat model id (answers and judge)
    rerank_id: str = ""  # rerank model id
    # Knora extensions
    embedding_id: str = ""
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    fusion: str = ""
    match_count: int = 100
    vector_threshold: float = 0.0
    keyword_threshold: float = 0.0
    top_k: int = 10
    limit: int = 0
    answers: bool = True
    judge: bool = True


class EvaluationTaskOut(BaseModel):
    id: str
    tenant_id: int
    dataset_id: str
    start_time: str
    status: int  # 0 pending, 1 running, 2 success, 3 failed
    err_msg: str | None = None
    total: int | None = None
    finished: int | None = None


class RetrievalMetricsOut(BaseModel):
    precision: float  # precision@10
    recall: float  # recall@10
    ndcg3: float
    ndcg10: float
    mrr: float  # MRR@10
    map: float  # AP@100


class GenerationMetricsOut(BaseModel):
    bleu1: float = 0.0
    bleu2: float = 0.0
    bleu4: float = 0.0
    rouge1: float = 0.0
    rouge2: float = 0.0
    rougel: float = 0.0


class MetricOut(BaseModel):
    retrieval_metrics: RetrievalMetricsOut
    generation_metrics: GenerationMetricsOut


class EvaluationDetailOut(BaseModel):
    task: EvaluationTaskOut
    params: dict[str, Any] = Field(default_factory=dict)
    metric: MetricOut | None = None  # once the task succeeded
    report: dict[str, Any] | None = None  # Knora: the full report (docs/evaluation.md) without per-query rows
