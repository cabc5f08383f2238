"""Whole sentences out of retrieved passages, for the extractive answerer.

A passage is a chunk as the chunker cut it (or several merged): it may start and end mid-sentence, hold
Markdown headings, PDF running headers and page numbers, hard-wrapped lines and tables. ``passage_sentences``
turns it into the sentences worth quoting, each with its offsets in the passage (so a citation can point at
the quoted span):

1. *Lines* are classified (``extractive_lines``): blank, page number, running header/footer (a short line
   repeated across the passages given, digits ignored, or a short line that interrupts a sentence: the line
   before it ends without punctuation and the line after it goes on in lower case), setext underline,
   heading, list item, table row, markup only.
2. *Blocks*: hard-wrapped prose lines are joined back (a line that does not end a sentence, followed by a line
   that continues in lower case, or a long wrapped line), so a sentence is never cut at a line break.
3. *Sentences*: blocks are split after ``. ! ?`` followed by space and after ``。！？`` (closing quotes kept),
   but not after an abbreviation (``e.g.``, ``Dr.``, ``U.S.``, an initial ``J.``) nor before a lower-case
   word; decimals (``3.5``) have no space after the dot and never split. Semicolons do not end a sentence.
4. *Filters* (``Sentence.quotable``): headings (Markdown ``#``, setext, numbered section titles, short
   title-case or upper-case lines without a verb or end punctuation, short Chinese lines without punctuation),
   and fragments: the first sentence of a passage that starts mid-sentence (lower case or continuing
   punctuation) and a last sentence the chunker cut (no end punctuation and inline after a sentence, long, or
   ending in a function word or a comma). Table rows (folded with their header) and list items are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from knora.adapters.llm.extractive_lines import (
    CJK_CHAR,
    CLOSERS,
    DANGLING,
    Line,
    LineKind,
    classify_lines,
    ends_sentence,
    is_cjk_text,
    repeated_lines,
)

_CJK_AT_START = re.compile(rf"^[{CJK_CHAR}]")
_CJK_AT_END = re.compile(rf"[{CJK_CHAR}]$")
_STARTS_MID = re.compile(r"^[,;:)\]}”’，、；：）」』.]")
# A passage whose first word is one of these in lower case starts mid-sentence ("the daemon reads …", "and
# then …"); a lower-case first word that is not (a command name: "socat is a relay …") may start a sentence.
_CONTINUING = DANGLING | frozenset(["then", "while", "where", "after", "before", "since", "until", "unless",
                                     "although", "though", "however", "therefore", "thus", "whereas", "or",
                                     "between", "through", "during", "without", "within", "about", "over",
                                     "under", "he", "she", "his", "her", "them", "there", "those", "what",
                                     "how", "whether", "only", "even", "just", "all", "each", "both",
                                     "either", "neither", "more", "most", "less", "other", "another",
                                     "same", "being"])
_ABBREVIATIONS = frozenset(["e.g", "i.e", "cf", "vs", "viz", "al", "approx", "ca", "dr", "mr", "mrs", "ms",
                            "prof", "st", "mt", "jr", "sr", "no", "nos", "fig", "figs", "eq", "vol", "pp",
                            "ch", "sec", "art", "gen", "col", "lt", "sgt", "capt", "gov", "sen", "rep", "rev",
                            "hon", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
                            "nov", "dec", "u.s", "u.k", "u.n", "a.m", "p.m", "ph.d", "b.c", "a.d", "d.c"])
_LATIN_BOUNDARY = re.compile(rf"[.!?]+[{re.escape(CLOSERS)}]*(?=\s+\S)")
_CJK_BOUNDARY = re.compile(rf"[。！？]+[{re.escape(CLOSERS)}]*|(?<=[{CJK_CHAR}])[!?]+")
_WORD_BEFORE_DOT = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")

_WRAPPED_LINE = 40  # a line this long that does not end a sentence was wrapped, not ended
_LONG_FRAGMENT_WORDS = 8


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int  # offsets in the passage: content[start:end] holds the sentence (line breaks as in the source)
    end: int
    block: int  # sentences of one block (a paragraph, a list item, a row) are adjacent prose
    quotable: bool = True
    reason: str = ""  # why it is not quotable: "heading", "fragment"


# -- blocks --------------------------------------------------------------------------------------------------

def _continues(prev: Line, nxt: Line) -> bool:
    if prev.kind is not LineKind.PROSE or nxt.kind is not LineKind.PROSE or ends_sentence(prev.text):
        return False
    if _CJK_AT_END.search(prev.text) and _CJK_AT_START.search(nxt.text):
        return True
    last = prev.text.rsplit(None, 1)[-1].lower()
    return (nxt.text[:1].islower() or nxt.text[:1].isdigit() or last in DANGLING or prev.text.endswith(",")
            or (len(prev.text) >= _WRAPPED_LINE and not prev.text.endswith(":")))


@dataclass
class _Block:
    kind: LineKind
    text: str
    where: list[int]  # where[i] = the passage offset of text[i]
    first: bool  # the passage's first non-dropped line is in it


def _blocks(lines: list[Line]) -> list[_Block]:
    blocks: list[_Block] = []
    last: Line | None = None
    for ln in lines:
        if ln.kind is LineKind.DROPPED:
            continue
        if ln.kind is LineKind.BLANK:
            last = None
            continue
        if ln.kind is LineKind.ROW:  # a folded row is not the source text: it maps to the whole line
            where = [ln.start] * (len(ln.text) - 1) + [ln.end - 1]
        else:
            where = list(range(ln.start, ln.start + len(ln.text)))
        if last is not None and blocks and _continues(last, ln):
            b = blocks[-1]
            if b.text.endswith("-") and b.text[-2:-1].isalpha() and ln.text[:1].islower():
                b.text, b.where = b.text[:-1], b.where[:-1]  # "instal-" + "lation"
            elif not (_CJK_AT_END.search(b.text) and _CJK_AT_START.search(ln.text)):
                b.text += " "
                b.where.append(ln.start - 1)
            b.text += ln.text
            b.where.extend(where)
        else:
            blocks.append(_Block(ln.kind, ln.text, where, first=not blocks))
        last = ln
    return blocks


# -- sentences -----------------------------------------------------------------------------------------------

def _latin_boundary(text: str, m: re.Match[str]) -> bool:
    """Is the end of ``m`` (``.``/``!``/``?`` before a space) a sentence end?"""
    nxt = text[m.end():].lstrip()[:1]
    if nxt.islower():
        return False  # "e.g. a file", "approx. five", "Yahoo! is"
    if m.group(0)[0] != ".":
        return True
    word = _WORD_BEFORE_DOT.search(text[: m.start() + 1])
    if word is None:
        return True
    w = word.group(1)
    if w.lower().rstrip(".") in _ABBREVIATIONS:
        return False  # "Dr. Smith", "U.S. Army", "No. 5"
    if len(w) == 1 and w.isupper():
        return False  # an initial: "John F. Kennedy", "J. R. R. Tolkien"
    return not (len(w) > 1 and "." in w and all(len(p) <= 2 for p in w.split(".")))  # "U.K." not listed


def split_block(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence in ``text``."""
    cuts: set[int] = {m.end() for m in _CJK_BOUNDARY.finditer(text)}
    cuts |= {m.end() for m in _LATIN_BOUNDARY.finditer(text) if _latin_boundary(text, m)}
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in sorted(cuts) + [len(text)]:
        piece = text[start:cut]
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            spans.append((start + lead, start + lead + len(piece.strip())))
        start = cut
    return spans


