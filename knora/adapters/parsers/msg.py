"""Outlook items (.msg, [MS-OXMSG]) read with ``olefile`` (BSD): the MAPI property streams of the compound
file.

A message is a storage holding one stream per variable-size property (``__substg1.0_IIIITTTT``: property id
and type, 001F = UTF-16LE, 001E = 8-bit text in the message's code page, 0102 = binary), fixed-size
properties packed in ``__properties_version1.0`` (16 bytes each after a header of 32 bytes for the top
message, 24 for an embedded one, 8 for an attachment), and one ``__attach_version1.0_#XXXXXXXX`` storage per
attachment; an attached Outlook item is a ``__substg1.0_3701000D`` storage inside it, a message in its own
right, read only when the depth and count limits let the renderer open it. (extract-msg is GPL: not used.)
"""

from __future__ import annotations

import datetime
import email.utils
import io
import mimetypes
import struct
from collections.abc import Callable

from knora.adapters.parsers._common import normalise_text
from knora.adapters.parsers._mail import (
    READERS,
    InnerParse,
    MailAttachment,
    MailMessage,
    MailRenderer,
    decode_bytes,
)
from knora.adapters.parsers._rtfcompressed import decompress_rtf
from knora.ports.parser import ParseContext, ParsedDocument, ParseError

_PROPS = "__properties_version1.0"
_ATTACH = "__attach_version1.0_#"
_EMBEDDED = "__substg1.0_3701000D"
_ROOT_HEADER, _EMBEDDED_HEADER, _ATTACH_HEADER = 32, 24, 8
_PT_LONG, _PT_BOOLEAN, _PT_SYSTIME = 0x0003, 0x000B, 0x0040
_MAX_STREAM = 256 * 1024 * 1024
_MAX_HEADER_CHARS = 2000
# Windows code pages with a Python codec of another name (the rest are "cpNNNN").
_CODE_PAGES = {65001: "utf-8", 936: "gb18030", 54936: "gb18030", 950: "big5hkscs", 20127: "ascii",
               28591: "latin-1", 50220: "iso2022_jp", 50221: "iso2022_jp", 50222: "iso2022_jp",
               51932: "euc_jp", 51949: "euc_kr", 52936: "hz", 20936: "gb2312", 1200: "utf-16-le"}
_ATTACH_BY_VALUE, _ATTACH_EMBEDDED_MSG, _ATTACH_OLE = 1, 5, 6
_DAMAGE = (OSError, ValueError, struct.error, IndexError, KeyError, TypeError, EOFError, UnicodeError)


def _code_page(number: int | None) -> str | None:
    if not number:
        return None
    return _CODE_PAGES.get(number, f"cp{number}")


