"""Reading one pdfium page: its text lines with their boxes, and its image and path objects.

Both walk pdfium's own structures with bounds (characters per page, objects per page, form nesting), so a page
built to be expensive costs a bounded amount of work here.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from knora.adapters.parsers.pdf_layout import Line

if TYPE_CHECKING:
    import pypdfium2

MAX_PAGE_CHARS = 200_000  # a dense page holds ~5,000; beyond this a page is a bomb, not a page
MAX_PAGE_OBJECTS = 20_000  # page objects looked at per page for images and rulings
MAX_FORM_DEPTH = 4  # form XObjects nested deeper than this are not searched for images


@dataclass
class PageObjects:
    images: list[tuple[pypdfium2.PdfImage, float]]  # with the share of the page each covers
    paths: int
    max_coverage: float  # the largest share of the page one image covers
    pixels: int = 0  # the images' decoded pixels, summed: what rendering the page decodes


def page_objects(page: pypdfium2.PdfPage, area: float) -> PageObjects:
    """The page's images and the number of its paths (rulings), through pdfium's raw calls: a page of tens of
    thousands of objects is walked in milliseconds, and at most ``MAX_PAGE_OBJECTS`` are looked at."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as c

    found = PageObjects([], 0, 0.0)
    left, bottom, right, top = page.get_bbox()
    budget = [MAX_PAGE_OBJECTS]

    def walk(count: int, get: Callable[[int], object], depth: int) -> None:
        for i in range(count):
            if budget[0] <= 0:
                return
            budget[0] -= 1
            raw = get(i)
            if not raw:
                continue
            kind = c.FPDFPageObj_GetType(raw)
            if kind == c.FPDF_PAGEOBJ_PATH:
                found.paths += 1
            elif kind == c.FPDF_PAGEOBJ_IMAGE:
                image = pdfium.PdfObject(raw, page=page, pdf=page.pdf)
                x0, y0, x1, y1 = image.get_bounds()
                shown = max(0.0, min(x1, right) - max(x0, left)) * max(0.0, min(y1, top) - max(y0, bottom))
                found.max_coverage = max(found.max_coverage, shown / area)
                if isinstance(image, pdfium.PdfImage):
                    found.images.append((image, shown / area))
                    with contextlib.suppress(pdfium.PdfiumError):
                        w, h = image.get_px_size()
                        found.pixels += w * h
            elif kind == c.FPDF_PAGEOBJ_FORM and depth < MAX_FORM_DEPTH:
                walk(c.FPDFFormObj_CountObjects(raw), functools.partial(c.FPDFFormObj_GetObject, raw),
                     depth + 1)

    walk(c.FPDFPage_CountObjects(page), functools.partial(c.FPDFPage_GetObject, page.raw), 0)
    return found


def text_lines(textpage: pypdfium2.PdfTextPage, left: float, top: float, width: float,
                height: float) -> tuple[list[Line], bool]:
    """The page's lines in pdfium's order (the content stream's, with its line breaks), each with its box
    from the first and last character."""
    import pypdfium2.raw as c

    total = textpage.count_chars()
    cut = total > MAX_PAGE_CHARS
    text = textpage.get_text_range(0, min(total, MAX_PAGE_CHARS)) if total > 0 else ""
    lines: list[Line] = []
    for match in re.finditer(r"[^\r\n]+", text):
        raw = match.group()
        stripped = raw.strip()
        shown = stripped.replace("\ufffe", "")  # pdfium's mark where it rejoined a word hyphenated at the end
        if not shown:                           # of a line
            continue
        first = match.start() + (len(raw) - len(raw.lstrip()))
        last = match.start() + len(raw.rstrip()) - 1
        boxes = []
        for text_index in (first, last):
            char = c.FPDFText_GetCharIndexFromTextIndex(textpage, text_index)
            try:
                # loose: the font's box, so a line is as tall as its type and the gap to the next line
                # is the leading (a paragraph break shows as a wider gap), whatever glyphs it holds
                boxes.append(textpage.get_charbox(char if char >= 0 else text_index, loose=True))
            except Exception:  # noqa: BLE001 - a char without a box; the line still counts
                continue
        if boxes:
            x0 = min(b[0] for b in boxes)
            x1 = max(b[2] for b in boxes)
            y0 = min(b[1] for b in boxes)
            y1 = max(b[3] for b in boxes)
            lines.append(Line(shown, top=(top - y1) / height, bottom=(top - y0) / height,
                              left=(x0 - left) / width, right=(x1 - left) / width))
        else:
            lines.append(Line(shown, top=0.5, bottom=0.5))
    return lines, cut