def starts_mid_sentence(text: str) -> bool:
    """Does the text begin inside a sentence: continuing punctuation, or a lower-case function word?"""
    s = text.lstrip()
    if _STARTS_MID.match(s):
        return True
    first = re.match(r"[a-z]+", s)
    if first is None or first.group(0) not in _CONTINUING:
        return False
    return not s[first.end():first.end() + 1].isalnum()


def _cut_at_end(text: str, inline: bool) -> bool:
    """A passage's last sentence the chunker cut: no end punctuation and inline after a sentence, long, or
    ending in a function word or a comma."""
    s = text.rstrip()
    if ends_sentence(s) or s.endswith(":"):
        return False
    if s.endswith((",", "，", "、", ";", "；", "-", "(", "—")):
        return True
    if is_cjk_text(s):
        return inline or len(s) >= 30 or bool(re.search(r"[，,、]", s))  # a title has no comma
    words = s.split()
    last = re.sub(r"[^\w'’]", "", words[-1].lower()) if words else ""
    return inline or len(words) >= _LONG_FRAGMENT_WORDS or last in DANGLING


def _is_fragment(text: str, first_cut: bool, last: bool, *, inline: bool) -> bool:
    return first_cut or (last and _cut_at_end(text, inline))


def passage_sentences(content: str, repeated: frozenset[str] = frozenset()) -> list[Sentence]:
    """Every sentence of the passage in order, each marked ``quotable`` or not (and why)."""
    blocks = _blocks(classify_lines(content, repeated))
    starts_mid = bool(blocks) and blocks[0].kind is LineKind.PROSE and starts_mid_sentence(blocks[0].text)
    out: list[Sentence] = []
    for b_index, b in enumerate(blocks):
        spans = split_block(b.text) if b.kind in (LineKind.PROSE, LineKind.LIST) else [(0, len(b.text))]
        for j, (s, e) in enumerate(spans):
            text = b.text[s:e]
            reason = ""
            if b.kind is LineKind.HEADING:
                reason = "heading"
            elif b.kind is LineKind.PROSE and _is_fragment(text, starts_mid and b.first and j == 0,
                                                           b_index == len(blocks) - 1 and j == len(spans) - 1,
                                                           inline=j > 0):
                reason = "fragment"
            out.append(Sentence(text=text, start=b.where[s], end=b.where[e - 1] + 1, block=b_index,
                                quotable=not reason, reason=reason))
    return out


def quotable_sentences(contents: Sequence[str]) -> list[list[tuple[int, Sentence]]]:
    """(index among the passage's sentences, sentence) of the quotable sentences of each passage; running
    headers are found across all of them."""
    repeated = repeated_lines(contents)
    return [[(i, s) for i, s in enumerate(passage_sentences(c, repeated)) if s.quotable] for c in contents]


def split_sentences(text: str) -> list[str]:
    """All sentences of ``text`` (headings and fragments included), table rows folded with their header."""
    return [s.text for s in passage_sentences(text) if len(s.text) > 1]
