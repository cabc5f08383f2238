"""What the model sees of a tool result (spec §4.7): handles, never internal ids.

Tools return structured ``data`` with a ``display_type``; this module registers the rows' chunks, documents,
KBs and web pages in the turn's reference registry and renders them as ``<retrieval>`` XML with
``cN/dN/bN/wN`` handles, so the model can cite ``<ref id="cN"/>`` and pass handles back as arguments. The
registry (and with it every id ↔ handle table) is owned by the citations service; this module only chooses the
shape.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from knora.domain.document import location_text
from knora.domain.search import SearchResult
from knora.ports.tool import ToolResult
from knora.ports.turn import ReferenceRegistryPort

KNOWLEDGE_MODES = {"search_results": "semantic", "grep_results": "keyword", "graph_query_results": "graph",
                   "knowledge_chunks_list": "deep_read"}
WEB_SNIPPET_CAP = 500
FETCH_SUMMARY_CAP, FETCH_CONTENT_CAP, FETCH_BUDGET = 4000, 8000, 16000
_TRUNC = ' truncated="true"'


def _t(text: Any) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _a(text: Any) -> str:
    return html.escape(str(text), quote=True)


def row_to_result(row: dict[str, Any]) -> SearchResult:
    chunk_id = row.get("chunk_id") or row.get("faq_id") or row.get("id") or ""
    return SearchResult(id=str(chunk_id), content=str(row.get("content", "")),
                        knowledge_id=str(row.get("knowledge_id", "")),
                        knowledge_base_id=str(row.get("knowledge_base_id", "")),
                        knowledge_title=str(row.get("knowledge_title", "")),
                        chunk_index=int(row.get("chunk_index", 0) or 0),
                        chunk_type=str(row.get("chunk_type") or ("faq" if row.get("faq_id") else "text")),
                        score=float(row.get("score", 0.0) or 0.0),
                        chunk_metadata=dict(row.get("chunk_metadata") or {}) or None)


def _knowledge(data: dict[str, Any], refs: ReferenceRegistryPort) -> str:
    mode = KNOWLEDGE_MODES[data["display_type"]]
    rows: list[dict[str, Any]] = list(data.get("results") or [])
    parsed = [row_to_result(r) for r in rows]  # once per row: this runs on every tool result of every round
    refs.register_search_results(parsed)
    groups: dict[str, list[tuple[dict[str, Any], SearchResult]]] = {}
    for i, (row, res) in enumerate(zip(rows, parsed, strict=True)):
        key = refs.document_handle(res.knowledge_id) or f"_row{i}"
        groups.setdefault(key, []).append((row, res))
    lines = [f'<retrieval type="knowledge" mode="{mode}">']
    for key, members in groups.items():
        first = members[0][1]
        kb = refs.kb_handle(first.knowledge_base_id) or ""
        doc_attr = f' id="{_a(key)}"' if not key.startswith("_row") else ""
        lines.append(f'<document{doc_attr} kb="{_a(kb)}" title="{_a(first.knowledge_title)}">')
        for row, res in members:
            handle = refs.chunk_handle(res.id) or ""
            view = "full" if res.content or mode == "deep_read" else "match"
            location = location_text(res.chunk_metadata or {})
            where = f' location="{_a(location)}"' if location else ""
            lines.append(f'<chunk id="{_a(handle)}" index="{res.chunk_index}" view="{view}" '
                         f'type="{_a(res.chunk_type)}"{where}>')
            if row.get("faq_question"):
                lines.append(f"<question>{_t(row['faq_question'])}</question>")
            if row.get("match"):
                lines.append(f"<match>{_t(row['match'])}</match>")
            if res.content:
                lines.append(f"<content>{_t(res.content)}</content>")
            for answer in row.get("faq_answers") or []:
                lines.append(f"<answer>{_t(answer)}</answer>")
            lines.append("</chunk>")
        lines.append("</document>")
    remaining = int(data.get("total_chunks", 0) or 0) - int(data.get("fetched_chunks", 0) or 0)
    if mode == "deep_read" and remaining > 0:
        lines.append(f'<pagination remaining="{remaining}" page="{data.get("page", 1)}" '
                     f'page_size="{data.get("page_size", len(rows))}" />')
    lines.append("</retrieval>")
    return "\n".join(lines)


def _cap(text: str, cap: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= cap else (text[:cap], True)


def _web_search(data: dict[str, Any], refs: ReferenceRegistryPort) -> str:
    lines = ['<retrieval type="web" mode="search">']
    for row in data.get("results") or []:
        handle = refs.register_web(str(row.get("url", "")), str(row.get("title", "")))
        lines.append(f'<page id="{_a(handle)}" title="{_a(row.get("title", ""))}">')
        lines.append('<evidence type="search_summary" verified="false" />')
        snippet, cut = _cap(str(row.get("snippet", "")), WEB_SNIPPET_CAP)
        lines.append(f"<match{_TRUNC if cut else ''}>{_t(snippet)}</match>")
        content = str(row.get("content", ""))
        if content and content != row.get("snippet"):
            content, cut = _cap(content, WEB_SNIPPET_CAP)
            lines.append(f"<content{_TRUNC if cut else ''}>{_t(content)}</content>")
        if row.get("published_at"):
            lines.append(f"<published>{_t(row['published_at'])}</published>")
        lines.append("</page>")
    lines.append("</retrieval>")
    return "\n".join(lines)


def _web_fetch(data: dict[str, Any], refs: ReferenceRegistryPort) -> str:
    lines, budget, failed, ok = ['<retrieval type="web" mode="fetch">'], FETCH_BUDGET, 0, 0
    for page in data.get("pages") or []:
        handle = refs.register_web(str(page.get("url", "")), str(page.get("title", "")))
        if page.get("status") == "success":
            ok += 1
            lines.append(f'<page id="{_a(handle)}" status="success" title="{_a(page.get("title", ""))}" '
                         'view="full">')
            if page.get("summary"):
                summary = str(page["summary"])[:min(FETCH_SUMMARY_CAP, max(budget, 0))]
                budget -= len(summary)
                lines.append(f"<summary>{_t(summary)}</summary>")
            if page.get("summary_error"):
                lines.append(f'<summary_error code="{_a(page["summary_error"])}" />')
            content = str(page.get("content", ""))[:min(FETCH_CONTENT_CAP, max(budget, 0))]
            budget -= len(content)
            if content:
                lines.append(f"<content>{_t(content)}</content>")
        else:
            failed += 1
            lines.append(f'<page id="{_a(handle)}" status="{_a(page.get("status", "failed"))}" '
                         f'retryable="{str(bool(page.get("retryable"))).lower()}" '
                         f'error_code="{_a(page.get("error_code", "fetch_failed"))}">')
            lines.append(f"<error>{_t(page.get('error', ''))}</error>")
        lines.append("</page>")
    lines.append("</retrieval>")
    if failed:
        lines.append("\n=== Next Steps ===")
        lines.append("- All pages failed: stop expanding searches, answer from the search snippets and say "
                     "the content was not verified." if not ok
                     else "- Use the successful pages; do not retry failures that are not retryable.")
    return "\n".join(lines)


def _document_info(data: dict[str, Any], refs: ReferenceRegistryPort) -> str:
    docs = list(data.get("documents") or [])
    lines = ["<documents>"]
    for doc in docs:
        handle = refs.document_handle(str(doc.get("knowledge_id", ""))) or ""
        lines.append(f'<document id="{_a(handle)}" title="{_a(doc.get("title", ""))}"'
                     f' type="{_a(doc.get("type", ""))}" file_type="{_a(doc.get("file_type", ""))}"'
                     f' chunk_count="{int(doc.get("chunk_count", 0))}">')
        if doc.get("description"):
            lines.append(f"<description>{_t(doc['description'])}</description>")
        lines.append("</document>")
    lines.append("</documents>")
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[dict[str, Any], ReferenceRegistryPort], str]] = {
    **{k: _knowledge for k in KNOWLEDGE_MODES},
    "web_search_results": _web_search,
    "web_fetch_results": _web_fetch,
    "document_info": _document_info,
}


def register_documents(data: dict[str, Any], refs: ReferenceRegistryPort) -> None:
    """Document-info rows register their documents first, so ``dN`` exists before rendering."""
    rows = [SearchResult(id="", content="", knowledge_id=str(d.get("knowledge_id", "")),
                         knowledge_base_id=str(d.get("knowledge_base_id", "")),
                         knowledge_title=str(d.get("title", ""))) for d in data.get("documents") or []]
    if rows:
        refs.register_search_results(rows)


def model_output(result: ToolResult, refs: ReferenceRegistryPort) -> str:
    if not result.success and result.data.get("display_type") != "web_fetch_results":
        return f"Error: {refs.encode_text(result.error)}" if result.error else "Error: tool call failed"
    display = str(result.data.get("display_type", ""))
    renderer = RENDERERS.get(display)
    if renderer is None:
        return refs.encode_text(result.output)
    if display == "document_info":
        register_documents(result.data, refs)
    rendered = renderer(result.data, refs)
    note = result.data.get("model_note")
    return f"{rendered}\n\n{refs.encode_text(str(note))}" if note else rendered
