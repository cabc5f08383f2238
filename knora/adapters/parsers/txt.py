"""Plain text: decoded with charset detection; the title is the file stem (plain text has no markup for
one)."""

from __future__ import annotations

from knora.adapters.parsers._common import decode_text, file_stem, normalise_text
from knora.ports.parser import ParsedDocument


class TextParser:
    extensions: frozenset[str] = frozenset({"txt", "text", "log"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        text = normalise_text(decode_text(data))
        return ParsedDocument(title=file_stem(file_name), text=text, metadata={"format": "txt"})
