"""Ingestion: accepting documents (file, URL, manual text) and turning them into indexed chunks.

Accepting is synchronous and cheap: validate, store the original, write a ``pending`` document row and enqueue
a job. The job (``process``) parses in a worker process (``DocumentParsers``: capped memory and time), chunks
with the KB's config, embeds through a shared batcher and then swaps the chunks in: new rows go to the
retrieval index first, then one database transaction replaces the document's chunk rows and marks it
completed, then the old rows leave the index. Search hydrates hits from the chunk table, so a document becomes
searchable exactly when that transaction commits — with all its chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from knora.domain.common import folder_title, safe_name, utcnow
from knora.domain.errors import AppError, BadRequest, NotFound, PayloadTooLarge
from knora.domain.files import SNIFF_BYTES, content_type, file_type
from knora.domain.knowledge import (
    PROGRESS_KEY,
    Chunk,
    ChunkingConfig,
    Knowledge,
    KnowledgeBase,
    ParseStatus,
)
from knora.domain.search import IndexRow
from knora.pacing import sheltered
from knora.ports.blobs import BlobStore
from knora.ports.chat import ChatModels, ModelError
from knora.ports.embedder import Vector
from knora.ports.jobs import JobQueue, JobRequest
from knora.ports.parser import DocumentParsers, ParsedDocument, ParseError
from knora.ports.retrieval import RetrievalEngine
from knora.ports.store import KnowledgeFilter, Page, Repositories
from knora.ports.telemetry import NO_TELEMETRY, Span, Telemetry
from knora.services.ingest import fetch as fetching
from knora.services.ingest.build import Draft, build_chunks, searchable
from knora.services.ingest.captions import caption_images
from knora.services.ingest.chunker import config_for_format
from knora.services.ingest.committer import GroupCommitter
from knora.services.ingest.embedders import EmbedderRegistry
from knora.services.ingest.images import attach_images, image_prefix, store_images
from knora.services.ingest.passages import NewPassage, add_passages
from knora.services.ingest.process_config import METADATA_KEY, ProcessOverrides, stored_overrides
from knora.services.ingest.progress import ProgressReporter
from knora.services.ingest.quota import StorageQuota
from knora.services.ingest.release import drop_gradually
from knora.services.ingest.running import RunningWork
from knora.settings import Settings

log = logging.getLogger(__name__)

JOB_KIND = "ingest.process"


def _job_for(knowledge_id: str) -> JobRequest:
    return JobRequest(JOB_KIND, {"knowledge_id": knowledge_id}, key=knowledge_id)


class DuplicateKnowledge(AppError):
    """Same content (or URL) already in the KB; the route answers WeKnora's 409 ``duplicate_file`` shape."""

    status, code = 409, 1005

    def __init__(self, existing: Knowledge, kind: str) -> None:
        super().__init__(f"A document with the same {'content' if kind == 'duplicate_file' else 'URL'} "
                         f"already exists in this knowledge base: {existing.title or existing.file_name}")
        self.existing = existing
        self.kind = kind


class IngestFailure(Exception):
    """A readable reason a document could not be ingested (ends as parse_status=failed)."""


@dataclass
class IngestDeps:
    settings: Settings
    repos: Repositories
    blobs: BlobStore
    parsers: DocumentParsers
    embedders: EmbedderRegistry
    jobs: JobQueue
    retrieval: Callable[[], RetrievalEngine | None]
    split: Callable[[str, ChunkingConfig, Sequence[int]], Sequence[Draft]]  # text, config, cuts
    telemetry: Telemetry = NO_TELEMETRY
    chat_models: ChatModels | None = None  # the VLM that captions images (``vlm_config.model_id``)


# what a partial parse left out, each with its reason (``ParsedDocument.skipped``), in the document's metadata
SKIPPED_KEY = "parse_skipped"
MAX_SKIPPED_NOTES = 50
EMBED_SLICE_BATCHES = 8  # a large document is embedded this many batches at a time (embed_bounded)


def file_extension(name: str) -> str:
    """The parser type of ``name``: its extension, or the type of an extension-less Dockerfile, Makefile …"""
    return file_type(name)


