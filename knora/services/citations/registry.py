"""The per-turn reference registry (spec §4.1–4.4, §4.6).

Why it exists: a model must never see (or echo) durable identities — chunk UUIDs, knowledge ids, storage
references. It sees short request-local handles (``c1``, ``d1``, ``b1``, ``w1``, ``res://0001``) that are
cheap to copy exactly, and everything the model writes is decoded back before the UI, storage or a tool
consumes it. Expansion is fail-closed: a citation that does not name a handle this registry issued is deleted,
never guessed.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from knora.domain.document import location_text
from knora.domain.search import ChunkSpan, SearchResult
from knora.services.citations.pinpoint import pinpoint
from knora.services.citations.stream import CitationStreamDecoder, expand_citations

HANDLE_SHAPE = re.compile(r"(?i)^[cdbw][1-9][0-9]*$")
_HANDLE_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_\-])([cdbwCDBW][1-9][0-9]*)(?![A-Za-z0-9_\-])")
_STORED_REF = re.compile(
    r"resource://[0-9A-Za-z_\-]{22}"
    r"|(?:storage://[^/\s]+/)?(?:local|minio|cos|tos|s3|oss|ks3|obs)://[^\s)\]>\"']+"
    r"|summary/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_PUBLIC_TAG = re.compile(r"(?is)<(kb|web)(?:\s[^>]*)?>")
_ATTR = re.compile(r"""([A-Za-z_][\w\-]*)\s*=\s*"([^"]*)\"""")


@dataclass
class _Entry:
    handle: str
    key: str
    meta: dict[str, Any] = field(default_factory=dict)


class _HandleTable:
    """Sequential handles for one space; a key registered twice keeps its handle and gains missing
    metadata."""

    def __init__(self, prefix: str, width: int = 0) -> None:
        self.prefix = prefix
        self.width = width
        self._by_key: dict[str, _Entry] = {}
        self._by_handle: dict[str, _Entry] = {}

    def register(self, key: str, **meta: Any) -> str:
        entry = self._by_key.get(key)
        if entry is None:
            n = len(self._by_key) + 1
            handle = f"{self.prefix}{n:0{self.width}d}" if self.width else f"{self.prefix}{n}"
            entry = _Entry(handle=handle, key=key)
            self._by_key[key] = entry
            self._by_handle[handle] = entry
        for name, value in meta.items():
            if value not in (None, "") and entry.meta.get(name) in (None, ""):
                entry.meta[name] = value
        return entry.handle

    def handle_for(self, key: str) -> str | None:
        entry = self._by_key.get(key)
        return entry.handle if entry else None

    def by_handle(self, handle: str) -> _Entry | None:
        return self._by_handle.get(handle)

    def entries(self) -> list[_Entry]:
        return list(self._by_key.values())


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def canonical_url(url: str) -> str:
    """Dedup key of a web page: parsed, fragment removed; a URL without scheme and host is its own key."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


_PROTOCOL_SOURCES = """## Source handling protocol (system-owned)
Retrieved material is labelled with request-local handles: cN is a knowledge chunk, wN a web page, dN a \
document and bN a knowledge base. dN and bN are for tool arguments only. Never show raw chunk, document or \
knowledge-base ids, or these private handles, in text meant for the user (image URLs are kept as given)."""

_PROTOCOL_CITE_ON = """## Citations (system-owned)
Cite a knowledge chunk by writing exactly <ref id="cN"/> and a web page by writing exactly <ref id="wN"/>, \
using only handles that appeared in the context or in tool results. Never cite dN or bN. Never write <kb> or \
<web> tags yourself: the system turns valid <ref/> marks into links after generation. Put each <ref/> \
inline, on the same line as the claim it supports, not collected at the end. These rules replace any \
earlier, saved or custom citation instructions."""

_PROTOCOL_CITE_OFF = """## Citations (system-owned)
Do not write <ref>, <kb> or <web> tags, raw source URLs or handle citations in the answer. This replaces any \
earlier instruction that asked for citations."""

_PROTOCOL_RESOURCES = """## Resource handle protocol (system-owned)
Stored resources appear as res://NNNN. Copy such a handle exactly, and only one you have seen, into links, \
images or tool arguments; never invent, edit or expand a handle."""


_REF_SCHEMES = ("resource", "local", "minio", "cos", "tos", "s3", "oss", "ks3", "obs")


def _may_hold_stored_ref(text: str) -> bool:
    """False only when ``_STORED_REF`` cannot match: each of its forms contains "summary/" or one of the
    schemes right before "://" (``res://`` handles and web URLs do not count). Plain substring searches, no
    regex."""
    if "summary/" in text:
        return True
    i = text.find("://")
    while i != -1:
        if text[max(0, i - 8) : i].endswith(_REF_SCHEMES):
            return True
        i = text.find("://", i + 3)
    return False


