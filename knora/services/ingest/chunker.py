"""Splits a parsed document into chunk drafts (spec §9.3): recursive splitting, protected spans, headings,
parents.

Every draft satisfies ``text[start_at:end_at] == content``: offsets are code-point positions into the
normalised document text, so a citation can always be mapped back to the source. Lengths are code points,
never bytes, so Chinese text gets chunks of the same visible size as English.

How a document is cut:
1. *Protected spans* (fenced code, ``$$…$$``, markdown images and links, table header+separator pairs and
   table rows, inline code) are found first; no cut ever falls inside one unless the span alone exceeds the
   size.
2. *Pieces*: the text is cut after each occurrence of the first separator; a piece still longer than the chunk
   size is cut by the next separator, and so on (the configured separators first, then sentence ends, spaces,
   and finally fixed-size cuts). Pieces are contiguous and cover the whole text.
3. *Merging*: consecutive pieces are packed into chunks of at most ``chunk_size``; each chunk after the first
   starts up to ``chunk_overlap`` characters before the previous chunk's end, at a word or sentence boundary.
4. *Headings* (strategy ``heading``, or ``auto`` on a markdown document with enough headings): sections are
   cut at markdown headings first, each section is split as above, its breadcrumb becomes ``context_header``,
   and tiny neighbouring sections under the same parent heading are coalesced.
5. *Parent-child*: parents (``parent_chunk_size``) are split as above and each parent is split again into
   children (``child_chunk_size``, overlap = child size / 5). Parents are ``parent_text``, children ``text``.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from knora.domain.knowledge import ChunkingConfig

# Tried after the configured separators, before fixed-size cuts, so prose without line breaks is cut between
# sentences or words rather than mid-word.
_FALLBACK_SEPARATORS = ("。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", ", ", " ")

@dataclass(frozen=True, slots=True)
class _Pattern:
    """A protected construct: its regex, the substrings one of which every match holds, and how many lines a
    match spans at most (0: any number; such a pattern is searched in one piece, if the text holds one of its
    substrings at all)."""

    regex: re.Pattern[str]
    needles: tuple[str, ...]
    lines: int


_PROTECTED_PATTERNS = (
    _Pattern(re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL),
             ("```", "~~~"), 0),  # fenced code
    _Pattern(re.compile(r"\$\$.+?\$\$", re.DOTALL), ("$$",), 0),  # display LaTeX
    _Pattern(re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)"), ("](",), 1),  # image
    _Pattern(re.compile(r"\[[^\]\n]+\]\([^)\n]*\)"), ("](",), 1),  # link
    _Pattern(re.compile(r"^[ \t]*\|.*\|[ \t]*\n[ \t]*\|[ \t:|-]*-[ \t:|-]*\|[ \t]*$", re.MULTILINE),
             ("|",), 2),  # table header + separator
    _Pattern(re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.MULTILINE), ("|",), 1),  # table row
    _Pattern(re.compile(r"`[^`\n]+`"), ("`",), 1),  # inline code
)
_HEADING = _Pattern(re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE), ("#",), 1)
# A regex search holds the GIL until it finds a match or its end: over a 50 MB text with no match that is a
# quarter of a second in which the server's event loop (chat) cannot run. Line-bounded patterns are searched
# window by window instead, each window ending at a line break.
_WINDOW = 256 * 1024
_PUNCT_BOUNDARY = set(" \t\n。！？；，、,.;:!?)]}»”’")


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF \
        or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FA1F


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it has ids: ``text[start_at:end_at] == content`` for the text it was split from."""

    content: str
    chunk_index: int
    start_at: int
    end_at: int
    chunk_type: Literal["text", "parent_text"] = "text"
    parent_index: int | None = None  # position of the parent draft in the returned list (parent-child mode)
    context_header: str = ""


def _line_end(text: str, pos: int) -> int:
    """The position just after the line break at or after ``pos`` (the text's end when there is none)."""
    nl = text.find("\n", pos)
    return len(text) if nl == -1 else nl + 1


