"""WeKnora's knowledge-base "initialization config" (``GET``/``PUT /initialization/config/:kbId``, issue 13
item 2) over Knora's own knowledge-base settings.

The web UI saves its settings modal in two requests: ``PUT /knowledge-bases/:id`` (name, description,
indexing strategy) and then this one, which carries the models, chunking, multimodal, storage, graph
extraction and question generation choices in camelCase. Here that body becomes the same change a
``PUT /knowledge-bases/:id`` makes, so both go through one validation: every model id must resolve within the
tenant (400 otherwise), the embedding model cannot change under indexed documents, chunk sizes are bounded,
the storage is the deployment's blob store. Multimodal ingestion is the knowledge base's ``vlm_config`` (image
captions from a ``vlm`` model); what Knora cannot do (speech ingestion) is refused with a 400 rather than
stored as if it were done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from knora.adapters.parsers.registry import PARSERS, get_parser
from knora.domain.errors import ValidationFailed
from knora.domain.knowledge import KnowledgeBase
from knora.domain.models import ModelConfig
from knora.services.kb.service import KnowledgeBaseService

# camelCase field of ``documentSplitting`` → Knora's chunking_config field, and whether 0 is a value (not
# "unset"): WeKnora keeps the stored size when a size is 0, but an overlap of 0 is an overlap
_SPLITTING = (("chunkSize", "chunk_size", False), ("chunkOverlap", "chunk_overlap", True),
              ("parentChunkSize", "parent_chunk_size", False), ("childChunkSize", "child_chunk_size", False))
DEFAULT_ENGINES = ("", "builtin")  # "the parser Knora has for the type"
QUESTION_COUNT_DEFAULT, QUESTION_COUNT_MAX = 3, 10

ModelLookup = Callable[[str], Awaitable[ModelConfig | None]]


def _obj(body: dict[str, Any], field: str) -> dict[str, Any]:
    value = body.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed(f"{field} must be an object")
    return value


def _int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValidationFailed(f"{field} must be an integer")
    try:
        number = int(value)
    except ValueError as exc:
        raise ValidationFailed(f"{field} must be an integer") from exc
    if number < 0:
        raise ValidationFailed(f"{field} must not be negative")
    return number


def _chunking(splitting: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for camel, field, zero_counts in _SPLITTING:
        if splitting.get(camel) is not None:
            number = _int(splitting[camel], f"documentSplitting.{camel}")
            if number or zero_counts:
                out[field] = number
    separators = splitting.get("separators")
    if separators is not None:
        if not isinstance(separators, list) or not all(isinstance(s, str) for s in separators):
            raise ValidationFailed("documentSplitting.separators must be a list of strings")
        if separators:
            out["separators"] = separators
    if splitting.get("enableParentChild") is not None:
        out["enable_parent_child"] = bool(splitting["enableParentChild"])
    if splitting.get("strategy") is not None:
        if not isinstance(splitting["strategy"], str):
            raise ValidationFailed("documentSplitting.strategy must be a string")
        out["strategy"] = splitting["strategy"]
    if splitting.get("parserEngineRules") is not None:
        out["parser_engine_rules"] = _parser_rules(splitting["parserEngineRules"])
    return out


def engine_of(file_type: str) -> str | None:
    """The parser engine Knora parses ``file_type`` with, named as ``GET /system/parser-engines`` names it
    (its parser module), or None when Knora has no parser for the type."""
    key = file_type.lower().lstrip(".")
    return type(get_parser(key)).__module__.rsplit(".", 1)[-1] if key in PARSERS else None


def _parser_rules(rules: object) -> list[dict[str, Any]]:
    """Knora has one parser per file type, so a rule may name that parser (or none: the default); a rule
    naming another engine is refused rather than stored as if uploads were parsed by it."""
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise ValidationFailed("documentSplitting.parserEngineRules must be a list of objects")
    out = []
    for rule in rules:
        types, engine = rule.get("file_types") or [], rule.get("engine") or ""
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types) \
                or not isinstance(engine, str):
            raise ValidationFailed("documentSplitting.parserEngineRules: file_types must be strings, engine "
                                   "a string")
        for file_type in types:
            if engine not in DEFAULT_ENGINES and engine != engine_of(file_type):
                has = engine_of(file_type)
                raise ValidationFailed(f"documentSplitting.parserEngineRules: Knora parses .{file_type} "
                                       + (f"with {has!r}, not {engine!r}" if has else "with no parser"))
        out.append({"file_types": types, "engine": engine})
    return out


def _extract(node: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    if not node.get("enabled"):
        return {**current, "enabled": False}
    out: dict[str, Any] = {"enabled": True}
    for field in ("text", "tags", "nodes", "relations"):
        default: object = "" if field == "text" else []
        out[field] = node.get(field) if node.get(field) is not None else default
    if node.get("customInstructions"):
        out["custom_instructions"] = str(node["customInstructions"]).strip()
    return out


def _questions(q: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"enabled": bool(q.get("enabled"))}
    if out["enabled"]:
        count = _int(q["questionCount"], "questionGeneration.questionCount") if q.get("questionCount") else 0
        out["question_count"] = min(count or QUESTION_COUNT_DEFAULT, QUESTION_COUNT_MAX)
    if q.get("customInstructions"):
        out["custom_instructions"] = str(q["customInstructions"]).strip()
    return out


def _vlm(body: dict[str, Any]) -> dict[str, Any] | None:
    """The ``vlm_config`` change the body asks for (None: none): WeKnora's ``vlm_config`` {enabled, model_id}
    or the modal's ``multimodal`` section (``enabled``, ``vlm.modelId``/``vlmModelId``). Enabled needs a
    model; the knowledge-base update checks that it is one of the tenant's ``vlm`` models."""
    multimodal = _obj(body, "multimodal")
    vlm = _obj(body, "vlm_config")
    if not vlm and not multimodal:
        return None
    section = multimodal.get("vlm")
    vlm_section: dict[str, Any] = section if isinstance(section, dict) else {}
    model_id = str(vlm.get("model_id") or vlm_section.get("modelId") or multimodal.get("vlmModelId") or "")
    enabled = bool(vlm.get("enabled") or multimodal.get("enabled"))
    if enabled and not model_id.strip():
        raise ValidationFailed("multimodal: image captions need a vlm model (vlm_config.model_id)")
    return {"enabled": enabled, "model_id": model_id.strip()}


