"""Where things are in a parsed document's text: pages (or slides, sheets, attachments) and images.

A parser that knows its document's layout reports it as spans of the normalised text, so that every chunk cut
from that text can say which page it comes from (and a citation can say "p. 12"), and images can be attached
to the chunk that holds them. Offsets are code-point positions into ``ParsedDocument.text``, like a chunk's
``start_at``/``end_at``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

PageKind = Literal["page", "slide", "sheet", "section", "attachment"]


class PageSpan(BaseModel):
    """``text[start:end]`` is page ``number`` (1-based) of kind ``kind``; ``label`` names it for people
    (a sheet's or an attachment's name; empty for numbered pages)."""

    number: int
    start: int
    end: int
    kind: PageKind = "page"
    label: str = ""

    def display(self) -> str:
        """How a citation names it: "p. 12", "slide 3", "sheet Budget", "attachment a.pdf"."""
        if self.kind == "page":
            return f"p. {self.number}"
        if self.label:
            return f"{self.kind} {self.label}"
        return f"{self.kind} {self.number}"


def span_at(spans: Sequence[PageSpan], offset: int) -> PageSpan | None:
    """The span holding ``offset`` (spans sorted by start, disjoint); the nearest one before it when the
    offset falls in the separator between two spans; None before the first."""
    if not spans:
        return None
    i = bisect.bisect_right([s.start for s in spans], offset) - 1
    return spans[i] if i >= 0 else None


def chunk_location(spans: Sequence[PageSpan], start: int, end: int) -> dict[str, int | str]:
    """A chunk's place in its document, as chunk metadata: ``page`` (first), ``page_end`` when it runs onto
    later pages, ``page_kind`` and ``page_label``; empty when the document has no spans."""
    first = span_at(spans, start)
    if first is None:
        return {}
    last = span_at(spans, max(start, end - 1)) or first
    out: dict[str, int | str] = {"page": first.number, "page_kind": first.kind}
    if first.label:
        out["page_label"] = first.label
    if last.number != first.number:
        out["page_end"] = last.number
    return out


def location_text(metadata: dict[str, object]) -> str:
    """The human form of ``chunk_location``'s metadata ("p. 3", "pp. 3–4", "slide 2"); "" when absent."""
    page = metadata.get("page")
    if not isinstance(page, int):
        return ""
    kind = str(metadata.get("page_kind") or "page")
    label = str(metadata.get("page_label") or "")
    end = metadata.get("page_end")
    if kind == "page":
        return f"pp. {page}–{end}" if isinstance(end, int) else f"p. {page}"
    if label:
        return f"{kind} {label}"
    return f"{kind}s {page}–{end}" if isinstance(end, int) else f"{kind} {page}"


def same_location(a: dict[str, object], b: dict[str, object]) -> bool:
    """Whether two chunks' metadata put them on the same page, slide, sheet or attachment (True when
    either has no location: a document without pages is one place). Retrieval joins neighbouring chunks
    only within one place, so a merged passage is still cited where it is."""
    if not isinstance(a.get("page"), int) or not isinstance(b.get("page"), int):
        return True
    return all(a.get(k) == b.get(k) for k in ("page", "page_end", "page_kind", "page_label"))
