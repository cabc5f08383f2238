"""``<think>…</think>``: the one splitter of inline reasoning from answer text, for adapters and services.

Models served without a reasoning parser (DeepSeek-R1, QwQ, Qwen3 on vLLM/Ollama) put their chain of thought
inline. The chat adapters move it into the reasoning channel; the agent streams it as THOUGHT events; history
and titles drop it. The tags can arrive split across deltas (``"<thi"`` + ``"nk>"``), so the streaming
splitter holds back any suffix that could still become a tag and releases it once it cannot.
"""

from __future__ import annotations

import re
from typing import Literal

OPEN = "<think>"
CLOSE = "</think>"

Kind = Literal["think", "text"]
Segment = tuple[Kind, str]

_CLOSED_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


def _join(segments: list[Segment]) -> tuple[str, str]:
    return ("".join(t for k, t in segments if k == "text"), "".join(t for k, t in segments if k == "think"))


class ThinkSplitter:
    """Feed content deltas; get the pieces back in order (``segments``) or as ``(answer, reasoning)``
    (``feed``). Call ``flush``/``flush_segments`` at the end of the stream."""

    def __init__(self) -> None:
        self._buf = ""
        self._inside = False

    @property
    def inside(self) -> bool:
        """Inside an open ``<think>`` block: what follows is reasoning until the close tag."""
        return self._inside

    def segments(self, delta: str) -> list[Segment]:
        """The non-empty pieces of ``delta`` in stream order, each tagged ``think`` or ``text``."""
        self._buf += delta
        out: list[Segment] = []
        while self._buf:
            kind: Kind = "think" if self._inside else "text"
            tag = CLOSE if self._inside else OPEN
            pos = self._buf.find(tag)
            if pos >= 0:
                if pos:
                    out.append((kind, self._buf[:pos]))
                self._buf = self._buf[pos + len(tag):]
                self._inside = not self._inside
                continue
            keep = _partial_suffix(self._buf, tag)  # a partial tag waits for the next delta
            emit, self._buf = self._buf[: len(self._buf) - keep], self._buf[len(self._buf) - keep:]
            if emit:
                out.append((kind, emit))
            break
        return out

    def flush_segments(self) -> list[Segment]:
        """Release what was held back (a partial tag at the very end is just text of the current kind)."""
        rest, self._buf = self._buf, ""
        return [("think" if self._inside else "text", rest)] if rest else []

    def feed(self, delta: str) -> tuple[str, str]:
        return _join(self.segments(delta))

    def flush(self) -> tuple[str, str]:
        return _join(self.flush_segments())


def split_think(text: str) -> tuple[str, str]:
    """A whole reply → ``(answer, reasoning)``; an unclosed ``<think>`` runs to the end. The answer is
    stripped when there was reasoning (the tags leave blank lines behind), else returned as is."""
    splitter = ThinkSplitter()
    answer, reasoning = _join(splitter.segments(text) + splitter.flush_segments())
    return (answer.strip() if reasoning else answer), reasoning


def strip_think(text: str) -> str:
    """A whole reply's answer text, stripped (reasoning, closed or not, removed)."""
    return split_think(text)[0].strip()


def drop_closed_think(text: str) -> str:
    """Remove only complete ``<think>…</think>`` blocks: stored answers (history, titles) keep any stray,
    unclosed tag verbatim, since that is text the user was shown."""
    return _CLOSED_BLOCK.sub("", text)