def _refuse_unavailable(body: dict[str, Any]) -> None:
    _vlm(body)
    if _obj(body, "asr_config").get("enabled"):
        raise ValidationFailed("asr_config: speech recognition is not available in Knora")


def kb_changes(body: dict[str, Any], current: KnowledgeBase) -> dict[str, Any]:
    """The ``PUT /initialization/config`` body as the change ``KnowledgeBaseService.update`` makes."""
    llm = body.get("llmModelId")
    if not isinstance(llm, str) or not llm.strip():
        raise ValidationFailed("llmModelId is required")
    _refuse_unavailable(body)
    changes: dict[str, Any] = {"summary_model_id": llm.strip()}
    embedding = body.get("embeddingModelId")
    if embedding not in (None, ""):
        changes["embedding_model_id"] = embedding
    chunking = _chunking(_obj(body, "documentSplitting"))
    if chunking:
        changes["chunking_config"] = chunking
    changes["storage_provider_config"] = {"provider": body.get("storageProvider") or ""}
    changes["storage_backend_id"] = body.get("storageBackendId") or ""
    if body.get("nodeExtract") is not None:
        changes["extract_config"] = _extract(_obj(body, "nodeExtract"), current.extract_config)
    if body.get("questionGeneration") is not None:
        changes["question_generation_config"] = _questions(_obj(body, "questionGeneration"))
    if (vlm := _vlm(body)) is not None:
        changes["vlm_config"] = vlm
    return changes


async def update(kbs: KnowledgeBaseService, tenant_id: int, kb_id: str,
                 body: dict[str, Any]) -> KnowledgeBase:
    current = await kbs.get(tenant_id, kb_id)
    return await kbs.update(tenant_id, kb_id, kb_changes(body, current))


def _model_view(m: ModelConfig) -> dict[str, Any]:
    base_url = "" if m.is_builtin else str((m.parameters or {}).get("base_url") or "")
    return {"source": m.source, "modelName": m.name, "baseUrl": base_url,
            "credentials": {"apiKey": bool(m.api_key) and not m.is_builtin}}


