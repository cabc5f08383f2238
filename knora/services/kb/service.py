"""Knowledge-base and tag management. Deleting a KB also clears it from every retrieval index and the blob
store."""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from knora.domain.errors import BadRequest, Conflict, NotFound, ValidationFailed
from knora.domain.knowledge import (
    ChunkingConfig,
    FAQConfig,
    IndexingStrategy,
    KBType,
    KnowledgeBase,
    RetrievalConfig,
    Tag,
    VLMConfig,
)
from knora.domain.models import BUILTIN_CHAT_MODEL_ID
from knora.domain.nulls import absent_nulls
from knora.ports.blobs import BlobStore
from knora.ports.retrieval import RetrievalEngine
from knora.ports.store import KBStats, Page, Repositories
from knora.services.ingest.embedders import BUILTIN_EMBEDDING_MODEL_ID
from knora.services.kb import storage
from knora.services.refs import CHAT_TYPES, EMBEDDING_TYPES, RERANK_TYPES, VLM_TYPES, TenantRefs

MAX_CHUNK_SIZE = 32_768


def _model(cls: Any, value: Any, field: str) -> Any:
    if value is None:
        return cls()
    if not isinstance(value, dict):
        raise ValidationFailed(f"{field} must be an object")
    try:
        return cls.model_validate(absent_nulls(cls, value))  # a null list: Go's unset slice, the default
    except ValidationError as exc:
        raise ValidationFailed(f"{field}: {exc.errors()[0].get('msg', 'invalid')}") from exc


def _check_chunking(cfg: ChunkingConfig) -> ChunkingConfig:
    for name in ("chunk_size", "parent_chunk_size", "child_chunk_size"):
        if getattr(cfg, name) > MAX_CHUNK_SIZE:
            raise ValidationFailed(f"chunking_config.{name} must be at most {MAX_CHUNK_SIZE}")
    if any(not isinstance(s, str) for s in cfg.separators):
        raise ValidationFailed("chunking_config.separators must be strings")
    return cfg


def _name(value: Any, what: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"{what} is required")
    if len(value) > 255:
        raise ValidationFailed(f"{what} must be at most 255 characters")
    return value.strip()


