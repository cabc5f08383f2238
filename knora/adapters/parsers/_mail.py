"""What .eml and .msg have in common once read: a ``MailMessage`` (headers, bodies, attachments), rendered to
one ``ParsedDocument`` with the attachments parsed recursively under the e-mail's own limits.

The text is the readable header block (From, To, Cc, Date, Subject), the body (plain text preferred, else the
HTML body through the HTML parser's extraction), OCR text of inline images, then every attachment as a span of
kind ``attachment`` labelled with its file name, so a chunk from an attachment cites "attachment budget.xlsx".
When the attachment's own parser reports pages (a PDF's pages, a workbook's sheets, a forwarded e-mail's
attachments) the attachment's text is cut into sub-spans with the same number, labelled "report.pdf, p. 2".

Limits, shared by the whole tree of nested messages (``MailBudget``): nested messages are opened to
``MAX_DEPTH`` levels; at most ``MAX_ATTACHMENTS`` attachments are parsed; every attachment's decoded bytes and
the text its parser produced count against the parse context's ``max_expanded_bytes``, and each inner parser
gets only what is left as its own archive budget. What is not parsed is named in ``ParsedDocument.skipped``
with the reason: archives (never opened), unsupported types, failures, attachments over a limit.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
import mimetypes
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from knora.adapters.parsers._common import (
    TextBuilder,
    decode_text,
    extension_of,
    file_stem,
    normalise_text,
)
from knora.domain.document import PageSpan
from knora.ports.ocr import OcrUnavailable
from knora.ports.parser import ParseContext, ParsedDocument, ParsedImage, ParseError

MAX_DEPTH = 3  # a forwarded message inside a forwarded message inside a message; deeper ones are not opened
MAX_ATTACHMENTS = 100  # attachments parsed per e-mail, nested messages included
MAX_IMAGES = 50  # inline images kept per e-mail
MAX_OCR_PIXELS = 40_000_000  # an inline image larger than this is kept without OCR
MAX_PLAIN_RTF = 256 * 1024  # an RTF body read by striprtf directly (its regexes backtrack on big input)
_NAMES_SHOWN = 10  # names listed in one "not parsed" summary
ARCHIVES = frozenset({"zip", "rar", "7z", "tar", "gz", "tgz", "bz2", "xz", "zst", "cab", "arj", "lz", "lzh"})
MAIL_EXTENSIONS = frozenset({"eml", "msg"})

# Charset labels seen in the wild that Python does not know, or knows as a narrower codec than what is sent.
_CHARSET_ALIASES = {
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "cp936": "gb18030", "euc-cn": "gb18030",
    "big5": "big5hkscs", "x-big5": "big5hkscs", "ks_c_5601-1987": "cp949", "ks_c_5601": "cp949",
    "x-sjis": "shift_jis", "unicode-1-1-utf-7": "utf-7", "x-unknown": "", "unknown-8bit": "",
    "default": "", "x-user-defined": "",
}

InnerParse = Callable[[ParseContext, bytes, str], ParsedDocument]
"""The registry's parse with an explicit context: (context, bytes, file name) → normalised document."""


def decode_bytes(data: bytes, charset: str | None) -> str:
    """``data`` in its declared ``charset`` when that label is known and fits the bytes; otherwise (no label,
    an unknown or broken label, bytes that are not in it) the way ``decode_text`` guesses."""
    label = (charset or "").strip().strip("\"'").lower()
    label = _CHARSET_ALIASES.get(label, label)
    if label:
        try:
            codecs.lookup(label)
            return data.decode(label)
        except (LookupError, UnicodeDecodeError, ValueError):
            pass
    return decode_text(data)


@dataclass
class MailAttachment:
    """One attached file (``data``) or embedded message (``message``, read on demand); ``inline`` for a
    picture shown in the body."""

    name: str
    mime: str = "application/octet-stream"
    data: bytes = b""
    inline: bool = False
    message: Callable[[], MailMessage] | None = None


