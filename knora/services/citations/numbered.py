"""Public citation tags → numbered marks: ``<kb doc="…" chunk_id="…"/>`` becomes ``[1]``, ``<web url="…"/>``
``[2]``, numbered in order of first citation (the same source keeps its number), with the list of sources to
print after the answer. For front-ends that show plain text or Markdown: the terminal (``knora ask``) and the
OpenAI-compatible API (docs/openai-api.md).

Text is fed in pieces as it streams. A tag is never split by the stream handler (it expands a citation whole),
but a reader may cut text anywhere, so the tail that could still become a tag is held back until the next
piece (or ``flush``), and a mark is never printed half.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_TAG = re.compile(r"<(kb|web)\s([^>]*)>")
_ATTR = re.compile(r'([a-z_]+)="([^"]*)"')
# A tail that may be the start of a public tag: "<", "<k", "<kb", "<kb …" (no ">" yet), and the same for web.
_OPEN_TAIL = re.compile(r"<(?:k(?:b(?:\s[^>]*)?)?|w(?:e(?:b(?:\s[^>]*)?)?)?)?$")


@dataclass(frozen=True)
class Source:
    number: int
    kind: str  # "kb" (a knowledge-base chunk) or "web"
    title: str
    url: str = ""
    chunk_id: str = ""
    knowledge_base_id: str = ""


class NumberedCitations:
    """One per answer. ``feed`` each piece of a channel (answer, reasoning …: each holds back its own tail,
    the numbers are shared), ``flush`` the channel at its end; ``sources`` in number order."""

    def __init__(self) -> None:
        self._by_key: dict[str, Source] = {}
        self._pending: dict[str, str] = {}

    @property
    def sources(self) -> list[Source]:
        return list(self._by_key.values())

    def _mark(self, m: re.Match[str]) -> str:
        kind = m.group(1)
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(2))}
        url, chunk_id = attrs.get("url", ""), attrs.get("chunk_id", "")
        key = chunk_id or url or m.group(0)
        source = self._by_key.get(key)
        if source is None:
            title = attrs.get("doc") or attrs.get("title") or url or key
            source = self._by_key[key] = Source(len(self._by_key) + 1, kind, title, url, chunk_id,
                                                attrs.get("kb_id", ""))
        return f"[{source.number}]"

    def feed(self, text: str, channel: str = "answer") -> str:
        buf = self._pending.pop(channel, "") + text
        tail = _OPEN_TAIL.search(buf)
        if tail is not None:
            self._pending[channel] = buf[tail.start():]
            buf = buf[:tail.start()]
        return _TAG.sub(self._mark, buf)

    def flush(self, channel: str = "answer") -> str:
        """The held tail of ``channel``: a tag is marked, anything else (a lone ``<``) is released as is."""
        return _TAG.sub(self._mark, self._pending.pop(channel, ""))

    def render(self, text: str, channel: str = "answer") -> str:
        """A whole text (the same result as feeding it in any split, then flushing)."""
        return self.feed(text, channel) + self.flush(channel)