async def view(kb: KnowledgeBase, *, has_files: bool, lookup: ModelLookup) -> dict[str, Any]:
    """``GET /initialization/config/:kbId``: the knowledge base's models, chunking and extraction settings in
    WeKnora's shape (a model that no longer resolves is left out, as WeKnora does)."""
    out: dict[str, Any] = {"hasFiles": has_files}
    if kb.summary_model_id and (llm := await lookup(kb.summary_model_id)) is not None:
        out["llm"] = _model_view(llm)
    if kb.embedding_model_id and (emb := await lookup(kb.embedding_model_id)) is not None:
        dim = (emb.parameters or {}).get("dimension") or ((emb.parameters or {}).get("embedding_parameters")
                                                           or {}).get("dimension") or 0
        out["embedding"] = {**_model_view(emb), "dimension": int(dim)}
    out["rerank"] = {"enabled": False, "modelName": "", "baseUrl": "", "credentials": {"apiKey": False}}
    out["multimodal"] = ({"enabled": True, "vlm": {"modelId": kb.vlm_config.model_id}} if kb.vlm_config.active
                         else {"enabled": False})
    cfg = kb.chunking_config
    splitting: dict[str, Any] = {"chunkSize": cfg.chunk_size, "chunkOverlap": cfg.chunk_overlap,
                                 "separators": cfg.separators}
    if cfg.strategy:
        splitting["strategy"] = cfg.strategy
    out["documentSplitting"] = splitting
    extract = kb.extract_config
    out["nodeExtract"] = ({"enabled": bool(extract.get("enabled")), "text": extract.get("text", ""),
                           "tags": extract.get("tags", []), "nodes": extract.get("nodes", []),
                           "relations": extract.get("relations", [])} if extract else {"enabled": False})
    questions = kb.question_generation_config
    out["questionGeneration"] = ({"enabled": bool(questions.get("enabled")),
                                  "questionCount": questions.get("question_count", 0),
                                  "customInstructions": questions.get("custom_instructions", "")}
                                 if questions else {"enabled": False})
    return out


# ``POST /initialization/initialize/:kbId`` (WeKnora's older save of the same modal): models are named by
# source, name and address instead of by id. Each section's model type.
LEGACY_MODEL_SECTIONS = (("llm", "KnowledgeQA", "llmModelId"), ("embedding", "Embedding", "embeddingModelId"))

ModelResolver = Callable[[str, dict[str, Any]], Awaitable[str]]


async def legacy_body(body: dict[str, Any], resolve: ModelResolver) -> dict[str, Any]:
    """The older body as the ``PUT /initialization/config`` body it means: ``llm`` and ``embedding`` become
    model ids (``resolve(type, section)``: an existing model of that name and address, else one it adds);
    ``documentSplitting``, ``multimodal`` and ``nodeExtract`` are the same sections. ``rerank`` is not read:
    a Knora knowledge base names no rerank model (retrieval settings choose it)."""
    # what would be refused is refused before any model is added for it
    _refuse_unavailable({k: body[k] for k in ("multimodal",) if body.get(k) is not None})
    _chunking(_obj(body, "documentSplitting"))
    out: dict[str, Any] = {}
    for section, model_type, field in LEGACY_MODEL_SECTIONS:
        given = body.get(section)
        if given is None:
            continue
        if not isinstance(given, dict):
            raise ValidationFailed(f"{section} must be an object")
        name = given.get("modelName")
        if not isinstance(name, str) or not name.strip():
            if section == "llm":
                raise ValidationFailed("llm.modelName is required")
            continue
        out[field] = await resolve(model_type, given)
    if "llmModelId" not in out:
        raise ValidationFailed("llm.modelName is required")
    for section in ("documentSplitting", "multimodal", "nodeExtract"):
        if body.get(section) is not None:
            out[section] = body[section]
    return out


def legacy_model_body(model_type: str, section: dict[str, Any]) -> dict[str, Any]:
    """The ``POST /models`` body of a model an older save names but the tenant does not have."""
    params: dict[str, Any] = {}
    for key, param in (("baseUrl", "base_url"), ("apiKey", "api_key"), ("provider", "provider")):
        value = section.get(key)
        if isinstance(value, str) and value.strip():
            params[param] = value.strip()
    dimension = section.get("dimension")
    if model_type == "Embedding" and isinstance(dimension, int) and not isinstance(dimension, bool) \
            and dimension > 0:
        params["dimension"] = dimension
    return {"name": str(section["modelName"]).strip(), "type": model_type,
            "source": str(section.get("source") or "remote"), "parameters": params}


def same_model(m: ModelConfig, model_type: str, section: dict[str, Any]) -> bool:
    """Whether ``m`` is the model an older save names: its type and name, and its address if one is given."""
    url = str(section.get("baseUrl") or "").strip().rstrip("/")
    own = str((m.parameters or {}).get("base_url") or "").strip().rstrip("/")
    return m.type == model_type and m.name == str(section.get("modelName") or "").strip() \
        and (not url or url == own)