@dataclass
class MailMessage:
    headers: list[tuple[str, str]]  # the readable ones, in display order
    subject: str = ""
    text: str = ""  # the plain-text body
    html: str = ""  # the HTML body, used when there is no plain text
    rtf: bytes = b""  # an RTF body (Outlook), used when there is neither
    attachments: list[MailAttachment] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what reading the message itself left out


# Readers of mail formats by extension, so that an .eml attached to a .msg (or the reverse) is opened by the
# right one; eml.py and msg.py register themselves.
READERS: dict[str, Callable[[bytes], MailMessage]] = {}


@dataclass
class MailBudget:
    """What the whole e-mail may still spend, shared by its nested messages."""

    remaining_bytes: int
    attachments_left: int = MAX_ATTACHMENTS
    images_left: int = MAX_IMAGES
    over_limit: list[str] = field(default_factory=list)  # attachments not parsed: the count limit
    over_budget: list[str] = field(default_factory=list)  # attachments not parsed: the byte budget
    images_dropped: int = 0


def attachment_extension(name: str, mime: str) -> str:
    ext = extension_of(name)
    if ext:
        return ext
    guessed = mimetypes.guess_extension(mime.split(";")[0].strip().lower()) or ""
    return {"jpe": "jpg", "htm": "html", "ksh": "txt", "bat": "txt"}.get(guessed.lstrip("."),
                                                                         guessed.lstrip("."))


def _shown(names: list[str]) -> str:
    head = ", ".join(names[:_NAMES_SHOWN])
    return head + (f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else "")


