"""PDF via pypdfium2, page by page: text in reading order with page numbers, ruled tables as Markdown (found
by pdfplumber on the pages that draw lines), running headers and footers dropped, images kept, and pages
without a usable text layer read by OCR.

Each page is loaded, read and closed before the next one (a 500-page PDF never has more than one page open),
so memory follows the text kept, not the page count. What a parse leaves out — a scanned page with OCR off,
pages past the OCR time budget, images beyond the limits — is named in ``ParsedDocument.skipped``.
"""

from __future__ import annotations

import io
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from knora.adapters.parsers import pdf_layout as layout
from knora.adapters.parsers._common import TextBuilder, file_stem
from knora.adapters.parsers.pdf_images import ImageBudget, extract_image
from knora.adapters.parsers.pdf_layout import Line
from knora.adapters.parsers.pdf_page import MAX_PAGE_CHARS, page_objects, text_lines
from knora.adapters.parsers.pdf_tables import TableFinder
from knora.ports.ocr import OcrEngine, OcrUnavailable
from knora.ports.parser import ParseContext, ParsedDocument, ParsedImage, ParseError, ParseOptions

if TYPE_CHECKING:
    import pypdfium2

_MAX_PAGES = 5000
_OCR_DPI = 200
_MAX_RENDER_PIXELS = 12_000_000  # A4 at 200 dpi is 3.9 Mpx; a poster-sized page is rendered smaller
# Rendering decodes every image of the page at full size: an A4 scan at 600 dpi is 35 Mpx, a 20,000 x 20,000
# image bomb 400 Mpx (400 MB decoded for a 400 KB file).
_MAX_RENDER_SOURCE_PIXELS = 64_000_000
_FEW_LETTERS = 20  # a page with a page-sized image and fewer letters than this is a scan with a stamp
_SCAN_COVERAGE = 0.5  # share of the page an image must cover to make the page look scanned
_RULING_PATHS = 4  # path objects on a page before pdfplumber is asked for tables
# ... and at most this many: a page drawing more is a chart or a map, and pdfplumber would spend seconds on it
# (0.25 s at 3,000 paths)
_MAX_RULING_PATHS = 5000
# Titles that PDF producers write when the author gave none; the file name says more than these.
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "document", "title", "anonymous", "none",
                       "(anonymous)"}
_ERR_PASSWORD = 4


def clean_title(raw: str) -> str:
    title = raw.strip()
    for prefix in ("Microsoft Word - ", "Microsoft PowerPoint - "):
        title = title.removeprefix(prefix)
    if title.lower() in _PLACEHOLDER_TITLES:
        return ""
    return title


Item = Line | str | ParsedImage  # a line of text, a Markdown table, an image
Box = tuple[float, float, float, float]


@dataclass
class _Page:
    number: int
    items: list[Item] = field(default_factory=list)

    @property
    def lines(self) -> list[Line]:
        return [it for it in self.items if isinstance(it, Line)]


class _Ocr:
    """The OCR engine for one parse: loaded on first need, its absence or failure remembered, its time
    budget kept (an OCR call that would likely overrun the budget is not started)."""

    def __init__(self, ctx: ParseContext, started: float) -> None:
        self._ctx = ctx
        self._engine: OcrEngine | None = None
        self.unavailable = "" if ctx.options.ocr else "OCR off"
        budget = ctx.options.time_budget_seconds
        self._deadline = started + budget if budget > 0 else math.inf
        self._budget = budget
        self._spent: list[float] = []

    def why_not(self) -> str:
        """Why OCR cannot run now ("" when it can)."""
        if not self.unavailable and self._engine is None:
            try:
                self._engine = self._ctx.ocr()
            except OcrUnavailable as exc:
                self.unavailable = f"OCR unavailable ({exc})"
            if self._engine is None and not self.unavailable:
                self.unavailable = "OCR unavailable (no engine configured)"
        if self.unavailable:
            return self.unavailable
        expected = sum(self._spent) / len(self._spent) if self._spent else 0.0
        if time.monotonic() + expected > self._deadline:
            return f"OCR stopped: the time budget of {self._budget:g} s was used"
        return ""

    def read(self, image: bytes, since: float | None = None) -> list[tuple[str, Box]]:
        """Text lines and boxes (pixels) of ``image``; call only when ``why_not()`` is empty. The time
        from ``since`` (the page's render) counts toward the next call's estimate."""
        assert self._engine is not None
        start = time.monotonic() if since is None else since
        try:
            result = self._engine.recognize(image)
        except OcrUnavailable as exc:
            self.unavailable = f"OCR unavailable ({exc})"
            raise ParseError(self.unavailable) from exc
        except (ParseError, MemoryError):
            raise
        except Exception as exc:  # an engine failing on one image costs that image, not the document
            raise ParseError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self._spent.append(time.monotonic() - start)
        return [(line.text, line.box) for line in result.lines if line.text.strip()]


