"""Plain text: decoded with charset detection. The title is the text's own when it opens with one underlined
the way READMEs do (``Title`` over a line of ``=`` or ``-``), else the file stem."""

from __future__ import annotations

import re

from knora.adapters.parsers._common import decode_text, file_stem, normalise_text
from knora.ports.parser import ParsedDocument

_UNDERLINED_TITLE = re.compile(r"\A[ \t]*([^\n]{1,120}?)[ \t]*\n[ \t]*([=\-~*#])\2{2,}[ \t]*(?:\n|\Z)")


def text_title(text: str) -> str:
    """The opening line when the next line underlines it (at least half its length), else ''."""
    match = _UNDERLINED_TITLE.match(text)
    if not match:
        return ""
    title, underline = match.group(1).strip(), text[match.start(2):match.end()].strip()
    return title if len(underline) * 2 >= len(title) and any(c.isalnum() for c in title) else ""


class TextParser:
    extensions: frozenset[str] = frozenset({"txt", "text", "log"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        text = normalise_text(decode_text(data))
        return ParsedDocument(title=text_title(text) or file_stem(file_name), text=text,
                              metadata={"format": "txt"})
