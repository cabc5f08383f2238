"""``GET /system/parser-engines``: the document parsers this install really has (WeKnora's
``ParserEngineInfo`` list, which the knowledge-base settings page shows next to each file type).

WeKnora parses through its docreader service and optional engines (MinerU, PaddleOCR …); Knora parses in
process with the parser registry (``knora.adapters.parsers.registry``), one engine per parser module. The list
is read from that registry, so a parser added there shows up here; an engine whose library is not installed is
listed as unavailable with the reason. There is no docreader to connect to: ``connected`` is true because no
remote service stands between an upload and its parser.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import defaultdict
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.adapters.parsers.registry import PARSERS, get_parser
from knora.api.deps import TenantDep

router = APIRouter(tags=["system"])

# parser module → the library it imports when it first parses (the others import theirs at load time)
_LAZY_LIBRARIES = {"pdf": "pypdfium2", "docx": "docx", "xlsx": "openpyxl", "msg": "olefile",
                   "rtf": "striprtf", "xls": "xlrd", "pptx": "pptx", "image": "PIL"}


def _description(module: str) -> str:
    doc = (sys.modules[module].__doc__ or "").strip()
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def parser_engines() -> list[dict[str, Any]]:
    """One entry per parser module, with the extensions the registry routes to it."""
    by_module: dict[str, list[str]] = defaultdict(list)
    for ext in PARSERS.names():
        by_module[type(get_parser(ext)).__module__].append(ext)
    engines = []
    for module, extensions in sorted(by_module.items()):
        name = module.rsplit(".", 1)[-1]
        library = _LAZY_LIBRARIES.get(name)
        missing = library is not None and importlib.util.find_spec(library) is None
        engines.append({"Name": name, "Description": _description(module), "FileTypes": sorted(extensions),
                        "Available": not missing,
                        "UnavailableReason": f"the Python package {library!r} is not installed" if missing
                        else ""})
    return engines


@router.get("/system/parser-engines")
async def list_parser_engines(_tenant_id: TenantDep) -> JSONResponse:
    # The list is ``data``; the docreader connection fields sit beside it, not inside (frontend
    # ``ParserEnginesResponse``).
    return JSONResponse({"success": True, "data": parser_engines(), "docreader_addr": "",
                         "docreader_transport": "", "connected": True})
