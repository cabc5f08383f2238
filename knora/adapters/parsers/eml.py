"""E-mail files (.eml, RFC 5322 / MIME) via the standard library's ``email`` package.

The ``compat32`` policy is used because it is the most lenient reader and leaves decoding to us (its headers
are handed over raw, 8-bit bytes included): header words (RFC 2047, any charset, Chinese included), raw 8-bit
headers and bodies are decoded with ``decode_bytes``, which honours the declared charset and falls back to
guessing when the label is unknown or wrong. ``email`` accepts any bytes
as a message, so a file counts as an e-mail only when it has at least one of the headers every mail has
(From, To, Subject, Date, Message-ID, Received, MIME-Version …); otherwise it is refused.
"""

from __future__ import annotations

import email
import email.header
import email.message
from collections.abc import Callable
from email._policybase import Compat32

from knora.adapters.parsers._common import normalise_text
from knora.adapters.parsers._mail import (
    READERS,
    InnerParse,
    MailAttachment,
    MailMessage,
    MailRenderer,
    attachment_extension,
    decode_bytes,
)
from knora.ports.parser import ParseContext, ParsedDocument, ParseError

_SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")
_MAIL_HEADERS = {"from", "to", "cc", "subject", "date", "message-id", "received", "mime-version", "sender",
                 "reply-to", "return-path", "delivered-to", "x-mailer", "in-reply-to", "references"}


class _RawHeaders(Compat32):
    """compat32, except that a header is handed over as it was (raw 8-bit bytes as surrogate escapes)
    instead of having those bytes replaced by U+FFFD: ``decode_header`` then guesses their charset."""

    def header_fetch_parse(self, name: str, value: str) -> str:
        return value


_POLICY = _RawHeaders()
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_MAX_HEADER_CHARS = 2000
_MAX_MIME_DEPTH = 50  # multiparts inside multiparts; a real mail nests 3 or 4


def decode_header(raw: object) -> str:
    """A header value as text: RFC 2047 encoded words decoded in their charset, raw 8-bit bytes (which the
    parser carries as surrogate escapes) guessed, folding removed."""
    if raw is None:
        return ""
    if isinstance(raw, email.header.Header):
        raw = str(raw)
    # decode_header is quadratic in the number of encoded words: only the start of a huge header is read
    value = str(raw)[:4 * _MAX_HEADER_CHARS]
    if any("\udc80" <= ch <= "\udcff" for ch in value):
        value = decode_bytes(value.encode("ascii", "surrogateescape"), None)
    try:
        parts = email.header.decode_header(value)
    except (ValueError, LookupError, AssertionError):
        parts = [(value, None)]
    out: list[str] = []
    for chunk, charset in parts:
        if isinstance(chunk, bytes):
            out.append(decode_bytes(chunk, charset))
        else:
            out.append(chunk)
    # decode_header drops the blanks between an encoded word and plain text only when they are adjacent words
    text = "".join(out) if len(parts) > 1 else (out[0] if out else "")
    return " ".join(text.split())[:_MAX_HEADER_CHARS]


def _part_text(part: email.message.Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    return decode_bytes(payload, part.get_content_charset())


def _payload_bytes(part: email.message.Message) -> bytes:
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


class _Collector:
    """Walks the MIME tree into bodies and attachments (embedded messages are not walked into: they become
    attachments read on demand)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.htmls: list[str] = []
        self.attachments: list[MailAttachment] = []
        self.too_deep = False
        self.defects: set[str] = set()  # what the email package found wrong, by kind

    def walk(self, part: email.message.Message, depth: int = 0) -> None:
        if depth > _MAX_MIME_DEPTH:
            self.too_deep = True
            return
        self.defects.update(type(d).__name__ for d in getattr(part, "defects", []))
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            inner = part.get_payload()
            if isinstance(inner, list) and inner and isinstance(inner[0], email.message.Message):
                message = inner[0]
                name = decode_header(part.get_filename()) or (decode_header(message.get("Subject")) or
                                                             "message") + ".eml"
                self.attachments.append(MailAttachment(name=name, mime=ctype,
                                                       message=_reader_for(message)))
            return
        if part.is_multipart():
            payload = part.get_payload()
            for sub in payload if isinstance(payload, list) else []:
                if isinstance(sub, email.message.Message):
                    self.walk(sub, depth + 1)
            return
        disposition = (part.get_content_disposition() or "").lower()
        filename = decode_header(part.get_filename())
        if disposition != "attachment" and not filename and ctype in ("text/plain", "text/html"):
            (self.texts if ctype == "text/plain" else self.htmls).append(_part_text(part))
            return
        # a picture shown in the body: marked inline, or referenced by Content-ID / nameless and not marked
        # as an attachment
        inline = ctype.startswith("image/") and (disposition == "inline" or (
            disposition != "attachment" and (part.get("Content-ID") is not None or not filename)))
        number = len(self.attachments) + 1
        name = filename or f"attachment-{number}.{attachment_extension('', ctype) or 'bin'}"
        self.attachments.append(MailAttachment(name=name, mime=ctype, data=_payload_bytes(part),
                                               inline=inline))


def _reader_for(message: email.message.Message) -> Callable[[], MailMessage]:
    return lambda: read_message(message)


def read_message(message: email.message.Message) -> MailMessage:
    headers = [(name, decode_header(message.get(name))) for name in _SHOWN_HEADERS]
    collector = _Collector()
    collector.walk(message)
    skipped: list[str] = []
    if collector.too_deep:
        skipped.append(f"MIME parts nested more than {_MAX_MIME_DEPTH} levels deep were not read")
    defects = collector.defects
    if "CloseBoundaryNotFoundDefect" in defects or "StartBoundaryNotFoundDefect" in defects:
        skipped.append("the message is truncated or damaged (a MIME boundary is missing); what could be read "
                       "is kept")
    return MailMessage(headers=[(k, v) for k, v in headers if v], subject=dict(headers)["Subject"],
                       text=normalise_text("\n\n".join(t for t in collector.texts if t.strip())),
                       html="\n".join(collector.htmls), attachments=collector.attachments, skipped=skipped)


def read_eml(data: bytes) -> MailMessage:
    """The message in ``data``, or ParseError when it is not an e-mail."""
    if data.startswith(_OLE_MAGIC) and "msg" in READERS:
        return READERS["msg"](data)  # an Outlook item saved with the wrong extension
    if b"\x00" in data[:4096]:
        raise ParseError("not an e-mail file: it holds binary data where the message headers should be")
    try:
        message = email.message_from_bytes(data, policy=_POLICY)
    except RecursionError as exc:
        raise ParseError("the message's MIME parts are nested too deeply to read") from exc
    if not {k.lower() for k in message} & _MAIL_HEADERS:
        raise ParseError("not an e-mail file: none of the message headers (From, To, Subject, Date …) was "
                         "found at its start")
    try:
        return read_message(message)
    except RecursionError as exc:
        raise ParseError("the message's MIME parts are nested too deeply to read") from exc


READERS["eml"] = read_eml


class EmlParser:
    extensions: frozenset[str] = frozenset({"eml"})

    def __init__(self, ctx: ParseContext, inner: InnerParse, supported: frozenset[str]) -> None:
        self._renderer = MailRenderer(ctx, inner, supported, kind="eml")

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        return self._renderer.document(read_eml(data), file_name)
