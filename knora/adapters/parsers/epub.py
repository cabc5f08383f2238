"""EPUB (2 and 3), read as what it is — a zip of XHTML — without an e-book library (ebooklib is AGPL).

``META-INF/container.xml`` names the package document (OPF); its spine gives the reading order of the XHTML
chapters, each rendered by the HTML parser and placed as a span of kind "section" labelled with its title
from the table of contents (EPUB 3 nav document, else the EPUB 2 NCX), else its first heading. Title and
author come from the OPF metadata. Images referenced by a chapter become ``ParsedImage`` (bounded in number
and size; OCR'd when OCR is on).

The archive is decompressed under the byte budget (``zipguard``) before anything is read; XML is parsed with
entities and network access off. Font obfuscation (``META-INF/encryption.xml`` with the IDPF or Adobe font
algorithms) is harmless; any other encryption is DRM and ends in a ParseError.
"""

from __future__ import annotations

import io
import posixpath
import re
import time
import warnings
import zipfile
from urllib.parse import unquote, urldefrag

from lxml import etree

from knora.adapters.parsers._common import TextBuilder, file_stem
from knora.adapters.parsers.html import HtmlParser
from knora.adapters.parsers.zipguard import bounded_archive
from knora.ports.ocr import OcrUnavailable
from knora.ports.parser import ParseContext, ParsedDocument, ParsedImage, ParseError

MAX_IMAGES = 64
MAX_IMAGE_BYTES = 8 * 1024 * 1024
MIN_IMAGE_BYTES = 1024  # spacers, bullets and rules are not worth keeping
MAX_IMAGE_PIXELS = 40_000_000  # a pixel bomb is named in ``skipped``, never decoded
_FONT_OBFUSCATION = {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
_IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/tiff"}
_XHTML_TYPES = {"application/xhtml+xml", "text/html", "application/xml", "text/xml"}
_EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_IMG_SRC = re.compile(rb"""<(?:img|image)\b[^>]*?\b(?:src|xlink:href|href)\s*=\s*["']([^"']+)["']""",
                      re.IGNORECASE)


def _xml(data: bytes, what: str) -> etree._Element:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=False,
                             huge_tree=False)
    try:
        return etree.fromstring(data, parser)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise ParseError(f"the e-book's {what} is malformed XML: {exc}") from exc


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def _children(root: etree._Element, name: str) -> list[etree._Element]:
    return [el for el in root.iter() if _local(el.tag) == name]


def _text(el: etree._Element) -> str:
    return " ".join("".join(el.itertext()).split())


class EpubParser:
    extensions: frozenset[str] = frozenset({"epub"})

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        data = bounded_archive(data, self.ctx.max_expanded_bytes, "epub")
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return _Book(archive, self.ctx).parse(file_name)


