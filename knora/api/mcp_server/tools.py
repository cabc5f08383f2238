"""The tools and the document resource of Knora's MCP server, over the services (never the adapters).

Each function is registered by ``server.build_server``; its parameters (with their descriptions) are the
tool's input schema, its return model the output schema. A service's ``AppError`` (not found, bad input, a
quota, a duplicate) becomes a tool error carrying its message; a knowledge base or document of another
tenant is "not found", exactly like an unknown id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from knora.api.mcp_server.schemas import (
    AddedDocument,
    AnswerSource,
    AskAnswer,
    ChunkText,
    DocumentInfo,
    DocumentList,
    DocumentPage,
    KnowledgeBaseInfo,
    KnowledgeBaseList,
    SearchHit,
    SearchHits,
)
from knora.api.mcp_server.state import McpContext, admit_heavy, caller_of, state_of
from knora.api.mcp_server.text import document_text
from knora.domain.access import Role
from knora.domain.conversation import Viewer
from knora.domain.errors import AppError, BadRequest, NotFound
from knora.domain.knowledge import Chunk, ChunkType, Knowledge, KnowledgeBase
from knora.domain.search import SearchParams
from knora.ports.store import KnowledgeFilter
from knora.root import Services
from knora.services.citations.numbered import NumberedCitations
from knora.services.streaming.question import Question, collect_answer, start_question

READ_CHUNK_TYPES = [ChunkType.TEXT.value, ChunkType.FAQ.value]
RESOURCE_MAX_CHARS = 2_000_000  # a resource read returns at most this much text (read_document pages on)

KnowledgeBases = Annotated[list[str] | None, Field(
    description="names or ids of the knowledge bases to use (from list_knowledge_bases); "
                "omit to use all of them")]
KnowledgeBaseRef = Annotated[str, Field(
    description="name or id of one knowledge base (from list_knowledge_bases)")]


@contextmanager
def tool_errors() -> Iterator[None]:
    try:
        yield
    except AppError as exc:
        raise ToolError(exc.message) from exc


async def _kb(s: Services, tenant_id: int, ref: str) -> KnowledgeBase:
    ref = ref.strip()
    try:
        return await s.kb_service.get(tenant_id, ref)
    except NotFound:
        for kb in await s.kb_service.list(tenant_id):
            if kb.name == ref:
                return kb
    raise NotFound(f"knowledge base {ref!r} not found")


async def _kb_ids(s: Services, tenant_id: int, refs: list[str] | None) -> list[str]:
    if refs:
        return list(dict.fromkeys([(await _kb(s, tenant_id, r)).id for r in refs]))
    ids = [kb.id for kb in await s.kb_service.list(tenant_id)]
    if not ids:
        raise NotFound("there is no knowledge base yet: create one first")
    return ids


def _doc(k: Knowledge) -> DocumentInfo:
    return DocumentInfo(id=k.id, knowledge_base_id=k.knowledge_base_id, title=k.title or k.file_name,
                        type=k.type, source=k.source, parse_status=str(k.parse_status),
                        error_message=k.error_message, created_at=k.created_at.isoformat())


async def list_knowledge_bases(ctx: McpContext) -> KnowledgeBaseList:
    """List the knowledge bases you can search. Call this first when you do not know their names: every
    other tool takes a knowledge base by the name or id listed here. Returns id, name, description, type
    and how many documents and chunks each holds."""
    with tool_errors():
        s, tenant = state_of(ctx).services, caller_of(ctx).tenant_id
        kbs = await s.kb_service.list(tenant)
        stats = await s.kb_service.stats(tenant, [kb.id for kb in kbs])
        return KnowledgeBaseList(knowledge_bases=[
            KnowledgeBaseInfo(id=kb.id, name=kb.name, description=kb.description, type=str(kb.type),
                              document_count=stats[kb.id].knowledge_count if kb.id in stats else 0,
                              chunk_count=stats[kb.id].chunk_count if kb.id in stats else 0)
            for kb in kbs])


async def search_knowledge(
    query: Annotated[str, Field(description="what to look for: a question or keywords", min_length=1)],
    ctx: McpContext,
    knowledge_bases: KnowledgeBases = None,
    top_k: Annotated[int, Field(ge=1, le=50, description="how many chunks to return")] = 8,
) -> SearchHits:
    """Search the knowledge bases for passages (hybrid: semantic vectors plus keywords) and return the
    matching chunks verbatim, best first, each with its chunk id, document id and title, and score. Use it
    to find evidence yourself or to quote sources; use `ask` instead when you want a ready, cited answer.
    Fetch more of a document with read_document."""
    with tool_errors():
        s, caller = state_of(ctx).services, caller_of(ctx)
        ids = await _kb_ids(s, caller.tenant_id, knowledge_bases)
        await admit_heavy(ctx, caller)
        results = await s.search_service.search(caller.tenant_id, SearchParams(
            knowledge_base_id=ids[0], knowledge_base_ids=ids, query_text=query, match_count=top_k,
            skip_context_enrichment=True))
        return SearchHits(query=query, results=[
            SearchHit(chunk_id=r.id, document_id=r.knowledge_id,
                      document_title=r.knowledge_title or r.knowledge_filename,
                      knowledge_base_id=r.knowledge_base_id,
                      chunk_index=r.chunk_index, score=r.score, scores=r.scores, content=r.content)
            for r in results])


async def ask(
    question: Annotated[str, Field(description="the question, in natural language", min_length=1)],
    ctx: McpContext,
    knowledge_bases: KnowledgeBases = None,
    session_id: Annotated[str | None, Field(
        description="continue this conversation (the session_id of an earlier answer); "
                    "omit for a new one")] = None,
) -> Annotated[CallToolResult, AskAnswer]:
    """Ask a question and get a written answer grounded in the knowledge bases, with numbered citations
    [n] and the list of sources they point to (document titles and ids). It runs Knora's full answering
    pipeline (retrieval, rerank, answer generation), so it takes longer than search_knowledge; prefer it
    when the user wants an answer rather than raw passages."""
    with tool_errors():
        s, caller = state_of(ctx).services, caller_of(ctx)
        ids = await _kb_ids(s, caller.tenant_id, knowledge_bases)
        await admit_heavy(ctx, caller)
        turn = await start_question(s.session_service, s.chat_service, caller.tenant_id, Question(
            query=question, knowledge_base_ids=ids, session_id=session_id or None,
            viewer=Viewer(caller.user_id)))
        try:
            collected = await collect_answer(s.stream_log, turn)
        except asyncio.CancelledError:  # the client cancelled the call: stop generating, as the UI's stop
            await asyncio.shield(s.chat_service.stop(caller.tenant_id, turn.session_id,
                                                     turn.assistant_message_id))
            raise
    citations = NumberedCitations()
    answer = citations.render(collected.text).strip()
    documents = {str(r.get("id", "")): r for r in collected.references}
    sources = [AnswerSource(number=src.number, title=src.label, chunk_id=src.chunk_id,
                            document_id=str(documents.get(src.chunk_id, {}).get("knowledge_id", "")),
                            knowledge_base_id=src.knowledge_base_id, url=src.url)
               for src in citations.sources.values()]
    result = AskAnswer(answer=answer, sources=sources, session_id=turn.session_id, errors=collected.errors)
    text = answer or "(no answer)"
    if sources:
        text += "\n\nSources:\n" + "\n".join(
            f"[{x.number}] {x.title}" + (f" (document {x.document_id})" if x.document_id else "")
            for x in sources)
    if collected.errors:
        text += "\n\nErrors: " + "; ".join(collected.errors)
    text += f"\n\nsession_id: {turn.session_id}"
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=result.model_dump(mode="json"),
                          is_error=bool(collected.errors) and not answer)


async def list_documents(
    knowledge_base: KnowledgeBaseRef,
    ctx: McpContext,
    page: Annotated[int, Field(ge=1, description="page number, from 1")] = 1,
    page_size: Annotated[int, Field(ge=1, le=200, description="documents per page")] = 50,
    keyword: Annotated[str | None, Field(
        description="only documents whose title or file name contains this")] = None,
) -> DocumentList:
    """List the documents of one knowledge base (newest first, paged): id, title, type, source (file name
    or URL) and parse status — a document is searchable once its status is `completed`. Use the ids with
    read_document or the knora://knowledge/{id} resource."""
    with tool_errors():
        s, tenant = state_of(ctx).services, caller_of(ctx).tenant_id
        kb = await _kb(s, tenant, knowledge_base)
        found = await s.ingest_service.list_documents(tenant, kb.id, page=page, page_size=page_size,
                                                      filters=KnowledgeFilter(keyword=keyword or None))
        return DocumentList(knowledge_base_id=kb.id, total=found.total, page=page, page_size=page_size,
                            documents=[_doc(k) for k in found.items])