class _Storage:
    """One message or attachment storage: its streams by name and its fixed-size properties."""

    def __init__(self, ole: object, path: list[str], header: int, code_page: str | None = None) -> None:
        import olefile

        assert isinstance(ole, olefile.OleFileIO)
        self.ole = ole
        self.path = path
        self.props: dict[int, tuple[int, bytes]] = {}
        raw = self.stream(_PROPS)
        for at in range(header, len(raw) - 15, 16):
            tag, _flags = struct.unpack_from("<II", raw, at)
            self.props[tag >> 16] = (tag & 0xFFFF, raw[at + 8:at + 16])
        self.code_page = _code_page(self.long(0x3FFD)) or code_page

    def stream(self, name: str) -> bytes:
        path = [*self.path, name]
        if not self.ole.exists(path) or self.ole.get_type(path) != 2:  # STGTY_STREAM
            return b""
        if self.ole.get_size(path) > _MAX_STREAM:
            raise ParseError(f"the .msg file's stream {name} is larger than {_MAX_STREAM} bytes")
        return bytes(self.ole.openstream(path).read())

    def string(self, prop: int) -> str:
        wide = self.stream(f"__substg1.0_{prop:04X}001F")
        if wide:
            return wide.decode("utf-16-le", errors="replace").split("\x00", 1)[0]
        narrow = self.stream(f"__substg1.0_{prop:04X}001E")
        return decode_bytes(narrow.split(b"\x00", 1)[0], self.code_page) if narrow else ""

    def binary(self, prop: int) -> bytes:
        return self.stream(f"__substg1.0_{prop:04X}0102")

    def long(self, prop: int) -> int | None:
        kind, value = self.props.get(prop, (0, b""))
        if kind not in (_PT_LONG, _PT_BOOLEAN) or len(value) < 4:
            return None
        return int(struct.unpack_from("<i", value)[0])

    def time(self, prop: int) -> datetime.datetime | None:
        kind, value = self.props.get(prop, (0, b""))
        if kind != _PT_SYSTIME or len(value) < 8:
            return None
        ticks = struct.unpack_from("<Q", value)[0]  # 100 ns since 1601-01-01 UTC
        try:
            return (datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC)
                    + datetime.timedelta(microseconds=ticks // 10))
        except OverflowError:
            return None

    def children(self, prefix: str) -> list[list[str]]:
        depth = len(self.path) + 1
        found = [p for p in self.ole.listdir(streams=False, storages=True)
                 if len(p) == depth and p[:-1] == self.path and p[-1].startswith(prefix)]
        return sorted(found)


def _header(text: str) -> str:
    return " ".join(text.split())[:_MAX_HEADER_CHARS]


def _sender(s: _Storage) -> str:
    name = s.string(0x0C1A) or s.string(0x0042)
    address = s.string(0x5D01) or s.string(0x0C1F) or s.string(0x0065)
    if address and not address.lower().startswith("/o="):  # an Exchange X.500 address says nothing to people
        return f"{name} <{address}>" if name and name != address else address
    return name


def _transport_date(s: _Storage) -> str:
    for line in s.string(0x007D).splitlines():  # the internet headers the message arrived with
        if line.lower().startswith("date:"):
            return line[5:].strip()
    return ""


def _attachment(s: _Storage, number: int) -> MailAttachment | str:
    """The attachment in storage ``s``, or why it is not read."""
    name = _header(s.string(0x3707) or s.string(0x3704) or s.string(0x3001)) or f"attachment-{number}"
    method = s.long(0x3705) or _ATTACH_BY_VALUE
    mime = s.string(0x370E).strip().lower() or mimetypes.guess_type(name)[0] or "application/octet-stream"
    if method == _ATTACH_EMBEDDED_MSG or (method != _ATTACH_OLE and s.ole.exists([*s.path, _EMBEDDED])
                                          and not s.binary(0x3701)):
        storage = _Storage(s.ole, [*s.path, _EMBEDDED], _EMBEDDED_HEADER, s.code_page)
        title = name if name != f"attachment-{number}" else (storage.string(0x0037) or "message")
        if not title.lower().endswith((".msg", ".eml")):
            title += ".msg"
        return MailAttachment(name=title, mime="application/vnd.ms-outlook",
                              message=_embedded(storage))
    if method == _ATTACH_OLE:
        return f"attachment {name}: an embedded OLE object, which is not read"
    if method not in (_ATTACH_BY_VALUE, 0):
        return f"attachment {name}: a link to a file that is not attached (attach method {method})"
    hidden = bool(s.long(0x7FFE))
    content_id = s.string(0x3712)
    rendered_in_html = bool((s.long(0x3714) or 0) & 0x4)  # PR_ATTACH_FLAGS: ATT_MHTML_REF
    inline = mime.startswith("image/") and (hidden or bool(content_id) or rendered_in_html)
    return MailAttachment(name=name, mime=mime, data=s.binary(0x3701), inline=inline)


def _rtf_body(compressed: bytes, skipped: list[str]) -> bytes:
    """The RTF of a body Outlook kept only as compressed RTF (PR_RTF_COMPRESSED)."""
    if not compressed:
        return b""
    try:
        return decompress_rtf(compressed)
    except ParseError as exc:
        skipped.append(f"the RTF body: {exc}")
    return b""


def _message(s: _Storage) -> MailMessage:
    submitted = s.time(0x0039) or s.time(0x0E06)
    date = email.utils.format_datetime(submitted) if submitted else _transport_date(s)
    subject = _header(s.string(0x0037))
    headers = [("From", _header(_sender(s))), ("To", _header(s.string(0x0E04))),
               ("Cc", _header(s.string(0x0E03))), ("Date", date), ("Subject", subject)]
    html_raw = s.binary(0x1013)
    html = decode_bytes(html_raw, _code_page(s.long(0x3FDE)) or s.code_page) if html_raw else s.string(0x1013)
    text = s.string(0x1000)
    skipped: list[str] = []
    rtf = _rtf_body(s.binary(0x1009), skipped) if not text.strip() and not html.strip() else b""
    attachments: list[MailAttachment] = []
    for number, path in enumerate(s.children(_ATTACH), start=1):
        found = _attachment(_Storage(s.ole, path, _ATTACH_HEADER, s.code_page), number)
        if isinstance(found, str):
            skipped.append(found)
        else:
            attachments.append(found)
    return MailMessage(headers=[(k, v) for k, v in headers if v], subject=subject, text=normalise_text(text),
                       html=html, rtf=rtf, attachments=attachments, skipped=skipped)


def read_msg(data: bytes) -> MailMessage:
    """The Outlook item in ``data``, or ParseError with the reason it cannot be read."""
    import olefile

    if not olefile.isOleFile(io.BytesIO(data)):
        raise ParseError("not an Outlook .msg file: it is not an OLE compound file (a .msg saved by Outlook "
                         "starts with the OLE signature D0 CF 11 E0)")
    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
        if not ole.exists(_PROPS) and not ole.exists("__substg1.0_0037001F") \
                and not ole.exists("__substg1.0_0037001E"):
            raise ParseError("not an Outlook .msg file: the OLE compound file holds no message properties "
                             "(is it a Word .doc or an Excel .xls?)")
        return _message(_Storage(ole, [], _ROOT_HEADER))
    except ParseError:
        raise
    except _DAMAGE as exc:
        raise ParseError(f"the .msg file is damaged or unreadable: {type(exc).__name__}: {exc}") from exc


def _embedded(storage: _Storage) -> Callable[[], MailMessage]:
    def read() -> MailMessage:
        try:
            return _message(storage)
        except _DAMAGE as exc:
            raise ParseError(f"the attached Outlook item is damaged: {type(exc).__name__}: {exc}") from exc
    return read


READERS["msg"] = read_msg


class MsgParser:
    extensions: frozenset[str] = frozenset({"msg"})

    def __init__(self, ctx: ParseContext, inner: InnerParse, supported: frozenset[str]) -> None:
        self._renderer = MailRenderer(ctx, inner, supported, kind="msg")

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        message = read_msg(data)
        return self._renderer.document(message, file_name)
