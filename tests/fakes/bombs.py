"""Small files that try to exhaust memory or CPU (issue 20, item 4e), built on the fly for tests and
``benchmarks/parse_bombs.py``.

- ``lying_docx``: a DOCX whose ``word/document.xml`` really expands to ``real_bytes`` while the zip headers
  (local and central) say ``claimed_bytes``; a reader trusting the headers passes it, one that decompresses a
  whole entry at once holds all of it in memory.
- ``xml_docx``: an honest DOCX with ``paragraphs`` tiny paragraphs (~40 bytes of XML each): a few hundred KB
  of zip, tens of MB of XML that python-docx walks very slowly.
- ``pdf_shared_stream``: a PDF whose ``pages`` pages all point at one content stream of ``stream_bytes`` text
  operators: small on disk, a lot of text extraction per page.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

_CONTENT_TYPES = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                  b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                  b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
                  b'relationships+xml"/>'
                  b'<Default Extension="xml" ContentType="application/xml"/>'
                  b'<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
                  b'officedocument.wordprocessingml.document.main+xml"/></Types>')
_RELS = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
         b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
         b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
         b'officeDocument" Target="word/document.xml"/></Relationships>')
_DOC_HEAD = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
             b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
_DOC_TAIL = b"</w:body></w:document>"
_PARAGRAPH = b"<w:p><w:r><w:t>bomb</w:t></w:r></w:p>"


def _docx(body_chunks: int, chunk: bytes) -> tuple[bytes, str]:
    """A DOCX whose document.xml is head + ``chunk`` * ``body_chunks`` + tail, compressed as a stream."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
        zf.writestr("_rels/.rels", _RELS)
        with zf.open("word/document.xml", "w") as entry:
            entry.write(_DOC_HEAD)
            for _ in range(body_chunks):
                entry.write(chunk)
            entry.write(_DOC_TAIL)
    return out.getvalue(), "word/document.xml"


def lying_docx(real_bytes: int = 1 << 30, claimed_bytes: int = 4096) -> bytes:
    data, name = _docx(max(1, real_bytes // (1 << 20)), _PARAGRAPH * ((1 << 20) // len(_PARAGRAPH)))
    buf = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo(name)
    struct.pack_into("<I", buf, info.header_offset + 22, claimed_bytes)  # local header: uncompressed size
    pos = buf.find(b"PK\x01\x02")
    while pos != -1:  # central directory records: patch the one naming the entry
        name_len = struct.unpack_from("<H", buf, pos + 28)[0]
        if bytes(buf[pos + 46:pos + 46 + name_len]) == name.encode():
            struct.pack_into("<I", buf, pos + 24, claimed_bytes)
        pos = buf.find(b"PK\x01\x02", pos + 4)
    return bytes(buf)


def xml_docx(paragraphs: int = 1_300_000) -> bytes:
    """Numbered paragraphs: compressed ~100x, like the tester's 0.4 MB file (under the 250x ratio rule)."""
    per_chunk = 600  # ~25 KB: the next copy is inside deflate's 32 KB window
    chunk = b"".join(b"<w:p><w:r><w:t>%d</w:t></w:r></w:p>" % (i * 7919 % 1_000_003)
                     for i in range(per_chunk))
    return _docx(max(1, paragraphs // per_chunk), chunk)[0]


def pdf_shared_stream(pages: int = 5000, stream_bytes: int = 6 << 20) -> bytes:
    line = b"BT /F1 9 Tf 20 700 Td (the same line of text on every page) Tj ET\n"
    content = zlib.compress(line * max(1, stream_bytes // len(line)), 9)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join(f"{5 + i} 0 R".encode() for i in range(pages))
        + f"] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Length {len(content)} /Filter /FlateDecode >>\nstream\n".encode() + content + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> " \
           b"/Contents 4 0 R >>"
    objects.extend(page for _ in range(pages))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