async def read_document(
    document_id: Annotated[str, Field(
        description="the document's id (from search_knowledge, ask or list_documents)")],
    ctx: McpContext,
    page: Annotated[int, Field(ge=1, description="page number, from 1")] = 1,
    page_size: Annotated[int, Field(ge=1, le=100, description="chunks per page")] = 20,
) -> DocumentPage:
    """Read a document's text, chunk by chunk in document order, a page at a time (`has_more` says whether
    to ask for the next page). Use it to read around a search hit or to read a whole document."""
    with tool_errors():
        s, tenant = state_of(ctx).services, caller_of(ctx).tenant_id
        k = await s.ingest_service.get(tenant, document_id.strip())
        found = await s.chunk_service.list(tenant, k.id, page=page, page_size=page_size,
                                           chunk_types=READ_CHUNK_TYPES)
        return DocumentPage(document=_doc(k), total_chunks=found.total, page=page, page_size=page_size,
                            has_more=page * page_size < found.total,
                            chunks=[ChunkText(id=c.id, chunk_index=c.chunk_index, content=c.content)
                                    for c in found.items])


async def add_document(
    knowledge_base: KnowledgeBaseRef,
    ctx: McpContext,
    text: Annotated[str | None, Field(description="the document's content (plain text or Markdown)")] = None,
    url: Annotated[str | None, Field(description="a public http(s) URL to import instead of text")] = None,
    title: Annotated[str, Field(description="the document's title (for text: default its first line)")] = "",
) -> AddedDocument:
    """Add a document to a knowledge base: either `text` (stored as a Markdown document) or a `url` to
    fetch and import — exactly one of them. The document is parsed, chunked and indexed in the background:
    it is returned with parse_status `pending` and becomes searchable when list_documents or read_document
    shows `completed`."""
    with tool_errors():
        if (text is None) == (url is None):
            raise BadRequest("give exactly one of text or url")
        s, caller = state_of(ctx).services, caller_of(ctx)
        caller.require(Role.CONTRIBUTOR)
        kb = await _kb(s, caller.tenant_id, knowledge_base)
        await admit_heavy(ctx, caller)
        if url is not None:
            k = await s.ingest_service.add_url(caller.tenant_id, kb.id, url.strip(), title=title,
                                               channel="api")
        else:
            name = title.strip() or next((ln.strip("# ").strip() for ln in (text or "").splitlines()
                                          if ln.strip()), "")[:80]
            k = await s.ingest_service.add_manual(caller.tenant_id, kb.id, name, text or "", channel="api")
        return AddedDocument(document=_doc(k), message="accepted: it is parsed and indexed in the background")


async def knowledge_resource(knowledge_id: str, ctx: McpContext) -> str:
    """The document's text, assembled from its chunks (for long documents read_document pages through)."""
    try:
        s, tenant = state_of(ctx).services, caller_of(ctx).tenant_id
        k = await s.ingest_service.get(tenant, knowledge_id)
        chunks: list[Chunk] = []
        size, page = 0, 1
        while size < RESOURCE_MAX_CHARS:
            found = await s.chunk_service.list(tenant, k.id, page=page, page_size=500,
                                               chunk_types=READ_CHUNK_TYPES)
            chunks.extend(found.items)
            size += sum(len(c.content) for c in found.items)
            if page * 500 >= found.total:
                break
            page += 1
    except NotFound as exc:
        raise ResourceNotFoundError(f"document {knowledge_id!r} not found") from exc
    except AppError as exc:
        raise ResourceError(exc.message) from exc
    body = document_text(chunks)[:RESOURCE_MAX_CHARS]
    heading = f"# {k.title or k.file_name}\n\n" if (k.title or k.file_name) else ""
    if not chunks:
        return heading + f"(no text yet: parse status {k.parse_status})"
    return heading + body
