"""OpenDocument files built by odfpy: odt (headings, lists, tables, pictures), ods (sheets as page spans and
``tables``, LibreOffice's repeated empty cells not expanded), odp (slides with titles, notes, pictures);
corrupt, bomb and hostile XML inputs end in readable errors."""

from __future__ import annotations

import io
import zipfile

import pytest

from knora.adapters.parsers.odf import OdfParser
from knora.adapters.parsers.registry import parse_bytes
from knora.domain.document import chunk_location
from knora.ports.parser import ParseError
from tests.adapters.parsers.images import SizeReader, ocr_context, png

pytestmark = pytest.mark.unit

PRESENTATIONNS = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"


def _save(doc: object) -> bytes:
    buf = io.BytesIO()
    doc.write(buf)  # type: ignore[attr-defined]
    return buf.getvalue()


def make_odt(title: str = "") -> bytes:
    from odf.draw import Frame, Image
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, P, S

    doc = OpenDocumentText()
    if title:
        from odf.dc import Title

        doc.meta.addElement(Title(text=title))
    doc.text.addElement(H(outlinelevel=1, text="Installation Guide"))
    para = P(text="Knora answers")
    para.addElement(S(c=3))
    para.addText("questions.")
    doc.text.addElement(para)
    doc.text.addElement(H(outlinelevel=2, text="Requirements"))
    items = List()
    for text in ("Python 3.11", "Two cores"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    doc.text.addElement(items)
    table = Table(name="Settings")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for row_values in (["setting", "default"], ["chunk_size", "512"]):
        row = TableRow()
        for value in row_values:
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    doc.text.addElement(table)
    href = doc.addPicture("Pictures/chart.png", "image/png", png(300, 150))
    svg = doc.addPicture("Pictures/chart.svg", "image/svg+xml", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
    holder = P()
    frame = Frame(width="6cm", height="3cm", anchortype="paragraph")
    frame.addElement(Image(href=svg))  # LibreOffice: the vector form first, a bitmap fallback after it
    frame.addElement(Image(href=href))
    holder.addElement(frame)
    doc.text.addElement(holder)
    return _save(doc)


def make_ods() -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    for name, rows in (("Budget", [["item", "cost"], ["rent", "1200"], ["power", "80"]]),
                       ("Empty", []),
                       ("Staff", [["name", "team"], ["Ana", "search"]])):
        table = Table(name=name)
        for values in rows:
            row = TableRow()
            for value in values:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=value))
                row.addElement(cell)
            row.addElement(TableCell(numbercolumnsrepeated=16_000))  # what LibreOffice writes
            table.addElement(row)
        table.addElement(TableRow(numberrowsrepeated=1_000_000))  # ditto, for the empty rest of the sheet
        doc.spreadsheet.addElement(table)
    return _save(doc)


def make_odp(slides: int = 2) -> bytes:
    from odf.draw import Frame, Image, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout, PageLayoutProperties
    from odf.text import P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    layout.addElement(PageLayoutProperties(pagewidth="28cm", pageheight="21cm"))
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="Master", pagelayoutname=layout)
    doc.masterstyles.addElement(master)

    def box(page_or_notes: object, text: str, y: str, cls: str = "") -> None:
        frame = Frame(width="20cm", height="2cm", x="2cm", y=y)
        if cls:
            frame.setAttrNS(PRESENTATIONNS, "class", cls)
        tb = TextBox()
        tb.addElement(P(text=text))
        frame.addElement(tb)
        page_or_notes.addElement(frame)  # type: ignore[attr-defined]

    href = doc.addPicture("Pictures/diagram.png", "image/png", png(240, 120))
    for n in range(1, slides + 1):
        page = Page(masterpagename=master, name=f"page{n}")
        box(page, f"Body of slide {n} at the bottom", "15cm")
        box(page, f"Title {n}", "1cm", "title")
        box(page, f"Body of slide {n} at the top", "5cm")
        box(page, "ACME Confidential", "19cm", "footer")
        if n == 2:
            pic = Frame(width="6cm", height="3cm", x="2cm", y="8cm")
            pic.addElement(Image(href=href))
            page.addElement(pic)
        notes = Notes()
        box(notes, f"Speaker notes for slide {n}: the codeword is heron-{n}", "10cm", "notes")
        page.addElement(notes)
        doc.presentation.addElement(page)
    return _save(doc)


def test_odt_headings_lists_tables_and_pictures() -> None:
    reader = SizeReader()
    doc = OdfParser(ctx=ocr_context(reader)).parse(make_odt(), "guide.odt")
    assert doc.title == "Installation Guide"
    assert doc.text.startswith("# Installation Guide\n\nKnora answers   questions.\n\n## Requirements")
    assert "- Python 3.11\n- Two cores" in doc.text
    assert "| setting | default |\n| --- | --- |\n| chunk_size | 512 |" in doc.text
    assert len(doc.images) == 1
    assert doc.text[doc.images[0].offset:] == "IMAGE 300x150"
    assert doc.skipped == []  # the SVG form of the same picture was not tried
    assert doc.metadata["format"] == "odt"


