"""Split ``<think>…</think>`` spans out of a streamed answer into the reasoning channel.

Models served through vLLM/Ollama without a reasoning parser (DeepSeek-R1, QwQ, Qwen3 …) put their chain of
thought inline. The tags can arrive split across deltas (``"<thi"`` + ``"nk>"``), so the splitter holds back any
suffix that could still become a tag and releases it once it cannot.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ThinkSplitter:
    """Feed content deltas; get ``(answer, reasoning)`` pieces back. Call ``flush`` at the end of the stream."""

    def __init__(self) -> None:
        self._buf = ""
        self._inside = False

    @property
    def inside(self) -> bool:
        return self._inside

    def feed(self, delta: str) -> tuple[str, str]:
        self._buf += delta
        answer: list[str] = []
        reasoning: list[str] = []
        while self._buf:
            tag = CLOSE if self._inside else OPEN
            pos = self._buf.find(tag)
            if pos >= 0:
                (reasoning if self._inside else answer).append(self._buf[:pos])
                self._buf = self._buf[pos + len(tag):]
                self._inside = not self._inside
                continue
            keep = _partial_suffix(self._buf, tag)
            emit, self._buf = self._buf[: len(self._buf) - keep], self._buf[len(self._buf) - keep:]
            (reasoning if self._inside else answer).append(emit)
            break
        return "".join(answer), "".join(reasoning)

    def flush(self) -> tuple[str, str]:
        """Release what was held back (a partial tag at the very end is just text)."""
        rest, self._buf = self._buf, ""
        return ("", rest) if self._inside else (rest, "")


def strip_think(text: str) -> tuple[str, str]:
    """Non-streaming form: ``(answer, reasoning)``."""
    splitter = ThinkSplitter()
    a1, r1 = splitter.feed(text)
    a2, r2 = splitter.flush()
    return (a1 + a2).strip() if (r1 or r2) else a1 + a2, r1 + r2
