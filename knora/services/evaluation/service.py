"""The evaluation service: one runner for ``knora eval`` (a folder path, in the foreground) and the HTTP
API's background tasks (a dataset id under the operator's folder)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from knora.services.evaluation.dataset import load_dataset
from knora.services.evaluation.options import EvalOptions
from knora.services.evaluation.report import EvalReport
from knora.services.evaluation.runner import EvaluationDeps, EvaluationRunner, Progress
from knora.services.evaluation.tasks import EvaluationTasks


class EvaluationService:
    def __init__(self, deps: EvaluationDeps, data_dir: Callable[[], Path | None]) -> None:
        self.runner = EvaluationRunner(deps)
        self.tasks = EvaluationTasks(self.runner, data_dir)

    async def evaluate(self, tenant_id: int, path: Path, opts: EvalOptions,
                       progress: Progress | None = None) -> EvalReport:
        """Loads and checks the set at ``path`` (``DatasetError`` names file and line), then runs it."""
        ds = await asyncio.to_thread(load_dataset, path)
        report = await (self.runner.run(tenant_id, ds, opts, progress) if progress is not None
                        else self.runner.run(tenant_id, ds, opts))
        report.path = str(path)
        return report

    async def aclose(self) -> None:
        await self.tasks.aclose()
