"""Legacy Excel workbooks written by xlwt (a test-only dependency: xlrd only reads), read by the xls parser:
sheets as spans, markdown tables, dates as dates, the cell bound, files in disguise, and broken or encrypted
workbooks."""

from __future__ import annotations

import io
from datetime import date, datetime, time

import pytest

from knora.adapters.parsers.html import HtmlParser
from knora.adapters.parsers.registry import parse_bytes
from knora.adapters.parsers.xls import XlsParser
from knora.adapters.parsers.xlsx import XlsxParser
from knora.ports.parser import ParseError

pytestmark = pytest.mark.unit


def make_xls() -> bytes:
    import xlwt

    wb = xlwt.Workbook(encoding="utf-8")
    day = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    stamp = xlwt.easyxf(num_format_str="YYYY-MM-DD hh:mm")
    clock = xlwt.easyxf(num_format_str="hh:mm")
    sales = wb.add_sheet("Sales")
    for c, head in enumerate(["region", "quarter", "revenue", "booked", "at", "paid", "ok"]):
        sales.write(0, c, head)
    sales.write(1, 0, "north")
    sales.write(1, 1, "Q1")
    sales.write(1, 2, 1200)
    sales.write(1, 3, date(2024, 3, 1), day)
    sales.write(1, 4, datetime(2024, 3, 1, 14, 30), stamp)
    sales.write(1, 5, time(9, 15), clock)
    sales.write(1, 6, True)
    sales.write(2, 0, "south | west")  # a pipe inside a cell must not break the table
    sales.write(2, 2, 980.5)
    wb.add_sheet("Empty")
    staff = wb.add_sheet("员工")
    staff.write(0, 0, "name")
    staff.write(0, 1, "team")
    staff.write(1, 0, "李雷")
    staff.write(1, 1, "研发")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_sheets_tables_and_dates() -> None:
    doc = parse_bytes(make_xls(), "sales.xls")
    assert doc.title == "sales"
    assert doc.metadata == {"format": "xls", "sheets": "Sales, 员工"}
    assert [(p.number, p.kind, p.label) for p in doc.pages] == [(1, "sheet", "Sales"), (3, "sheet", "员工")]
    sales = doc.text[doc.pages[0].start:doc.pages[0].end]
    assert sales.startswith("## Sales\n\n| region | quarter | revenue | booked | at | paid | ok |")
    assert "| north | Q1 | 1200 | 2024-03-01 | 2024-03-01 14:30:00 | 09:15:00 | TRUE |" in sales
    assert "| south \\| west |  | 980.5 |" in sales
    assert doc.text[doc.pages[1].start:doc.pages[1].end].endswith("| 李雷 | 研发 |")
    assert doc.tables[0][1] == ["north", "Q1", "1200", "2024-03-01", "2024-03-01 14:30:00", "09:15:00",
                                "TRUE"]
    assert doc.tables[1] == [["name", "team"], ["李雷", "研发"]]
    assert doc.skipped == []


def test_cells_past_the_limit_are_left_out_and_named() -> None:
    parser = XlsParser(lambda: XlsxParser(), HtmlParser, max_cells=10)
    doc = parser.parse(make_xls(), "sales.xls")
    assert len(doc.tables) == 1
    assert len(doc.tables[0]) == 1
    assert any("rows 2–3" in s and "Sales" in s for s in doc.skipped)
    assert any("员工" in s and "cell limit" in s for s in doc.skipped)


def test_an_xlsx_or_an_html_export_under_an_xls_name() -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.append(["k", "v"])
    ws.append(["port", 8080])
    buf = io.BytesIO()
    wb.save(buf)
    assert "| port | 8080 |" in parse_bytes(buf.getvalue(), "renamed.xls").text
    html = (b"<html><body><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"
            b"</body></html>")
    assert "| a | 1 |" in parse_bytes(html, "export.xls").text


def test_an_encrypted_workbook_says_so() -> None:
    data = make_xls()
    hdr = data.index(b"\xe1\x00\x02\x00")  # INTERFACEHDR right after the BOF → FILEPASS (0x002F)
    encrypted = data[:hdr] + b"\x2f\x00" + data[hdr + 2:]
    with pytest.raises(ParseError, match="password-protected"):
        parse_bytes(encrypted, "secret.xls")


@pytest.mark.parametrize(("data", "reason"), [
    (b"just some text, not a workbook", "not an Excel .xls workbook"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "damaged or not an Excel workbook"),
])
def test_bad_xls(data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_bytes(data, "bad.xls")


def test_a_truncated_workbook_fails_with_a_reason() -> None:
    data = make_xls()
    with pytest.raises(ParseError, match="damaged"):
        parse_bytes(data[: len(data) // 2], "cut.xls")


def test_a_workbook_of_empty_sheets() -> None:
    import xlwt

    wb = xlwt.Workbook()
    wb.add_sheet("A")
    buf = io.BytesIO()
    wb.save(buf)
    with pytest.raises(ParseError, match="no non-empty sheets"):
        parse_bytes(buf.getvalue(), "empty.xls")


def test_typed_rows_for_data_analysis() -> None:
    from knora.adapters.parsers.xls import sheet_rows
    from knora.services.pipeline.plugins.data_analysis import rows_from_file

    sheets = sheet_rows(make_xls())
    assert [name for name, _ in sheets] == ["Sales", "Empty", "员工"]
    sales = sheets[0][1]
    assert sales[1][:4] == ["north", "Q1", 1200.0, datetime(2024, 3, 1)]
    assert sales[1][5:] == [time(9, 15), True]
    header, rows = rows_from_file(make_xls(), "sales.xls")
    assert header == ["region", "quarter", "revenue", "booked", "at", "paid", "ok", "__sheet_name"]
    assert rows[0][0] == "north"
    assert rows[0][-1] == "Sales"
    assert rows[-1] == ["李雷", "研发", "员工"]


def test_an_excel_2003_xml_spreadsheet_under_an_xls_name() -> None:
    xml = """<?xml version="1.0"?>
<?mso-application progid="Excel.Sheet"?>
<Workbook xmlns="urn:schemas-microsoft-com:office:spreadsheet"
 xmlns:ss="urn:schemas-microsoft-com:office:spreadsheet">
 <Worksheet ss:Name="Orders">
  <Table>
   <Row><Cell><Data ss:Type="String">item</Data></Cell><Cell><Data ss:Type="String">due</Data></Cell>
    <Cell><Data ss:Type="String">qty</Data></Cell></Row>
   <Row><Cell><Data ss:Type="String">螺丝</Data></Cell>
    <Cell><Data ss:Type="DateTime">2024-03-01T00:00:00.000</Data></Cell>
    <Cell><Data ss:Type="Number">40</Data></Cell></Row>
   <Row><Cell><Data ss:Type="String">bolt</Data></Cell>
    <Cell ss:Index="3"><Data ss:Type="Number">7</Data></Cell></Row>
  </Table>
 </Worksheet>
 <Worksheet ss:Name="Blank"><Table/></Worksheet>
</Workbook>"""
    doc = parse_bytes(xml.encode(), "orders.xls")
    assert [(p.number, p.label) for p in doc.pages] == [(1, "Orders")]
    assert doc.tables == [[["item", "due", "qty"], ["螺丝", "2024-03-01", "40"], ["bolt", "", "7"]]]
    with pytest.raises(ParseError, match="malformed XML"):
        parse_bytes(xml.encode()[:300], "cut.xls")
