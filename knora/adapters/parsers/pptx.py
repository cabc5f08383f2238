"""PowerPoint decks via python-pptx: one page span of kind "slide" per slide, so a chunk can say "slide 3".

Per slide, in this order: the title (as a ``##`` heading, which gives the chunker its breadcrumbs), the other
shapes in reading order (top to bottom, then left to right; groups opened; footer, date and slide-number
placeholders left out), tables as Markdown tables, SmartArt as one line per node, charts as their title and a
Markdown table of their data, pictures as images (OCR text in their place), and the speaker notes last, as a
paragraph that starts with "Notes:". The zip container is decompressed under a budget (``zipguard``) before
python-pptx opens the rewritten copy; a deck with more than ``max_slides`` slides is parsed up to that many
and says what it left out. Slide shows and templates (.ppsx, .potx) are the same package with another main
content type, renamed in the copy. Legacy binary decks (.ppt) are ``ppt.py``'s.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator

from lxml import etree

from knora.adapters.parsers._common import DEFAULT_MAX_EXPANDED_BYTES, TextBuilder, file_stem, markdown_table
from knora.adapters.parsers._images import ImageCollector
from knora.adapters.parsers.zipguard import bounded_archive
from knora.ports.parser import ParseContext, ParsedDocument, ParseError, ParseOptions

MAX_SLIDES = 2_000
_MAX_CHART_ROWS = 500
_MAX_CHART_SERIES = 50
_PRESENTATION_MAIN = b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
_OTHER_MAIN_TYPES = (b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
                     b"application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
                     b"application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml")
_DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_SAFE_XML = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an encrypted OOXML file is an OLE container, not a zip
_MAX_GROUP_DEPTH = 32


def _as_presentation(data: bytes) -> bytes:
    """The (already bounded, uncompressed) package with a slide show's or template's main part declared as
    a presentation, which is all python-pptx needs to open it."""
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        try:
            types = src.read("[Content_Types].xml")
        except KeyError:
            return data  # python-pptx reports the missing part
        if not any(t in types for t in _OTHER_MAIN_TYPES):
            return data
        for t in _OTHER_MAIN_TYPES:
            types = types.replace(t, _PRESENTATION_MAIN)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                dst.writestr(info, types if info.filename == "[Content_Types].xml" else src.read(info))
    return out.getvalue()


def _reading_order(shapes: Iterable[object]) -> list[object]:
    def key(shape: object) -> tuple[int, int]:
        return (int(getattr(shape, "top", None) or 0), int(getattr(shape, "left", None) or 0))

    return sorted(shapes, key=key)


def _flatten(shapes: Iterable[object], depth: int = 0) -> Iterator[object]:
    """Shapes in reading order, group shapes replaced by their members (in reading order themselves)."""
    from pptx.shapes.group import GroupShape

    for shape in _reading_order(shapes):
        if isinstance(shape, GroupShape):
            if depth < _MAX_GROUP_DEPTH:
                yield from _flatten(shape.shapes, depth + 1)
        else:
            yield shape


def _is_chrome(shape: object) -> bool:
    """Footer, date and slide-number placeholders: the same on every slide, noise for retrieval."""
    if not getattr(shape, "is_placeholder", False):
        return False
    from pptx.enum.shapes import PP_PLACEHOLDER

    try:
        kind = shape.placeholder_format.type  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
    return kind in (PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.SLIDE_NUMBER)


def _text_of(shape: object) -> str:
    frame = getattr(shape, "text_frame", None) if getattr(shape, "has_text_frame", False) else None
    if frame is None:
        return ""
    lines = []
    for paragraph in frame.paragraphs:
        text = "".join(run.text for run in paragraph.runs) if paragraph.runs else paragraph.text
        text = text.replace("\x0b", "\n").strip()  # a vertical tab is PowerPoint's soft line break
        if text:
            lines.append("  " * int(paragraph.level or 0) + text)
    return "\n".join(lines)


def _table_of(shape: object) -> str:
    if not getattr(shape, "has_table", False):
        return ""
    table = shape.table  # type: ignore[attr-defined]
    rows = [[cell.text.strip() for cell in row.cells] for row in table.rows]
    return markdown_table(rows)


def _chart_of(shape: object) -> str:
    """A chart as its title and a Markdown table of its data (categories × series), so its numbers can be
    found and quoted; '' for anything else or a chart python-pptx cannot read."""
    if not getattr(shape, "has_chart", False):
        return ""
    try:
        chart = shape.chart  # type: ignore[attr-defined]
        title = chart.chart_title.text_frame.text.strip() if chart.has_title else ""
        plot = chart.plots[0] if len(chart.plots) else None
        table = ""
        if plot is not None:
            categories = [str(c) for c in list(plot.categories)[:_MAX_CHART_ROWS]]
            series = list(plot.series)[:_MAX_CHART_SERIES]
            values = [list(s.values)[:_MAX_CHART_ROWS] for s in series]
            rows = [["", *(s.name or "" for s in series)]]
            for i, category in enumerate(categories):
                rows.append([category, *("" if i >= len(v) or v[i] is None else f"{v[i]:g}" for v in values)])
            table = markdown_table(rows)
    except Exception:  # noqa: BLE001 - an odd chart part: its text is left out, the deck still parses
        return ""
    return "\n\n".join(part for part in (f"Chart: {title}" if title else "", table) if part)


def _smartart_of(shape: object) -> str:
    """SmartArt's text, one line per node, from the diagram data part its frame points to (python-pptx does
    not read diagrams); '' for anything else."""
    element = getattr(shape, "_element", None)
    if element is None or getattr(shape, "has_chart", False) or getattr(shape, "has_table", False):
        return ""
    ids = element.find(f".//{{{_DGM}}}relIds")
    if ids is None:
        return ""
    try:
        part = shape.part.related_part(ids.get(f"{{{_R}}}dm"))  # type: ignore[attr-defined]
        root = etree.fromstring(part.blob, _SAFE_XML)
    except Exception:  # noqa: BLE001 - a dangling or broken diagram part: its text is left out
        return ""
    lines = []
    for point in root.iter(f"{{{_DGM}}}pt"):
        if point.get("type") not in (None, "node"):
            continue  # presentation and connector points repeat or carry no text
        for paragraph in point.iter(f"{{{_A}}}p"):
            text = "".join(t.text or "" for t in paragraph.iter(f"{{{_A}}}t")).strip()
            if text:
                lines.append(text)
    return "\n".join(lines)


def _picture_blob(shape: object) -> tuple[bytes, str] | None:
    """The picture's bytes and file name, for pictures and picture placeholders; None for anything else."""
    if not hasattr(shape, "image"):
        return None
    try:
        image = shape.image
        return bytes(image.blob), str(image.filename or "")
    except Exception:  # noqa: BLE001 - a placeholder with no picture, a linked or dangling one: no image
        return None


