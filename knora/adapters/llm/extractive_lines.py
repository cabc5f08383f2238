"""Lines of a retrieved passage, classified for the extractive answerer (``extractive_sentences``).

Page numbers, setext underlines, table separators, markup-only lines and running headers/footers (a short
header-looking line repeated across the passages given, digits ignored, or one that interrupts a sentence
across a page break) are dropped; headings (Markdown ``#``, numbered section titles, short title-case or
upper-case lines without a verb or end punctuation, short Chinese lines without punctuation), list items and
table rows (folded with their header) are told apart from prose.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

CJK_CHAR = r"\u3400-\u9fff\uf900-\ufaff"
_HAS_CJK = re.compile(rf"[{CJK_CHAR}]")
CLOSERS = "\"'”’」』）)]"
_END_PUNCT = re.compile(rf"[.!?。！？…][{re.escape(CLOSERS)}]*$")
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
DANGLING = frozenset(["a", "an", "the", "to", "of", "in", "on", "at", "by", "for", "with", "from", "into",
                       "and", "or", "but", "nor", "that", "which", "who", "whose", "if", "when", "than", "as",
                       "is", "are", "was", "were", "be", "been", "has", "have", "had", "do", "does", "can",
                       "will", "would", "should", "must", "may", "you", "we", "they", "it", "its", "their",
                       "your", "our", "this", "these", "such", "not", "also", "very", "so", "because"])
_HEADER_WORDS = 12  # a running header, a title or a heading is a short line


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
            and lowered[-1] not in DANGLING)


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
        elif _LIST_ITEM.match(ln.text):  # "2. Configuration" is a section title, "2. Run make." a step
            numbered_title = ln.text[:1].isdigit() and is_heading(ln.text)
            kind = LineKind.HEADING if numbered_title else LineKind.LIST
        elif is_heading(ln.text):
            kind = LineKind.HEADING
        out.append(Line(ln.text, ln.start, ln.end, kind))
    return _drop_interruptions(out)


def _drop_interruptions(lines: list[Line]) -> list[Line]:
    """A short line between a line that does not end its sentence and one that goes on in lower case is a
    header or footer printed across a page break ("… you have to" / "User Guide 12" / "install it …")."""
    following: list[Line | None] = [None] * len(lines)  # the next line that is not dropped, one pass back
    nxt: Line | None = None
    for i in range(len(lines) - 1, -1, -1):
        following[i] = nxt
        if lines[i].kind is not LineKind.DROPPED:
            nxt = lines[i]
    out: list[Line] = []
    before: Line | None = None
    for i, ln in enumerate(lines):
        after = following[i]
        if (ln.kind in (LineKind.PROSE, LineKind.HEADING) and before is not None and after is not None
                and before.kind is LineKind.PROSE and after.kind is LineKind.PROSE
                and not ends_sentence(before.text) and after.text[:1].islower()
                and _header_candidate(ln.text)):
            ln = Line(ln.text, ln.start, ln.end, LineKind.DROPPED)
        if ln.kind is not LineKind.DROPPED:
            before = ln
        out.append(ln)
    return out
