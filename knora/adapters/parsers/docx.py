"""Word documents via python-docx: paragraphs and tables in body order, headings rendered as markdown ``#``.

Headings as markdown give the chunker its section breadcrumbs. The zip container is decompressed under a
budget (``zipguard``) before python-docx opens the rewritten copy.
"""

from __future__ import annotations

import io
import re

from knora.adapters.parsers._common import (
    DEFAULT_MAX_EXPANDED_BYTES,
    file_stem,
    markdown_table,
    normalise_text,
)
from knora.adapters.parsers.zipguard import bounded_archive
from knora.ports.parser import ParsedDocument, ParseError

_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _paragraph_markdown(style_name: str, text: str) -> tuple[str, int]:
    """Returns (markdown line, heading level or 0)."""
    style = style_name.strip()
    if style.lower() == "title":
        return f"# {text}", 1
    match = _HEADING.match(style)
    if match:
        level = min(max(int(match.group(1)), 1), 6)
        return "#" * level + " " + text, level
    if style.lower().startswith("list"):
        return f"- {text}", 0
    return text, 0


class DocxParser:
    extensions: frozenset[str] = frozenset({"docx"})

    def __init__(self, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES) -> None:
        self.max_expanded_bytes = max_expanded_bytes

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        data = bounded_archive(data, self.max_expanded_bytes, "docx")
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        try:
            document = docx.Document(io.BytesIO(data))
            blocks: list[str] = []
            first_heading = ""
            for item in document.iter_inner_content():
                if isinstance(item, Paragraph):
                    text = item.text.strip()
                    if not text:
                        continue
                    style = item.style.name if item.style is not None and item.style.name else ""
                    line, level = _paragraph_markdown(style, text)
                    if level and not first_heading:
                        first_heading = text
                    blocks.append(line)
                elif isinstance(item, Table):
                    rows = [[cell.text.strip() for cell in row.cells] for row in item.rows]
                    table = markdown_table(rows)
                    if table:
                        blocks.append(table)
            core_title = (document.core_properties.title or "").strip()
        except ParseError:
            raise
        except Exception as exc:  # python-docx raises KeyError/ValueError/lxml errors for broken parts
            raise ParseError("the .docx file is damaged or not a Word document: "
                             f"{type(exc).__name__}: {exc}") from exc
        text = normalise_text("\n\n".join(blocks))
        return ParsedDocument(title=core_title or first_heading or file_stem(file_name), text=text,
                              metadata={"format": "docx"})
