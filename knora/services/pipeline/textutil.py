"""Shared text utilities of the pipeline (spec §2.18): signatures, dedup, tokenisation, overlap joins.

Lengths are code points (Go runes) unless a rule says bytes; the byte rules use ``len(s.encode())``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache

from knora.domain.search import SearchResult

_WS = re.compile(r"\s+")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]+)\)")
HTML_IMAGE_SRC = re.compile(r"""(?i)<img\b([^>]*?)\ssrc\s*=\s*['"]([^'"]+)['"]([^>]*)>""")
MIN_JOIN_OVERLAP = 12
MAX_JOIN_OVERLAP = 400


@lru_cache(maxsize=4096)
def normalize_content(s: str) -> str:
    """Lower-cased, whitespace collapsed. Cached: one turn normalises the same passages for each dedup
    pass."""
    return _WS.sub(" ", s.lower().strip())


@lru_cache(maxsize=4096)
def content_signature(s: str) -> str:
    norm = normalize_content(s)
    return hashlib.md5(norm.encode("utf-8")).hexdigest() if norm else ""


def remove_duplicate_results(results: Iterable[SearchResult]) -> list[SearchResult]:
    """Drop a result whose id, or (non-empty) content signature, was already seen; first occurrence wins."""
    seen_ids: set[str] = set()
    seen_sigs: set[str] = set()
    out: list[SearchResult] = []
    for r in results:
        if r.id in seen_ids:
            continue
        sig = content_signature(r.content)
        if sig and sig in seen_sigs:
            continue
        seen_ids.add(r.id)
        if sig:
            seen_sigs.add(sig)
        out.append(r)
    return out


_WORDISH = re.compile(r"[^\W_]")


def _is_symbolic(token: str) -> bool:
    """Only punctuation, symbols and spaces (a fast test: no letter or digit; marks alone are rare enough)."""
    if token.isalnum():  # [^\W_] is exactly str.isalnum per character: the common all-letters token
        return False
    return _WORDISH.search(token) is None


@lru_cache(maxsize=4096)
def _tokenize_cached(text: str) -> frozenset[str]:
    s = text.lower().strip()
    if _HAN.search(s):
        import jieba

        raw: Iterable[str] = jieba.cut_for_search(s, HMM=True)
    else:
        # De-duplicated before the per-token test (the resulting set is the same), and ``_is_symbolic``
        # inlined: this runs for every passage of every turn (merge's overlap removal).
        return frozenset([t for t in set(s.split())
                          if len(t) > 1 and (t.isalnum() or _WORDISH.search(t) is not None)])
    return frozenset(t for t in raw if len(t) > 1 and not _is_symbolic(t))


def tokenize_simple(text: str) -> frozenset[str]:
    """Spec §2.18 ``TokenizeSimple``: jieba search mode on text with Han characters, else whitespace split."""
    return _tokenize_cached(text)


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 0.0
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def content_overlap_ratio(a: str, b: str) -> float:
    ta, tb = tokenize_simple(a), tokenize_simple(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / min(len(ta), len(tb))


def is_content_contained(short: str, long: str) -> bool:
    return bool(short) and bool(long) and len(short) <= len(long) and short in long


def contains_chunk_content(container: str, contained: str) -> bool:
    if container == contained:
        return True
    return len(contained) >= MIN_JOIN_OVERLAP and contained in container


def join_chunk_content(acc: str, nxt: str, sep: str = "\n\n") -> str:
    """Join two chunk texts, collapsing containment and the longest suffix/prefix overlap (12–400 runes)."""
    if not acc:
        return nxt
    if not nxt:
        return acc
    if contains_chunk_content(acc, nxt):
        return acc
    if contains_chunk_content(nxt, acc):
        return nxt
    k = _longest_overlap(acc, nxt, min(len(acc), len(nxt), MAX_JOIN_OVERLAP))
    return acc + nxt[k:] if k else acc + sep + nxt


def _longest_overlap(acc: str, nxt: str, max_k: int) -> int:
    """The largest k in [MIN_JOIN_OVERLAP, max_k] with ``acc[-k:] == nxt[:k]``, else 0.

    Any such k puts ``nxt[:MIN_JOIN_OVERLAP]`` at ``len(acc) - k``, so only the places where that prefix
    occurs in the tail are checked (leftmost first = largest k) instead of comparing every k."""
    if max_k < MIN_JOIN_OVERLAP:
        return 0
    start = len(acc) - max_k
    head = nxt[:MIN_JOIN_OVERLAP]
    pos = acc.find(head, start)
    while pos != -1 and len(acc) - pos >= MIN_JOIN_OVERLAP:
        k = len(acc) - pos
        if acc[pos:] == nxt[:k]:
            return k
        pos = acc.find(head, pos + 1)
    return 0


def append_with_exact_overlap(acc: str, nxt: str, overlap: int) -> str | None:
    if overlap == 0:
        return acc + nxt
    if overlap < 0 or overlap > len(acc) or overlap > len(nxt):
        return None
    return acc + nxt[overlap:] if acc[-overlap:] == nxt[:overlap] else None


def append_with_overlap(acc: str, nxt: str, position_overlap: int) -> str:
    if position_overlap <= 0:
        return acc + nxt
    max_k = min(len(acc), len(nxt), max(3 * position_overlap, MAX_JOIN_OVERLAP))
    max_pos = max(2 * position_overlap, 320)
    for k in range(max_k, MIN_JOIN_OVERLAP - 1, -1):
        pos = nxt.find(acc[-k:])
        if 0 <= pos <= max_pos:
            return acc + nxt[pos + k:]
    return acc + nxt


def sort_key(r: SearchResult) -> tuple[float, str, str, int, str]:
    """Spec §2.14 deterministic order: score desc, knowledge id, chunk type, chunk index, id."""
    return (-r.score, r.knowledge_id, r.chunk_type, r.chunk_index, r.id)


def sort_deterministically(results: Iterable[SearchResult]) -> list[SearchResult]:
    return sorted(results, key=sort_key)


def is_web(r: SearchResult) -> bool:
    return r.chunk_type.lower() == "web_search" or r.knowledge_source.lower() == "web_search"


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


def truncate_utf8(s: str, limit: int) -> str:
    """Cut at ``limit`` bytes without splitting a character (Go would split; Knora never emits broken
    text)."""
    data = s.encode("utf-8")
    return s if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")
