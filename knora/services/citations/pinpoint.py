"""Which source chunk of a cited passage holds the cited sentence, and where in that chunk it is.

A citation mark follows the claim it supports ("… completed in 1889. <ref id="c1"/>"), so the cited text is
the last sentence before the mark. When the passage the model cited was merged from several chunks
(``SearchResult.spans``), that sentence is looked up in the passage: exactly (whitespace-tolerant, so a
quote that joined two lines still matches) when the answer quotes it — the extractive answerer always does —
otherwise the passage sentence sharing the most character bigrams with it (a model's paraphrase). The
citation then names the chunk whose span holds it (the first that holds it whole, else the one holding most
of it), with the quoted span's offsets inside that chunk for the UI to highlight.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from knora.domain.search import ChunkSpan
from knora.services.citations.stream import BEFORE_WINDOW

MIN_OVERLAP = 0.35  # a paraphrase must share this share (Dice) of character bigrams with a passage sentence
_MAX_TOKENS = 200

_TAGS = re.compile(r"(?is)<(?:kb|web|ref)\b[^>]*>")
# a sentence ends at . ! ? ; (also before a closing quote or bracket: 'said "no." Then') or a Chinese stop
_SENT_END = re.compile(r"(?<=[.!?;。！？；])\s+|(?<=[.!?;。！？；][\"'”’»）)\]])\s*|(?<=[。！？；])|\n+")
_DECOR = re.compile(r"^\s*(?:[-*+>]|\d+[.)]|#+)\s+|[*_`]+")
_PIECE = re.compile(r"[^\s.!?;。！？；][^\n.!?;。！？；]*[.!?;。！？；]*")
_NOISE = re.compile(r"[\W_]+")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Pinpoint:
    span: ChunkSpan
    quote_start: int  # offsets of the cited text inside the chunk's own text (span-relative, code points)
    quote_end: int


def cited_sentence(before: str) -> str:
    """The last sentence of the answer text before a mark (tags and Markdown decoration removed)."""
    text = _TAGS.sub(" ", before[-BEFORE_WINDOW:])
    for piece in reversed(_SENT_END.split(text)):
        s = _DECOR.sub("", piece).strip()
        if len(_NOISE.sub("", s)) > 1:
            return s
    return ""


def _token_pattern(token: str) -> str:
    """A token, with optional white space between Han characters (a quote may join two lines of Chinese)."""
    if not _HAN.search(token):
        return re.escape(token)
    return r"\s*".join(re.escape(ch) for ch in token)


def find_exact(text: str, sentence: str) -> tuple[int, int] | None:
    tokens = sentence.split()[:_MAX_TOKENS]
    if not tokens:
        return None
    m = re.search(r"\s*".join(_token_pattern(t) for t in tokens), text)
    if m is None:
        # the quote may end in punctuation the passage does not have there ("…in 1889" cited as "…in 1889,")
        trimmed = sentence.rstrip(".,;:!?。，；：！？ ")
        if trimmed and trimmed != sentence:
            return find_exact(text, trimmed)
        return None
    return m.start(), m.end()


def _bigrams(s: str) -> Counter[str]:
    flat = _NOISE.sub("", s.lower())
    return Counter(flat[i:i + 2] for i in range(len(flat) - 1))


def find_similar(text: str, sentence: str) -> tuple[int, int] | None:
    """The passage sentence most like ``sentence`` (Dice over character bigrams), if alike enough."""
    want = _bigrams(sentence)
    if not want:
        return None
    size = sum(want.values())
    best: tuple[float, int, int] | None = None
    for m in _PIECE.finditer(text):
        got = _bigrams(m.group(0))
        if not got:
            continue
        score = 2 * sum((want & got).values()) / (size + sum(got.values()))
        if best is None or score > best[0]:
            best = (score, m.start(), m.end())
    if best is None or best[0] < MIN_OVERLAP:
        return None
    return best[1], best[2]


def _choose(spans: Sequence[ChunkSpan], a: int, b: int) -> ChunkSpan | None:
    for s in spans:
        if s.start <= a and b <= s.end:
            return s
    best, most = None, 0
    for s in spans:
        overlap = min(b, s.end) - max(a, s.start)
        if overlap > most:
            best, most = s, overlap
    return best


def pinpoint(text: str, spans: Sequence[ChunkSpan], before: str) -> Pinpoint | None:
    """The source chunk (and quoted range in it) of the sentence ``before`` ends with; None when the
    sentence is not in the passage (then the citation keeps naming the passage)."""
    sentence = cited_sentence(before)
    if not sentence or not spans:
        return None
    found = find_exact(text, sentence) or find_similar(text, sentence)
    if found is None:
        return None
    a, b = found
    span = _choose(spans, a, b)
    if span is None:
        return None
    start, end = max(a, span.start) - span.start, min(b, span.end) - span.start
    return Pinpoint(span=span, quote_start=start, quote_end=max(start, end))
