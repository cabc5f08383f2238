"""Evaluation runs in the background for the HTTP API (WeKnora's ``POST /evaluation`` and ``GET /evaluation
?task_id=``): a task per run, held in this process's memory and checked per tenant, as WeKnora's in-memory
storage does.

Datasets: WeKnora's ``dataset_id`` names a built-in sample; here it names a BEIR-layout folder directly under
the operator's ``evaluation_data_dir`` (closed when unset). The id is one path segment (letters, digits,
``.``, ``_``, ``-``), and the resolved folder must lie inside that directory, so a tenant can never make the
server read another path. A tenant's ``knowledge_base_id`` is, as in WeKnora, a template: the scratch KB
copies its embedding, chat and rerank models and its chunking; the corpus is always ingested anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum
from pathlib import Path

from knora.domain.errors import AppError, BadRequest, Conflict, NotFound
from knora.services.evaluation.dataset import Dataset, load_dataset
from knora.services.evaluation.options import EvalOptions
from knora.services.evaluation.report import EvalReport
from knora.services.evaluation.runner import EvaluationRunner

log = logging.getLogger(__name__)

_DATASET_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
KEEP_TASKS = 50  # finished tasks remembered per tenant


class TaskStatus(IntEnum):  # WeKnora's EvaluationStatue
    PENDING = 0
    RUNNING = 1
    SUCCESS = 2
    FAILED = 3


@dataclass
class EvaluationTask:
    id: str
    tenant_id: int
    dataset_id: str
    options: EvalOptions
    start_time: datetime = field(default_factory=lambda: datetime.now(UTC))
    status: TaskStatus = TaskStatus.PENDING
    err_msg: str = ""
    total: int = 0
    finished: int = 0
    report: EvalReport | None = None
    _done: dict[str, int] = field(default_factory=dict)

    def progress(self, stage: str, done: int, total: int) -> None:
        if stage != "indexing":
            self._done[stage] = done
            self.finished = sum(self._done.values())


class EvaluationTasks:
    def __init__(self, runner: EvaluationRunner, data_dir: Callable[[], Path | None]) -> None:
        self.runner = runner
        self._data_dir = data_dir
        self._tasks: dict[str, EvaluationTask] = {}
        self._running: dict[str, asyncio.Task[None]] = {}

    def dataset_path(self, dataset_id: str) -> Path:
        root = self._data_dir()
        if root is None:
            raise BadRequest("evaluation datasets are not enabled on this server "
                             "(the operator sets KNORA_EVALUATION_DATA_DIR)")
        if not _DATASET_ID.match(dataset_id) or ".." in dataset_id:
            raise BadRequest("dataset_id must be a folder name (letters, digits, '.', '_', '-')")
        base = root.resolve()
        path = (base / dataset_id).resolve()
        if not path.is_relative_to(base) or path == base or not path.is_dir():
            raise NotFound(f"dataset {dataset_id!r} not found")
        return path

    async def start(self, tenant_id: int, dataset_id: str, opts: EvalOptions, *,
                    template_kb_id: str = "") -> EvaluationTask:
        """Validates the dataset now (a defect is a 400 naming file and line), then runs in the background."""
        dataset_id = dataset_id or "default"
        path = self.dataset_path(dataset_id)
        if any(t.tenant_id == tenant_id and t.status <= TaskStatus.RUNNING for t in self._tasks.values()):
            raise Conflict("an evaluation of this tenant is already running")
        if template_kb_id:  # WeKnora: the scratch KB takes the named KB's models
            kb = await self.runner.d.kbs.get(tenant_id, template_kb_id)
            opts = opts.model_copy(update={
                "embedder": opts.embedder or kb.embedding_model_id,
                "chat_model": opts.chat_model or kb.summary_model_id,
                "rerank_model": opts.rerank_model or kb.rerank_model_id})
        ds = (await asyncio.to_thread(load_dataset, path)).limited(opts.limit)
        await self.runner.check(tenant_id, ds, opts)
        task = EvaluationTask(id=f"evaluation-{uuid.uuid4()}", tenant_id=tenant_id, dataset_id=dataset_id,
                              options=opts)
        task.total = len(ds.queries) + (sum(q.id in ds.answers for q in ds.queries) if opts.answers else 0)
        self._forget_old(tenant_id)
        self._tasks[task.id] = task
        self._running[task.id] = asyncio.create_task(self._run(task, ds), name=f"knora-{task.id}")
        return task

    async def _run(self, task: EvaluationTask, ds: Dataset) -> None:
        task.status = TaskStatus.RUNNING
        try:
            report = await self.runner.run(task.tenant_id, ds, task.options, task.progress)
            task.report = report.model_copy(update={"per_query": []})  # the API answers the summary only
            task.status = TaskStatus.SUCCESS
        except asyncio.CancelledError:
            task.status, task.err_msg = TaskStatus.FAILED, "cancelled (server shutting down)"
            raise
        except AppError as exc:
            task.status, task.err_msg = TaskStatus.FAILED, exc.message
        except Exception as exc:  # noqa: BLE001 - the task records the failure; the server goes on
            log.exception("evaluation %s failed", task.id)
            task.status, task.err_msg = TaskStatus.FAILED, f"{type(exc).__name__}: {exc}"
        finally:
            self._running.pop(task.id, None)

    def get(self, tenant_id: int, task_id: str) -> EvaluationTask:
        task = self._tasks.get(task_id)
        if task is None or task.tenant_id != tenant_id:  # another tenant's task is reported as missing
            raise NotFound("evaluation task not found")
        return task

    def _forget_old(self, tenant_id: int) -> None:
        done = sorted((t for t in self._tasks.values()
                       if t.tenant_id == tenant_id and t.status >= TaskStatus.SUCCESS),
                      key=lambda t: t.start_time)
        for t in done[:max(0, len(done) - KEEP_TASKS + 1)]:
            self._tasks.pop(t.id, None)

    async def aclose(self) -> None:
        for running in list(self._running.values()):
            running.cancel()
        for running in list(self._running.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await running
