"""What the answering model reads of the retrieved passages: handle-addressed XML (spec §4.7), never raw ids.

Knora renders the model-context XML directly where WeKnora first builds ``<context id=…>`` text and later
replaces it, and keeps what that replacement lost (docs/quick-answer.md D4, D5): FAQ-priority marks
(``priority="high"``, ``match="exact"``), document descriptions, and fetched web-page text (≤ 4000 runes
instead of the 500-rune snippet cap).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from knora.domain.document import location_text
from knora.domain.search import SearchResult
from knora.ports.turn import ReferenceRegistryPort
from knora.services.pipeline.textutil import HTML_IMAGE_SRC, MARKDOWN_IMAGE, is_web

WEB_SNIPPET_CAP = 500
WEB_FETCHED_CAP = 4000
DESCRIPTION_CAP = 200
_TRUNC = ' truncated="true"'


def _t(text: Any) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _a(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cap(text: str, cap: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= cap else (text[:cap], True)


def enrich_with_image_info(r: SearchResult) -> str:
    """Spec §2.16 ``getEnrichedPassageForChat``: caption/OCR quoted right after each image they describe.
    Knora: a captioned image the text does not reference (Knora's parsers place images by offset, not as
    Markdown) has its caption quoted at the end, so a caption-only answer reaches the model; its OCR text is
    already in the document text."""
    if not r.image_info:
        return r.content
    try:
        infos = json.loads(r.image_info)
    except json.JSONDecodeError:
        return r.content
    by_url: dict[str, dict[str, Any]] = {}
    for info in infos if isinstance(infos, list) else []:
        if isinstance(info, dict):
            for key in ("url", "original_url"):
                if isinstance(info.get(key), str) and info[key]:
                    by_url.setdefault(info[key], info)
    if not by_url:
        return r.content
    spots: list[tuple[int, str]] = []
    referenced: set[int] = set()
    for pattern, group in ((MARKDOWN_IMAGE, 2), (HTML_IMAGE_SRC, 2)):
        for m in pattern.finditer(r.content):
            info = by_url.get(m.group(group).strip())
            if info is None:
                continue
            referenced.add(id(info))
            lines = []
            if info.get("caption"):
                lines.append(f"**Image caption:** {info['caption']}")
            if info.get("ocr_text"):
                lines.append(f"**Image text (OCR):** {info['ocr_text']}")
            if lines:
                quoted = "\n>\n".join("> " + ln.replace("\n", "\n> ") for ln in lines)
                spots.append((m.end(), "\n\n" + quoted))
    text = r.content
    for pos, insert in sorted(spots, reverse=True):
        text = text[:pos] + insert + text[pos:]
    unplaced = {id(i): i for i in by_url.values() if id(i) not in referenced and i.get("caption")}
    for info in unplaced.values():
        text += "\n\n> **Image caption:** " + str(info["caption"]).replace("\n", "\n> ")
    return text


def matched_beyond(r: SearchResult, passage: str) -> str:
    """What the index matched that the passage does not already show the model, or "".

    The indexed text is the document title, the chunk's context header and its content (``index_content``):
    the title is the ``<document>``'s attribute and the content is the passage, so repeating them in a
    ``<match>`` sent every passage twice. Left: a context header, or an FAQ's matched question."""
    m = r.matched_content.strip()
    title = (r.knowledge_title or "").strip()
    if title and m.startswith(title + "\n"):
        m = m[len(title) + 1:].strip()
    if not m or m in passage:
        return ""
    head, sep, tail = m.partition("\n\n")
    if sep and tail.strip() and tail.strip() in passage:  # "header\n\nbody": the header alone
        return head.strip()
    return m


def order_for_model(results: Sequence[SearchResult], faq_priority: bool) -> list[SearchResult]:
    if not faq_priority:
        return list(results)
    return [r for r in results if r.chunk_type == "faq"] + [r for r in results if r.chunk_type != "faq"]


@dataclass
class RenderedContext:
    xml: str = ""
    # [{handle, content[, spans]}] for the extractive answerer; ``spans`` ("0-512,430-900": where each
    # source chunk of a merged passage is in ``content``) lets it cite a quote that crosses two chunks twice
    passages: list[dict[str, str]] = field(default_factory=list)
    has_images: bool = False


