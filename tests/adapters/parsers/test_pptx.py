"""PowerPoint decks built by python-pptx: titles, body in reading order, tables, notes and pictures per slide,
slide page spans in chunk metadata; corrupt, bomb, oversized and legacy inputs end in readable outcomes."""

from __future__ import annotations

import io
import zipfile

import pytest

from knora.adapters.parsers.pptx import PptxParser
from knora.adapters.parsers.registry import parse_bytes
from knora.domain.document import chunk_location
from knora.ports.parser import ParseError
from tests.adapters.parsers.images import SizeReader, ocr_context, png

pytestmark = pytest.mark.unit


def make_deck(*, core_title: str = "", slides: int = 0) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    if core_title:
        prs.core_properties.title = core_title
    s1 = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
    s1.shapes.title.text = "Quarterly Results"
    s1.placeholders[1].text = "Revenue grew in every region"
    s1.notes_slide.notes_text_frame.text = "Mention the Lisbon office opening in March"

    s2 = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    s2.shapes.title.text = "Regional table"
    # Added bottom first: reading order must still put the upper box first.
    low = s2.shapes.add_textbox(Inches(1), Inches(6), Inches(4), Inches(1))
    low.text_frame.text = "Lower box text"
    high = s2.shapes.add_textbox(Inches(1), Inches(1.5), Inches(4), Inches(1))
    high.text_frame.text = "Upper box text"
    table = s2.shapes.add_table(3, 2, Inches(1), Inches(3), Inches(6), Inches(2)).table
    for r, row in enumerate([["region", "revenue"], ["North", "120"], ["South", "95"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value

    s3 = prs.slides.add_slide(prs.slide_layouts[6])  # blank
    s3.shapes.add_picture(io.BytesIO(png(200, 100)), Inches(1), Inches(1))
    s3.shapes.add_picture(io.BytesIO(png(8, 8)), Inches(5), Inches(5))  # an icon: skipped
    group = s3.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(4), Inches(3), Inches(1))
    box.text_frame.text = "Text inside a group"

    for i in range(slides):
        extra = prs.slides.add_slide(prs.slide_layouts[5])
        extra.shapes.title.text = f"Extra slide {i + 4}"
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def test_slides_titles_body_tables_notes_and_pages() -> None:
    doc = parse_bytes(make_deck(), "deck.pptx")
    assert doc.title == "Quarterly Results"  # no core title: the first slide's
    assert [p.kind for p in doc.pages] == ["slide"] * 3
    assert [p.number for p in doc.pages] == [1, 2, 3]
    slide1 = doc.text[doc.pages[0].start:doc.pages[0].end]
    assert slide1.startswith("## Quarterly Results")
    assert "Revenue grew in every region" in slide1
    assert "Notes: Mention the Lisbon office opening in March" in slide1
    slide2 = doc.text[doc.pages[1].start:doc.pages[1].end]
    assert slide2.index("Upper box text") < slide2.index("| region | revenue |") < slide2.index("Lower box")
    assert "| North | 120 |" in slide2
    assert "Text inside a group" in doc.text[doc.pages[2].start:]
    notes_at = doc.text.index("Lisbon")
    assert chunk_location(doc.pages, notes_at, notes_at + 10) == {"page": 1, "page_kind": "slide"}
    assert doc.metadata == {"format": "pptx", "slides": "3"}


def test_core_title_wins() -> None:
    assert parse_bytes(make_deck(core_title="Board deck"), "d.pptx").title == "Board deck"


def test_pictures_become_images_with_ocr_text_on_their_slide() -> None:
    reader = SizeReader()
    doc = PptxParser(ctx=ocr_context(reader)).parse(make_deck(), "deck.pptx")
    assert len(doc.images) == 1  # the 8x8 icon is left out
    image = doc.images[0]
    assert (image.width, image.height, image.page, image.mime) == (200, 100, 3, "image/png")
    assert doc.text[image.offset:].startswith("IMAGE 200x100")
    assert reader.calls == 1
    assert any("smaller than" in s for s in doc.skipped)


def test_ocr_off_keeps_the_picture_without_text() -> None:
    reader = SizeReader()
    doc = PptxParser(ctx=ocr_context(reader, ocr=False)).parse(make_deck(), "deck.pptx")
    assert len(doc.images) == 1
    assert doc.images[0].ocr_text == ""
    assert reader.calls == 0
    assert "IMAGE" not in doc.text


def test_many_slides_are_bounded_and_the_rest_named() -> None:
    doc = PptxParser(max_slides=10).parse(make_deck(slides=40), "big.pptx")
    assert max(p.number for p in doc.pages) == 10
    assert "Extra slide 11" not in doc.text
    assert doc.skipped[0] == "slides 11–43 left out: more than 10 slides"
    assert doc.metadata["slides"] == "43"


_SLIDE_CT = "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
_SLIDE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"


def many_slides(n: int) -> bytes:
    """A deck of ``n`` one-title slides, cloned in the zip (python-pptx would take minutes to add 5,000)."""
    from pptx import Presentation

    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[5]).shapes.title.text = "Slide SLIDENUM"
    buf = io.BytesIO()
    prs.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    slide = src.read("ppt/slides/slide1.xml").decode()
    rels = src.read("ppt/slides/_rels/slide1.xml.rels")
    more = range(2, n + 1)
    additions = {
        "[Content_Types].xml": ("</Types>", "".join(
            f'<Override PartName="/ppt/slides/slide{i}.xml" ContentType="{_SLIDE_CT}"/>' for i in more)),
        "ppt/_rels/presentation.xml.rels": ("</Relationships>", "".join(
            f'<Relationship Id="rIdS{i}" Type="{_SLIDE_REL}" Target="slides/slide{i}.xml"/>' for i in more)),
        "ppt/presentation.xml": ("</p:sldIdLst>", "".join(
            f'<p:sldId id="{300 + i}" r:id="rIdS{i}"/>' for i in more)),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename in additions:
                end_tag, extra = additions[info.filename]
                data = data.replace(end_tag.encode(), (extra + end_tag).encode())
            dst.writestr(info.filename, data.replace(b"SLIDENUM", b"1"))
        for i in more:
            dst.writestr(f"ppt/slides/slide{i}.xml", slide.replace("SLIDENUM", str(i)))
            dst.writestr(f"ppt/slides/_rels/slide{i}.xml.rels", rels)
    return out.getvalue()


def test_a_deck_of_5000_slides_is_parsed_up_to_the_default_bound() -> None:
    from knora.adapters.parsers.pptx import MAX_SLIDES

    doc = parse_bytes(many_slides(5000), "huge.pptx")
    assert len(doc.pages) == MAX_SLIDES
    assert doc.text.endswith(f"## Slide {MAX_SLIDES}")
    assert doc.skipped == [f"slides {MAX_SLIDES + 1}–5000 left out: more than {MAX_SLIDES} slides"]


def test_corrupt_pptx_is_a_readable_error() -> None:
    with pytest.raises(ParseError, match="not a valid .pptx"):
        parse_bytes(b"PK\x03\x04 this is not really a zip", "broken.pptx")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("hello.txt", "not a presentation")
    with pytest.raises(ParseError, match="damaged or not a PowerPoint presentation"):
        parse_bytes(buf.getvalue(), "fake.pptx")
    truncated = make_deck()[:4000]
    with pytest.raises(ParseError):
        parse_bytes(truncated, "truncated.pptx")


def test_zip_bomb_is_refused_before_python_pptx_reads_it() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ppt/slides/slide1.xml", b"\0" * (64 * 1024 * 1024))
    with pytest.raises(ParseError, match="pptx"):
        parse_bytes(buf.getvalue(), "bomb.pptx", max_expanded_bytes=16 * 1024 * 1024)


def test_legacy_ppt_says_what_to_do() -> None:
    for name in ("old.ppt", "show.pps"):
        with pytest.raises(ParseError, match="save it as .pptx"):
            parse_bytes(b"\xd0\xcf\x11\xe0 legacy", name)


def test_an_encrypted_pptx_says_it_is_password_protected() -> None:
    # Office writes a password-protected .pptx as an OLE compound file holding the encrypted package.
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504
    with pytest.raises(ParseError, match="password-protected"):
        parse_bytes(ole, "secret.pptx")


@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_a_worker_process_returns_the_slides_and_their_pictures() -> None:
    from knora.adapters.parsers.pool import ProcessParsers
    from knora.ports.parser import ParseLimits, ParseOptions

    pool = ProcessParsers(ParseLimits(64 << 20, 1024, 60.0), workers=1)
    try:
        doc = await pool.parse(make_deck(), "deck.pptx", ParseOptions(ocr=False))
    finally:
        await pool.aclose()
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert len(doc.images) == 1
    assert doc.images[0].data.startswith(b"\x89PNG")
    assert doc.images[0].page == 3


def test_charts_become_their_title_and_a_data_table() -> None:
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("North", (120, 135.5))
    data.add_series("South", (95, 90))
    chart = slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(6), Inches(4),
                                   data).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Revenue by region"
    buf = io.BytesIO()
    prs.save(buf)
    doc = parse_bytes(buf.getvalue(), "chart.pptx")
    assert doc.text == ("Chart: Revenue by region\n\n|  | North | South |\n| --- | --- | --- |\n"
                        "| Q1 | 120 | 95 |\n| Q2 | 135.5 | 90 |")


def test_slide_shows_and_templates_open_like_decks() -> None:
    slideshow = b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml"
    src = zipfile.ZipFile(io.BytesIO(make_deck()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "[Content_Types].xml":
                data = data.replace(b"application/vnd.openxmlformats-officedocument.presentationml."
                                    b"presentation.main+xml", slideshow)
            dst.writestr(info, data)
    assert slideshow in zipfile.ZipFile(buf).read("[Content_Types].xml")
    doc = parse_bytes(buf.getvalue(), "show.ppsx")
    assert [p.number for p in doc.pages] == [1, 2, 3]


_DIAGRAM_DATA = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram"
    xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>
  <dgm:pt modelId="0" type="doc"><dgm:t><a:p><a:r><a:t></a:t></a:r></a:p></dgm:t></dgm:pt>
  <dgm:pt modelId="1"><dgm:t><a:p><a:r><a:t>Plan</a:t></a:r></a:p></dgm:t></dgm:pt>
  <dgm:pt modelId="2"><dgm:t><a:p><a:r><a:t>Build the </a:t></a:r><a:r><a:t>kiln</a:t></a:r></a:p></dgm:t>
  </dgm:pt>
  <dgm:pt modelId="3" type="pres"><dgm:t><a:p><a:r><a:t>Plan</a:t></a:r></a:p></dgm:t></dgm:pt>
</dgm:ptLst></dgm:dataModel>"""


def test_smartart_text_comes_from_its_diagram_part() -> None:
    from lxml import etree
    from pptx import Presentation
    from pptx.opc.constants import CONTENT_TYPE as CT
    from pptx.opc.constants import RELATIONSHIP_TYPE as RT
    from pptx.opc.package import Part
    from pptx.opc.packuri import PackURI

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    part = Part(PackURI("/ppt/diagrams/data1.xml"), CT.DML_DIAGRAM_DATA, slide.part.package, _DIAGRAM_DATA)
    rid = slide.part.relate_to(part, RT.DIAGRAM_DATA)
    frame = etree.fromstring(
        '<p:graphicFrame xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        '<p:nvGraphicFramePr><p:cNvPr id="9" name="Diagram"/><p:cNvGraphicFramePr/><p:nvPr/>'
        '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="100" cy="100"/></p:xfrm>'
        '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram">'
        '<dgm:relIds xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" '
        f'r:dm="{rid}" r:lo="" r:qs="" r:cs=""/></a:graphicData></a:graphic></p:graphicFrame>')
    slide.shapes._spTree.append(frame)
    buf = io.BytesIO()
    prs.save(buf)
    assert parse_bytes(buf.getvalue(), "flow.pptx").text == "Plan\nBuild the kiln"


def test_a_broken_deflate_stream_or_zip_version_is_a_readable_error() -> None:
    name = "ppt/presentation.xml"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, b"<p>" + bytes(range(256)) * 400 + b"</p>")
    data = bytearray(buf.getvalue())
    start = 30 + len(name)  # the local header, then the deflate stream
    data[start + 5:start + 40] = b"\xff" * 35
    with pytest.raises(ParseError, match=r"refusing \.pptx: the archive is damaged"):
        parse_bytes(bytes(data), "broken.pptx")
    versioned = bytearray(buf.getvalue())
    central = versioned.rfind(b"PK\x01\x02")
    versioned[central + 6] = 154  # "needs zip version 15.4" in the central directory
    with pytest.raises(ParseError, match=r"not a valid \.pptx file"):
        parse_bytes(bytes(versioned), "future.pptx")


def test_footer_date_and_slide_number_placeholders_are_left_out() -> None:
    from pptx import Presentation
    from pptx.enum.shapes import PP_PLACEHOLDER

    prs = Presentation()
    layout = prs.slide_layouts[1]
    slide = prs.slides.add_slide(layout)
    slide.shapes.title.text = "Roadmap"
    slide.placeholders[1].text = "Ship the kiln controller"
    chrome = (PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.SLIDE_NUMBER)
    for placeholder in layout.placeholders:
        if placeholder.placeholder_format.type in chrome:
            slide.shapes.clone_placeholder(placeholder)
    for shape in slide.placeholders:
        if shape.placeholder_format.type in chrome:
            shape.text = "ACME Confidential"
    assert sum(1 for s in slide.placeholders if s.placeholder_format.type in chrome) == 3
    buf = io.BytesIO()
    prs.save(buf)
    assert parse_bytes(buf.getvalue(), "r.pptx").text == "## Roadmap\n\nShip the kiln controller"
