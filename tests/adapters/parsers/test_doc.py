"""Legacy Word .doc/.dot: a real Word binary (an OLE compound file) is refused with what to convert it to;
RTF, HTML and DOCX files saved under a .doc name are parsed by their own parsers."""

from __future__ import annotations

import io

import pytest

from knora.adapters.parsers.doc import UNSUPPORTED
from knora.adapters.parsers.registry import parse_bytes
from knora.ports.parser import ParseError

pytestmark = pytest.mark.unit


def _ole_file() -> bytes:
    """An OLE compound file as Word 97-2003 writes them (xlwt writes the same container for .xls)."""
    import xlwt

    wb = xlwt.Workbook()
    wb.add_sheet("A").write(0, 0, "x")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_a_word_binary_is_refused_with_what_to_do() -> None:
    for name in ("letter.doc", "template.DOT"):
        with pytest.raises(ParseError, match=r"save it as \.docx \(or PDF\)"):
            parse_bytes(_ole_file(), name)
    assert "legacy Word .doc is not supported" in UNSUPPORTED


def test_not_a_word_file_at_all() -> None:
    with pytest.raises(ParseError, match="not a Word document"):
        parse_bytes(b"\x00\x01garbage bytes", "x.doc")


def test_rtf_html_and_docx_under_a_doc_name() -> None:
    import docx

    assert parse_bytes(b"{\\rtf1\\ansi WordPad wrote this.\\par}", "old.doc").text == "WordPad wrote this."
    html = (b'<html xmlns:o="urn:schemas-microsoft-com:office:office"><body><p>Mail merge text</p>'
            b"</body></html>")
    assert parse_bytes(html, "merge.doc").text == "Mail merge text"
    d = docx.Document()
    d.add_paragraph("Renamed docx body.")
    buf = io.BytesIO()
    d.save(buf)
    assert "Renamed docx body." in parse_bytes(buf.getvalue(), "renamed.doc").text
