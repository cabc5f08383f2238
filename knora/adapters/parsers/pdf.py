"""PDF via pypdf: text per page joined by blank lines; title from the document info, else the file stem.

Scanned PDFs have no text layer; they fail with a reason instead of becoming an empty, unsearchable document.
"""

from __future__ import annotations

import io
import logging

from knora.adapters.parsers._common import file_stem, normalise_text
from knora.ports.parser import ParsedDocument, ParseError

_MAX_PAGES = 5000
# Titles that PDF producers write when the author gave none; the file name says more than these.
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "document", "title", "anonymous", "none",
                       "(anonymous)"}


def clean_title(raw: str) -> str:
    title = raw.strip()
    for prefix in ("Microsoft Word - ", "Microsoft PowerPoint - "):
        title = title.removeprefix(prefix)
    if title.lower() in _PLACEHOLDER_TITLES:
        return ""
    return title


class PdfParser:
    extensions: frozenset[str] = frozenset({"pdf"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError

        if not data.lstrip()[:5].startswith(b"%PDF"):
            raise ParseError("not a PDF file (missing the %PDF header)")
        # pypdf reports recoverable damage through logging; keep it out of the application log at WARNING.
        logging.getLogger("pypdf").setLevel(logging.ERROR)
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted and not reader.decrypt(""):
                raise ParseError("the PDF is password-protected")
            pages = reader.pages
            if len(pages) > _MAX_PAGES:
                raise ParseError(f"the PDF has {len(pages)} pages; at most {_MAX_PAGES} are supported")
            texts = [(page.extract_text() or "").strip() for page in pages]
            info = reader.metadata
            meta_title = clean_title(str(info.title)) if info is not None and info.title else ""
        except ParseError:
            raise
        except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError) as exc:
            raise ParseError(f"the PDF is damaged or unreadable: {type(exc).__name__}: {exc}") from exc
        text = normalise_text("\n\n".join(t for t in texts if t))
        if not text:
            raise ParseError("the PDF has no extractable text (a scanned document? OCR is not supported)")
        return ParsedDocument(title=meta_title or file_stem(file_name), text=text,
                              metadata={"format": "pdf", "pages": str(len(texts))})
