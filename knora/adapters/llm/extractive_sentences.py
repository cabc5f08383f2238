"""Whole sentences out of retrieved passages, for the extractive answerer.

A passage is a chunk as the chunker cut it (or several merged): it may start and end mid-sentence, hold
Markdown headings, PDF running headers and page numbers, hard-wrapped lines and tables. ``passage_sentences``
turns it into the sentences worth quoting, each with its offsets in the passage (so a citation can point at
the quoted span):

1. *Lines* are classified: blank, page number, running header/footer (a short line repeated across the
   passages given, digits ignored, or a short line that interrupts a sentence: the line before it ends without
   punctuation and the line after it goes on in lower case), setext underline, heading, list item, table row.
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
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

_CJK_CHAR = r"\u3400-\u9fff\uf900-\ufaff"
_CJK_AT_START = re.compile(rf"^[{_CJK_CHAR}]")
_CJK_AT_END = re.compile(rf"[{_CJK_CHAR}]$")
_HAS_CJK = re.compile(rf"[{_CJK_CHAR}]")
_CLOSERS = "\"'”’」』）)]"
_END_PUNCT = re.compile(rf"[.!?。！？…][{re.escape(_CLOSERS)}]*$")
_STARTS_MID = re.compile(r"^[,;:)\]}”’，、；：）」』.]")
_MD_HEADING = re.compile(r"^#{1,6}(?:\s|$)")
_SETEXT = re.compile(r"^(?:=+|-{2,})$")
_LIST_ITEM = re.compile(r"^(?:[-*+•▪◦]\s+|\(?[0-9]{1,3}[.)]\s+|\(?[a-z][.)]\s+)")
_NUMBERED_TITLE = re.compile(r"^(?:(?:[0-9]+\.)+[0-9]*|[0-9]+|[IVXLC]+\.|[A-Z]\.)\s+(\S.*)$")
_MULTI_LEVEL = re.compile(r"^[0-9]+\.[0-9]+")
_ZH_TITLE = re.compile(r"^(?:第[一二三四五六七八九十百千0-9]+[章节条部分篇卷回]|[一二三四五六七八九十]+、|"
                       r"[（(][一二三四五六七八九十0-9]+[）)]|[0-9]+(?:\.[0-9]+)*[、.]?)\s*\S")
_ZH_PUNCT = re.compile(r"[，。！？；：、,.!?;:]")
_PAGE_NUMBER = re.compile(r"^(?:(?:page|p\.|seite|página)\s*)?[-–—]?\s*[0-9]{1,4}\s*[-–—]?"
                          r"(?:\s*(?:/|of|von|de)\s*[0-9]{1,4})?$|^[ivxlcdm]{1,6}$|"
                          r"^第\s*[0-9一二三四五六七八九十百]+\s*页(?:\s*[,，/]?\s*共\s*[0-9]+\s*页)?$", re.I)
_WORDS = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_VERBS = frozenset(["is", "are", "was", "were", "be", "been", "has", "have", "had", "do", "does", "did",
                    "can", "could", "will", "would", "should", "must", "may", "might", "shall"])
_SMALL = frozenset(["a", "an", "the", "and", "or", "nor", "of", "in", "on", "at", "to", "for", "by", "with",
                    "from", "as", "vs", "via", "per", "into", "over", "under", "de", "la", "von", "und"])
# A last sentence ending in one of these was cut by the chunker ("… you have to").
_DANGLING = frozenset(["a", "an", "the", "to", "of", "in", "on", "at", "by", "for", "with", "from", "into",
                       "and", "or", "but", "nor", "that", "which", "who", "whose", "if", "when", "than", "as",
                       "is", "are", "was", "were", "be", "been", "has", "have", "had", "do", "does", "can",
                       "will", "would", "should", "must", "may", "you", "we", "they", "it", "its", "their",
                       "your", "our", "this", "these", "such", "not", "also", "very", "so", "because"])
# A passage whose first word is one of these in lower case starts mid-sentence ("the daemon reads …", "and
# then …"); a lower-case first word that is not (a command name: "socat is a relay …") may start a sentence.
_CONTINUING = _DANGLING | frozenset(["then", "while", "where", "after", "before", "since", "until", "unless",
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
_LATIN_BOUNDARY = re.compile(rf"[.!?]+[{re.escape(_CLOSERS)}]*(?=\s+\S)")
_CJK_BOUNDARY = re.compile(rf"[。！？]+[{re.escape(_CLOSERS)}]*|(?<=[{_CJK_CHAR}])[!?]+")
_WORD_BEFORE_DOT = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")

_HEADER_WORDS = 12  # a running header, a title or a heading is a short line
_WRAPPED_LINE = 40  # a line this long that does not end a sentence was wrapped, not ended
_LONG_FRAGMENT_WORDS = 8


class LineKind(Enum):
    BLANK = "blank"
    DROPPED = "dropped"  # page number, running header/footer, setext underline, table separator
    HEADING = "heading"
    LIST = "list"
    ROW = "row"
    PROSE = "prose"


@dataclass(frozen=True)
class Line:
    text: str
    start: int  # offsets of the stripped line in the passage
    end: int
    kind: LineKind = LineKind.PROSE


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int  # offsets in the passage: content[start:end] holds the sentence (line breaks as in the source)
    end: int
    block: int  # sentences of one block (a paragraph, a list item, a row) are adjacent prose
    quotable: bool = True
    reason: str = ""  # why it is not quotable: "heading", "fragment"


# -- lines -------------------------------------------------------------------------------------------------

def is_cjk_text(text: str) -> bool:
    return bool(_HAS_CJK.search(text))


def ends_sentence(text: str) -> bool:
    return bool(_END_PUNCT.search(text.rstrip()))


def header_key(line: str) -> str:
    """The key under which running headers repeat: lower case, digits as ``#``, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"[0-9]+", "#", line.strip().lower()))