def _holds(text: str, needles: tuple[str, ...]) -> bool:
    """``any(n in text for n in needles)``, window by window (one ``in`` over 50 MB holds the GIL ~70 ms)."""
    width = max(len(n) for n in needles) - 1
    return any(text.find(n, start, start + _WINDOW + width) != -1
               for start in range(0, len(text), _WINDOW) for n in needles)


def _matches(pattern: _Pattern, text: str) -> Iterator[re.Match[str]]:
    """``pattern``'s matches in ``text``, in order, found in line-aligned windows when it allows."""
    if len(text) <= _WINDOW:
        yield from pattern.regex.finditer(text)
        return
    if pattern.lines == 0:
        if _holds(text, pattern.needles):
            yield from pattern.regex.finditer(text)
        return
    start = 0
    while start < len(text):
        end = _line_end(text, start + _WINDOW)
        # a match starting on the window's last lines may run into the next window's first ones
        reach = end
        for _ in range(pattern.lines - 1):
            reach = _line_end(text, reach)
        for m in pattern.regex.finditer(text, start, reach):
            if m.start() >= end:
                break
            yield m
        start = end


class _Spans:
    """Sorted, disjoint protected spans with O(log n) 'is this position inside one' lookups."""

    def __init__(self, text: str) -> None:
        raw = sorted((m.start(), m.end()) for p in _PROTECTED_PATTERNS for m in _matches(p, text)
                     if m.end() > m.start())
        merged: list[tuple[int, int]] = []
        for s, e in raw:
            if merged and s < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        self.spans = merged
        self.starts = [s for s, _ in merged]

    def containing(self, pos: int) -> tuple[int, int] | None:
        """The span with start < pos < end (a cut at pos would split it), if any."""
        i = bisect.bisect_right(self.starts, pos) - 1
        if i >= 0:
            s, e = self.spans[i]
            if s < pos < e:
                return s, e
        return None


def _cut_by(text: str, start: int, end: int, sep: str, spans: _Spans) -> list[int]:
    """Cut positions (after each ``sep``) strictly inside (start, end), skipping those inside protected
    spans."""
    cuts: list[int] = []
    pos = text.find(sep, start, end)
    while pos != -1:
        cut = pos + len(sep)
        if start < cut < end and spans.containing(cut) is None and spans.containing(pos) is None:
            cuts.append(cut)
        pos = text.find(sep, cut, end)
    return cuts


def _hard_cuts(start: int, end: int, size: int, spans: _Spans) -> list[int]:
    """Fixed-size cuts, moved to a protected span's edge when they would fall inside one."""
    cuts: list[int] = []
    pos = start
    while end - pos > size:
        cut = pos + size
        span = spans.containing(cut)
        if span is not None:
            cut = span[0] if span[0] > pos else span[1]
        if cut >= end:
            break
        cuts.append(cut)
        pos = cut
    return cuts


def _pieces(text: str, start: int, end: int, size: int, seps: tuple[str, ...],
            spans: _Spans) -> list[tuple[int, int]]:
    """Contiguous pieces covering [start, end), each ≤ size unless it is (part of) an oversize protected
    span."""
    if end - start <= size:
        return [(start, end)]
    for level, sep in enumerate(seps):
        cuts = _cut_by(text, start, end, sep, spans)
        if not cuts:
            continue
        out: list[tuple[int, int]] = []
        bounds = [start, *cuts, end]
        for s, e in itertools.pairwise(bounds):
            out.extend(_pieces(text, s, e, size, seps[level + 1:], spans))
        return out
    cuts = _hard_cuts(start, end, size, spans)
    bounds = [start, *cuts, end]
    return list(itertools.pairwise(bounds))


def _overlap_start(text: str, prev_end: int, lower: int, spans: _Spans) -> int:
    """Earliest word/sentence boundary in [lower, prev_end) outside protected spans; prev_end if there is
    none."""
    for pos in range(max(lower, 1), prev_end):
        if spans.containing(pos) is not None:
            continue
        before, here = text[pos - 1], text[pos]
        if here.isspace():
            continue
        if before in _PUNCT_BOUNDARY or before.isspace() or _is_cjk(before) or _is_cjk(here):
            return pos
    return prev_end


