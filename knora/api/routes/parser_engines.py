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

from knora.adapters.ocr.registry import OCR_ENGINES
from knora.adapters.parsers.registry import PARSERS, get_parser
from knora.api.deps import ServicesDep, TenantDep

router = APIRouter(tags=["system"])

# parser module → the library it imports when it first parses (the others import theirs at load time)
_LAZY_LIBRARIES = {"pdf": "pypdfium2", "docx": "docx", "xlsx": "openpyxl", "msg": "olefile",
                   "rtf": "striprtf", "xls": "xlrd", "pptx": "pptx", "image": "PIL"}
# OCR engine → the packages it needs (its models ship inside them); checked without loading the engine
_OCR_LIBRARIES = {"rapidocr": ("rapidocr", "onnxruntime", "knora.adapters.ocr.rapidocr")}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def ocr_engines() -> list[dict[str, Any]]:
    """Each OCR engine of the registry and whether it can load here: its module and its packages are
    installed (a cheap check: the models load on a document's first OCR, in a parser worker)."""
    out = []
    for name in OCR_ENGINES.names():
        missing = [m for m in _OCR_LIBRARIES.get(name, ()) if not _importable(m)]
        own = [m for m in missing if m.startswith("knora.")]
        reason = (f"this Knora build has no {name} engine module ({', '.join(own)})" if own
                  else f"the Python packages {', '.join(missing)} are not installed" if missing else "")
        out.append({"name": name, "available": not missing, "reason": reason})
    return out


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


async def vlm_status(s: ServicesDep, tenant_id: int) -> dict[str, Any]:
    """Whether images can be captioned for this tenant: its ``vlm`` models and the knowledge bases whose
    ``vlm_config`` names one."""
    models = [m.id for m in await s.repos.models.list(tenant_id, type="VLLM") if m.status == "active"]
    kbs = [kb.id for kb in await s.repos.kbs.list(tenant_id) if kb.vlm_config.active]
    return {"configured": bool(models), "model_ids": models, "knowledge_base_ids": kbs}


@router.get("/system/parser-engines")
async def list_parser_engines(s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    # The list is ``data``; the docreader connection fields sit beside it, not inside (frontend
    # ``ParserEnginesResponse``). ``ocr`` and ``vlm`` are Knora's: what image text and captions can come from.
    ocr = ocr_engines()
    return JSONResponse({"success": True, "data": parser_engines(), "docreader_addr": "",
                         "docreader_transport": "", "connected": True,
                         "ocr": {"available": any(e["available"] for e in ocr), "engines": ocr},
                         "vlm": await vlm_status(s, tenant_id)})