def _header_candidate(line: str) -> bool:
    """Looks like a running header or footer ("User Guide 12", "Debian Reference — Chapter 3"), not like a
    line of wrapped prose: short, no end punctuation and no sentence end inside, not starting in lower case,
    no auxiliary verb, not ending in a function word."""
    s = line.strip()
    if not s or ends_sentence(s) or s.startswith("|") or _LIST_ITEM.match(s) or _MD_HEADING.match(s):
        return False
    if is_cjk_text(s):
        return len(s) <= 30 and not re.search(r"[。！？，；]", s)
    words = s.split()
    lowered = [w.lower().strip(",;:()\"'") for w in words]
    return (len(words) <= _HEADER_WORDS and bool(re.search(r"[^\W\d_]", s)) and not s[0].islower()
            and not re.search(r"[.!?]\s", s) and not any(w in _VERBS for w in lowered)
            and lowered[-1] not in _DANGLING)


def repeated_lines(contents: Iterable[str]) -> frozenset[str]:
    """Keys of short lines that occur at least twice over the passages of one answer: running headers and
    footers (a PDF's title and page number on every page), not prose (prose ends with punctuation)."""
    counts: Counter[str] = Counter()
    for content in contents:
        counts.update(header_key(ln) for ln in content.split("\n") if _header_candidate(ln))
    return frozenset(k for k, n in counts.items() if n >= 2)


def _is_title_case(words: list[str]) -> bool:
    significant = [w for w in words if w.lower() not in _SMALL]
    return bool(significant) and all(w[0].isupper() for w in significant)


def is_heading(line: str) -> bool:
    """A heading or title line: Markdown ``#``, a numbered section title, a short title-case or upper-case
    line without a verb or end punctuation, a short Chinese line without punctuation."""
    s = line.strip()
    if _MD_HEADING.match(s):
        return True
    if not s or ends_sentence(s) or s.startswith("|"):
        return False
    if is_cjk_text(s):
        return len(s) <= 30 and (_ZH_TITLE.match(s) is not None or not _ZH_PUNCT.search(s))
    words = _WORDS.findall(s)
    if not words or len(s.split()) > _HEADER_WORDS or re.search(r":\s+\S", s):
        return False  # "Version: 2.3" is a label with its value
    if any(w.lower() in _VERBS for w in words):
        return False
    numbered = _NUMBERED_TITLE.match(s)
    if numbered:
        rest = _WORDS.findall(numbered.group(1))
        return bool(_MULTI_LEVEL.match(s)) or _is_title_case(rest) or s.isupper()
    return s.isupper() or _is_title_case(words)


def _split_lines(content: str) -> list[Line]:
    out: list[Line] = []
    pos = 0
    for raw in content.split("\n"):
        stripped = raw.strip()
        lead = len(raw) - len(raw.lstrip())
        out.append(Line(stripped, pos + lead, pos + lead + len(stripped),
                        LineKind.PROSE if stripped else LineKind.BLANK))
        pos += len(raw) + 1
    return out


_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r":?-{3,}:?")


def _cells(line: str) -> list[str] | None:
    if len(line) < 2 or not (line.startswith("|") and line.endswith("|")):
        return None
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(line[1:-1])]