class MailRenderer:
    """Renders one message (and, through ``render``'s recursion, its nested ones) to a ParsedDocument."""

    def __init__(self, ctx: ParseContext, inner: InnerParse, supported: frozenset[str], kind: str) -> None:
        self.ctx = ctx
        self.inner = inner
        self.supported = supported
        self.kind = kind
        budget = ctx.options.time_budget_seconds
        # the upload's deadline for optional work (OCR) covers the whole e-mail, attachments included
        self._deadline = time.monotonic() + budget if budget > 0 else None
        self._ocr_timed_out = 0
        self._ocr_unavailable = ""

    def _seconds_left(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def _inner_context(self, remaining_bytes: int) -> ParseContext:
        """The context an attachment's parser gets: what is left of the byte budget and of the time budget
        (OCR off once that is spent)."""
        options = self.ctx.options
        left = self._seconds_left()
        if left is not None:
            options = options.model_copy(update={"time_budget_seconds": max(left, 0.001),
                                                 "ocr": options.ocr and left > 0})
        return dataclasses.replace(self.ctx, max_expanded_bytes=max(remaining_bytes, 1), options=options)

    def document(self, message: MailMessage, file_name: str) -> ParsedDocument:
        budget = MailBudget(remaining_bytes=self.ctx.max_expanded_bytes)
        doc = self.render(message, file_name, budget, depth=0)
        skipped = list(doc.skipped)
        if budget.over_limit:
            skipped.append(f"{len(budget.over_limit)} attachments not parsed: at most {MAX_ATTACHMENTS} are "
                           f"parsed per e-mail ({_shown(budget.over_limit)})")
        if budget.over_budget:
            skipped.append(f"{len(budget.over_budget)} attachments not parsed: the e-mail's attachments "
                           f"exceed the limit of {self.ctx.max_expanded_bytes} expanded bytes "
                           f"({_shown(budget.over_budget)})")
        if self._ocr_unavailable:
            skipped.append(f"the e-mail's images were not OCR'd: {self._ocr_unavailable}")
        if self._ocr_timed_out:
            skipped.append(f"{self._ocr_timed_out} images not OCR'd: the upload's time budget of "
                           f"{self.ctx.options.time_budget_seconds:g} s for OCR was spent")
        if budget.images_dropped:
            skipped.append(f"{budget.images_dropped} inline images not kept: at most {MAX_IMAGES} per e-mail")
        return doc.model_copy(update={"skipped": skipped})

    def render(self, message: MailMessage, file_name: str, budget: MailBudget, depth: int) -> ParsedDocument:
        b = TextBuilder()
        skipped = list(message.skipped)
        b.add("\n".join(f"{k}: {v}" for k, v in message.headers if v.strip()))
        body = message.text if message.text.strip() else self._html_text(message.html, skipped)
        if not body.strip() and message.rtf:
            body = self._rtf_text(message.rtf, skipped)
        b.add(body)
        for att in message.attachments:
            if att.inline and att.message is None and att.mime.startswith("image/"):
                self._inline_image(b, att, budget, skipped)
        number = 0
        for att in message.attachments:
            if att.inline and att.message is None and att.mime.startswith("image/"):
                continue
            number += 1
            self._attachment(b, att, number, budget, depth, skipped)
        subject = message.subject.strip()
        headers = dict(message.headers)
        metadata = {"format": self.kind, "attachments": str(number)}
        for key in ("From", "To", "Date"):
            if headers.get(key):
                metadata[key.lower()] = headers[key][:500]
        return ParsedDocument(title=subject or file_stem(file_name), text=b.text, metadata=metadata,
                              pages=b.pages, images=b.images, skipped=skipped)

    def _html_text(self, html: str, skipped: list[str]) -> str:
        """The HTML body through the registry's HTML parser (boilerplate dropped, markdown kept)."""
        if not html.strip():
            return ""
        try:
            return self.inner(self._inner_context(self.ctx.max_expanded_bytes), html.encode("utf-8"),
                              "body.html").text
        except ParseError as exc:
            skipped.append(f"the HTML body: {exc}")
            return ""

    def _rtf_text(self, rtf: bytes, skipped: list[str]) -> str:
        """Through the registry's RTF parser when this install has one, else striprtf on a bounded body."""
        if "rtf" in self.supported:
            try:
                return self.inner(self._inner_context(self.ctx.max_expanded_bytes), rtf, "body.rtf").text
            except ParseError as exc:
                skipped.append(f"the RTF body: {exc}")
                return ""
        if len(rtf) > MAX_PLAIN_RTF:
            skipped.append(f"the RTF body: {len(rtf)} bytes, above the {MAX_PLAIN_RTF} read without an RTF "
                           "parser")
            return ""
        from striprtf.striprtf import rtf_to_text

        page = re.search(rb"\\ansicpg(\d+)", rtf)
        encoding = f"cp{int(page.group(1))}" if page else "cp1252"
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = "cp1252"
        try:
            text: str = rtf_to_text(rtf.decode("latin-1"), encoding=encoding,  # type: ignore[no-untyped-call]
                                    errors="replace")
        except (ValueError, IndexError, UnicodeError, RecursionError) as exc:
            skipped.append(f"the RTF body could not be read: {type(exc).__name__}: {exc}")
            return ""
        return text

    def _image(self, att: MailAttachment, skipped: list[str]) -> ParsedImage | None:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(att.data)) as img:
                width, height = img.size
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            skipped.append(f"image {att.name}: not a readable image ({exc})")
            return None
        ocr_text = ""
        engine = None
        try:
            engine = self.ctx.ocr()
        except OcrUnavailable as exc:
            self._ocr_unavailable = str(exc)
        left = self._seconds_left()
        if engine is not None and left is not None and left <= 0:
            self._ocr_timed_out += 1
        elif engine is not None:
            if width * height > MAX_OCR_PIXELS:
                skipped.append(f"image {att.name}: {width}x{height} pixels, too large for OCR")
            else:
                try:
                    ocr_text = engine.recognize(att.data).text
                except (OcrUnavailable, ParseError) as exc:
                    skipped.append(f"image {att.name}: OCR failed ({exc})")
        data = att.data if self.ctx.options.extract_images else b""
        return ParsedImage(data=data, mime=att.mime, width=width, height=height, name=att.name,
                           ocr_text=ocr_text)

    def _inline_image(self, b: TextBuilder, att: MailAttachment, budget: MailBudget,
                      skipped: list[str]) -> None:
        if budget.images_left <= 0:
            budget.images_dropped += 1
            return
        budget.images_left -= 1
        image = self._image(att, skipped)
        if image is not None and (image.data or image.ocr_text):
            b.add_image(image)

    def _attachment(self, b: TextBuilder, att: MailAttachment, number: int, budget: MailBudget, depth: int,
                    skipped: list[str]) -> None:
        name = att.name
        ext = attachment_extension(name, att.mime)
        nested = att.message
        if nested is None and ext in MAIL_EXTENSIONS and ext in READERS:
            reader, raw = READERS[ext], att.data
            nested = lambda: reader(raw)  # noqa: E731 - read only once the depth and count limits allow it
        if nested is None and ext in ARCHIVES:
            skipped.append(f"attachment {name}: archives (.{ext}) are not opened")
            return
        if nested is None and ext not in self.supported and not att.mime.startswith("image/"):
            shown = f".{ext}" if ext else "(no extension)"
            skipped.append(f"attachment {name}: unsupported type {shown} ({att.mime})")
            return
        if nested is not None and depth + 1 > MAX_DEPTH:
            skipped.append(f"attachment {name}: a message nested more than {MAX_DEPTH} levels deep is not "
                           "opened")
            return
        if budget.attachments_left <= 0:
            budget.over_limit.append(name)
            return
        if len(att.data) > budget.remaining_bytes:
            budget.over_budget.append(name)
            return
        budget.attachments_left -= 1
        budget.remaining_bytes -= len(att.data)
        try:
            if nested is not None:
                inner_doc = self.render(nested(), name, budget, depth + 1)
            elif ext in self.supported:
                inner_name = name if extension_of(name) else f"{name}.{ext}"
                inner_doc = self.inner(self._inner_context(budget.remaining_bytes), att.data, inner_name)
            else:
                image = self._image(att, skipped)
                if image is None:
                    return
                self._place_image(b, image, number, name, budget)
                return
        except ParseError as exc:
            skipped.append(f"attachment {name}: {exc}")
            return
        except (RecursionError, MemoryError) as exc:
            skipped.append(f"attachment {name}: could not be read ({type(exc).__name__})")
            return
        budget.remaining_bytes = max(budget.remaining_bytes - len(inner_doc.text.encode("utf-8")), 0)
        skipped.extend(f"attachment {name} / {s.removeprefix('attachment ')}" if s.startswith("attachment ")
                       else f"attachment {name}: {s}" for s in inner_doc.skipped)
        self._place_document(b, inner_doc, number, name, None if nested is not None else budget)

    def _place_image(self, b: TextBuilder, image: ParsedImage, number: int, name: str,
                     budget: MailBudget) -> None:
        text = normalise_text(image.ocr_text)
        offset = len(b.text)
        if text:
            b.add(text, page=number, kind="attachment", label=name)
            offset = len(b.text) - len(text)
        if budget.images_left <= 0:
            budget.images_dropped += 1
            return
        if image.data or text:
            budget.images_left -= 1
            b.images.append(image.model_copy(update={"offset": offset, "page": number}))

    def _place_document(self, b: TextBuilder, doc: ParsedDocument, number: int, name: str,
                        budget: MailBudget | None) -> None:
        """``doc``'s text as attachment ``number``; its images counted against ``budget`` (None: a nested
        message's render counted them already)."""
        text = normalise_text(doc.text)
        if not text:
            return
        b.add(text)
        end = len(b.text)
        start = end - len(text)
        inner = [p for p in doc.pages if 0 <= p.start < len(text)] if text == doc.text else []
        if not inner:
            b.pages.append(PageSpan(number=number, start=start, end=end, kind="attachment", label=name))
        else:
            if inner[0].start > 0:
                b.pages.append(PageSpan(number=number, start=start, end=start + inner[0].start,
                                        kind="attachment", label=name))
            for k, span in enumerate(inner):
                stop = start + inner[k + 1].start if k + 1 < len(inner) else end
                b.pages.append(PageSpan(number=number, start=start + span.start, end=stop,
                                        kind="attachment", label=f"{name}, {span.display()}"))
        for image in doc.images if text == doc.text else []:
            if budget is not None:
                if budget.images_left <= 0:
                    budget.images_dropped += 1
                    continue
                budget.images_left -= 1
            b.images.append(image.model_copy(update={"offset": start + image.offset, "page": number}))
