"""RTF written by hand as Word and WordPad write it: paragraphs, code pages (Chinese GBK via \\ansicpg936 and
font charsets), \\uN escapes (with surrogate pairs), tables, info metadata; and RTF bombs (deep nesting,
huge \\bin blobs, huge pictures, the inputs that make striprtf's regexes backtrack), which must end quickly
with text or a ParseError. Sizes are chosen so that a quadratic pass would take minutes: the tests bound
work, not wall-clock time."""

from __future__ import annotations

import pytest

from knora.adapters.parsers.registry import parse_bytes
from knora.adapters.parsers.rtf import MAX_DEPTH
from knora.ports.parser import ParseError

pytestmark = pytest.mark.unit


def _hex(text: str, codec: str) -> str:
    return "".join(f"\\'{b:02x}" for b in text.encode(codec))


def _u(text: str) -> str:
    """\\uN escapes as Word writes them: signed 16-bit, surrogate pairs for astral characters, a '?'
    fallback."""
    out = []
    for unit in text.encode("utf-16-le").hex(" ", 2).split():
        n = int.from_bytes(bytes.fromhex(unit), "little")
        out.append(f"\\u{n - 0x10000 if n > 0x7FFF else n}?")
    return "".join(out)


HEADER = ("{\\rtf1\\ansi\\ansicpg936\\deff0{\\fonttbl{\\f0\\fnil\\fcharset134 " + _hex("宋体", "gbk")
          + ";}{\\f1\\fswiss\\fcharset0 Arial;}}{\\colortbl ;\\red0\\green0\\blue0;}"
          "{\\*\\generator Riched20 10.0.19041}")


def chinese_rtf() -> bytes:
    body = ("{\\info{\\title " + _u("季度报告") + " Q3}{\\author " + _hex("李雷", "gbk") + "}}"
            "\\viewkind4\\uc1\\pard\\f0\\fs24 " + _hex("第一段：收入增长了百分之十二。", "gbk") + "\\par\n"
            "\\f1 Second paragraph in English, caf\\'e9 \\u8364? 100.\\par\n"
            "\\f0\\uc1 " + _u("第三段使用Unicode转义。") + " " + _u("😀") + "\\par\n"
            "\\trowd\\cellx2000\\cellx4000\\intbl " + _hex("地区", "gbk") + "\\cell " + _hex("收入", "gbk")
            + "\\cell\\row\\trowd\\cellx2000\\cellx4000\\intbl north\\cell 1200\\cell\\row\n"
            "\\pard After the table.\\par}")
    return (HEADER + body).encode("ascii")


def test_chinese_rtf_code_page_and_unicode_escapes() -> None:
    doc = parse_bytes(chinese_rtf(), "report.rtf")
    assert doc.title == "季度报告 Q3"
    assert doc.metadata["author"] == "李雷"
    assert doc.metadata["format"] == "rtf"
    lines = [line for line in doc.text.split("\n") if line.strip()]
    assert lines[0] == "第一段：收入增长了百分之十二。"
    # \'e9 under \f1 (charset 0) is cp1252 é, not a GBK half-character; \u8364 is €
    assert lines[1] == "Second paragraph in English, café € 100."
    assert lines[2] == "第三段使用Unicode转义。 😀"  # the surrogate pair came back as one character
    assert "| 地区 | 收入 |\n| --- | --- |\n| north | 1200 |" in doc.text
    assert doc.text.endswith("After the table.")
    assert "宋体" not in doc.text
    assert "Riched20" not in doc.text


def test_western_rtf_with_pictures_objects_and_links() -> None:
    rtf = ("{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Times New Roman;}}"
           "{\\*\\themedata 504b0304" + "00" * 5000 + "}"
           "\\pard Na\\'efve r\\'e9sum\\'e9.\\par "
           "{\\*\\shppict{\\pict\\pngblip\\picw10\\pich10 89504e470d0a" + "ab" * 20000 + "}}"
           "{\\nonshppict{\\pict\\wmetafile8 0100" + "cd" * 1000 + "}}"
           "{\\object\\objemb{\\*\\objclass Excel.Sheet.8}{\\*\\objdata 01050000" + "ef" * 3000 + "}"
           "{\\result Object fallback text}}"
           "{\\field{\\*\\fldinst{HYPERLINK \"https://example.com\"}}{\\fldrslt{\\ul Example link}}}\\par "
           "Tab\\tab and line\\line break.\\par}")
    doc = parse_bytes(rtf.encode("ascii"), "cv.rtf")
    assert doc.title == "cv"
    assert "Naïve résumé." in doc.text
    assert "Example link (https://example.com)" in doc.text
    assert "Tab\tand line\nbreak." in doc.text
    assert "89504e47" not in doc.text
    assert "abab" not in doc.text
    assert "efef" not in doc.text


def test_raw_utf8_rtf_written_by_a_script() -> None:
    doc = parse_bytes("{\\rtf1\\ansi 直接写的中文 and text\\par}".encode(), "script.rtf")
    assert doc.text == "直接写的中文 and text"


def test_deep_nesting_is_refused() -> None:
    bomb = b"{\\rtf1 " + b"{" * 2_000_000 + b"x" + b"}" * 2_000_000 + b"}"
    with pytest.raises(ParseError, match=f"more than {MAX_DEPTH} deep"):
        parse_bytes(bomb, "deep.rtf")
    fine = b"{\\rtf1 " + b"{\\b " * 100 + b"nested text" + b"}" * 100 + b"}"
    assert parse_bytes(fine, "ok.rtf").text == "nested text"


def test_huge_bin_blobs_are_cut_out_even_with_braces_inside() -> None:
    blob = b"{}\\{" * 10_000_000  # 40 MB of binary that looks like RTF structure
    rtf = b"{\\rtf1\\ansi Before.{\\pict\\bin" + str(len(blob)).encode() + b" " + blob + b"} After.}"
    assert parse_bytes(rtf, "bin.rtf").text == "Before. After."
    loose = b"{\\rtf1 start\\bin4 {{{{ end}"  # a \bin outside a picture
    assert parse_bytes(loose, "loose.rtf").text == "start end"
    # an embedded font's binary inside the font table
    font = b"{\\rtf1 before {\\fonttbl{\\f0\\fcharset0 A;{\\*\\fontemb\\bin3 }{}}}}\\f0 after}"
    assert parse_bytes(font, "font.rtf").text == "before after"


def test_a_huge_hex_picture_is_dropped_without_tokenising_it() -> None:
    rtf = b"{\\rtf1\\ansi {\\pict\\pngblip " + b"0123456789abcdef" * 4_000_000 + b"} kept}"  # 64 MB
    assert parse_bytes(rtf, "pict.rtf").text == "kept"


def test_inputs_that_make_striprtfs_regexes_backtrack() -> None:
    fields = b"{\\rtf1\\ansi " + b"{\\field{\\*\\fldinst{ x}}}" * 100_000 + b" done}"
    assert parse_bytes(fields, "fields.rtf").text == "done"
    fonts = b"{\\rtf1\\ansi{\\fonttbl" + b"\\f1\\fcharset0 " * 300_000 + b"} done}"
    assert parse_bytes(fonts, "fonts.rtf").text == "done"


@pytest.mark.parametrize(("data", "reason"), [
    (b"PK\x03\x04 not rtf", "not an RTF file"),
    (b"{\\rtf1 \\u99999999999 x}", "damaged"),
    (b"{\\rtf1 {\\pict 0000", "no text"),  # unbalanced: the picture never ends
])
def test_bad_rtf(data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_bytes(data, "bad.rtf")
