"""The map from a merged passage back to its source chunks (``SearchResult.spans``).

Why: ``chunk_merge`` joins neighbouring chunks into one passage under the first chunk's id, so a citation of
the passage used to name that first chunk even when the quoted sentence was in a later one. Each ``Item``
keeps the chunks it was built from (``SourcePart``); when the merge is done their texts are located in the
final passage. Locating afterwards instead of tracking offsets through every join keeps the joins untouched:
every join either appends, drops a suffix/prefix overlap (the later chunk's whole text is still there, from
where the overlap starts) or collapses a contained text, so each chunk's text is found whole, except the last
one(s) when the passage was capped (then the prefix that ends the passage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knora.domain.document import location_text
from knora.domain.knowledge import Chunk
from knora.domain.search import ChunkSpan, SearchResult

_MIN_PREFIX = 12  # a cut chunk is located by at least this much of its start (textutil.MIN_JOIN_OVERLAP)


@dataclass(frozen=True)
class SourcePart:
    chunk_id: str
    content: str
    chunk_index: int
    location: str = ""


def parts_of(r: SearchResult) -> list[SourcePart]:
    """The chunks a result is made of: its spans when it is already merged (a history reference), else
    itself."""
    if r.spans:
        return [SourcePart(s.chunk_id, r.content[s.start:s.end], s.chunk_index, s.location) for s in r.spans]
    return [SourcePart(r.id, r.content, r.chunk_index, location_text(r.chunk_metadata or {}))]


def part_of_chunk(c: Chunk) -> SourcePart:
    return SourcePart(c.id, c.content, c.chunk_index, location_text(c.metadata or {}))


def _cut_prefix(text: str, part: str, cursor: int) -> int:
    """Where a prefix of ``part`` (at least ``_MIN_PREFIX`` long) runs to the end of ``text``, or -1."""
    head = part[:_MIN_PREFIX]
    if len(head) < _MIN_PREFIX:
        return -1
    pos = text.find(head, cursor)
    while pos != -1:
        if part.startswith(text[pos:]):
            return pos
        pos = text.find(head, pos + 1)
    return -1


def locate(text: str, parts: Sequence[SourcePart]) -> list[ChunkSpan]:
    """Each part's place in ``text``, in chunk order; a part whose text is not there (rewritten) is left
    out."""
    seen: set[str] = set()
    ordered: list[SourcePart] = []
    for p in sorted(parts, key=lambda p: p.chunk_index):
        if p.chunk_id and p.content and p.chunk_id not in seen:
            seen.add(p.chunk_id)
            ordered.append(p)
    spans: list[ChunkSpan] = []
    cursor = 0
    for p in ordered:
        at = text.find(p.content, cursor)
        if at < 0:
            at = text.find(p.content)
        end = at + len(p.content)
        if at < 0:
            at = _cut_prefix(text, p.content, cursor)
            end = len(text)
        if at < 0:
            continue
        spans.append(ChunkSpan(chunk_id=p.chunk_id, start=at, end=end, chunk_index=p.chunk_index,
                               location=p.location))
        cursor = at
    return spans


def spans_for(r: SearchResult, parts: Sequence[SourcePart]) -> list[ChunkSpan]:
    """``r``'s spans; [] when the passage is exactly its own chunk (nothing to map)."""
    spans = locate(r.content, parts)
    whole = len(spans) == 1 and (spans[0].chunk_id, spans[0].start, spans[0].end) == (r.id, 0, len(r.content))
    return [] if whole else spans
