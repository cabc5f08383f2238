"""Per-upload parse options: WeKnora's ``process_config`` (``KnowledgeProcessOverrides``).

The file route takes it as a JSON string form field, the URL route as an object. Knora reads the parts it has:
``enable_multimodel`` (false: no VLM captions for this document; OCR is Knora's own and stays on unless
``parser_engine_overrides.ocr`` is ``"false"``: WeKnora's UI sends the flag from the knowledge base's
multimodal switch, which never governed in-process OCR), ``chunking_config`` (any of the
knowledge base's chunking fields, merged over them), ``vlm_config`` ({enabled, model_id}: this document's
captions) and ``parser_engine_overrides`` (string map; Knora's keys are ``ocr``, ``ocr_engine`` and
``extract_images``). ``parser_engine_rules`` is accepted (Knora has one parser per file type). The other
WeKnora fields (ASR, question generation, graph, extraction, summary) are not read. A value of the wrong JSON
type, or an unknown ``parser_engine_overrides`` key, is a 400: a setting Knora would silently drop is worse
than a refusal.

The overrides are stored on the document (``metadata.process_config``, JSON text as WeKnora keeps them in the
knowledge's metadata), so a re-parse uses the same options.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from knora.domain.errors import BadRequest
from knora.domain.knowledge import ChunkingConfig, ParserEngineRule, VLMConfig
from knora.ports.parser import ParseOptions

METADATA_KEY = "process_config"
_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off"})
OVERRIDE_KEYS = ("ocr", "ocr_engine", "extract_images")
_CHUNK_BOUNDS = {"chunk_size": (50, 8192), "chunk_overlap": (0, 4096), "parent_chunk_size": (50, 32768),
                 "child_chunk_size": (50, 8192)}


class _StrictVLM(BaseModel):
    model_config = ConfigDict(extra="ignore")
    enabled: StrictBool = False
    model_id: StrictStr = ""


class ProcessOverrides(BaseModel):
    model_config = ConfigDict(extra="ignore")

    enable_multimodel: StrictBool | None = None
    chunking_config: dict[str, Any] | None = None
    vlm_config: _StrictVLM | None = None
    parser_engine_rules: list[ParserEngineRule] = Field(default_factory=list)
    parser_engine_overrides: dict[str, StrictStr] = Field(default_factory=dict)

    # --- what the job does with them ------------------------------------------------------------------------
    def parse_options(self, time_budget_seconds: float) -> ParseOptions:
        o = self.parser_engine_overrides
        return ParseOptions(ocr=_flag(o.get("ocr"), True), ocr_engine=o.get("ocr_engine") or "rapidocr",
                            extract_images=_flag(o.get("extract_images"), True),
                            time_budget_seconds=time_budget_seconds)

    def chunking(self, base: ChunkingConfig) -> ChunkingConfig:
        if not self.chunking_config:
            return base
        return ChunkingConfig.model_validate({**base.model_dump(), **self.chunking_config}, strict=True)

    def vlm(self, base: VLMConfig) -> VLMConfig:
        if self.enable_multimodel is False:
            return VLMConfig()
        if self.vlm_config is not None:
            return VLMConfig(enabled=self.vlm_config.enabled, model_id=self.vlm_config.model_id.strip())
        return base

    def stored(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True, exclude_defaults=True), ensure_ascii=False)


def _flag(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in _TRUE


def parse_process_config(raw: object) -> ProcessOverrides | None:
    """The upload's ``process_config`` (a JSON string or an object; None/"" when absent), checked."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"Invalid process_config format: not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise BadRequest("Invalid process_config format: it must be a JSON object")
    try:
        cfg = ProcessOverrides.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise BadRequest(f"Invalid process_config: {where}: {err.get('msg', 'invalid')}") from exc
    _check(cfg)
    return cfg


def _check(cfg: ProcessOverrides) -> None:
    unknown = sorted(set(cfg.parser_engine_overrides) - set(OVERRIDE_KEYS))
    if unknown:
        raise BadRequest(f"Invalid process_config: parser_engine_overrides.{unknown[0]} is not a Knora "
                         f"parser option (known: {', '.join(OVERRIDE_KEYS)})")
    for key in ("ocr", "extract_images"):
        value = cfg.parser_engine_overrides.get(key)
        if value is not None and value.strip().lower() not in _TRUE | _FALSE:
            raise BadRequest(f"Invalid process_config: parser_engine_overrides.{key} must be \"true\" or "
                             f"\"false\", not {value!r}")
    engine = cfg.parser_engine_overrides.get("ocr_engine")
    if engine is not None:
        from knora.adapters.ocr.registry import OCR_ENGINES  # the names only; no engine is loaded

        if engine not in OCR_ENGINES.names():
            raise BadRequest(f"Invalid process_config: parser_engine_overrides.ocr_engine {engine!r} is not "
                             f"one of {', '.join(OCR_ENGINES.names())}")
    if cfg.chunking_config:
        try:
            merged = cfg.chunking(ChunkingConfig())
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            raise BadRequest(f"Invalid process_config: chunking_config.{where}: "
                             f"{err.get('msg', 'invalid')}") from exc
        for name, (low, high) in _CHUNK_BOUNDS.items():
            if name in cfg.chunking_config and not low <= getattr(merged, name) <= high:
                raise BadRequest(f"Invalid process_config: chunking_config.{name} must be between {low} and "
                                 f"{high}")
    if cfg.vlm_config is not None and cfg.vlm_config.enabled and not cfg.vlm_config.model_id.strip():
        raise BadRequest("Invalid process_config: vlm_config.model_id is required when vlm_config.enabled "
                         "is true")


def stored_overrides(metadata: dict[str, Any]) -> ProcessOverrides:
    """The overrides a document was uploaded with (none: the knowledge base's settings)."""
    raw = metadata.get(METADATA_KEY)
    if not raw:
        return ProcessOverrides()
    try:
        return parse_process_config(raw) or ProcessOverrides()
    except BadRequest:
        return ProcessOverrides()  # stored by an older Knora with other rules: the knowledge base decides