class KnowledgeBaseService:
    def __init__(self, repos: Repositories, blobs: BlobStore, retrieval: Callable[[], RetrievalEngine | None],
                 default_embedding_model: Callable[[], str],
                 stop_ingestion: Callable[[str], Awaitable[None]] | None = None,
                 storage_view: storage.StorageView = storage.LOCAL_VIEW) -> None:
        self.repos = repos
        self._storage = storage_view  # the deployment's blob store, which every knowledge base is bound to
        self._stop_ingestion = stop_ingestion  # stops the running ingestion jobs of a knowledge base
        self.blobs = blobs
        self._retrieval = retrieval
        self._default_embedding = default_embedding_model
        self.refs = TenantRefs(repos.models, default_embedder=default_embedding_model)

    async def _model_ids(self, tenant_id: int, values: dict[str, Any],
                         current: KnowledgeBase | None = None) -> dict[str, str]:
        """The model ids in ``values``, each checked to be the tenant's own (or built in) for its role. An id
        equal to the one ``current`` holds is not checked again (the web UI sends the whole body back on each
        save; on use every id is resolved within the tenant anyway)."""
        roles = (("embedding_model_id", EMBEDDING_TYPES), ("summary_model_id", CHAT_TYPES),
                 ("rerank_model_id", RERANK_TYPES))
        out = {field: (values[field] if current is not None and values[field] == getattr(current, field)
                       else await self.refs.model(tenant_id, values[field], field=field, types=types))
               for field, types in roles if field in values}
        if out.get("embedding_model_id"):  # the settings' embedder under its ``GET /models`` id (issue 13)
            out["embedding_model_id"] = self._builtin(out["embedding_model_id"])
        return out

    async def _vlm_config(self, tenant_id: int, value: object, current: VLMConfig | None = None) -> VLMConfig:
        """WeKnora's ``vlm_config``: enabled needs a ``vlm`` model of the tenant (``GET /models``)."""
        base = current.model_dump() if current is not None else {}
        given = {**base, **value} if isinstance(value, dict) else value
        cfg: VLMConfig = _model(VLMConfig, given, "vlm_config")
        if cfg.model_id and not (current is not None and cfg.model_id == current.model_id):
            cfg.model_id = await self.refs.model(tenant_id, cfg.model_id, field="vlm_config.model_id",
                                                 types=VLM_TYPES)
        if cfg.enabled and not cfg.model_id:
            raise ValidationFailed("vlm_config.model_id is required when vlm_config.enabled is true")
        return cfg

    def _builtin(self, embedding_model_id: str) -> str:
        """The id an embedding model is listed by: the settings' embedder spec (what knowledge bases stored
        before issue 13) is the built-in embedding model."""
        if embedding_model_id == self._default_embedding():
            return BUILTIN_EMBEDDING_MODEL_ID
        return embedding_model_id

    async def create(self, tenant_id: int, body: dict[str, Any]) -> KnowledgeBase:
        kb_type = body.get("type") or "document"
        if kb_type not in (KBType.DOCUMENT, KBType.FAQ):
            raise ValidationFailed("type must be 'document' or 'faq'")
        model_ids = await self._model_ids(tenant_id, body)
        provider, backend = storage.binding(body.get("storage_provider_config"),
                                            body.get("storage_backend_id"), legacy=body.get("storage_config"),
                                            view=self._storage)
        kb = KnowledgeBase(
            tenant_id=tenant_id, name=_name(body.get("name")), description=str(body.get("description") or ""),
            type=KBType(kb_type), is_temporary=bool(body.get("is_temporary", False)),
            chunking_config=_check_chunking(_model(ChunkingConfig, body.get("chunking_config"),
                                                   "chunking_config")),
            # ids ``GET /models`` resolves: the built-in embedder and chat model unless the body names others
            embedding_model_id=model_ids.get("embedding_model_id") or BUILTIN_EMBEDDING_MODEL_ID,
            summary_model_id=model_ids.get("summary_model_id") or BUILTIN_CHAT_MODEL_ID,
            rerank_model_id=model_ids.get("rerank_model_id", ""),
            indexing_strategy=_model(IndexingStrategy, body.get("indexing_strategy"), "indexing_strategy"),
            faq_config=(_model(FAQConfig, body.get("faq_config"), "faq_config")
                        if body.get("faq_config") is not None or kb_type == KBType.FAQ else None),
            retrieval_config=_model(RetrievalConfig, body.get("retrieval_config"), "retrieval_config"),
            question_generation_config=dict(body.get("question_generation_config") or {}),
            extract_config=dict(body.get("extract_config") or {}),
            vector_store_id=str(body.get("vector_store_id") or ""),
            storage_provider_config=provider, storage_backend_id=backend,
            vlm_config=await self._vlm_config(tenant_id, body.get("vlm_config") or {}),
        )
        return await self.repos.kbs.create(kb)

    async def get(self, tenant_id: int, kb_id: str) -> KnowledgeBase:
        kb = await self.repos.kbs.get(tenant_id, kb_id)
        if kb is None:
            raise NotFound("Knowledge base not found")
        return self._present(kb)

    async def list(self, tenant_id: int) -> list[KnowledgeBase]:
        return [self._present(kb) for kb in await self.repos.kbs.list(tenant_id)]

    def _present(self, kb: KnowledgeBase) -> KnowledgeBase:
        """A knowledge base stored before issue 13 with the settings' embedder spec is shown with the id
        ``GET /models`` lists that embedder by (the next save stores it); one whose spec is no longer the
        settings' keeps it: that is the embedder its vectors come from."""
        listed = self._builtin(kb.embedding_model_id)
        return kb if listed == kb.embedding_model_id else kb.model_copy(update={"embedding_model_id": listed})

    async def stats(self, tenant_id: int, kb_ids: builtins.list[str]) -> dict[str, KBStats]:
        return dict(await self.repos.kbs.stats(tenant_id, kb_ids))

    async def update(self, tenant_id: int, kb_id: str, body: dict[str, Any]) -> KnowledgeBase:
        kb = await self.get(tenant_id, kb_id)
        raw_config = body.get("config")
        config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
        merged = {**body, **config}
        changes: dict[str, Any] = {}
        if "name" in body:
            changes["name"] = _name(body["name"])
        if "description" in body:
            changes["description"] = str(body["description"] or "")
        for field, cls in (("chunking_config", ChunkingConfig), ("indexing_strategy", IndexingStrategy),
                           ("retrieval_config", RetrievalConfig), ("faq_config", FAQConfig)):
            if merged.get(field) is not None:
                current = getattr(kb, field)
                base = current.model_dump() if current is not None else {}
                changes[field] = _model(cls, {**base, **merged[field]} if isinstance(merged[field], dict)
                                        else merged[field], field)
        if "chunking_config" in changes:
            _check_chunking(changes["chunking_config"])
        model_ids = await self._model_ids(tenant_id, merged, kb)
        for field in ("summary_model_id", "rerank_model_id"):
            if field in model_ids:
                changes[field] = model_ids[field]
        embedding = model_ids.get("embedding_model_id")
        if embedding and embedding != kb.embedding_model_id:
            if self._builtin(embedding) != self._builtin(kb.embedding_model_id):
                stats = (await self.repos.kbs.stats(tenant_id, [kb.id]))[kb.id]
                if stats.knowledge_count:
                    raise BadRequest("embedding_model_id cannot change while the knowledge base has "
                                     "documents")
            changes["embedding_model_id"] = embedding
        for field in ("question_generation_config", "extract_config"):
            if isinstance(merged.get(field), dict):
                changes[field] = merged[field]
        if any(merged.get(f) is not None for f in ("storage_provider_config", "storage_backend_id",
                                                    "storage_config")):
            provider, backend = storage.binding(merged.get("storage_provider_config"),
                                                merged.get("storage_backend_id"),
                                                legacy=merged.get("storage_config"), view=self._storage)
            changes.update(storage_provider_config=provider, storage_backend_id=backend)
        if merged.get("vlm_config") is not None:
            changes["vlm_config"] = await self._vlm_config(tenant_id, merged["vlm_config"], kb.vlm_config)
        return await self.repos.kbs.update(kb.model_copy(update=changes))

    async def delete(self, tenant_id: int, kb_id: str) -> None:
        kb = await self.get(tenant_id, kb_id)
        await self.repos.kbs.delete(tenant_id, kb.id)
        if self._stop_ingestion is not None:  # a document still being parsed must not hold a worker on
            await self._stop_ingestion(kb.id)
        engine = self._retrieval()
        if engine is not None:
            await engine.delete_knowledge_base(kb.id)
        await self.blobs.delete_prefix(f"{tenant_id}/{kb.id}")

    # --- tags -----------------------------------------------------------------------------------------------
    async def list_tags(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                        keyword: str | None) -> Page:
        await self.get(tenant_id, kb_id)
        return await self.repos.tags.list(tenant_id, kb_id, page=page, page_size=page_size, keyword=keyword)

    async def _tag(self, tenant_id: int, kb_id: str, tag_id: str) -> Tag:
        tag = await self.repos.tags.get(tenant_id, tag_id)
        if tag is None or tag.knowledge_base_id != kb_id:
            raise NotFound("Tag not found")
        return tag

    async def create_tag(self, tenant_id: int, kb_id: str, body: dict[str, Any]) -> Tag:
        await self.get(tenant_id, kb_id)
        name = _name(body.get("name"))
        if await self.repos.tags.get_by_name(kb_id, name) is not None:
            raise Conflict(f"A tag named {name!r} already exists in this knowledge base")
        tag = Tag(tenant_id=tenant_id, knowledge_base_id=kb_id, name=name, color=str(body.get("color") or ""),
                  sort_order=_int(body.get("sort_order"), "sort_order"))
        return await self.repos.tags.create(tag)

    async def update_tag(self, tenant_id: int, kb_id: str, tag_id: str, body: dict[str, Any]) -> Tag:
        tag = await self._tag(tenant_id, kb_id, tag_id)
        changes: dict[str, Any] = {}
        if "name" in body:
            name = _name(body["name"])
            other = await self.repos.tags.get_by_name(kb_id, name)
            if other is not None and other.id != tag.id:
                raise Conflict(f"A tag named {name!r} already exists in this knowledge base")
            changes["name"] = name
        if "color" in body:
            changes["color"] = str(body["color"] or "")
        if "sort_order" in body:
            changes["sort_order"] = _int(body["sort_order"], "sort_order")
        return await self.repos.tags.update(tag.model_copy(update=changes))

    async def delete_tag(self, tenant_id: int, kb_id: str, tag_id: str, *, force: bool) -> None:
        tag = await self._tag(tenant_id, kb_id, tag_id)
        if not force:
            used_k, used_c = await self.repos.tags.usage(tag.id)
            if used_k or used_c:
                raise Conflict(f"Tag is used by {used_k} documents and {used_c} chunks; "
                               "pass force=true to delete")
        await self.repos.tags.delete(tenant_id, tag.id)

    async def tag_usage(self, tag_id: str) -> tuple[int, int]:
        return tuple(await self.repos.tags.usage(tag_id))  # type: ignore[return-value]


def _int(value: Any, field: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValidationFailed(f"{field} must be an integer")
    try:
        return int(value)
    except ValueError as exc:
        raise ValidationFailed(f"{field} must be an integer") from exc
