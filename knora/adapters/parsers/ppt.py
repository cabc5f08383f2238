"""Legacy PowerPoint (.ppt, .pps): not parsed; the upload fails asking for the file saved as .pptx.

The 97–2003 binary format has no maintained, permissively licensed Python reader that works without an office
suite (python-pptx reads only the XML formats; olefile opens the container but leaves the PowerPoint record
stream to the caller). Rather than guess at text, the parse fails with what to do instead.
"""

from __future__ import annotations

from knora.ports.parser import ParsedDocument, ParseError


class LegacyPowerPointParser:
    extensions: frozenset[str] = frozenset({"ppt", "pps"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        raise ParseError("legacy PowerPoint .ppt is not supported; save it as .pptx and upload again")
