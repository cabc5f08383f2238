"""``knora eval DATASET``: retrieval and answer metrics of a BEIR-layout folder, through the real search and
quick-answer services, with a progress bar, a summary table and JSON + Markdown reports (docs/evaluation.md).

The corpus goes into a scratch knowledge base (deleted at the end unless ``--keep``), one chunk per passage
by default (``--indexing chunked`` uses the KB's chunker), or ``--kb`` names an existing one whose documents
map to corpus ids by metadata ``corpus_id``, title or file name. Exit codes: 0 done, 2 bad input (a defect of
the set names its file and line), 1 a failure while running.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from knora.cli._common import fail, find_kb, print_json, running_services
from knora.domain.errors import AppError
from knora.services.retrieval.fusion import DEFAULT_FUSION, FUSIONS


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("eval", help="retrieval and answer metrics of a BEIR-layout dataset folder")
    p.add_argument("dataset", metavar="DATASET", help="folder with corpus.jsonl, queries.jsonl, qrels.tsv "
                                                       "[, answers.jsonl]")
    p.add_argument("--kb", help="search this existing knowledge base instead of ingesting the corpus")
    p.add_argument("--keep", action="store_true", help="keep the scratch knowledge base")
    p.add_argument("--embedder", default="", help="embedding model of the scratch KB (e.g. local:hash)")
    p.add_argument("--indexing", choices=["passage", "chunked"], default="passage",
                   help="one chunk per passage (default), or the knowledge base's chunker")
    p.add_argument("--chunk-size", type=int, default=0, help="chunk size for --indexing chunked")
    p.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default="hybrid")
    p.add_argument("--fusion", choices=sorted(FUSIONS), default="", help="fusion mode (default: Knora's)")
    p.add_argument("--match-count", type=int, default=100, help="results per query scored (1..500)")
    p.add_argument("--vector-threshold", type=float, default=0.0)
    p.add_argument("--keyword-threshold", type=float, default=0.0)
    p.add_argument("--rerank-model", default="", help="rerank the retrieved list with this model")
    p.add_argument("--top-k", type=int, default=10, help="chunks an answer turn retrieves")
    p.add_argument("--chat-model", default="", help="answering and judging model (default: configured)")
    p.add_argument("--limit", type=int, default=0, help="evaluate only the first N judged queries")
    p.add_argument("--no-answers", action="store_true", help="retrieval metrics only")
    p.add_argument("--no-judge", action="store_true", help="no judged faithfulness")
    p.add_argument("--out", type=Path, default=None, help="report folder (default: <data dir>/eval)")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    p.set_defaults(handler=_eval)


async def _eval(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from knora.ports.chat import ModelError
    from knora.services.evaluation.options import EvalOptions

    try:
        opts = EvalOptions(keep=args.keep, embedder=args.embedder, indexing=args.indexing,
                           chunk_size=args.chunk_size, mode=args.mode, fusion=args.fusion,
                           match_count=args.match_count, vector_threshold=args.vector_threshold,
                           keyword_threshold=args.keyword_threshold, rerank_model=args.rerank_model,
                           top_k=args.top_k, chat_model=args.chat_model, limit=args.limit,
                           answers=not args.no_answers, judge=not args.no_judge)
    except ValidationError as exc:
        return fail("; ".join(f"--{'-'.join(str(x) for x in e['loc']).replace('_', '-')}: {e['msg']}"
                              for e in exc.errors()), 2)
    console = Console(stderr=True)
    async with running_services() as c:
        if args.kb:
            kb = await find_kb(c, args.kb)
            if kb is None:
                return fail(f"knowledge base {args.kb!r} not found", 2)
            opts = opts.model_copy(update={"knowledge_base_id": kb.id})
        bar = _Bar(console, disabled=args.json)
        try:
            with bar.progress:
                report = await c.evaluation.evaluate(c.default_tenant_id, Path(args.dataset), opts,
                                                     bar.update)
        except AppError as exc:
            return fail(exc.message, 2 if exc.status < 500 else 1)
        except ModelError as exc:  # a model failing midway (the models named are checked before)
            return fail(f"model error: {exc}", 1)
        json_path, md_path = report.write(args.out or c.settings.data_dir / "eval")
    if args.json:
        print_json(report.model_dump(mode="json"))
        return 0
    out = Console()
    out.print(f"[bold]{report.dataset}[/bold]: {report.queries} queries, {report.passages} passages; "
              f"{report.embedder}, {opts.mode}/{opts.fusion or DEFAULT_FUSION} fusion, "
              f"{opts.indexing} indexing, {report.seconds:.1f} s")
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in report.summary_rows():
        table.add_row(name, value)
    out.print(table)
    out.print(f"reports: {json_path}\n         {md_path}")
    return 0


class _Bar:
    """One bar per stage (indexing, searching, answering), in the style of ``knora ingest``."""

    def __init__(self, console: Console, *, disabled: bool) -> None:
        self.progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, disable=disabled)
        self.tasks: dict[str, TaskID] = {}

    def update(self, stage: str, done: int, total: int) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=total)
        self.progress.update(self.tasks[stage], completed=done, total=total)