class _Book:
    def __init__(self, archive: zipfile.ZipFile, ctx: ParseContext) -> None:
        self.archive = archive
        self.ctx = ctx
        self.names = set(archive.namelist())
        self.skipped: list[str] = []

    def read(self, name: str) -> bytes | None:
        return self.archive.read(name) if name in self.names else None

    def parse(self, file_name: str) -> ParsedDocument:
        self._refuse_drm()
        opf_path = self._package_path()
        opf_bytes = self.read(opf_path)
        if opf_bytes is None:
            raise ParseError(f"the e-book's package document {opf_path!r} is missing")
        opf = _xml(opf_bytes, "package document (OPF)")
        base = posixpath.dirname(opf_path)
        title = next((_text(e) for e in _children(opf, "title") if _text(e)), "")
        authors = [_text(e) for e in _children(opf, "creator") if _text(e)]
        language = next((_text(e) for e in _children(opf, "language") if _text(e)), "")
        manifest: dict[str, tuple[str, str, str]] = {}  # id → (path in zip, media type, properties)
        for item in _children(opf, "item"):
            href, ident = item.get("href"), item.get("id")
            if href and ident:
                path = posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0])))
                manifest[ident] = (path, item.get("media-type", ""), item.get("properties", ""))
        spine = next(iter(_children(opf, "spine")), None)
        if spine is None:
            raise ParseError("the e-book has no spine (its reading order is missing from the OPF)")
        toc = self._toc(manifest, spine.get("toc", ""))
        builder = TextBuilder()
        html = HtmlParser()
        deadline = (time.monotonic() + self.ctx.options.time_budget_seconds
                    if self.ctx.options.time_budget_seconds > 0 else None)
        images_left = MAX_IMAGES if self.ctx.options.extract_images else 0
        number = 0
        for ref in _children(spine, "itemref"):
            entry = manifest.get(ref.get("idref", ""))
            if entry is None:
                self.skipped.append(f"spine item {ref.get('idref')!r}: not in the manifest")
                continue
            path, media, props = entry
            if "nav" in props.split() or media not in _XHTML_TYPES:
                continue
            raw = self.read(path)
            if raw is None:
                self.skipped.append(f"chapter {path!r}: missing from the archive")
                continue
            try:
                chapter = html.parse(raw, posixpath.basename(path))
            except ParseError as exc:
                self.skipped.append(f"chapter {path!r}: {exc}")
                continue
            heading = _HEADING.search(chapter.text)
            number += 1
            label = toc.get(path) or (heading.group(1).strip() if heading else "") or chapter.title \
                or f"chapter {number}"
            builder.add(chapter.text, page=number, kind="section", label=label)
            if images_left > 0:
                images_left = self._images(raw, path, builder, (number, label), images_left, deadline)
        if not builder.text:
            raise ParseError("the e-book has no readable text"
                             + (f" ({'; '.join(self.skipped[:3])})" if self.skipped else ""))
        metadata = {"format": "epub", "chapters": str(len(builder.pages))}
        if authors:
            metadata["author"] = ", ".join(authors)
        if language:
            metadata["language"] = language
        return ParsedDocument(title=title or file_stem(file_name), text=builder.text, metadata=metadata,
                              pages=builder.pages, images=builder.images, skipped=self.skipped)

    def _refuse_drm(self) -> None:
        if "META-INF/rights.xml" in self.names:
            raise ParseError("the e-book is DRM-protected (META-INF/rights.xml); only DRM-free e-books can "
                             "be read")
        raw = self.read("META-INF/encryption.xml")
        if raw is None:
            return
        root = _xml(raw, "encryption.xml")
        for method in _children(root, "EncryptionMethod"):
            if method.get("Algorithm", "") not in _FONT_OBFUSCATION:
                raise ParseError("the e-book is DRM-protected (its content is encrypted); only DRM-free "
                                 "e-books can be read")

    def _package_path(self) -> str:
        raw = self.read("META-INF/container.xml")
        if raw is not None:
            for rootfile in _children(_xml(raw, "container.xml"), "rootfile"):
                path = rootfile.get("full-path")
                if path:
                    return unquote(path)
        opfs = sorted(n for n in self.names if n.lower().endswith(".opf"))
        if not opfs:
            raise ParseError("not an e-book: no META-INF/container.xml and no package document (.opf)")
        return opfs[0]

    def _toc(self, manifest: dict[str, tuple[str, str, str]], ncx_id: str) -> dict[str, str]:
        """Chapter path → its first title in the table of contents (nav document, else NCX)."""
        out: dict[str, str] = {}
        nav = next((e for e in manifest.values() if "nav" in e[2].split()), None)
        ncx = manifest.get(ncx_id) or next((e for e in manifest.values()
                                            if e[1] == "application/x-dtbncx+xml"), None)
        try:
            if nav is not None and (raw := self.read(nav[0])) is not None:
                base = posixpath.dirname(nav[0])
                root = _xml(raw, "navigation document")
                tocs = [n for n in _children(root, "nav") if "toc" in n.get(_EPUB_TYPE, "").split()]
                for a in (a for toc in (tocs or [root]) for a in _children(toc, "a")):
                    href = a.get("href")
                    if href and _text(a):
                        out.setdefault(self._resolve(base, href), _text(a))
            if not out and ncx is not None and (raw := self.read(ncx[0])) is not None:
                base = posixpath.dirname(ncx[0])
                for point in _children(_xml(raw, "NCX table of contents"), "navPoint"):
                    label = next((_text(t) for t in _children(point, "text")), "")
                    content = next(iter(_children(point, "content")), None)
                    if label and content is not None and content.get("src"):
                        out.setdefault(self._resolve(base, content.get("src", "")), label)
        except ParseError as exc:  # a broken table of contents costs the labels, not the book
            self.skipped.append(f"table of contents: {exc}")
        return out

    @staticmethod
    def _resolve(base: str, href: str) -> str:
        return posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0])))

    def _images(self, raw: bytes, path: str, builder: TextBuilder, section: tuple[int, str], left: int,
                deadline: float | None) -> int:
        base = posixpath.dirname(path)
        seen: set[str] = set()
        for m in _IMG_SRC.finditer(raw):
            src = m.group(1).decode("utf-8", "replace")
            if src.startswith(("data:", "http:", "https:")):
                continue
            target = self._resolve(base, src)
            if target in seen:
                continue
            seen.add(target)
            info = self.archive.getinfo(target) if target in self.names else None
            if info is None or not (MIN_IMAGE_BYTES <= info.file_size <= MAX_IMAGE_BYTES):
                if info is not None and info.file_size > MAX_IMAGE_BYTES:
                    self.skipped.append(f"image {target!r}: larger than {MAX_IMAGE_BYTES} bytes")
                continue
            mime = _mime(target)
            if mime not in _IMAGE_TYPES:
                continue
            if left <= 0:
                self.skipped.append(f"images after the first {MAX_IMAGES}: the per-book limit")
                return 0
            data = self.archive.read(target)
            size = _image_size(data)
            if isinstance(size, str):
                self.skipped.append(f"image {target!r}: {size}")
                continue
            builder.add_image(ParsedImage(data=data, mime=mime, name=target, width=size[0], height=size[1],
                                          ocr_text=self._ocr(data, target, deadline)),
                              page=section[0], kind="section", label=section[1])
            left -= 1
        return left

    def _ocr(self, data: bytes, name: str, deadline: float | None) -> str:
        if deadline is not None and time.monotonic() > deadline:
            self.skipped.append(f"OCR of image {name!r}: the time budget was spent")
            return ""
        try:
            engine = self.ctx.ocr()
            return engine.recognize(data).text if engine is not None else ""
        except OcrUnavailable:
            return ""
        except Exception as exc:  # one picture the engine chokes on costs its text, not the book
            self.skipped.append(f"OCR of image {name!r}: {exc}")
            return ""


def _image_size(data: bytes) -> tuple[int, int] | str:
    """Width and height from the image's header (nothing is decoded), or why it cannot be used."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        return "more pixels than the image decoder's bomb limit"
    except (OSError, ValueError, SyntaxError):
        return "not a readable image"
    if width * height > MAX_IMAGE_PIXELS:
        return f"{width}×{height} pixels, above the limit of {MAX_IMAGE_PIXELS}"
    return width, height


def _mime(path: str) -> str:
    ext = posixpath.splitext(path)[1].lower()
    return {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
            ".webp": "image/webp", ".bmp": "image/bmp", ".tif": "image/tiff",
            ".tiff": "image/tiff"}.get(ext, "")