def test_odt_meta_title_wins_and_registry_parses_it() -> None:
    doc = parse_bytes(make_odt(title="Setup handbook"), "guide.odt")
    assert doc.title == "Setup handbook"
    assert "IMAGE" not in doc.text  # the default OCR engine is not needed to parse


def test_ods_sheets_are_labelled_page_spans_and_tables() -> None:
    doc = parse_bytes(make_ods(), "budget.ods")
    assert doc.tables == [[["item", "cost"], ["rent", "1200"], ["power", "80"]],
                          [["name", "team"], ["Ana", "search"]]]
    assert [(p.number, p.kind, p.label) for p in doc.pages] == [(1, "sheet", "Budget"), (3, "sheet", "Staff")]
    at = doc.text.index("Ana")
    assert chunk_location(doc.pages, at, at + 3) == {"page": 3, "page_kind": "sheet", "page_label": "Staff"}
    assert doc.metadata == {"format": "ods", "sheets": "Budget, Staff"}
    assert len(doc.text) < 500  # 16,000 repeated empty columns and a million empty rows were not expanded


def test_odp_slides_in_reading_order_with_notes_and_pictures() -> None:
    doc = OdfParser(ctx=ocr_context()).parse(make_odp(), "talk.odp")
    assert doc.title == "Title 1"
    assert [(p.number, p.kind) for p in doc.pages] == [(1, "slide"), (2, "slide")]
    slide2 = doc.text[doc.pages[1].start:doc.pages[1].end]
    assert slide2.startswith("## Title 2\n\nBody of slide 2 at the top")
    assert slide2.index("at the top") < slide2.index("IMAGE 240x120") < slide2.index("at the bottom")
    assert slide2.endswith("Notes: Speaker notes for slide 2: the codeword is heron-2")
    assert doc.images[0].page == 2
    assert "ACME" not in doc.text  # the footer box of every slide
    at = doc.text.index("heron-1")
    assert chunk_location(doc.pages, at, at + 7)["page"] == 1


def test_odp_slide_count_is_bounded() -> None:
    doc = OdfParser(max_slides=3).parse(make_odp(slides=8), "long.odp")
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert doc.skipped[0] == "slides 4–8 left out: more than 3 slides"


def _zip(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_corrupt_and_hostile_odf_inputs_are_readable_errors() -> None:
    with pytest.raises(ParseError, match="not a valid .odt"):
        parse_bytes(b"PK\x03\x04garbage", "broken.odt")
    with pytest.raises(ParseError, match="no content.xml"):
        parse_bytes(_zip({"mimetype": b"application/vnd.oasis.opendocument.text"}), "empty.odt")
    with pytest.raises(ParseError, match="damaged or not an OpenDocument"):
        parse_bytes(_zip({"content.xml": b"<office:document-content"}), "cut.ods")
    entity = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
              b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
              b'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
              b'<text:p>before &x; after</text:p></office:text></office:body></office:document-content>')
    doc = parse_bytes(_zip({"content.xml": entity}), "xxe.odt")
    assert "root:" not in doc.text  # the external entity was not resolved
    bomb = _zip({"content.xml": b" " * (64 * 1024 * 1024)})
    with pytest.raises(ParseError, match="odp"):
        parse_bytes(bomb, "bomb.odp", max_expanded_bytes=16 * 1024 * 1024)


def test_password_protected_odf_and_cells_without_text() -> None:
    manifest = (b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
                b'<manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-data/>'
                b'</manifest:file-entry></manifest:manifest>')
    with pytest.raises(ParseError, match="password-protected"):
        parse_bytes(_zip({"META-INF/manifest.xml": manifest, "content.xml": b"\x8f\x01 encrypted"}), "s.odt")
    content = (b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               b'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"><office:body>'
               b'<office:spreadsheet><table:table table:name="N"><table:table-row>'
               b'<table:table-cell office:value-type="float" office:value="42"/></table:table-row>'
               b'</table:table></office:spreadsheet></office:body></office:document-content>')
    assert parse_bytes(_zip({"content.xml": content}), "v.ods").tables == [[["42"]]]


def test_templates_read_like_their_documents() -> None:
    assert parse_bytes(make_ods(), "budget.ots").metadata["sheets"] == "Budget, Staff"
    src = zipfile.ZipFile(io.BytesIO(make_odp()))
    no_mimetype = _zip({n: src.read(n) for n in src.namelist() if n != "mimetype"})
    assert parse_bytes(no_mimetype, "talk.otp").pages[0].kind == "slide"  # the extension decides


def test_odt_footnotes_follow_their_paragraph() -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import Note, NoteBody, NoteCitation, P

    doc = OpenDocumentText()
    para = P(text="The kiln reaches 1280 degrees")
    note = Note(noteclass="footnote", id="ftn1")
    note.addElement(NoteCitation(text="1"))
    body = NoteBody()
    body.addElement(P(text="Measured with a type S thermocouple."))
    note.addElement(body)
    para.addElement(note)
    para.addText(" at peak.")
    doc.text.addElement(para)
    doc.text.addElement(P(text="Next paragraph."))
    text = parse_bytes(_save(doc), "kiln.odt").text
    assert text == ("The kiln reaches 1280 degrees at peak.\n\n[1] Measured with a type S thermocouple.\n\n"
                    "Next paragraph.")
