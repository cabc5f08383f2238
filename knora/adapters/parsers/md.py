"""Markdown: kept as markdown (the chunker understands headings, tables, code fences); title = first ``#``
heading.

A YAML front-matter block is removed from the text; its ``title:`` wins over the first heading because authors
put it there on purpose.

Images written into the file as ``data:`` URIs (``![alt](data:image/png;base64,…)``, an inline ``<img>``)
become ``ParsedImage``s (validated, bounded, OCR'd when the upload has OCR on) placed after their paragraph,
and their base64 text is replaced by "[image: alt]". Relative and remote image links stay as written and are
never fetched.
"""

from __future__ import annotations

import re

from knora.adapters.parsers._common import DEFAULT_MAX_EXPANDED_BYTES, decode_text, file_stem, normalise_text
from knora.adapters.parsers._images import InlineImages
from knora.ports.parser import ParseContext, ParsedDocument, ParseOptions

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n(?:---|\.\.\.)\n", re.DOTALL)
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_ANY_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


_INLINE_MARKUP: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [text](url), ![alt](src)
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # **strong**, __strong__
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<!\w)_(?=\S)([^_]+?)(?<=\S)_(?!\w)"), r"\1"),  # _emphasis_ (not snake_case)
    (re.compile(r"`([^`]+)`"), r"\1"),  # `code`
)


def markdown_title(text: str) -> str:
    """First level-1 heading outside code fences, else the first heading of any level, else '' — as read:
    links, emphasis and code marks removed."""
    visible = _FENCE.sub("", text)
    match = _H1.search(visible) or _ANY_HEADING.search(visible)
    if not match:
        return ""
    title = match.group(1).strip()
    for pattern, replacement in _INLINE_MARKUP:
        title = pattern.sub(replacement, title)
    return title.strip()


class MarkdownParser:
    extensions: frozenset[str] = frozenset({"md", "markdown"})

    def __init__(self, ctx: ParseContext | None = None) -> None:
        self.ctx = ctx or ParseContext(max_expanded_bytes=DEFAULT_MAX_EXPANDED_BYTES,
                                       options=ParseOptions(ocr=False))

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        raw = decode_text(data)
        inline: InlineImages | None = None
        if "data:" in raw:
            inline = InlineImages(self.ctx)
            raw = inline.mark_markdown(raw)
        text = normalise_text(raw)
        title = ""
        front = _FRONT_MATTER.match(text + "\n")
        if front:
            for line in front.group(1).splitlines():
                key, _, value = line.partition(":")
                if key.strip().lower() == "title" and value.strip():
                    title = value.strip().strip("'\"")
            text = text[front.end():].strip() if front.end() <= len(text) else ""
        title = title or markdown_title(text) or file_stem(file_name)
        if inline:
            builder = inline.build(text)
            return ParsedDocument(title=inline.resolve(title), text=builder.text, images=builder.images,
                                  skipped=inline.collector.skipped, metadata={"format": "md"})
        return ParsedDocument(title=title, text=text, metadata={"format": "md"})
