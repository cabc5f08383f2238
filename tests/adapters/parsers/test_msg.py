"""Outlook .msg items written by the tests' own compound-file writer (``tests/fakes/cfb.py``): properties in
UTF-16 and in 8-bit code pages, HTML bodies, attachments parsed recursively, embedded Outlook items to the
depth limit, and files that are not (or no longer) Outlook items."""

from __future__ import annotations

import pytest

from knora.adapters.parsers._mail import MAX_DEPTH
from knora.adapters.parsers.registry import parse_bytes, parse_with
from knora.domain.document import chunk_location, location_text
from knora.ports.parser import ParseError
from tests.adapters.parsers.test_eml import message, ocr_context, png, span_text
from tests.adapters.parsers.test_parsers import make_docx, make_pdf
from tests.fakes.cfb import MsgAttachment, MsgSpec, cfb, filetime, make_msg

pytestmark = pytest.mark.unit


def spec(**kw: object) -> MsgSpec:
    base: dict[str, object] = {"subject": "Quarterly numbers", "body": "Numbers attached, see the PDF.",
                               "sender_name": "Ann Lee", "sender_email": "ann@example.com",
                               "to": "Bob Stone; Carol Wu", "cc": "Dave",
                               "submit_time": filetime(2026, 12, 7, 9, 30)}
    base.update(kw)
    return MsgSpec(**base)  # type: ignore[arg-type]


def test_headers_body_and_attachments() -> None:
    data = make_msg(spec(attachments=[
        MsgAttachment("report.pdf", make_pdf(["Revenue grew 12 percent in Q3."]), mime="application/pdf"),
        MsgAttachment("guide.docx", make_docx()),
        MsgAttachment("budget.csv", b"item,cost\nservers,4000\n", mime="text/csv"),
    ]))
    doc = parse_bytes(data, "mail.msg")
    assert doc.title == "Quarterly numbers"
    assert doc.text.split("\n\n")[0].splitlines() == [
        "From: Ann Lee <ann@example.com>", "To: Bob Stone; Carol Wu", "Cc: Dave",
        "Date: Mon, 07 Dec 2026 09:30:00 +0000", "Subject: Quarterly numbers"]
    assert "Numbers attached, see the PDF." in doc.text
    assert "Revenue grew 12 percent" in span_text(doc, "report.pdf")
    assert "Installation Guide" in span_text(doc, "guide.docx")
    at = doc.text.index("servers")
    assert location_text(dict(chunk_location(doc.pages, at, at + 5))) == "attachment budget.csv"
    assert doc.metadata["format"] == "msg"
    assert doc.skipped == []


def test_8_bit_strings_in_the_message_code_page() -> None:
    doc = parse_bytes(make_msg(spec(subject="季度预算", body="预算已批准。", code_page=936, string8=True)),
                      "mail.msg")
    assert doc.title == "季度预算"
    assert "预算已批准。" in doc.text


def test_html_body_when_there_is_no_plain_text() -> None:
    html = "<html><body><h1>发布</h1><p>Launch moves to <b>March</b>.</p><script>x()</script></body></html>"
    doc = parse_bytes(make_msg(spec(body="", html=html.encode("utf-8"))), "mail.msg")
    assert "# 发布" in doc.text
    assert "Launch moves to March." in doc.text
    assert "x()" not in doc.text


def test_rtf_only_body_is_decompressed_and_read() -> None:
    rtf = rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Arial;}}\f0 The RTF body says \b hello\b0 .\par}"
    doc = parse_bytes(make_msg(spec(body="", rtf=rtf)), "mail.msg")
    assert "The RTF body says hello." in doc.text


def test_compressed_rtf_from_the_specification() -> None:
    from knora.adapters.parsers._rtfcompressed import decompress_rtf

    sample = bytes.fromhex("2d0000002b0000004c5a4675f1c5c7a703000a00726370673132354232"
                           "0af32068656c090020627705b06c647d0a800fa0")  # [MS-OXRTFCP] 3.1.1.2
    assert decompress_rtf(sample) == b"{\\rtf1\\ansi\\ansicpg1252\\pard hello world}\r\n"
    with pytest.raises(ParseError, match="truncated"):
        decompress_rtf(sample[:10])


def test_inline_picture_and_attached_picture() -> None:
    doc = parse_with(ocr_context(), make_msg(spec(attachments=[
        MsgAttachment("image001.png", png("LOGO TEXT"), mime="image/png", content_id="image001@x",
                      hidden=True),
        MsgAttachment("scan.png", png("SCANNED 42"), mime="image/png"),
    ])), "mail.msg")
    inline, attached = doc.images
    assert inline.page is None
    assert doc.text[inline.offset:].startswith("LOGO TEXT")
    assert attached.page == 1
    assert "SCANNED 42" in span_text(doc, "scan.png")