@dataclass
class _Knowledge:
    """Renders the knowledge passages, grouped by document; the first exact FAQ match is marked once."""

    refs: ReferenceRegistryPort
    out: RenderedContext
    has_faq: bool
    faq_exact_threshold: float
    exact_done: bool = False

    def render(self, knowledge: list[SearchResult]) -> str:
        lines = ['<retrieval type="knowledge" mode="semantic">']
        if self.has_faq:
            lines.append("<note>Chunks marked priority=\"high\" are curated FAQ answers: prefer them to "
                         "document passages; match=\"exact\" means the FAQ matches the question almost "
                         "verbatim.</note>")
        groups: dict[str, list[SearchResult]] = {}
        for r in knowledge:
            groups.setdefault(r.knowledge_id or f"_{r.id}", []).append(r)
        for members in groups.values():
            self._document(members, lines)
        lines.append("</retrieval>")
        return "\n".join(lines)

    def _document(self, members: list[SearchResult], lines: list[str]) -> None:
        first = members[0]
        doc, kb = self.refs.document_handle(first.knowledge_id), self.refs.kb_handle(first.knowledge_base_id)
        attrs = (f' id="{doc}"' if doc else "") + (f' kb="{kb}"' if kb else "")
        lines.append(f'<document{attrs} title="{_a(first.knowledge_title or first.knowledge_filename)}">')
        if first.knowledge_description:
            description = _cap(first.knowledge_description, DESCRIPTION_CAP)[0]
            lines.append(f"<description>{_t(description)}</description>")
        for r in members:
            self._chunk(r, lines)
        lines.append("</document>")

    def _priority(self, r: SearchResult) -> str:
        if not (self.has_faq and r.chunk_type == "faq"):
            return ""
        if self.exact_done or r.score < self.faq_exact_threshold:
            return ' priority="high"'
        self.exact_done = True
        return ' priority="high" match="exact"'

    def _chunk(self, r: SearchResult, lines: list[str]) -> None:
        handle = self.refs.chunk_handle(r.id) or ""
        extra = self._priority(r)
        passage = enrich_with_image_info(r)
        if not passage.strip():
            return
        self.out.has_images = self.out.has_images or bool(MARKDOWN_IMAGE.search(passage))
        location = location_text(r.chunk_metadata or {})
        where = f' location="{_a(location)}"' if location else ""
        lines.append(f'<chunk id="{handle}" index="{r.chunk_index}" view="full" type="{_a(r.chunk_type)}"'
                     f'{where}{extra}>')
        if match := matched_beyond(r, passage):
            lines.append(f"<match>{_t(match)}</match>")
        lines.append(f"<content>{_t(passage)}</content>")
        lines.append("</chunk>")
        entry = {"handle": handle, "content": passage}
        if r.spans and passage == r.content:  # offsets hold only for the text as merged (no captions added)
            entry["spans"] = ",".join(f"{sp.start}-{sp.end}" for sp in r.spans)
        self.out.passages.append(entry)


def _web_page(r: SearchResult, refs: ReferenceRegistryPort, out: RenderedContext, lines: list[str]) -> None:
    url = str(r.metadata.get("url") or r.id)
    title = r.knowledge_title or str(r.metadata.get("title") or "")
    handle = refs.register_web(url, title)
    lines.append(f'<page id="{handle}" title="{_a(title)}">')
    lines.append('<evidence type="search_summary" verified="false" />')
    fetched = r.metadata.get("fetched") == "true"
    # WeKnora shows the result's whole content as the snippet; a fetched page shows its text as content.
    raw_snippet = str(r.metadata.get("snippet") or "") if fetched else r.content
    snippet, cut = _cap(raw_snippet, WEB_SNIPPET_CAP)
    lines.append(f"<match{_TRUNC if cut else ''}>{_t(snippet)}</match>")
    body = r.content if fetched else ""
    if body.strip() and body.strip() != raw_snippet.strip():
        body, cut = _cap(body, WEB_FETCHED_CAP)
        lines.append(f"<content{_TRUNC if cut else ''}>{_t(body)}</content>")
    if r.metadata.get("published_at"):
        lines.append(f"<published>{_t(r.metadata['published_at'])}</published>")
    lines.append("</page>")
    out.passages.append({"handle": handle, "content": body or snippet})


def render_context(results: Sequence[SearchResult], refs: ReferenceRegistryPort, *,
                   faq_priority: bool = False, faq_exact_threshold: float = 0.9) -> RenderedContext:
    """The knowledge passages grouped by document, then the web pages; handles registered on the way."""
    ordered = order_for_model(results, faq_priority)
    knowledge = [r for r in ordered if not is_web(r)]
    web = [r for r in ordered if is_web(r)]
    refs.register_search_results(knowledge)
    out = RenderedContext()
    parts: list[str] = []
    if knowledge:
        has_faq = faq_priority and any(r.chunk_type == "faq" for r in knowledge)
        parts.append(_Knowledge(refs, out, has_faq, faq_exact_threshold).render(knowledge))
    if web:
        lines = ['<retrieval type="web" mode="search">']
        for r in web:
            _web_page(r, refs, out, lines)
        lines.append("</retrieval>")
        parts.append("\n".join(lines))
    out.xml = "\n".join(parts)
    return out
