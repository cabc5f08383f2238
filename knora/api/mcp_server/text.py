"""A document's text from its chunks: chunks overlap (``chunk_overlap``), so each one adds only what lies
past the previous one's end (``text[start_at:end_at] == content`` for every chunk the chunker wrote)."""

from __future__ import annotations

from collections.abc import Iterable

from knora.domain.knowledge import Chunk


def document_text(chunks: Iterable[Chunk]) -> str:
    """The text of ``chunks`` (text chunks, in order). A chunk whose offsets do not fit its content (edited
    by hand) is appended whole after a blank line instead of being cut at an offset that no longer holds."""
    parts: list[str] = []
    end = 0
    for c in chunks:
        exact = c.end_at - c.start_at == len(c.content) and c.end_at > 0
        if exact and parts and c.start_at < end:
            parts.append(c.content[end - c.start_at:] if c.end_at > end else "")
        elif exact and (not parts or c.start_at == end):
            parts.append(c.content)
        else:
            parts.append(("\n\n" if parts else "") + c.content)
        end = max(end, c.end_at) if exact else end
    return "".join(parts)
