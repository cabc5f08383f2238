"""HTML: boilerplate (nav, header, footer, aside, scripts, styles, forms) removed, the rest rendered as
markdown.

Rendering to markdown rather than flat text keeps headings (for heading-aware chunking and breadcrumbs),
lists, tables and code blocks recognisable to the chunker. If the page has a ``<main>`` (or exactly one
``<article>``) only that is kept: it is the page author's own statement of where the content is.

``<img src="data:…">`` images become ``ParsedImage``s (validated, bounded, OCR'd when the upload has OCR on),
placed after the block that holds them, with "[image: alt]" in the text instead of their base64. Other images
stay as ``![alt](src)`` links and are never fetched.
"""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning
from bs4.element import NavigableString, Tag

from knora.adapters.parsers._common import (
    DEFAULT_MAX_EXPANDED_BYTES,
    decode_text,
    file_stem,
    markdown_table,
    normalise_text,
)
from knora.adapters.parsers._images import InlineImages
from knora.ports.parser import ParseContext, ParsedDocument, ParseError, ParseOptions

_DROP = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "iframe",
         "svg",
         "canvas", "button", "select", "input", "object", "embed")
_DROP_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search"}
_BLOCKS = {"p", "div", "section", "article", "main", "blockquote", "figure", "figcaption", "dl", "dt", "dd",
           "address", "details", "summary", "body", "html"}
_WS = re.compile(r"[ \t\r\n\f\v]+")


class _Renderer:
    """Walks the cleaned tree and emits markdown blocks separated by blank lines."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []

    def flush(self) -> None:
        text = _WS.sub(" ", "".join(self.inline)).strip()
        if text:
            self.blocks.append(text)
        self.inline = []

    def walk(self, node: Tag, list_depth: int = 0) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:  # skip comments, doctypes, CDATA
                    self.inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if re.fullmatch(r"h[1-6]", name):
                self.flush()
                heading = _WS.sub(" ", child.get_text(" ")).strip()
                if heading:
                    self.blocks.append("#" * int(name[1]) + " " + heading)
            elif name in ("ul", "ol"):
                self.flush()
                items: list[str] = []
                for i, item in enumerate(child.find_all("li", recursive=False), start=1):
                    marker = f"{i}." if name == "ol" else "-"
                    text = _WS.sub(" ", item.get_text(" ")).strip()
                    if text:
                        items.append("  " * list_depth + f"{marker} {text}")
                if items:
                    self.blocks.append("\n".join(items))
            elif name == "pre":
                self.flush()
                code = child.get_text().strip("\n")
                if code.strip():
                    self.blocks.append(f"```\n{code}\n```")
            elif name == "table":
                self.flush()
                rows = [[_WS.sub(" ", c.get_text(" ")).strip() for c in tr.find_all(["th", "td"])]
                        for tr in child.find_all("tr")]
                table = markdown_table(rows)
                if table:
                    self.blocks.append(table)
            elif name == "br":
                self.inline.append("\n")
            elif name == "img":
                alt = str(child.get("alt") or "").strip()
                src = str(child.get("src") or "").strip()
                if src and not src.startswith("data:"):
                    self.inline.append(f"![{alt}]({src})")
            elif name in _BLOCKS or name == "li":
                self.flush()
                self.walk(child, list_depth)
                self.flush()
            else:
                self.walk(child, list_depth)


# ``src="data:…"`` values are lifted out of the markup before lxml sees it: lxml drops an attribute longer
# than 10 MB without a word, and a lifted one costs the tree nothing.
_DATA_SRC = re.compile(r"""(\ssrc[ \t\r\n]{0,10}=[ \t\r\n]{0,10})(["'])(data:[^"'>]*)\2""", re.IGNORECASE)
_LIFTED = "knora-lifted-data:"


def _lift_data_uris(markup: str, uris: list[str]) -> str:
    def lift(match: re.Match[str]) -> str:
        uris.append(match.group(3))
        return f"{match.group(1)}{match.group(2)}{_LIFTED}{len(uris) - 1}{match.group(2)}"

    return _DATA_SRC.sub(lift, markup)


def _is_boilerplate(tag: Tag) -> bool:
    role = str(tag.get("role") or "").lower()
    return role in _DROP_ROLES or str(tag.get("aria-hidden") or "").lower() == "true"


class HtmlParser:
    extensions: frozenset[str] = frozenset({"html", "htm", "xhtml"})

    def __init__(self, ctx: ParseContext | None = None) -> None:
        self.ctx = ctx or ParseContext(max_expanded_bytes=DEFAULT_MAX_EXPANDED_BYTES,
                                       options=ParseOptions(ocr=False))

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        markup = decode_text(data)
        uris: list[str] = []
        if "data:" in markup:
            markup = _lift_data_uris(markup, uris)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
                soup = BeautifulSoup(markup, "lxml")
        except Exception as exc:  # lxml rarely fails, but a parser crash must become a readable reason
            raise ParseError(f"could not parse HTML: {exc}") from exc
        title = ""
        if soup.title and soup.title.get_text(strip=True):
            title = _WS.sub(" ", soup.title.get_text()).strip()
        if not title:  # before boilerplate removal: an article's <h1> often sits in its <header>
            h1 = soup.find("h1")
            title = _WS.sub(" ", h1.get_text(" ")).strip() if h1 else ""
        for tag in soup.find_all(_DROP):
            if tag.decomposed:
                continue
            if tag.name in ("header", "footer") and tag.find_parent("article") is not None:
                continue  # an article's own header holds its headline and byline, not site chrome
            tag.decompose()
        for tag in [t for t in soup.find_all(True) if isinstance(t, Tag) and _is_boilerplate(t)]:
            if not tag.decomposed:
                tag.decompose()
        root: Tag = soup.find("main") or soup.body or soup
        articles = soup.find_all("article")
        if soup.find("main") is None and len(articles) == 1:
            root = articles[0]
        inline = self._mark_images(root, uris)
        renderer = _Renderer()
        renderer.walk(root)
        renderer.flush()
        text = normalise_text("\n\n".join(renderer.blocks))
        if inline:
            builder = inline.build(text)
            return ParsedDocument(title=title or file_stem(file_name), text=builder.text,
                                  images=builder.images, skipped=inline.collector.skipped,
                                  metadata={"format": "html"})
        return ParsedDocument(title=title or file_stem(file_name), text=text, metadata={"format": "html"})

    def _mark_images(self, root: Tag, uris: list[str]) -> InlineImages | None:
        """Every ``<img src="data:…">`` under ``root`` replaced by a marker the renderer keeps as text."""
        inline: InlineImages | None = None
        for img in root.find_all("img"):
            if not isinstance(img, Tag):
                continue
            src = str(img.get("src") or "").strip()
            if src.startswith(_LIFTED):
                index = src[len(_LIFTED):]
                src = uris[int(index)] if index.isdigit() and int(index) < len(uris) else ""
            if src[:5].lower() != "data:":
                continue
            if inline is None:
                inline = InlineImages(self.ctx)
            img.replace_with(NavigableString(inline.mark(src, str(img.get("alt") or ""))))
        return inline