class IngestService:
    def __init__(self, deps: IngestDeps) -> None:
        self.d = deps
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._committer = GroupCommitter(deps.repos.chunks, deps.retrieval)
        self._processing: list[str] = []
        self._running = RunningWork()  # so that a delete or re-parse can stop a job mid-parse
        self._marker: asyncio.Task[None] | None = None
        self.quota = StorageQuota(deps.repos.knowledge, deps.settings.tenant_storage_quota_bytes)

    # --- accepting documents --------------------------------------------------------------------------------
    async def _kb(self, tenant_id: int, kb_id: str) -> KnowledgeBase:
        kb = await self.d.repos.kbs.get(tenant_id, kb_id)
        if kb is None:
            raise NotFound("Knowledge base not found")
        return kb

    def _check_size(self, size: int) -> None:
        if size > self.d.settings.max_upload_bytes:
            raise PayloadTooLarge(f"File is {size} bytes; "
                                  f"the limit is {self.d.settings.max_upload_bytes} bytes")

    def _check_extension(self, ext: str, name: str) -> None:
        supported = sorted(self.d.parsers.extensions)
        if ext not in supported:
            raise BadRequest(f"Unsupported file type {('.' + ext) if ext else '(none)'} for {name!r}; "
                             f"supported: {', '.join(supported)}")

    async def add_file(self, tenant_id: int, kb_id: str, file_name: str, data: bytes, *,
                       metadata: dict[str, Any] | None = None, tag_id: str | None = None,
                       channel: str = "web", process_config: ProcessOverrides | None = None) -> Knowledge:
        kb = await self._kb(tenant_id, kb_id)
        self._check_size(len(data))
        name = safe_name(file_name or "")
        if not name:
            raise BadRequest("A file name is required")
        ext = content_type(name, data[:SNIFF_BYTES], self.d.parsers.extensions)
        self._check_extension(ext, name)
        if not data.strip():
            raise BadRequest(f"{name!r} is empty")
        await self._check_tag(tenant_id, kb.id, tag_id)
        digest = hashlib.sha256(data).hexdigest()
        existing = await self.d.repos.knowledge.find_duplicate(kb.id, file_hash=digest)
        if existing is not None:
            raise DuplicateKnowledge(existing, "duplicate_file")
        k = Knowledge(tenant_id=tenant_id, knowledge_base_id=kb.id, type="file",
                      title=folder_title(file_name),
                      source=name, file_name=name, file_type=ext, file_size=len(data), file_hash=digest,
                      metadata=_with_overrides({str(a): str(b) for a, b in (metadata or {}).items()},
                                               process_config),
                      tag_id=tag_id or None, embedding_model_id=kb.embedding_model_id, channel=channel)
        return await self._accept(k, data)

    async def add_url(self, tenant_id: int, kb_id: str, url: str, *, title: str = "", file_name: str = "",
                      file_type: str = "", tag_id: str | None = None, channel: str = "web",
                      process_config: ProcessOverrides | None = None) -> Knowledge:
        kb = await self._kb(tenant_id, kb_id)
        url = fetching.validate_url(url)
        await fetching.check_public(url, self.d.settings.allow_private_network_fetch)
        await self._check_tag(tenant_id, kb.id, tag_id)
        existing = await self.d.repos.knowledge.find_duplicate(kb.id, source=url)
        if existing is not None:
            raise DuplicateKnowledge(existing, "duplicate_url")
        ext = (file_type or file_extension(safe_name(file_name)) or "").lower().lstrip(".")
        if ext:
            self._check_extension(ext, file_name or url)
        await self.quota.check(tenant_id, 1, what="a URL import")
        k = Knowledge(tenant_id=tenant_id, knowledge_base_id=kb.id, type="url", title=title, source=url,
                      file_name=safe_name(file_name), file_type=ext, tag_id=tag_id or None,
                      metadata=_with_overrides({}, process_config),
                      embedding_model_id=kb.embedding_model_id, channel=channel)
        return await self._accept(k, None)

    async def add_manual(self, tenant_id: int, kb_id: str, title: str, content: str, *,
                         status: str = "publish",
                         tag_id: str | None = None, channel: str = "web") -> Knowledge:
        kb = await self._kb(tenant_id, kb_id)
        if not content or not content.strip():
            raise BadRequest("content must not be empty")
        data = content.encode()
        self._check_size(len(data))
        await self._check_tag(tenant_id, kb.id, tag_id)
        name = (safe_name(title) or "manual")[:120] + ".md"
        k = Knowledge(tenant_id=tenant_id, knowledge_base_id=kb.id, type="manual", title=title.strip(),
                      source="manual", file_name=name, file_type="md", file_size=len(data),
                      file_hash=hashlib.sha256(data).hexdigest(), metadata={"status": status},
                      tag_id=tag_id or None, embedding_model_id=kb.embedding_model_id, channel=channel)
        # A draft is stored but not indexed (WeKnora's manual "draft" status).
        return await self._accept(k, data, enqueue=status != "draft")

    async def add_passages(self, tenant_id: int, kb_id: str, items: Sequence[NewPassage]) -> list[Knowledge]:
        """One document and one chunk per passage, indexed now (``passages.py``; evaluation sets)."""
        kb = await self._kb(tenant_id, kb_id)
        return await add_passages(self.d.repos, self.d.embedders, self._committer, self.quota, kb, items)

    async def _check_tag(self, tenant_id: int, kb_id: str, tag_id: str | None) -> None:
        if tag_id:
            tag = await self.d.repos.tags.get(tenant_id, tag_id)
            if tag is None or tag.knowledge_base_id != kb_id:
                raise BadRequest("tag_id does not name a tag of this knowledge base")

    async def _accept(self, k: Knowledge, data: bytes | None, *, enqueue: bool = True) -> Knowledge:
        async with self.quota.admitting(k.tenant_id, k.file_size, repr(k.file_name or k.source)):
            await self._store(k, data, enqueue=enqueue)
        if enqueue:
            self.d.jobs.notify()
        return k

    async def _store(self, k: Knowledge, data: bytes | None, *, enqueue: bool) -> None:
        if data is not None:
            k.file_path = await self.d.blobs.put(f"{k.tenant_id}/{k.knowledge_base_id}/{k.id}/{k.file_name}",
                                                 data)
        try:
            if enqueue:
                # one transaction: a crash or an outage here leaves neither row, never a stuck ``pending``
                await self.d.repos.knowledge.create_with_job(k, _job_for(k.id))
            else:
                await self.d.repos.knowledge.create(k)
        except BaseException:
            # No blob without a row (the rows were rolled back together). Checked first: a cancel can land
            # after the commit, and a blob under a committed row must stay; if the check fails (database
            # down) an orphan blob is the harmless outcome.
            if k.file_path:
                with contextlib.suppress(Exception):
                    if await self.d.repos.knowledge.get(None, k.id) is None:
                        await self.d.blobs.delete(k.file_path)
            raise

    async def requeue_orphans(self) -> list[str]:
        """At start-up: documents left ``pending``/``processing`` with no job (a crash between the row and its
        job before they were written together, or a re-parse cut short) get a job again instead of blocking a
        re-upload with a 409 forever. The original is still stored (or the URL is), so re-running is the
        useful answer; if it is gone the job ends the document as ``failed`` with that reason. Drafts stay
        pending by design and are left alone."""
        stuck = await self.d.repos.knowledge.without_job(JOB_KIND, [ParseStatus.PENDING,
                                                                     ParseStatus.PROCESSING])
        ids = [k.id for k in stuck if k.metadata.get("status") != "draft"]
        for kid in ids:
            log.warning("document %s was left without an ingestion job; queueing it again", kid)
            await self.d.jobs.enqueue(JOB_KIND, {"knowledge_id": kid}, key=kid)
        return ids

    # --- re-parse and deletion ------------------------------------------------------------------------------
    async def get(self, tenant_id: int, knowledge_id: str) -> Knowledge:
        k = await self.d.repos.knowledge.get(tenant_id, knowledge_id)
        if k is None:
            raise NotFound("Knowledge not found")
        return k

    async def list_documents(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                             filters: KnowledgeFilter) -> Page:
        """A page of the knowledge base's documents (404 for a knowledge base the tenant does not have)."""
        kb = await self._kb(tenant_id, kb_id)
        return await self.d.repos.knowledge.list(tenant_id, kb.id, page=page, page_size=page_size,
                                                 filters=filters)

    async def get_many(self, tenant_id: int, knowledge_ids: Sequence[str]) -> list[Knowledge]:
        """The tenant's documents among ``knowledge_ids``, in that order; unknown ids are left out."""
        found: list[Knowledge] = []
        for kid in knowledge_ids:
            k = await self.d.repos.knowledge.get(tenant_id, kid) if kid else None
            if k is not None:
                found.append(k)
        return found

    async def edit(self, tenant_id: int, knowledge_id: str, *, title: str | None = None,
                   description: str | None = None, set_tag: bool = False, tag_id: str | None = None,
                   metadata: Mapping[str, object] | None = None) -> Knowledge:
        """Edits what a client may change by hand; ``set_tag`` with ``tag_id`` None removes the tag, and
        ``metadata`` is merged into the stored metadata (values as strings)."""
        k = await self.get(tenant_id, knowledge_id)
        changes: dict[str, object] = {}
        if title is not None:
            changes["title"] = title
        if description is not None:
            changes["description"] = description
        if set_tag:
            await self._check_tag(tenant_id, k.knowledge_base_id, tag_id)
            changes["tag_id"] = tag_id
        if metadata is not None:
            changes["metadata"] = {**k.metadata, **{str(a): str(v) for a, v in metadata.items()}}
        return await self.d.repos.knowledge.update(k.model_copy(update=changes))

    async def reparse(self, tenant_id: int, knowledge_id: str, *,
                      process_config: ProcessOverrides | None = None) -> Knowledge:
        """``process_config``: new upload options for this and later parses (None keeps the stored ones)."""
        k = await self.get(tenant_id, knowledge_id)
        if process_config is not None:
            k = await self.d.repos.knowledge.update(k.model_copy(update={
                "metadata": _with_overrides(dict(k.metadata), process_config)}))
        if not await self.d.repos.knowledge.requeue_with_job(k.id, _job_for(k.id)):
            raise NotFound("Knowledge not found")
        await self._running.stop(k.id)  # a parse still running is stale now: the new job starts at once
        self.d.jobs.notify()
        return await self.get(tenant_id, knowledge_id)

    async def delete(self, tenant_id: int, knowledge_id: str) -> None:
        """Returns promptly even while the document is being parsed: the row goes first (a job that starts
        later finds nothing to do, and a commit in flight finds the row gone and drops its chunks), then the
        running work is stopped, which kills its parser process."""
        k = await self.get(tenant_id, knowledge_id)
        await self.d.repos.knowledge.delete(tenant_id, k.id)
        await self._running.stop(k.id)
        engine = self.d.retrieval()
        if engine is not None:
            await engine.delete_knowledge([k.id])
        if k.file_path:
            await self.d.blobs.delete(k.file_path)
        await self.d.blobs.delete_prefix(image_prefix(k))
        self._locks.pop(k.id, None)

    # --- the job --------------------------------------------------------------------------------------------
    async def process(self, payload: dict[str, Any]) -> None:
        knowledge_id = str(payload.get("knowledge_id", ""))
        async with self._locks[knowledge_id]:
            k = await self.d.repos.knowledge.get(None, knowledge_id)
            if k is None or k.parse_status == ParseStatus.CANCELLED:
                return  # deleted or cancelled before its turn came
            kb = await self.d.repos.kbs.get(k.tenant_id, k.knowledge_base_id)
            if kb is None:
                return
            self._mark_processing(k.id)
            work = asyncio.create_task(self._process_or_fail(k, kb), name=f"knora-ingest-{k.id}")
            # False when a delete or a re-parse stopped it: nothing to record then, the job is done either way
            await self._running.run(k.id, kb.id, work)

    async def stop_parse(self, knowledge_id: str) -> None:
        """Stops the document's running job, if any (its parser process is killed); a cancel-parse."""
        await self._running.stop(knowledge_id)

    async def stop_knowledge_base(self, kb_id: str) -> None:
        """Stops the running jobs of a deleted knowledge base's documents (their workers are killed)."""
        await self._running.stop_knowledge_base(kb_id)

    async def give_up(self, payload: dict[str, Any], reason: str) -> None:
        """The queue's last word on a job that kept dying with its process (killed mid-parse, a crash, a
        restart): the document ends ``failed`` instead of being started again forever."""
        await self.d.repos.knowledge.set_status(
            str(payload.get("knowledge_id", "")), ParseStatus.FAILED,
            f"Ingestion stopped: {reason}. It is not retried automatically; re-parse to try again.")

    async def _process_or_fail(self, k: Knowledge, kb: KnowledgeBase) -> None:
        """Runs one job and records it (``knora_ingest_*`` metrics, a ``knora.ingest`` trace)."""
        metrics = self.d.telemetry.metrics
        span = self.d.telemetry.tracer.start("knora.ingest", {
            "knora.tenant_id": k.tenant_id, "knora.knowledge_id": k.id, "knora.type": k.type or "file"})
        started, outcome, done = time.monotonic(), "failed", _Done()
        try:
            done = await self._process(k, kb, span)
            outcome = "completed"
        except (ParseError, IngestFailure, AppError, ModelError) as exc:
            # a model's error (an embedding endpoint refused by the outbound policy, or answering garbage)
            # names the provider and what was wrong: that is the reason, not an "Internal error"
            metrics.error(f"ingest:{_failure_kind(exc)}")
            span.fail(str(exc) or type(exc).__name__)
            await self.d.repos.knowledge.set_status(k.id, ParseStatus.FAILED,
                                                    str(exc) or type(exc).__name__)
        except asyncio.CancelledError:
            outcome = "cancelled"  # a delete or a re-parse stopped it
            raise
        except Exception as exc:
            log.exception("ingesting %s failed", k.id)
            metrics.error("ingest:internal")
            span.fail(f"{type(exc).__name__}: {exc}")
            await self.d.repos.knowledge.set_status(
                k.id, ParseStatus.FAILED, f"Internal error while ingesting: {type(exc).__name__}: {exc}")
        finally:
            metrics.ingested(outcome, time.monotonic() - started, done.chunks, done.size)
            span.set("knora.outcome", outcome)
            span.end()

    def _mark_processing(self, knowledge_id: str) -> None:
        """Show ``processing`` soon, without a write per document: ids are flushed in one UPDATE per round."""
        self._processing.append(knowledge_id)
        if self._marker is None or self._marker.done():
            self._marker = asyncio.create_task(self._flush_processing())

    async def _flush_processing(self) -> None:
        while self._processing:
            ids, self._processing = self._processing, []
            try:
                await self.d.repos.knowledge.mark_processing(ids)
            except Exception:
                log.exception("could not mark documents as processing")

    async def _load(self, k: Knowledge) -> tuple[bytes, str, str, dict[str, Any]]:
        """(bytes, extension, file name, extra document fields) of the original."""
        if k.type == "url":
            s = self.d.settings
            got = await fetching.fetch(k.source, max_bytes=s.max_upload_bytes,
                                       timeout=s.url_fetch_timeout_seconds,
                                       allow_private=s.allow_private_network_fetch)
            ext = (k.file_type or fetching.url_extension(got.url)
                   or fetching.CONTENT_TYPES.get(got.content_type) or "html")
            if ext not in self.d.parsers.extensions:
                ext = fetching.CONTENT_TYPES.get(got.content_type, "html")
            name = k.file_name or safe_name(got.url.rsplit("/", 1)[-1]) or "page"
            await self.quota.check(k.tenant_id, len(got.data), counted=k.file_size,
                                   what=f"the page {k.source}")
            extra = {"file_hash": hashlib.sha256(got.data).hexdigest(), "file_size": len(got.data),
                     "file_type": ext}
            return got.data, ext, name, extra
        try:
            data = await self.d.blobs.get(k.file_path)
        except KeyError as exc:
            raise IngestFailure("The uploaded original is missing from the blob store") from exc
        return data, k.file_type, k.file_name, {}

    async def _process(self, k: Knowledge, kb: KnowledgeBase, span: Span) -> _Done:
        t = time.time_ns()
        data, ext, name, extra = await self._load(k)
        span.record("load", t, time.time_ns(), {"knora.bytes": len(data)})
        if not data.strip():
            raise IngestFailure(f"{name} is empty")
        if file_extension(name) != ext:
            name = f"{PurePosixPath(name).stem or 'document'}.{ext}"
        overrides = stored_overrides(k.metadata)
        s = self.d.settings
        options = overrides.parse_options(s.parse_timeout_seconds * s.parse_time_budget_fraction)
        t = time.time_ns()
        doc = await self.d.parsers.parse(data, name, options)
        span.record("parse", t, time.time_ns(), {"knora.file_type": ext})
        captioning = overrides.vlm(kb.vlm_config).active and bool(doc.images) and options.extract_images
        if not doc.text.strip() and not captioning:  # an image-only document is indexed by its captions
            raise IngestFailure(f"{name} contains no text" + (
                " (its images are not captioned: no VLM is configured for this knowledge base)"
                if doc.images else ""))
        # A file's own title (PDF metadata, first heading, <title>) beats its file name; a title the user
        # typed for a manual or URL document beats both.
        explicit = k.title if k.type in ("manual", "url") else ""
        # a parser with no title of its own falls back to the file's stem: then the upload's folder-qualified
        # name ("socat/README") stays
        own = doc.title if doc.title != PurePosixPath(name).stem else ""
        title = explicit or own or k.title or doc.title or PurePosixPath(name).stem
        k = k.model_copy(update={"title": title})
        config = config_for_format(overrides.chunking(kb.chunking_config).normalised(),
                                   doc.metadata.get("format", ""))
        t = time.time_ns()
        # no chunk crosses a page, slide or attachment boundary: each cites exactly where it is from
        cuts = [offset for page in doc.pages for offset in (page.start, page.end)]
        drafts = list(await asyncio.to_thread(self.d.split, doc.text, config, cuts))
        # off the event loop too: 50 MB of text is ~150k chunk records (seconds of CPU chat would wait for)
        chunks = await asyncio.to_thread(build_chunks, k, drafts, doc.pages)
        span.record("chunk", t, time.time_ns(), {"knora.chunks": len(chunks)})
        image_notes = await self._images(k, kb, doc, chunks, overrides, options.extract_images, span)
        if not chunks:
            raise IngestFailure(f"{name} produced no chunks" + (
                f" (images: {image_notes['image_captions']})" if image_notes.get("image_captions") else ""))
        to_index = searchable(chunks)
        # in a thread: 150k of them take the event loop ~0.2 s (PYTHONASYNCIODEBUG's slow-callback report)
        contents = await asyncio.to_thread(index_contents, to_index, title)
        metadata = dict(k.metadata)
        metadata.update({f"doc_{a}": str(b) for a, b in doc.metadata.items()} if doc.metadata else {})
        if doc.tables:
            metadata["tables"] = json.dumps(doc.tables[:5])[:200_000]
        for key in ("images", "image_captions", SKIPPED_KEY, PROGRESS_KEY):
            metadata.pop(key, None)  # an earlier parse's
        metadata.update(image_notes)
        if doc.skipped:  # a partial parse says what it left out (the document list shows it)
            metadata[SKIPPED_KEY] = doc.skipped[:MAX_SKIPPED_NOTES]
        complete: dict[str, Any] = {"parse_status": str(ParseStatus.COMPLETED), "error_message": "",
                                    "title": title, "metadata": metadata, **extra,
                                    "embedding_model_id": kb.embedding_model_id}
        vectors = None
        slice_size = EMBED_SLICE_BATCHES * s.embed_batch_size
        embedding = kb.indexing_strategy.vector_enabled and bool(contents)
        # a document embedded in several slices shows how far it is in the document list
        async with ProgressReporter(self.d.repos.knowledge, k.id, len(contents),
                                    enabled=embedding and len(contents) > slice_size) as progress:
            if embedding:
                batcher = await self.d.embedders.batcher(kb.embedding_model_id, tenant_id=kb.tenant_id)
                t = time.time_ns()
                vectors = await batcher.embed_bounded(contents, slice_size, progress.embedded)
                span.record("embed", t, time.time_ns(), {"knora.passages": len(contents)})
            await progress.indexing()
            rows = await asyncio.to_thread(_index_rows, k, kb, to_index, contents, vectors)
            t = time.time_ns()
            await self._committer.commit(k.id, chunks, rows, {**complete, "processed_at": utcnow()})
            span.record("index", t, time.time_ns(), {"knora.rows": len(rows)})
        done = _Done(chunks=len(chunks), size=len(data))
        await drop_gradually(rows, contents, to_index, drafts, chunks)
        return done

    async def _images(self, k: Knowledge, kb: KnowledgeBase, doc: ParsedDocument, chunks: list[Chunk],
                      overrides: ProcessOverrides, extract: bool, span: Span) -> dict[str, str]:
        """Stores the document's images, captions them when a VLM is configured, sets ``image_info`` on the
        chunks holding them and appends the ``image_caption`` chunks; returns notes for the metadata."""
        s = self.d.settings
        if not extract or not doc.images:
            await self.d.blobs.delete_prefix(image_prefix(k))
            return {}
        t = time.time_ns()
        stored = await store_images(self.d.blobs, k, doc.images, s.document_max_images)
        notes = {"images": str(len(stored))}
        if len(doc.images) > len(stored):
            notes["images"] += f" of {len(doc.images)} kept"
        vlm = overrides.vlm(kb.vlm_config)
        if vlm.active and stored:
            if self.d.chat_models is None:
                notes["image_captions"] = "not captioned: no model registry"
            else:
                try:
                    model = await self.d.chat_models.get(vlm.model_id, tenant_id=k.tenant_id)
                except Exception as exc:  # noqa: BLE001 - a missing VLM leaves the images uncaptioned
                    notes["image_captions"] = f"not captioned: VLM {vlm.model_id} unavailable: {exc}"
                else:
                    report = await caption_images(model, stored, concurrency=s.vlm_caption_concurrency,
                                                  max_images=s.vlm_caption_max_images,
                                                  timeout_seconds=s.vlm_caption_timeout_seconds)
                    notes["image_captions"] = report.summary()
        chunks.extend(attach_images(k, chunks, stored))
        span.record("images", t, time.time_ns(), {"knora.images": len(stored)})
        return notes


