"""``knora ingest --kb NAME PATH…``: files, folders (recursively) and URLs, with a progress bar or ``--json``.

Documents are accepted through the same ingestion service as the HTTP API, then the command waits until every
one of them is completed or failed (a server on the same data dir may process some of them; that is fine).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from knora.cli._common import fail, find_kb, print_json, running_services
from knora.domain.errors import AppError
from knora.domain.files import file_type
from knora.domain.knowledge import ParseStatus
from knora.root import Services
from knora.services.ingest.service import DuplicateKnowledge

_TERMINAL = (ParseStatus.COMPLETED, ParseStatus.FAILED)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("ingest", help="add files, folders or URLs to a knowledge base")
    p.add_argument("paths", nargs="+", metavar="PATH", help="file, folder (recursive) or http(s) URL")
    p.add_argument("--kb", required=True, help="knowledge base name or id (created when missing)")
    p.add_argument("--json", action="store_true", help="print one JSON summary instead of a progress bar")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for processing")
    p.set_defaults(handler=_ingest)


def collect(paths: list[str], extensions: frozenset[str]) -> tuple[list[Path | str], list[dict[str, Any]]]:
    """(sources to ingest, skipped entries with a reason). Hidden files and unsupported types are skipped."""
    sources: list[Path | str] = []
    skipped: list[dict[str, Any]] = []
    for raw in paths:
        if raw.startswith(("http://", "https://")):
            sources.append(raw)
            continue
        p = Path(raw)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                rel = f.relative_to(p)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                if file_type(f.name) in extensions:
                    sources.append(f)
                else:
                    skipped.append({"source": str(f), "status": "skipped", "error": "unsupported file type"})
        elif p.is_file():
            sources.append(p)
        else:
            skipped.append({"source": raw, "status": "skipped", "error": "no such file or folder"})
    return sources, skipped


async def _ingest(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    async with running_services() as c:
        tenant = c.default_tenant_id
        kb = await find_kb(c, args.kb)
        created = False
        if kb is None:
            try:
                kb = await c.kb_service.create(tenant, {"name": args.kb})
            except AppError as exc:
                return fail(exc.message)
            created = True
        sources, results = collect(args.paths, frozenset(c.parsers.extensions))
        pending: dict[str, dict[str, Any]] = {}
        for src in sources:
            entry: dict[str, Any] = {"source": str(src)}
            try:
                if isinstance(src, str):
                    k = await c.ingest_service.add_url(tenant, kb.id, src)
                else:
                    data = await asyncio.to_thread(src.read_bytes)
                    k = await c.ingest_service.add_file(tenant, kb.id, src.name, data, channel="api")
                entry.update({"knowledge_id": k.id, "status": "pending"})
                pending[k.id] = entry
            except DuplicateKnowledge as exc:
                entry.update({"knowledge_id": exc.existing.id, "status": "duplicate"})
            except (AppError, OSError) as exc:
                entry.update({"status": "failed", "error": getattr(exc, "message", str(exc))})
            results.append(entry)
        await _wait(c, pending, args, console)
        summary = {"knowledge_base": {"id": kb.id, "name": kb.name, "created": created},
                   "completed": sum(r["status"] == "completed" for r in results),
                   "failed": sum(r["status"] == "failed" for r in results),
                   "duplicate": sum(r["status"] == "duplicate" for r in results),
                   "skipped": sum(r["status"] == "skipped" for r in results),
                   "chunks": sum(int(r.get("chunks", 0)) for r in results), "items": results}
    if args.json:
        print_json(summary)
    else:
        out = Console()
        for r in results:
            if r["status"] in ("failed", "skipped"):
                out.print(f"[red]{r['status']}[/red] {r['source']}: {r.get('error', '')}")
        out.print(f"{kb.name}: {summary['completed']} completed, {summary['failed']} failed, "
                  f"{summary['duplicate']} duplicate, {summary['skipped']} skipped, "
                  f"{summary['chunks']} chunks")
    return 0 if summary["failed"] == 0 else 1


async def _wait(c: Services, pending: dict[str, dict[str, Any]], args: argparse.Namespace,
                console: Console) -> None:
    if not pending:
        return
    progress = Progress(TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, disable=args.json, transient=True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout
    with progress:
        task = progress.add_task("ingest", total=len(pending))
        open_ids = set(pending)
        while open_ids and loop.time() < deadline:
            for kid in list(open_ids):
                k = await c.repos.knowledge.get(None, kid)
                if k is None:
                    pending[kid].update({"status": "failed", "error": "deleted while processing"})
                elif k.parse_status in _TERMINAL:
                    pending[kid]["status"] = str(k.parse_status)
                    pending[kid]["title"] = k.title
                    if k.parse_status == ParseStatus.FAILED:
                        pending[kid]["error"] = k.error_message
                    else:
                        page = await c.repos.chunks.list(k.tenant_id, kid, page=1, page_size=1)
                        pending[kid]["chunks"] = page.total
                else:
                    continue
                open_ids.discard(kid)
                progress.advance(task)
            if open_ids:
                await asyncio.sleep(0.2)
        for kid in open_ids:
            pending[kid].update({"status": "failed", "error": f"not processed within {args.timeout:.0f}s"})
