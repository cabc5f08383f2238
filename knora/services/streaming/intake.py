"""The chat request body (api §1.5 "Chat and search", spec §5.10) and merging of @-mentions into the scope."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from knora.domain.models import AgentConfig


class ChatBody(BaseModel):
    """``CreateKnowledgeQARequest``; unknown fields are ignored, as WeKnora's clients send extra ones."""

    model_config = ConfigDict(extra="ignore")

    query: str = ""
    knowledge_base_ids: list[str] = Field(default_factory=list)
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    agent_enabled: bool = False
    agent_id: str = ""
    agent_source_tenant_id: int | None = None
    web_search_enabled: bool = False
    summary_model_id: str = ""
    mcp_service_ids: list[str] = Field(default_factory=list)
    skill_names: list[str] = Field(default_factory=list)
    mentioned_items: list[dict[str, Any]] = Field(default_factory=list)
    disable_title: bool = False
    images: list[dict[str, Any]] = Field(default_factory=list)
    channel: str = "web"
    # Knora extensions
    citations_enabled: bool = True
    language: str = ""


MAX_CHAT_IMAGES = 5
MAX_CHAT_IMAGE_CHARS = 14 * 1024 * 1024  # a ~10 MB image as base64
_IMAGE_PREFIXES = tuple(f"data:image/{t};base64," for t in ("png", "jpeg", "jpg", "gif", "webp", "bmp"))


def check_images(images: list[dict[str, Any]]) -> str | None:
    """Why the body's ``images`` cannot be used (None when they can): each is ``{data: "data:image/…;base64,
    …"}`` (WeKnora's shape; a client's ``url``/``caption`` are not trusted, spec §5.10), at most five, each at
    most ~10 MB."""
    if len(images) > MAX_CHAT_IMAGES:
        return f"At most {MAX_CHAT_IMAGES} images per question"
    for i, image in enumerate(images, 1):
        data = image.get("data")
        if not isinstance(data, str) or not data.startswith(_IMAGE_PREFIXES):
            return f"images[{i - 1}].data must be a data:image/png|jpeg|gif|webp|bmp;base64 URL"
        if len(data) > MAX_CHAT_IMAGE_CHARS:
            return f"images[{i - 1}] is larger than 10 MB"
    return None


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def merge_targets(body: ChatBody) -> tuple[list[str], list[str], list[str]]:
    """Request ids plus @kb / @file / @tag mentions → (KB ids, knowledge ids, tag ids), deduped, order
    kept."""
    kbs, docs, tags = list(body.knowledge_base_ids), list(body.knowledge_ids), list(body.tag_ids)
    for item in body.mentioned_items:
        kind, item_id = str(item.get("type") or ""), str(item.get("id") or "")
        if kind == "kb":
            kbs.append(item_id)
        elif kind == "file":
            docs.append(item_id)
        elif kind == "tag":
            tags.append(item_id)
    return _dedupe(kbs), _dedupe(docs), _dedupe(tags)


def shared_agent_scope(agent: AgentConfig | None, tenant_id: int, kb_ids: list[str], knowledge_ids: list[str],
                       tag_ids: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The scope of a turn: as asked, except with another tenant's agent, which searches only the knowledge
    bases it is bound to (``ShareService.usable_agent`` spells out "all"): the request's KB ids are narrowed
    to those; with none of those named (the receiving tenant's UI knows only its own), all of them, unless the
    agent searches only what is mentioned. Document mentions are dropped: a document id of the owner's is no
    permission to read it."""
    if agent is None or not agent.lent_to(tenant_id):
        return kb_ids, knowledge_ids, tag_ids
    settings = agent.settings()
    bound = list(dict.fromkeys(settings.knowledge_bases)) if settings.kb_selection_mode != "none" else []
    kept = [k for k in kb_ids if k in set(bound)]
    if not kept and not settings.retrieve_kb_only_when_mentioned:
        kept = bound
    return kept, [], tag_ids if kept else []