def index_contents(chunks: Sequence[Chunk], title: str) -> list[str]:
    """What is indexed of each chunk (its content under the document's title)."""
    return [c.index_content(title) for c in sheltered(chunks)]


def _index_rows(k: Knowledge, kb: KnowledgeBase, chunks: Sequence[Chunk], contents: Sequence[str],
                vectors: Vector | None) -> list[IndexRow]:
    """The retrieval rows of a document's searchable chunks (built in a thread: one per chunk, vectors as
    lists)."""
    kind = "faq" if kb.type == "faq" else "document"
    return [IndexRow(source_id=c.id, chunk_id=c.id, knowledge_id=k.id, knowledge_base_id=kb.id,
                     tenant_id=k.tenant_id, content=text, tag_id=c.tag_id, is_enabled=c.is_enabled,
                     embedding=vectors[i].tolist() if vectors is not None else None, knowledge_type=kind)
            for i, (c, text) in enumerate(sheltered(zip(chunks, contents, strict=True)))]


def _with_overrides(metadata: dict[str, Any], overrides: ProcessOverrides | None) -> dict[str, Any]:
    if overrides is not None:
        metadata[METADATA_KEY] = overrides.stored()
    return metadata


@dataclass(frozen=True)
class _Done:
    """What an ingestion job produced, for its metrics."""

    chunks: int = 0
    size: int = 0


def _failure_kind(exc: Exception) -> str:
    """A small closed set for the ``knora_errors_total{kind}`` label."""
    if isinstance(exc, ParseError):
        return "parse"
    if isinstance(exc, ModelError):
        return "model"
    if isinstance(exc, IngestFailure):
        return "content"
    return "refused"