class PptxParser:
    extensions: frozenset[str] = frozenset({"pptx", "pptm", "ppsx", "ppsm", "potx"})

    def __init__(self, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES, ctx: ParseContext | None = None,
                 *, max_slides: int = MAX_SLIDES) -> None:
        self.max_expanded_bytes = max_expanded_bytes
        self.ctx = ctx or ParseContext(max_expanded_bytes=max_expanded_bytes, options=ParseOptions(ocr=False))
        self.max_slides = max_slides

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        if data.startswith(_OLE):
            raise ParseError("the .pptx file is password-protected (encrypted) or is a legacy .ppt under a "
                             ".pptx name; remove the password or save it as .pptx, and upload again")
        data = bounded_archive(data, self.max_expanded_bytes, "pptx")
        from pptx import Presentation

        builder = TextBuilder()
        images = ImageCollector(self.ctx)
        skipped: list[str] = []
        first_title = ""
        try:
            deck = Presentation(io.BytesIO(_as_presentation(data)))
            slides = deck.slides
            total = len(slides)
            for number, slide in enumerate(slides, start=1):
                if number > self.max_slides:
                    skipped.append(f"slides {number}–{total} left out: more than {self.max_slides} slides")
                    break
                title = self._slide(slide, number, builder, images)
                first_title = first_title or title
            core_title = (deck.core_properties.title or "").strip()
        except ParseError:
            raise
        except Exception as exc:  # python-pptx raises KeyError/ValueError/lxml errors for broken parts
            raise ParseError("the .pptx file is damaged or not a PowerPoint presentation: "
                             f"{type(exc).__name__}: {exc}") from exc
        return ParsedDocument(title=core_title or first_title or file_stem(file_name), text=builder.text,
                              pages=builder.pages, images=builder.images, skipped=skipped + images.skipped,
                              metadata={"format": "pptx", "slides": str(total)})

    def _slide(self, slide: object, number: int, builder: TextBuilder, images: ImageCollector) -> str:
        """Adds one slide to ``builder``; returns its title ('' when it has none)."""
        shapes = slide.shapes  # type: ignore[attr-defined]
        title_shape = shapes.title
        title = _text_of(title_shape).replace("\n", " ").strip() if title_shape is not None else ""
        if title:
            builder.add(f"## {title}", page=number, kind="slide")
        title_id = title_shape.shape_id if title_shape is not None else None
        for shape in _flatten(shapes):
            if title_id is not None and getattr(shape, "shape_id", None) == title_id or _is_chrome(shape):
                continue
            picture = _picture_blob(shape)
            if picture is not None:
                image = images.image(picture[0], picture[1])
                if image is not None:
                    images.place(builder, image, page=number, kind="slide")
                continue
            builder.add(_table_of(shape) or _chart_of(shape) or _smartart_of(shape) or _text_of(shape),
                        page=number, kind="slide")
        if slide.has_notes_slide:  # type: ignore[attr-defined]
            frame = slide.notes_slide.notes_text_frame  # type: ignore[attr-defined]
            notes = frame.text.replace("\x0b", "\n").strip() if frame is not None else ""
            if notes:
                builder.add(f"Notes: {notes}", page=number, kind="slide")
        return title

