"""Ruled tables in a PDF page, found by pdfplumber and rendered as Markdown tables.

pdfplumber (MIT, on pdfminer.six) is pure Python and reads a page's content stream far more slowly than
pdfium, so the PDF parser asks it only about pages that draw enough lines to hold a ruled table (see
``pdf._RULING_PATHS``); the document is opened once, on the first such page. Tables without rulings stay text:
pdfplumber's text-alignment strategy finds tables in ordinary paragraphs too often to be trusted.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from knora.adapters.parsers._common import markdown_table, trim_rows
from knora.adapters.parsers.pdf_layout import Line

if TYPE_CHECKING:
    import pdfplumber.pdf

_MIN_ROWS = 2
_MIN_COLUMNS = 2


@dataclass(frozen=True)
class FoundTable:
    """A table's Markdown and its box as fractions of the page (top-left origin)."""

    markdown: str
    top: float
    bottom: float
    left: float
    right: float

    def holds(self, line: Line) -> bool:
        """Whether ``line`` (its centre) lies inside the table."""
        y = (line.top + line.bottom) / 2
        x = (line.left + line.right) / 2
        return self.top <= y <= self.bottom and self.left <= x <= self.right


class TableFinder:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pdf: pdfplumber.pdf.PDF | None = None
        self._failed = False

    def tables(self, index: int) -> list[FoundTable]:
        """The ruled tables of page ``index`` (0-based); none when pdfplumber cannot read the page."""
        pdf = self._open()
        if pdf is None:
            return []
        try:
            if index >= len(pdf.pages):
                return []
            page = pdf.pages[index]
            try:
                return _tables(page)
            finally:
                page.close()
        except Exception:  # noqa: BLE001 - pdfminer on a damaged page: the page keeps its text as lines
            logging.getLogger(__name__).debug("pdfplumber could not read page %d", index + 1, exc_info=True)
            return []

    def _open(self) -> pdfplumber.pdf.PDF | None:
        if self._pdf is None and not self._failed:
            import pdfplumber

            logging.getLogger("pdfminer").setLevel(logging.ERROR)
            try:
                self._pdf = pdfplumber.open(io.BytesIO(self._data))
            except Exception:  # noqa: BLE001 - pdfium read it; tables are a bonus
                self._failed = True
        return self._pdf

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None


def _tables(page: pdfplumber.page.Page) -> list[FoundTable]:
    x0, top0, x1, bottom0 = page.bbox
    width, height = max(x1 - x0, 1.0), max(bottom0 - top0, 1.0)
    found: list[FoundTable] = []
    for table in page.find_tables():
        rows = trim_rows([[cell or "" for cell in row] for row in table.extract()])
        if len(rows) < _MIN_ROWS or max((len(r) for r in rows), default=0) < _MIN_COLUMNS:
            continue
        left, top, right, bottom = table.bbox
        found.append(FoundTable(markdown_table(rows), top=(top - top0) / height,
                                bottom=(bottom - top0) / height, left=(left - x0) / width,
                                right=(right - x0) / width))
    return found