def test_embedded_outlook_item_with_its_attachment() -> None:
    inner = spec(subject="Fwd: travel", body="the forwarded text",
                 attachments=[MsgAttachment("costs.csv", b"trip,eur\nberlin,800\n")])
    doc = parse_bytes(make_msg(spec(attachments=[MsgAttachment("", message=inner)])), "mail.msg")
    assert "the forwarded text" in span_text(doc, "Fwd: travel.msg")
    at = doc.text.index("berlin")
    assert location_text(dict(chunk_location(doc.pages, at, at + 5))) == \
        "attachment Fwd: travel.msg, attachment costs.csv"


def test_embedded_items_10_deep_stop_at_the_depth_limit() -> None:
    item = spec(subject="level 0", body="innermost")
    for level in range(1, 11):
        item = spec(subject=f"level {level}", body=f"body of level {level}",
                    attachments=[MsgAttachment(f"level {level - 1}.msg", message=item)])
    doc = parse_bytes(make_msg(item), "mail.msg")
    assert f"body of level {10 - MAX_DEPTH}" in doc.text
    assert f"body of level {9 - MAX_DEPTH}" not in doc.text
    assert doc.skipped == ["attachment level 9.msg / level 8.msg / level 7.msg / level 6.msg: a message "
                           f"nested more than {MAX_DEPTH} levels deep is not opened"]


def test_eml_inside_msg_and_msg_inside_eml() -> None:
    eml = message(subject="mail in outlook", body="an eml attached to an outlook item").as_bytes()
    doc = parse_bytes(make_msg(spec(attachments=[MsgAttachment("note.eml", eml, mime="message/rfc822")])),
                      "mail.msg")
    assert "an eml attached to an outlook item" in span_text(doc, "note.eml")
    m = message()
    m.add_attachment(make_msg(spec(subject="outlook in mail", body="an outlook item in an eml")),
                     maintype="application", subtype="vnd.ms-outlook", filename="item.msg")
    doc = parse_bytes(m.as_bytes(), "mail.eml")
    assert "an outlook item in an eml" in span_text(doc, "item.msg")


def test_archives_links_and_ole_objects_are_named_in_skipped() -> None:
    doc = parse_bytes(make_msg(spec(attachments=[
        MsgAttachment("all.zip", b"PK\x05\x06" + b"\0" * 18, mime="application/zip"),
        MsgAttachment("link.txt", b"", method=2),
        MsgAttachment("chart", b"\0", method=6),
    ])), "mail.msg")
    assert doc.skipped == ["attachment link.txt: a link to a file that is not attached (attach method 2)",
                           "attachment chart: an embedded OLE object, which is not read",
                           "attachment all.zip: archives (.zip) are not opened"]


def test_not_an_ole_file() -> None:
    with pytest.raises(ParseError, match="not an Outlook .msg file: it is not an OLE compound file"):
        parse_bytes(b"From: a@b\r\nSubject: an eml renamed\r\n\r\nbody", "mail.msg")


def test_an_ole_file_that_is_not_a_message() -> None:
    with pytest.raises(ParseError, match="holds no message properties"):
        parse_bytes(cfb({"WordDocument": b"\xec\xa5" + b"\0" * 600}), "doc.msg")


@pytest.mark.parametrize("cut", [700, 1536, 2600])
def test_a_truncated_or_damaged_msg_fails_with_a_reason(cut: int) -> None:
    data = make_msg(spec(attachments=[MsgAttachment("big.txt", b"y" * 9000)]))
    with pytest.raises(ParseError):
        parse_bytes(data[:cut], "mail.msg")


def test_a_damaged_sector_ends_in_a_reason_or_a_parse() -> None:
    damaged = bytearray(make_msg(spec(attachments=[MsgAttachment("big.txt", b"y" * 9000)])))
    damaged[512:1024] = b"\xff" * 512  # the first sector after the header
    try:
        text = parse_bytes(bytes(damaged), "mail.msg").text
    except ParseError as exc:
        text = str(exc)
    assert text


def test_500_attachments_end_partially_parsed() -> None:
    data = make_msg(spec(attachments=[MsgAttachment(f"n{i}.txt", b"note %d" % i) for i in range(500)]))
    doc = parse_bytes(data, "mail.msg")
    assert len(doc.pages) == 100
    assert doc.skipped[0].startswith("400 attachments not parsed: at most 100 are parsed per e-mail "
                                     "(n100.txt")