def _strip_range(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _split_range(text: str, start: int, end: int, size: int, overlap: int, seps: tuple[str, ...],
                 spans: _Spans) -> list[tuple[int, int]]:
    """The recursive (legacy) splitter over text[start:end]: stripped (start, end) ranges of the chunks."""
    pieces = _pieces(text, start, end, size, seps, spans)
    ranges: list[tuple[int, int]] = []
    i, chunk_start = 0, start
    while i < len(pieces):
        j, chunk_end = i, pieces[i][0]
        while j < len(pieces) and pieces[j][1] - chunk_start <= size:
            chunk_end = pieces[j][1]
            j += 1
        if j == i:  # the piece does not fit even alone: an oversize protected span
            chunk_start, chunk_end, j = pieces[i][0], pieces[i][1], i + 1
        s, e = _strip_range(text, chunk_start, chunk_end)
        if e > s and (not ranges or e > ranges[-1][1]):
            ranges.append((s, e))
        i = j
        if i < len(pieces):
            # Overlap: start before the previous end, but leave room for the next piece within the size.
            # Past the previous chunk's stripped start too, or leading whitespace could let the next chunk
            # start where the previous one did (and contain it whole).
            lower = max(chunk_end - overlap, pieces[i][1] - size, chunk_start + 1,
                        ranges[-1][0] + 1 if ranges else 0)
            chunk_start = _overlap_start(text, chunk_end, lower, spans) if overlap > 0 else chunk_end
    return ranges


def _separators(config: ChunkingConfig) -> tuple[str, ...]:
    seps = [s for s in config.separators if s]
    return tuple(seps + [s for s in _FALLBACK_SEPARATORS if s not in seps])


@dataclass(frozen=True, slots=True)
class _Section:
    start: int
    end: int
    path: tuple[str, ...]


def _headings(text: str, spans: _Spans) -> list[tuple[int, int, str]]:
    """(position, level, title) of markdown ATX headings outside protected spans (e.g. code fences)."""
    return [(m.start(), len(m.group(1)), m.group(2).strip()) for m in _matches(_HEADING, text)
            if spans.containing(m.start()) is None and spans.containing(m.start() + 1) is None]


def _use_headings(config: ChunkingConfig, headings: list[tuple[int, int, str]], text: str) -> bool:
    strategy = (config.strategy or "").lower()
    if strategy == "heading":
        return bool(headings)
    if strategy in ("", "recursive", "legacy", "heuristic"):
        return False
    # auto (or unknown): a document with a real heading structure (spec: ≥3 headings, density > 0.005)
    lines = text.count("\n") + 1
    return len(headings) >= 3 and len(headings) / lines > 0.005


def _sections(text: str, headings: list[tuple[int, int, str]]) -> list[_Section]:
    out: list[_Section] = []
    if headings and headings[0][0] > 0:
        out.append(_Section(0, headings[0][0], ()))
    stack: list[tuple[int, str]] = []
    for k, (pos, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = headings[k + 1][0] if k + 1 < len(headings) else len(text)
        out.append(_Section(pos, end, tuple(t for _, t in stack)))
    return out


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _split_headings(text: str, start: int, end: int, size: int, overlap: int, seps: tuple[str, ...],
                    spans: _Spans, headings: list[tuple[int, int, str]]) -> list[tuple[int, int,
                                                                                       tuple[str, ...]]]:
    """Heading splitter: sections → legacy split when oversize → coalesce tiny siblings (spec §9.3)."""
    inside = [h for h in headings if start <= h[0] < end]
    pieces: list[tuple[int, int, tuple[str, ...], bool]] = []  # (start, end, breadcrumb, whole section?)
    for sec in _sections(text, inside) if inside else [_Section(start, end, ())]:
        s, e = max(sec.start, start), min(sec.end, end)
        ranges = _split_range(text, s, e, size, overlap, seps, spans)
        pieces.extend((rs, re_, sec.path, len(ranges) == 1) for rs, re_ in ranges)
    # Coalesce whole tiny sections under a shared parent heading; pieces of a re-split section stay as they
    # are.
    tiny = max(size // 2, 200)
    merged: list[tuple[int, int, tuple[str, ...], bool]] = []
    for s, e, path, whole in pieces:
        if merged:
            ps, pe, ppath, pwhole = merged[-1]
            prefix = _common_prefix(ppath, path)
            if (whole and pwhole and pe <= s and pe - ps < tiny and e - ps <= size and prefix
                    and len(prefix) >= len(ppath) - 1):
                merged[-1] = (ps, e, prefix, True)
                continue
        merged.append((s, e, path, whole))
    return [(s, e, path) for s, e, path, _ in merged]


def _split(text: str, start: int, end: int, size: int, overlap: int, config: ChunkingConfig,
           spans: _Spans, headings: list[tuple[int, int, str]], use_headings: bool,
           base_path: tuple[str, ...] = ()) -> list[tuple[int, int, str]]:
    seps = _separators(config)
    if use_headings:
        parts = _split_headings(text, start, end, size, overlap, seps, spans, headings)
    else:
        parts = [(s, e, ()) for s, e in _split_range(text, start, end, size, overlap, seps, spans)]
    out: list[tuple[int, int, str]] = []
    for s, e, path in parts:
        full = base_path + tuple(p for p in path if p not in base_path)
        out.append((s, e, " > ".join(full)))
    return out


def _regions(text: str, cuts: Sequence[int]) -> list[tuple[int, int]]:
    """``[0, len(text))`` cut at ``cuts`` (a document's page, slide or attachment boundaries): no chunk
    crosses one, so every chunk belongs to one page. Blank regions (the separators between pages) go."""
    bounds = sorted({0, len(text), *(c for c in cuts if 0 < c < len(text))})
    return [(s, e) for s, e in itertools.pairwise(bounds) if text[s:e].strip()]


def config_for_format(config: ChunkingConfig, fmt: str) -> ChunkingConfig:
    """The configuration a document of parser format ``fmt`` is split with: source code has no markdown
    headings, so its ``# comment`` lines (Python, shell, YAML, Ruby …) must not cut it into "sections"."""
    if fmt == "code" and (config.strategy or "").lower() not in ("", "recursive", "legacy", "heuristic"):
        return config.model_copy(update={"strategy": "recursive"})
    return config


def split_document(text: str, config: ChunkingConfig, cuts: Sequence[int] = ()) -> list[ChunkDraft]:
    """Chunk drafts for ``text`` per ``config`` (normalised first); [] for blank text. ``cuts`` are
    offsets no chunk may cross (page, slide and attachment boundaries)."""
    cfg = config.normalised()
    if not text.strip():
        return []
    spans = _Spans(text)
    headings = _headings(text, spans)
    use_headings = _use_headings(cfg, headings, text)
    regions = _regions(text, cuts)
    if not cfg.enable_parent_child:
        parts = [part for rs, re_ in regions
                 for part in _split(text, rs, re_, cfg.chunk_size, cfg.chunk_overlap, cfg, spans, headings,
                                    use_headings)]
        return [ChunkDraft(content=text[s:e], chunk_index=i, start_at=s, end_at=e, context_header=h)
                for i, (s, e, h) in enumerate(parts)]

    parent_size = cfg.parent_chunk_size
    child_size = cfg.child_chunk_size
    child_overlap = max(child_size // 5, 0)
    drafts: list[ChunkDraft] = []
    child_no = 0
    parents = [part for rs, re_ in regions
               for part in _split(text, rs, re_, parent_size, min(cfg.chunk_overlap, parent_size // 2), cfg,
                                  spans, headings, use_headings)]
    for p_no, (ps, pe, header) in enumerate(parents):
        parent_pos = len(drafts)
        drafts.append(ChunkDraft(content=text[ps:pe], chunk_index=p_no, start_at=ps, end_at=pe,
                                 chunk_type="parent_text", context_header=header))
        base = tuple(header.split(" > ")) if header else ()
        for cs, ce, ch in _split(text, ps, pe, child_size, child_overlap, cfg, spans, headings, use_headings,
                                 base):
            drafts.append(ChunkDraft(content=text[cs:ce], chunk_index=child_no, start_at=cs, end_at=ce,
                                     chunk_type="text", parent_index=parent_pos, context_header=ch))
            child_no += 1
    return drafts
