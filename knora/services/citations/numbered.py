"""Public citation tags (``<kb …/>``, ``<web …/>``) as numbered marks ``[n]`` plus a sources list.

For readers that show plain text — the terminal (``knora ask``), an MCP client: the first time a source is
cited it gets the next number, later citations of it reuse that number. ``sources`` keeps what each number
stands for, so the caller can print or return the list.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_TAG = re.compile(r"<(kb|web)\s([^>]*)/?>")
_ATTR = re.compile(r'([a-z_]+)="([^"]*)"')


@dataclass(frozen=True)
class Source:
    """One numbered source: a chunk of a document (``kind`` "kb") or a web page ("web")."""

    number: int
    kind: str
    label: str
    chunk_id: str = ""
    knowledge_base_id: str = ""
    url: str = ""


class NumberedCitations:
    """Rewrites public citation tags as ``[n]``; one instance per answer (numbers are per answer)."""

    def __init__(self) -> None:
        self.sources: dict[str, Source] = {}

    def _mark(self, m: re.Match[str]) -> str:
        kind = m.group(1)
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(2))}
        key = attrs.get("chunk_id") or attrs.get("url") or m.group(0)
        label = attrs.get("doc") or attrs.get("title") or attrs.get("url") or key
        if kind == "web" and attrs.get("url"):
            label = f"{attrs.get('title') or attrs['url']} <{attrs['url']}>"
        if key not in self.sources:
            self.sources[key] = Source(number=len(self.sources) + 1, kind=kind, label=label,
                                       chunk_id=attrs.get("chunk_id", ""),
                                       knowledge_base_id=attrs.get("kb_id", ""), url=attrs.get("url", ""))
        return f"[{self.sources[key].number}]"

    def render(self, text: str) -> str:
        """``text`` with every complete tag replaced by its mark (feed whole tags: the stream handler never
        splits one across deltas)."""
        return _TAG.sub(self._mark, text)

    def footer(self) -> str:
        return "\n".join(f"[{s.number}] {s.label}" for s in self.sources.values())
