"""WeKnora's evaluation routes: ``POST /evaluation`` starts a background run and answers its task,
``GET /evaluation?task_id=`` answers the task with its metrics once done (``EvaluationDetail``: ``task``,
``params``, ``metric``; Knora adds ``report``). Datasets are folders under the operator's
``evaluation_data_dir`` (closed by default); another tenant's task is a 404 (docs/evaluation.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from knora.api.body import read_body, request_body
from knora.api.deps import EvaluationDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.evaluation import (
    EvaluationDetailOut,
    EvaluationRequest,
    EvaluationTaskOut,
    GenerationMetricsOut,
    MetricOut,
    RetrievalMetricsOut,
)
from knora.domain.errors import ValidationFailed
from knora.services.evaluation.options import EvalOptions
from knora.services.evaluation.tasks import EvaluationTask, TaskStatus

router = APIRouter(tags=["evaluation"])


def _options(body: EvaluationRequest) -> EvalOptions:
    try:
        return EvalOptions(embedder=body.embedding_id, chat_model=body.chat_id, rerank_model=body.rerank_id,
                           mode=body.mode, fusion=body.fusion, match_count=body.match_count,
                           vector_threshold=body.vector_threshold, keyword_threshold=body.keyword_threshold,
                           top_k=body.top_k, limit=body.limit, answers=body.answers, judge=body.judge)
    except ValidationError as exc:
        raise ValidationFailed("; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}"
                                         for e in exc.errors())) from None


def detail(task: EvaluationTask) -> dict[str, Any]:
    o = task.options
    out = EvaluationDetailOut(
        task=EvaluationTaskOut(
            id=task.id, tenant_id=task.tenant_id, dataset_id=task.dataset_id,
            start_time=task.start_time.isoformat(timespec="seconds").replace("+00:00", "Z"),
            status=int(task.status), err_msg=task.err_msg or None, total=task.total or None,
            finished=task.finished or None),
        params={"embedding_model_id": o.embedder, "chat_model_id": o.chat_model,
                "rerank_model_id": o.rerank_model,
                "vector_threshold": o.vector_threshold, "keyword_threshold": o.keyword_threshold,
                "embedding_top_k": o.top_k, "match_count": o.match_count, "mode": o.mode,
                "fusion": o.fusion, "indexing": o.indexing})
    report = task.report
    if task.status == TaskStatus.SUCCESS and report is not None:
        r = report.retrieval
        gen = report.answers.generation if report.answers is not None else {}
        out.metric = MetricOut(
            retrieval_metrics=RetrievalMetricsOut(precision=r["precision@10"], recall=r["recall@10"],
                                                  ndcg3=r["ndcg@3"], ndcg10=r["ndcg@10"], mrr=r["mrr@10"],
                                                  map=r["map@100"]),
            generation_metrics=GenerationMetricsOut(**gen))
        out.report = report.model_dump(mode="json", exclude={"per_query"})
    return out.model_dump(mode="json", exclude_none=True)


@router.post("/evaluation", response_model=Envelope[EvaluationDetailOut],
             openapi_extra=request_body(EvaluationRequest))
async def start_evaluation(request: Request, tenant_id: TenantDep, evaluation: EvaluationDep) -> JSONResponse:
    body = await read_body(request, EvaluationRequest)
    task = await evaluation.tasks.start(tenant_id, body.dataset_id.strip(), _options(body),
                                        template_kb_id=body.knowledge_base_id.strip())
    return ok(detail(task))


@router.get("/evaluation", response_model=Envelope[EvaluationDetailOut])
async def get_evaluation(tenant_id: TenantDep, evaluation: EvaluationDep,
                         task_id: str = Query(..., min_length=1, max_length=200)) -> JSONResponse:
    return ok(detail(evaluation.tasks.get(tenant_id, task_id)))
