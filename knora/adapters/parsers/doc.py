"""Legacy Word ``.doc`` / ``.dot``: refused with the format to convert to, unless the file is really another
format under a ``.doc`` name.

No maintained, permissively licensed Python library reads Word 97-2003 binaries without an office suite
(antiword and catdoc are GPL programs, textract shells out to antiword). What *is* common is a ``.doc`` that
is not a Word binary at all: RTF saved by WordPad or old exporters, HTML from "save as web page" or report
generators, and ``.docx`` files renamed. Those are recognised by their first bytes and parsed by their own
parser; an OLE compound file (the real Word binary) ends in a ParseError saying what to do.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

from knora.ports.parser import ParsedDocument, ParseError, Parser

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
UNSUPPORTED = "legacy Word .doc is not supported; save it as .docx (or PDF) and upload again"


class DocParser:
    extensions: frozenset[str] = frozenset({"doc", "dot"})

    def __init__(self, rtf: Callable[[], Parser], html: Callable[[], Parser],
                 docx: Callable[[], Parser]) -> None:
        self._rtf, self._html, self._docx = rtf, html, docx

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        head = data[:1024].lstrip()
        if head.startswith(b"{\\rtf"):
            return self._rtf().parse(data, file_name)
        if data.startswith(b"PK\x03\x04") and _is_docx(data):
            return self._docx().parse(data, file_name)
        lowered = head.lower()
        if lowered.startswith((b"<html", b"<!doctype html", b"<?xml")) or b"<html" in lowered[:512]:
            return self._html().parse(data, file_name)
        if data.startswith(_OLE):
            raise ParseError(UNSUPPORTED)
        raise ParseError(f"not a Word document ({UNSUPPORTED})")


def _is_docx(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return False
