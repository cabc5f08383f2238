"""Streaming decoding of model output (spec §4.5): resource handles → citations → orphan filter.

A provider streams text in arbitrary pieces, so a ``<ref id="c1"/>`` or a ``res://0001`` may arrive split
across two (or ten) deltas. Each stage holds back exactly the tail that could still become something it must
rewrite, and releases everything else at once, so the client sees text as early as possible and never a half
tag. Whole-text expansion is the same scanner run with "end of input" set, which makes the streamed result
identical to the non-streamed one for every split of the text (the property the tests check at every split
point).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_NAMES = ("ref", "kb", "web")
_STRICT_REF = re.compile(r'(?i)<ref\s+id\s*=\s*"([^"]+)"\s*/?>')
_SPACE = re.compile(r"\s")
_ORPHAN = re.compile(r"res://\d+")
_ORPHAN_TAIL = re.compile(r"res://\d*")
_RES_PREFIX = "res://"

# (handle, the answer text before the mark) → the public tag; the text lets a citation of a merged passage
# name the chunk that holds the sentence it follows (knora/services/citations/pinpoint.py).
TagFor = Callable[[str, str], str]
BEFORE_WINDOW = 1200


class _CitationStage:
    """Expands complete ``<ref …>`` tags, deletes ``<kb …>``/``<web …>`` tags the model wrote, keeps other
    ``<``."""

    def __init__(self, tag_for: TagFor, enabled: bool) -> None:
        self._tag_for = tag_for
        self._enabled = enabled
        self._pending = ""
        self._released = ""  # the last BEFORE_WINDOW characters released, the context of the next mark

    def _classify(self, buf: str, j: int, final: bool) -> str:
        """'tag', 'literal' or 'hold' for the ``<`` at ``buf[j]``."""
        after = buf[j + 1:j + 5].lower()
        for name in _NAMES:
            if after.startswith(name):
                k = j + 1 + len(name)
                if k >= len(buf):
                    return "tag" if final else "hold"
                return "tag" if _SPACE.match(buf[k]) else "literal"
            if len(after) < len(name) and name.startswith(after):
                return "literal" if final else "hold"
        return "literal"

    def feed(self, text: str, final: bool = False) -> str:
        buf = self._pending + text
        self._pending = ""
        out: list[str] = []
        i, n = 0, len(buf)
        while i < n:
            j = buf.find("<", i)
            if j < 0:
                out.append(buf[i:])
                break
            out.append(buf[i:j])
            kind = self._classify(buf, j, final)
            if kind == "hold":
                self._pending = buf[j:]
                break
            if kind == "literal":
                out.append("<")
                i = j + 1
                continue
            end = buf.find(">", j)
            if end < 0:
                if not final:
                    self._pending = buf[j:]
                break  # at the end of input an unclosed source tag is discarded (fail-closed)
            tag = buf[j:end + 1]
            if self._enabled and tag[1:4].lower() == "ref":
                m = _STRICT_REF.fullmatch(tag)
                if m:
                    before = (self._released + "".join(out))[-BEFORE_WINDOW:]
                    out.append(self._tag_for(m.group(1), before))
            i = end + 1
        released = "".join(out)
        self._released = (self._released + released)[-BEFORE_WINDOW:]
        return released


class _ResourceStage:
    """Decodes registered ``res://NNNN`` handles, withholding a tail that is a proper prefix of one."""

    def __init__(self, handles: Callable[[], list[tuple[str, str]]]) -> None:
        self._handles = handles
        self._pending = ""

    def feed(self, text: str) -> str:
        handles = self._handles()
        buf = self._pending + text
        self._pending = ""
        if not handles:
            return buf
        hold = 0
        for handle, _ in handles:
            for size in range(min(len(handle) - 1, len(buf)), hold, -1):
                if buf.endswith(handle[:size]):
                    hold = size
                    break
        if hold:
            self._pending = buf[-hold:]
            buf = buf[:-hold]
        for handle, raw in sorted(handles, key=lambda h: -len(h[0])):
            buf = buf.replace(handle, raw)
        return buf

    def flush(self) -> str:
        tail, self._pending = self._pending, ""
        return tail


class _OrphanStage:
    """Removes ``res://<digits>`` tokens no registry entry decoded (a model inventing a handle)."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        buf = self._pending + text
        self._pending = ""
        if "r" not in buf:
            return buf
        hold = 0
        at = buf.rfind(_RES_PREFIX)
        if at >= 0 and _ORPHAN_TAIL.fullmatch(buf, at):
            hold = len(buf) - at
        else:
            for size in range(min(len(_RES_PREFIX) - 1, len(buf)), 0, -1):
                if buf.endswith(_RES_PREFIX[:size]):
                    hold = size
                    break
        if hold:
            self._pending = buf[-hold:]
            buf = buf[:-hold]
        return _ORPHAN.sub("", buf)

    def flush(self) -> str:
        tail, self._pending = self._pending, ""
        return "" if _ORPHAN.fullmatch(tail) else tail


class CitationStreamDecoder:
    """One per text channel of a turn. ``feed`` each delta, ``flush`` at the end, on stop and on close."""

    def __init__(self, tag_for: TagFor, citations_enabled: bool = True,
                 resource_handles: Callable[[], list[tuple[str, str]]] | None = None) -> None:
        self._res = _ResourceStage(resource_handles or (list))
        self._cite = _CitationStage(tag_for, citations_enabled)
        self._orphan = _OrphanStage()

    def feed(self, delta: str) -> str:
        return self._orphan.feed(self._cite.feed(self._res.feed(delta)))

    def flush(self) -> str:
        released = self._cite.feed(self._res.flush(), final=True)
        return self._orphan.feed(released) + self._orphan.flush()


def expand_citations(text: str, tag_for: TagFor, citations_enabled: bool = True) -> str:
    """Whole-text citation expansion (spec §4.4), the same scanner the stream uses, run to the end of
    input."""
    return _CitationStage(tag_for, citations_enabled).feed(text, final=True)