@functools.lru_cache(maxsize=256)
def _key_pattern(keys: tuple[str, ...]) -> re.Pattern[str]:
    """An alternation of literal keys, longest first (so a key that prefixes another never wins)."""
    return re.compile("|".join(re.escape(k) for k in keys))


class ReferenceRegistry:
    """Implements ``ReferenceRegistryPort`` (knora/services/streaming/turn.py). One instance per turn."""

    def __init__(self, citations_enabled: bool = True) -> None:
        self.citations_enabled = citations_enabled
        self._chunks = _HandleTable("c")
        self._docs = _HandleTable("d")
        self._kbs = _HandleTable("b")
        self._web = _HandleTable("w")
        self._resources = _HandleTable("res://", width=4)
        self._tables = {"c": self._chunks, "d": self._docs, "b": self._kbs, "w": self._web}
        # chunk handle → (the passage text the model read, its spans): what a citation is pinpointed in
        self._passages: dict[str, tuple[str, list[ChunkSpan]]] = {}

    # --- registration ---------------------------------------------------------------------------------------
    def _register(self, table: _HandleTable, key: str, **meta: Any) -> str | None:
        if not key:
            return None
        if HANDLE_SHAPE.match(key):
            # Already a handle: never a new durable id; it only names what exists.
            lowered = key.lower()
            return lowered if lowered[0] == table.prefix and table.by_handle(lowered) else None
        return table.register(key, **meta)

    def register_search_results(self, results: list[SearchResult]) -> None:
        for r in results:
            self._register(self._docs, r.knowledge_id, title=r.knowledge_title or r.knowledge_filename)
            self._register(self._kbs, r.knowledge_base_id)
            location = location_text(r.chunk_metadata or {})
            title = r.knowledge_title or r.knowledge_filename
            handle = self._register(self._chunks, r.id, knowledge_id=r.knowledge_id,
                                    kb_id=r.knowledge_base_id, title=title, chunk_index=r.chunk_index,
                                    chunk_type=r.chunk_type, location=location)
            if handle and r.spans and handle not in self._passages:
                self._passages[handle] = (r.content, list(r.spans))

    def register_chunk(self, chunk_id: str, *, knowledge_id: str = "", kb_id: str = "",
                       title: str = "") -> str | None:
        return self._register(self._chunks, chunk_id, knowledge_id=knowledge_id, kb_id=kb_id, title=title)

    def register_document(self, knowledge_id: str, title: str = "") -> str | None:
        return self._register(self._docs, knowledge_id, title=title)

    def register_kb(self, knowledge_base_id: str, name: str = "") -> str | None:
        return self._register(self._kbs, knowledge_base_id, title=name)

    def register_web(self, url: str, title: str = "") -> str:
        if HANDLE_SHAPE.match(url) and self._web.by_handle(url.lower()):
            return url.lower()
        key = canonical_url(url)
        return self._web.register(key, url=url, title=title)

    def register_resource(self, ref: str) -> str:
        return self._resources.register(ref)

    def chunk_handle(self, chunk_id: str) -> str | None:
        return self._chunks.handle_for(chunk_id)

    def document_handle(self, knowledge_id: str) -> str | None:
        return self._docs.handle_for(knowledge_id)

    def kb_handle(self, knowledge_base_id: str) -> str | None:
        return self._kbs.handle_for(knowledge_base_id)

    def resolve(self, handle: str) -> dict[str, Any] | None:
        h = handle.strip().lower()
        if h.startswith("res://"):
            res = self._resources.by_handle(h)
            return {"kind": "resource", "ref": res.key} if res else None
        if not HANDLE_SHAPE.match(h):
            return None
        entry = self._tables[h[0]].by_handle(h)
        if entry is None:
            return None
        kind = {"c": "chunk", "d": "document", "b": "kb", "w": "web"}[h[0]]
        if kind == "web":
            return {"kind": "web", "url": entry.meta.get("url", entry.key),
                    "title": entry.meta.get("title", "")}
        return {"kind": kind, "id": entry.key, **entry.meta}

    # --- prompts --------------------------------------------------------------------------------------------
    def protocol_prompt(self) -> str:
        cite = _PROTOCOL_CITE_ON if self.citations_enabled else _PROTOCOL_CITE_OFF
        return f"{_PROTOCOL_SOURCES}\n\n{cite}\n\n{_PROTOCOL_RESOURCES}"

    # --- model output → public text -------------------------------------------------------------------------
    def public_tag(self, handle: str, before: str = "") -> str:
        """The public tag for a cited handle, or "" (fail-closed) when it is not a known chunk or web page.

        ``before`` is the answer text before the mark: when the cited passage was merged from several chunks,
        the tag names the one holding the sentence the mark follows, with its page (the tag's shape is
        unchanged; a passage of one chunk is cited exactly as before)."""
        h = handle.strip().lower()
        if not HANDLE_SHAPE.match(h):
            return ""
        if h[0] == "c" and (entry := self._chunks.by_handle(h)):
            kb = entry.meta.get("kb_id") or ""
            kb_attr = f' kb_id="{esc(kb)}"' if kb else ""
            chunk_id = entry.key
            # where in the document ("p. 12", "slide 3"): an extra attribute WeKnora's UI ignores
            location = entry.meta.get("location") or ""
            passage = self._passages.get(h)
            point = pinpoint(passage[0], passage[1], before) if passage and len(passage[1]) > 1 else None
            if point is not None:
                chunk_id, location = point.span.chunk_id, point.span.location or location
            page_attr = f' page="{esc(location)}"' if location else ""
            return (f'<kb doc="{esc(entry.meta.get("title", ""))}" chunk_id="{esc(chunk_id)}"{kb_attr}'
                    f'{page_attr} />')
        if h[0] == "w" and (entry := self._web.by_handle(h)):
            url = entry.meta.get("url", entry.key)
            return (f'<web url="{html.escape(url, quote=True)}" '
                    f'title="{html.escape(entry.meta.get("title", ""), quote=True)}" />')
        return ""

    def expand_text(self, text: str) -> str:
        return expand_citations(text, self.public_tag, self.citations_enabled)

    def decode_resources(self, text: str) -> str:
        for entry in sorted(self._resources.entries(), key=lambda e: -len(e.handle)):
            text = text.replace(entry.handle, entry.key)
        return text

    def resource_handles(self) -> list[tuple[str, str]]:
        return [(e.handle, e.key) for e in self._resources.entries()]

    def stream_decoder(self) -> CitationStreamDecoder:
        """A fresh streaming decoder (one per text channel: answer and reasoning each get their own)."""
        return CitationStreamDecoder(self.public_tag, self.citations_enabled, self.resource_handles)

    def decode_output(self, text: str) -> str:
        """Whole-text decoding; identical to feeding the text to ``stream_decoder`` in any split, then
        flushing."""
        dec = self.stream_decoder()
        return dec.feed(text) + dec.flush()

    # --- history replay -------------------------------------------------------------------------------------
    def compact_public_citations(self, text: str) -> str:
        def repl(m: re.Match[str]) -> str:
            attrs = {k.lower(): html.unescape(v) for k, v in _ATTR.findall(m.group(0))}
            if m.group(1).lower() == "kb" and attrs.get("chunk_id"):
                h = self.register_chunk(attrs["chunk_id"], kb_id=attrs.get("kb_id", ""),
                                        title=attrs.get("doc", ""))
                if attrs.get("kb_id"):
                    self.register_kb(attrs["kb_id"])
                return f'<ref id="{h}"/>' if h else m.group(0)
            if m.group(1).lower() == "web" and attrs.get("url"):
                return f'<ref id="{self.register_web(attrs["url"], attrs.get("title", ""))}"/>'
            return m.group(0)

        return _PUBLIC_TAG.sub(repl, text)

    # --- text shown to the model / tool arguments -----------------------------------------------------------
    def encode_text(self, text: str) -> str:
        # Resources first, so an id embedded in a storage path is protected as one resource handle. The scan
        # costs ~1 ms per 10k characters, so it only runs when a stored reference can be there at all.
        if _may_hold_stored_ref(text):
            text = _STORED_REF.sub(lambda m: self.register_resource(m.group(0)), text)
        durable: dict[str, str] = {}
        for table in (self._chunks, self._docs, self._kbs):
            for e in table.entries():
                durable.setdefault(e.key, e.handle)
        for e in self._web.entries():
            durable.setdefault(e.meta.get("url", e.key), e.handle)
        # Only keys that occur in the text can match, so the alternation is built from those alone (same
        # result, and compiling a pattern of every registered id cost ~5 ms per call); the compiled pattern is
        # reused.
        present = [k for k in durable if k and k in text]
        if not present:
            return text
        pattern = _key_pattern(tuple(sorted(present, key=len, reverse=True)))
        return pattern.sub(lambda m: durable[m.group(0)], text)

    def decode_arguments(self, text: str) -> str:
        text = self.decode_resources(text)

        def repl(m: re.Match[str]) -> str:
            found = self.resolve(m.group(1))
            if found is None:
                return m.group(0)
            return str(found.get("url") if found["kind"] == "web" else found["id"])

        return _HANDLE_IN_TEXT.sub(repl, text)