def _is_separator(cells: list[str]) -> bool:
    return all(_SEPARATOR_CELL.fullmatch(c) for c in cells if c)


def _fold_tables(lines: list[Line]) -> list[Line]:
    """Markdown table rows (parsers render tables so) become rows that carry their header: "| Leeds | 41 |"
    under "| Warehouse | Shortfall |" reads "Warehouse: Leeds, Shortfall: 41", so a question naming a column
    finds the row with the value, not the header row alone. Lines like rows without a separator stay as
    they are."""
    out: list[Line] = []
    header: list[str] | None = None
    for i, ln in enumerate(lines):
        cells = _cells(ln.text)
        if cells is None:
            header = None
            out.append(ln)
            continue
        if header is None:
            following = _cells(lines[i + 1].text) if i + 1 < len(lines) else None
            if following and _is_separator(following):
                header = cells  # folded into every row below instead of quoted alone
                out.append(Line(ln.text, ln.start, ln.end, LineKind.DROPPED))
                continue
            out.append(Line(ln.text, ln.start, ln.end, LineKind.ROW))
            continue
        if _is_separator(cells):
            out.append(Line(ln.text, ln.start, ln.end, LineKind.DROPPED))
            continue
        text = ", ".join(f"{h}: {v}" if h else v for h, v in zip(header, cells, strict=False) if v)
        out.append(Line(text, ln.start, ln.end, LineKind.ROW))
    return out


_MARKUP = re.compile(r"<[^>]*>|!\[[^\]]*\]\([^)]*\)|\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)")


def _markup_only(line: str) -> bool:
    """An HTML tag line, an image or a badge: nothing to quote ("<p align=center><img …></p>")."""
    return bool(_MARKUP.search(line)) and not re.search(r"[^\W\d_]", _MARKUP.sub("", line))


def classify_lines(content: str, repeated: frozenset[str] = frozenset()) -> list[Line]:
    lines = _fold_tables(_split_lines(content))
    out: list[Line] = []
    for i, ln in enumerate(lines):
        if ln.kind is not LineKind.PROSE:
            out.append(ln)
            continue
        kind = LineKind.PROSE
        nxt = lines[i + 1].text if i + 1 < len(lines) else ""
        if _PAGE_NUMBER.match(ln.text) or _SETEXT.match(ln.text) or _markup_only(ln.text) or (
                _header_candidate(ln.text) and header_key(ln.text) in repeated):
            kind = LineKind.DROPPED
        elif _MD_HEADING.match(ln.text) or (nxt and _SETEXT.match(nxt) and not _LIST_ITEM.match(ln.text)):
            kind = LineKind.HEADING
        elif _LIST_ITEM.match(ln.text):
            kind = LineKind.LIST
        elif is_heading(ln.text):
            kind = LineKind.HEADING
        out.append(Line(ln.text, ln.start, ln.end, kind))
    return _drop_interruptions(out)


def _drop_interruptions(lines: list[Line]) -> list[Line]:
    """A short line between a line that does not end its sentence and one that goes on in lower case is a
    header or footer printed across a page break ("… you have to" / "User Guide 12" / "install it …")."""
    out = list(lines)
    for i in range(1, len(out) - 1):
        ln = out[i]
        if ln.kind not in (LineKind.PROSE, LineKind.HEADING) or not _header_candidate(ln.text):
            continue
        before = next((x for x in reversed(out[:i]) if x.kind is not LineKind.DROPPED), None)
        after = next((x for x in out[i + 1:] if x.kind is not LineKind.DROPPED), None)
        if (before is not None and after is not None and before.kind is LineKind.PROSE
                and after.kind is LineKind.PROSE and not ends_sentence(before.text)
                and after.text[:1].islower()):
            out[i] = Line(ln.text, ln.start, ln.end, LineKind.DROPPED)
    return out


# -- blocks --------------------------------------------------------------------------------------------------

def _continues(prev: Line, nxt: Line) -> bool:
    if prev.kind is not LineKind.PROSE or nxt.kind is not LineKind.PROSE or ends_sentence(prev.text):
        return False
    if _CJK_AT_END.search(prev.text) and _CJK_AT_START.search(nxt.text):
        return True
    last = prev.text.rsplit(None, 1)[-1].lower()
    return (nxt.text[:1].islower() or nxt.text[:1].isdigit() or last in _DANGLING or prev.text.endswith(",")
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
    return inline or len(words) >= _LONG_FRAGMENT_WORDS or last in _DANGLING


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
