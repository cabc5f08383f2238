"""Public citation tags (``<kb …/>``, ``<web …/>``) as numbered marks ``[n]`` plus a sources list.

For readers that show plain text or Markdown — the terminal (``knora ask``), an MCP client, the
OpenAI-compatible API (docs/openai-api.md): the first time a source is cited it gets the next number, later
citations of it reuse that number. ``sources`` keeps what each number stands for, so the caller can print or
return the list.

``render`` takes text whose tags are whole (the stream handler never splits one across deltas). A reader
that may cut text anywhere feeds it piece by piece instead: ``feed`` holds back the tail that could still
become a tag until the next piece (or ``flush``), so a mark is never printed half; each channel (answer,
reasoning …) holds its own tail, the numbers are shared.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_TAG = re.compile(r"<(kb|web)\s([^>]*)/?>")
_ATTR = re.compile(r'([a-z_]+)="([^"]*)"')
# A tail that may be the start of a public tag: "<", "<k", "<kb", "<kb …" (no ">" yet), and the same for web.
_OPEN_TAIL = re.compile(r"<(?:k(?:b(?:\s[^>]*)?)?|w(?:e(?:b(?:\s[^>]*)?)?)?)?$")


@dataclass(frozen=True)
class Source:
    """One numbered source: a chunk of a document (``kind`` "kb") or a web page ("web")."""

    number: int
    kind: str
    label: str  # for plain text: the document title, or "title <url>" for a web page
    chunk_id: str = ""
    knowledge_base_id: str = ""
    url: str = ""
    title: str = ""  # the document's or the page's title alone (the URL when a page has none)
    page: str = ""  # where in the document the cited chunk is ("p. 12", "slide 3"), when known


class NumberedCitations:
    """Rewrites public citation tags as ``[n]``; one instance per answer (numbers are per answer)."""

    def __init__(self) -> None:
        self.sources: dict[str, Source] = {}
        self._pending: dict[str, str] = {}

    def _mark(self, m: re.Match[str]) -> str:
        kind = m.group(1)
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(2))}
        key = attrs.get("chunk_id") or attrs.get("url") or m.group(0)
        title = attrs.get("doc") or attrs.get("title") or attrs.get("url") or key
        label = f"{title}, {attrs['page']}" if attrs.get("page") else title
        if kind == "web" and attrs.get("url"):
            label = f"{attrs.get('title') or attrs['url']} <{attrs['url']}>"
        if key not in self.sources:
            self.sources[key] = Source(number=len(self.sources) + 1, kind=kind, label=label,
                                       chunk_id=attrs.get("chunk_id", ""),
                                       knowledge_base_id=attrs.get("kb_id", ""), url=attrs.get("url", ""),
                                       title=title, page=attrs.get("page", ""))
        return f"[{self.sources[key].number}]"

    def render(self, text: str) -> str:
        """``text`` with every complete tag replaced by its mark (feed whole tags: the stream handler never
        splits one across deltas)."""
        return _TAG.sub(self._mark, text)

    def feed(self, text: str, channel: str = "answer") -> str:
        """A piece of ``channel``'s text, marked; a tail that may still become a tag is held back."""
        buf = self._pending.pop(channel, "") + text
        tail = _OPEN_TAIL.search(buf)
        if tail is not None:
            self._pending[channel] = buf[tail.start():]
            buf = buf[:tail.start()]
        return self.render(buf)

    def flush(self, channel: str = "answer") -> str:
        """The held tail of ``channel``: a tag is marked, anything else (a lone ``<``) is released as is."""
        return self.render(self._pending.pop(channel, ""))

    def footer(self) -> str:
        return "\n".join(f"[{s.number}] {s.label}" for s in self.sources.values())