class PdfParser:
    extensions: frozenset[str] = frozenset({"pdf"})

    def __init__(self, ctx: ParseContext | None = None) -> None:
        self._ctx = ctx or ParseContext(max_expanded_bytes=0, options=ParseOptions(ocr=False))

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        import pypdfium2 as pdfium

        started = time.monotonic()
        if b"%PDF-" not in data[:1024]:  # readers accept junk before the header within the first KB
            raise ParseError("not a PDF file (missing the %PDF header)")
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == _ERR_PASSWORD:
                raise ParseError("the PDF is password-protected (remove the password and upload it again)"
                                 ) from exc
            raise ParseError(f"the PDF is damaged or unreadable: {exc}") from exc
        try:
            return _Reader(pdf, data, self._ctx, started).read(file_name)
        finally:
            pdf.close()


class _Reader:
    def __init__(self, pdf: pypdfium2.PdfDocument, data: bytes, ctx: ParseContext, started: float) -> None:
        self.pdf = pdf
        self.options = ctx.options
        self.ocr = _Ocr(ctx, started)
        self.tables = TableFinder(data)
        self.images = ImageBudget()
        self.skipped: list[tuple[int, str]] = []  # (page, reason) for pages, grouped into ranges at the end
        self.ocr_pages: list[int] = []

    def read(self, file_name: str) -> ParsedDocument:
        count = len(self.pdf)
        if count > _MAX_PAGES:
            raise ParseError(f"the PDF has {count} pages; at most {_MAX_PAGES} are supported")
        pages: list[_Page] = []
        no_text = 0
        try:
            for index in range(count):
                page = self._page(index)
                if page is None:
                    no_text += 1
                elif page.items:
                    pages.append(page)
        finally:
            self.tables.close()
        running = layout.running_keys([layout.edge_candidates(p.lines) for p in pages])
        builder = TextBuilder()
        for page in pages:
            _place(builder, page, running)
        skipped = _ranges(self.skipped) + self.images.summary()
        if not builder.text:
            raise ParseError(self._nothing_read(count, no_text))
        meta = {"format": "pdf", "pages": str(count)}
        if self.ocr_pages:
            meta["ocr_pages"] = ",".join(map(str, self.ocr_pages))
        title = clean_title(self.pdf.get_metadata_value("Title") or "")
        return ParsedDocument(title=title or file_stem(file_name), text=builder.text, metadata=meta,
                              pages=builder.pages, images=builder.images, skipped=skipped)

    def _nothing_read(self, count: int, no_text: int) -> str:
        reasons = _ranges(self.skipped)
        if no_text and self.ocr.unavailable:
            return (f"the PDF has no extractable text: {no_text} of its {count} pages have no usable text "
                    f"layer (a scanned document?) and {self.ocr.unavailable}")
        if reasons:
            return "the PDF has no extractable text: " + "; ".join(reasons)
        return "the PDF has no extractable text"

    def _page(self, index: int) -> _Page | None:
        """Page ``index`` read and closed; None when it needed OCR that could not run (named in skipped)."""
        import pypdfium2 as pdfium

        number = index + 1
        try:
            page = self.pdf[index]
        except pdfium.PdfiumError as exc:
            self.skipped.append((number, f"unreadable page ({exc})"))
            return _Page(number)
        try:
            return self._read_page(page, number)
        except pdfium.PdfiumError as exc:
            self.skipped.append((number, f"unreadable page ({exc})"))
            return _Page(number)
        finally:
            page.close()

    def _read_page(self, page: pypdfium2.PdfPage, number: int) -> _Page | None:
        left, bottom, right, top = page.get_bbox()
        width, height = max(right - left, 1.0), max(top - bottom, 1.0)
        textpage = page.get_textpage()
        try:
            lines, cut = text_lines(textpage, left, top, width, height)
        finally:
            textpage.close()
        if cut:
            self.skipped.append((number, f"text cut at {MAX_PAGE_CHARS:,} characters"))
        objects = page_objects(page, width * height)
        q = layout.quality("".join(ln.text for ln in lines))
        looks_scanned = not q.usable or (q.letters < _FEW_LETTERS and objects.max_coverage >= _SCAN_COVERAGE)
        if looks_scanned and (lines or objects.images or objects.paths):
            why = self.ocr.why_not()
            if not why and objects.pixels > _MAX_RENDER_SOURCE_PIXELS:
                why = (f"its images hold {objects.pixels // 1_000_000} Mpx, too many to render for OCR "
                       f"(limit {_MAX_RENDER_SOURCE_PIXELS // 1_000_000} Mpx)")
            if not why:
                ocr_lines = self._ocr_page(page, number, width, height)
                if ocr_lines is not None:
                    self.ocr_pages.append(number)
                    return _Page(number, list(ocr_lines))
            else:
                reason = q.reason or "scanned page with little text"
                self.skipped.append((number, f"{reason}, {why}"))
            if not q.usable:
                return None
        items: list[Item] = list(layout.reading_order(lines))
        if _RULING_PATHS <= objects.paths <= _MAX_RULING_PATHS:
            items = self._with_tables(items, number - 1)
        if self.options.extract_images:
            for image, at in self._images(objects.images, number, top, height, q.letters >= _FEW_LETTERS):
                items.insert(_position(items, at), image)
        return _Page(number, items)

    def _ocr_page(self, page: pypdfium2.PdfPage, number: int, width: float,
                  height: float) -> list[Line] | None:
        started = time.monotonic()
        scale = min(_OCR_DPI / 72, math.sqrt(_MAX_RENDER_PIXELS / (width * height)))
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            image = bitmap.to_pil()
            buf = io.BytesIO()
            image.save(buf, format="PNG", compress_level=1)  # only the OCR engine reads it: 4x faster than 6
            px_w, px_h = image.size
        finally:
            bitmap.close()
        try:
            found = self.ocr.read(buf.getvalue(), since=started)
        except ParseError as exc:
            self.skipped.append((number, f"OCR failed ({exc})"))
            return None
        return [Line(text, top=box[1] / px_h, bottom=box[3] / px_h, left=box[0] / px_w, right=box[2] / px_w)
                for text, box in found]

    def _with_tables(self, items: list[Item], index: int) -> list[Item]:
        """Lines inside a ruled table replaced by the table as Markdown, where its first line was."""
        for table in self.tables.tables(index):
            inside = {i for i, it in enumerate(items) if isinstance(it, Line) and table.holds(it)}
            if not inside:
                continue
            kept = [it for i, it in enumerate(items) if i not in inside]
            kept.insert(min(inside), table.markdown)
            items = kept
        return items

    def _images(self, objects: list[tuple[pypdfium2.PdfImage, float]], number: int, top: float,
                height: float, has_text: bool) -> list[tuple[ParsedImage, float]]:
        """The page's images within the document's budget, OCR'd when OCR is on, with their top edges
        (fractions of the page height). A page-sized image under a text layer is the scan that the text
        was recognised from (a scanner's searchable PDF): its text is already there, it is left out."""
        out: list[tuple[ParsedImage, float]] = []
        for obj, coverage in objects:
            if has_text and coverage >= _SCAN_COVERAGE:
                self.images.left_out["page scans under a text layer"] += 1
                continue
            got = extract_image(obj, self.images, top)
            if got is None:
                continue
            image, below_top = got
            if self.options.ocr:
                why = self.ocr.why_not()
                if why:
                    self.images.not_read(why)
                else:
                    try:
                        text = "\n".join(t for t, _ in self.ocr.read(image.data))
                    except ParseError as exc:
                        self.images.not_read(str(exc))
                        text = ""
                    image = image.model_copy(update={"ocr_text": text})
            out.append((image.model_copy(update={"name": f"page {number} image {len(out) + 1}"}),
                        below_top / height))
        return out


