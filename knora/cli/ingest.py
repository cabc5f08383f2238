"""``knora ingest --kb NAME PATH…``: files, folders (recursively) and URLs, with progress or ``--json``.

The paths are walked first and what will not be taken (unsupported types, missing paths) is listed before
anything is sent; the rest goes to the running server's API when one is up (``knora.cli.client``), else to the
ingestion service in this process (``knora.cli.ingest_backends``). The command follows every document until
it is completed, failed or cancelled, one line each (``knora.cli.ingest_progress``), and ends with a summary.
Exit code 1 only when a document that was sent failed (or the server went away); refusals do not count.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knora.cli._common import add_mode_flag, choose_mode, fail, print_json
from knora.cli.ingest_backends import TERMINAL, Abort, IngestBackend
from knora.domain.files import SNIFF_BYTES, content_type

if TYPE_CHECKING:
    from knora.cli.ingest_progress import IngestProgress

POLL_S = 0.5


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("ingest", help="add files, folders or URLs to a knowledge base")
    p.add_argument("paths", nargs="+", metavar="PATH", help="file, folder (recursive) or http(s) URL")
    p.add_argument("--kb", required=True, help="knowledge base name or id (created when missing)")
    p.add_argument("--json", action="store_true", help="print one JSON summary instead of progress lines")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for processing")
    add_mode_flag(p)
    p.set_defaults(handler=_ingest)


def collect(paths: list[str], extensions: frozenset[str]) -> tuple[list[Path | str], list[dict[str, Any]]]:
    """(sources to ingest, skipped entries with a reason). Unsupported types are skipped (a file named on its
    own too: a refusal is listed before anything is sent), and so are hidden files inside folders."""
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
                _take(f, extensions, sources, skipped)
        elif p.is_file():  # named on its own, hidden or not
            _take(p, extensions, sources, skipped)
        else:
            skipped.append({"source": raw, "status": "skipped", "error": "no such file or folder"})
    return sources, skipped


def _take(f: Path, extensions: frozenset[str], sources: list[Path | str],
          skipped: list[dict[str, Any]]) -> None:
    """A file the server would parse: by its name, or (no extension, or one with no parser) by its first
    bytes being text, as the server decides (``knora.domain.files.content_type``)."""
    try:
        with f.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError as exc:
        skipped.append({"source": str(f), "status": "skipped", "error": f"cannot be read: {exc.strerror}"})
        return
    if content_type(f.name, head, extensions) in extensions:
        sources.append(f)
    else:
        skipped.append({"source": str(f), "status": "skipped", "error": "unsupported file type"})


async def _ingest(args: argparse.Namespace) -> int:
    server = choose_mode(args)
    if server is not None:
        from knora.cli.client import ApiClient
        from knora.cli.ingest_backends import RemoteBackend

        async with ApiClient(server) as api:
            return await ingest_with(RemoteBackend(api), args)
    from knora.cli._common import running_services
    from knora.cli.ingest_backends import LocalBackend

    async with running_services() as c:
        return await ingest_with(LocalBackend(c), args)


def _size(source: Path | str) -> int:
    if isinstance(source, str):
        return 1
    try:
        return source.stat().st_size
    except OSError:
        return 0


def _name(source: Path | str) -> str:
    return source if isinstance(source, str) else source.name


async def ingest_with(backend: IngestBackend, args: argparse.Namespace) -> int:
    from knora.cli.ingest_progress import IngestProgress  # rich: loaded by the command that uses it

    started = time.monotonic()
    try:
        sources, skipped = collect(args.paths, await backend.extensions())
        if not sources:  # no knowledge base is created for nothing (a typo in a path or a name)
            IngestProgress(sys.stderr, files=0, total_bytes=0, quiet=args.json).refused(skipped)
            if args.json:
                print_json({"knowledge_base": None, "completed": 0, "failed": 0, "cancelled": 0,
                            "duplicate": 0, "skipped": len(skipped), "chunks": 0, "items": skipped})
            else:
                print("nothing to ingest")
            return 0
        kb_id, kb_name, created = await backend.knowledge_base(args.kb)
    except Abort as exc:
        return fail(exc.message)
    sizes = [_size(s) for s in sources]
    progress = IngestProgress(sys.stderr, files=len(sources), total_bytes=sum(sizes), quiet=args.json)
    backend.on_wait(progress.waiting)
    progress.refused(skipped)
    progress.begin(kb_name, created)
    entries = [{"source": str(s), "bytes": n} for s, n in zip(sources, sizes, strict=True)]
    aborted = ""
    try:
        await _follow(backend, kb_id, sources, entries, progress, args.timeout)
    except Abort as exc:
        aborted = exc.message
    except asyncio.CancelledError:  # Ctrl-C
        progress.close()
        unfinished = sum(e.get("status") == "pending" for e in entries)
        if unfinished:
            fail(f"interrupted; {backend.unfinished(unfinished)}")
        raise
    finally:
        progress.close()
    for e in entries:
        if e.get("status", "pending") not in (*TERMINAL, "duplicate"):
            e.update({"status": "failed", "error": aborted or f"not processed within {args.timeout:.0f}s"})
    results = [*skipped, *entries]
    count = {s: sum(r["status"] == s for r in results)
             for s in ("completed", "failed", "cancelled", "duplicate", "skipped")}
    summary = {"knowledge_base": {"id": kb_id, "name": kb_name, "created": created}, **count,
               "chunks": sum(int(r.get("chunks", 0)) for r in results),
               "seconds": round(time.monotonic() - started, 2), "items": results}
    if args.json:
        print_json(summary)
    else:
        for r in entries:
            if r["status"] in ("failed", "cancelled"):
                print(f"{r['status']}: {r['source']}: {r.get('error', '')}")
        print(f"{kb_name}: {count['completed']} completed, {count['failed']} failed, "
              f"{count['cancelled']} cancelled, {count['duplicate']} duplicate, {count['skipped']} skipped, "
              f"{summary['chunks']} chunks in {summary['seconds']:.1f} s")
    if aborted:
        fail(aborted)
    return 0 if not aborted and count["failed"] + count["cancelled"] == 0 else 1


async def _follow(backend: IngestBackend, kb_id: str, sources: list[Path | str],
                  entries: list[dict[str, Any]], progress: IngestProgress, timeout: float) -> None:
    """Sends the sources one after the other while following those already sent, until all are done."""
    pending: dict[str, dict[str, Any]] = {}  # knowledge id → its entry, while not terminal
    sending: list[str] = []

    async def send() -> None:
        for source, entry in zip(sources, entries, strict=True):
            sending[:] = [_name(source)]
            added = await backend.add(kb_id, source)
            entry["status"] = added.status
            if added.knowledge_id:
                entry["knowledge_id"] = added.knowledge_id
            if added.error:
                entry["error"] = added.error
            if added.status == "pending" and added.knowledge_id not in pending:
                pending[added.knowledge_id] = entry
            else:
                if added.status == "pending":  # the same document twice in one run
                    entry["status"] = "duplicate"
                progress.finished(entry, int(entry["bytes"]))
        sending.clear()

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    sender = asyncio.ensure_future(send())
    try:
        while True:
            working: list[str] = []
            if pending:
                for kid, state in (await backend.states(list(pending))).items():
                    entry = pending[kid]
                    if state.status in TERMINAL:
                        del pending[kid]
                        entry["status"], entry["title"] = state.status, state.title
                        if state.status == "completed":
                            entry["chunks"] = await backend.chunk_count(kid)
                        else:
                            entry["error"] = state.error or state.status
                        progress.finished(entry, int(entry["bytes"]))
                    elif state.status == "processing":
                        name = Path(entry["source"]).name
                        # a large document says how far its embedding is
                        working.append(name if state.done_fraction is None
                                       else f"{name} {int(state.done_fraction * 100)}%")
            progress.active([*working, *sending])
            if (sender.done() and not pending) or loop.time() >= deadline:
                break
            if sender.done():
                await asyncio.sleep(POLL_S)
            else:
                await asyncio.wait([sender], timeout=POLL_S)  # no wait after the last upload
        if sender.done():
            sender.result()  # an Abort while sending
    finally:
        if not sender.done():
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
