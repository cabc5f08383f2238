"""Page layout rules for the PDF parser, apart from any PDF library: is a text layer usable, which lines are
running headers or footers, in what order a page's lines are read.

Positions are fractions of the page height from the top (0 = top edge, 1 = bottom edge), so text-layer lines
(PDF points) and OCR lines (pixels of a rendered page) are judged alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# A line whose top is this close to the page's top edge (or bottom to the bottom edge) may be a running header
# (footer). 8% of an A4 page is ~67 pt: the usual header and footer margins.
EDGE_BAND = 0.08
# Running headers are judged on the few outermost lines of each page only.
EDGE_LINES = 2
# Documents shorter than this keep every line: with one or two pages, a repeated line is as likely body text.
MIN_PAGES_FOR_REPEATS = 3
# A line counts as running when it repeats (after normalisation) at the edge of this many pages: three, not a
# share of the document, because books change their running head with each chapter.
MIN_REPEATS = 3


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a page, with its vertical extent as fractions of the page height from the top."""

    text: str
    top: float
    bottom: float
    left: float = 0.0  # fractions of the page width from the left edge
    right: float = 1.0


@dataclass(frozen=True)
class TextQuality:
    letters: int  # letters and digits (any script: CJK counts)
    usable: bool
    reason: str  # why not usable ("no text layer", "text layer is mostly garbage")


_PAGE_WORDS = r"(?:page|p\.?|pg\.?|seite|página|pagina|第)"
_NUMBER_ONLY = re.compile(rf"^[\W_]*{_PAGE_WORDS}?\s*#\s*(?:(?:of|/|von|de|页|共)\s*#)?\s*页?[\W_]*$",
                          re.IGNORECASE)
_ROMAN = re.compile(r"^[\W_]*[ivxlcdm]{1,7}[\W_]*$", re.IGNORECASE)


def edge_key(text: str) -> str:
    """The form in which a running header or footer repeats: numbers become ``#`` ("Page 3 of 10" and "Page
    4 of 10" are one line), case and spacing do not matter, and a bare roman page number is a number."""
    key = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().lower()
    if _ROMAN.match(key):
        return "#"
    key = re.sub(r"\d+", "#", key)
    return "#" if _NUMBER_ONLY.match(key) else key


def quality(text: str) -> TextQuality:
    """Whether a page's text layer is worth keeping: empty, or mostly replacement characters, private-use
    glyphs, control characters, stray symbols or mojibake (a font without a Unicode map), is not — the page
    is then read by OCR instead. Punctuation is not garbage: a table of contents is mostly dot leaders."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return TextQuality(0, False, "no text layer")
    letters = sum(1 for c in chars if c.isalnum())
    bad = sum(1 for c in chars if _is_bad(c))
    odd = sum(1 for c in chars if not c.isalnum() and not c.isascii()
              and not unicodedata.category(c).startswith("P"))
    latin_sup = sum(1 for c in chars if "\u00c0" <= c <= "\u00ff")
    ascii_letters = sum(1 for c in chars if c.isascii() and c.isalpha())
    n = len(chars)
    garbage = (bad / n > 0.1 or odd / n > 0.3 or letters / n < 0.1
               or (latin_sup / n > 0.3 and ascii_letters < latin_sup))
    if garbage:
        return TextQuality(letters, False, "text layer is mostly garbage")
    return TextQuality(letters, True, "")


def _is_bad(c: str) -> bool:
    if c in "\ufffd\ufffe\uffff":
        return True
    category = unicodedata.category(c)
    return category in ("Co", "Cn", "Cs") or (category == "Cc")


def reading_order(lines: Sequence[Line]) -> list[Line]:
    """The content stream's order (the producer's reading order, columns included), except that lines in
    the top and bottom bands go first and last, top to bottom: a footer drawn before the body is not read
    first."""
    top = sorted((ln for ln in lines if ln.top < EDGE_BAND), key=lambda ln: ln.top)
    bottom = sorted((ln for ln in lines if ln.bottom > 1 - EDGE_BAND and ln.top >= EDGE_BAND),
                    key=lambda ln: ln.top)
    edge = {id(ln) for ln in (*top, *bottom)}
    return [*top, *(ln for ln in lines if id(ln) not in edge), *bottom]


def edge_lines(lines: Sequence[Line]) -> list[Line]:
    """The lines that could be a running header or footer on this page: the outermost few lines, when they
    sit in the top or bottom band."""
    by_top = sorted(lines, key=lambda ln: ln.top)
    picked = [ln for ln in by_top[:EDGE_LINES] if ln.top < EDGE_BAND]
    picked += [ln for ln in by_top[-EDGE_LINES:] if ln.bottom > 1 - EDGE_BAND and ln not in picked]
    return picked


def edge_candidates(lines: Sequence[Line]) -> set[str]:
    """Keys of this page's ``edge_lines``."""
    return {edge_key(ln.text) for ln in edge_lines(lines) if ln.text.strip()}


def running_keys(pages: Sequence[set[str]]) -> set[str]:
    """The edge keys that repeat on ``MIN_REPEATS`` pages or more (``pages`` holds each page's
    ``edge_candidates``); none for a document of fewer than ``MIN_PAGES_FOR_REPEATS`` pages."""
    if len(pages) < MIN_PAGES_FOR_REPEATS:
        return set()
    counts = Counter(key for keys in pages for key in keys)
    return {key for key, n in counts.items() if n >= MIN_REPEATS}


def drop_running(lines: Sequence[Line], running: set[str]) -> list[Line]:
    """``lines`` without this page's running headers and footers (only edge lines are candidates, so a body
    line that happens to read like a header stays)."""
    if not running:
        return list(lines)
    dropped = {id(ln) for ln in edge_lines(lines) if edge_key(ln.text) in running}
    return [ln for ln in lines if id(ln) not in dropped]