def _position(items: list[Item], top: float) -> int:
    """Where an item whose top edge is at ``top`` goes: before the first line below it."""
    for i, it in enumerate(items):
        if isinstance(it, Line) and it.top > top:
            return i
    return len(items)


def _place(builder: TextBuilder, page: _Page, running: set[str]) -> None:
    """Adds the page's parts, without its running headers and footers; lines run together into paragraphs,
    a wider gap than a line's height starts a new one."""
    kept = layout.drop_running(page.lines, running)
    keep = {id(ln) for ln in kept}
    paragraph: list[str] = []
    previous: Line | None = None

    def flush() -> None:
        if paragraph:
            builder.add("\n".join(paragraph), page=page.number)
            paragraph.clear()

    for item in page.items:
        if isinstance(item, Line):
            if id(item) not in keep:
                continue
            if previous is not None and item.top - previous.bottom > (previous.bottom - previous.top) * 0.5:
                flush()
            paragraph.append(item.text)
            previous = item
            continue
        flush()
        previous = None
        if isinstance(item, str):
            builder.add(item, page=page.number)
        else:
            builder.add_image(item, page=page.number)
    flush()


def _ranges(skipped: list[tuple[int, str]]) -> list[str]:
    """"p. 3: reason" lines, consecutive pages with the same reason joined ("pp. 4–9: reason")."""
    out: list[str] = []
    run: list[tuple[int, str]] = []

    def close() -> None:
        if run:
            first, last, reason = run[0][0], run[-1][0], run[0][1]
            where = f"p. {first}" if first == last else f"pp. {first}–{last}"
            out.append(f"{where}: {reason}")
            run.clear()

    for number, reason in skipped:
        if run and (reason != run[-1][1] or number != run[-1][0] + 1):
            close()
        run.append((number, reason))
    close()
    return out
