"""Batch edits and export of FAQ entries (WeKnora's FAQ page): the enabled / recommended / tag fields of many
entries at once, by entry id or by tag, and the entries as WeKnora's import CSV (or a JSON list).

Entry ids are the entries' integer seq ids (``FaqEntryOut.id``); tag ids are Knora's tag ids. ``0``, ``""``
or ``"__untagged__"`` as a tag means "no tag". A tag named in an edit must be a tag of the same knowledge
base (else 404), as must every entry id (else 404, nothing changed).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field, field_validator

from knora.domain.errors import NotFound, ValidationFailed
from knora.domain.knowledge import Chunk, KnowledgeBase
from knora.ports.store import TagRepo
from knora.services.retrieval.faq import FaqEntryIn, FaqService, entry_of

UNTAGGED = ("", "0", "__untagged__")

# WeKnora's export columns (its import template): category, question, similar questions, negative questions,
# answers (lists joined with ``##``), answer-all, disabled, not-recommendable
CSV_HEADERS = ("分类(必填)", "问题(必填)", "相似问题(选填-多个用##分隔)", "反例问题(选填-多个用##分隔)",
               "机器人回答(必填-多个用##分隔)", "是否全部回复(选填-默认FALSE)", "是否停用(选填-默认FALSE)",
               "是否禁止被推荐(选填-默认False 可被推荐)")


def _tag_or_none(v: object) -> str | None:
    return None if v is None else str(v)


class FieldsUpdate(BaseModel):
    """One entry's (or one tag's entries') new field values; a field left out (or null) is kept."""

    is_enabled: bool | None = None
    is_recommended: bool | None = None
    tag_id: str | None = None

    @field_validator("tag_id", mode="before")
    @classmethod
    def _tag(cls, v: object) -> object:
        return _tag_or_none(v)


class FieldsBatch(BaseModel):
    by_id: dict[int, FieldsUpdate] = Field(default_factory=dict)
    by_tag: dict[str, FieldsUpdate] = Field(default_factory=dict)
    exclude_ids: list[int] = Field(default_factory=list)


class TagBatch(BaseModel):
    """``updates``: entry id → its new tag (null, 0 or "" for none)."""

    updates: dict[int, str | None]

    @field_validator("updates", mode="before")
    @classmethod
    def _tags(cls, v: object) -> object:
        return {k: _tag_or_none(t) for k, t in v.items()} if isinstance(v, dict) else v


def _norm(tag: str | None) -> str | None:
    return None if tag is None or tag in UNTAGGED else tag


async def _check_tags(tags: TagRepo, tenant_id: int, kb: KnowledgeBase, ids: set[str | None]) -> None:
    for tag_id in ids - {None}:
        tag = await tags.get(tenant_id, str(tag_id))
        if tag is None or tag.knowledge_base_id != kb.id:
            raise NotFound("Tag not found")


async def _check_entries(faq: FaqService, tenant_id: int, kb: KnowledgeBase, seq_ids: set[int]) -> None:
    known = {c.chunk_index for c in await faq.repo.all(tenant_id, kb.id)}
    if seq_ids - known:
        raise NotFound("FAQ entry not found")


def _applied(entry: FaqEntryIn, u: FieldsUpdate) -> FaqEntryIn:
    changes: dict[str, object] = {}
    if u.is_enabled is not None:
        changes["is_enabled"] = u.is_enabled
    if u.is_recommended is not None:
        changes["is_recommended"] = u.is_recommended
    if u.tag_id is not None:
        changes["tag_id"] = _norm(u.tag_id)
    return entry.model_copy(update=changes)


async def update_fields(faq: FaqService, tags: TagRepo, tenant_id: int, kb_id: str, body: FieldsBatch) -> int:
    if not body.by_id and not body.by_tag:
        raise ValidationFailed("by_id or by_tag must name at least one entry or tag")
    kb = await faq.kb(tenant_id, kb_id)
    updates = [*body.by_id.values(), *body.by_tag.values()]
    await _check_tags(tags, tenant_id, kb, {_norm(k) for k in body.by_tag} | {_norm(u.tag_id) for u in updates
                                                                                if u.tag_id is not None})
    await _check_entries(faq, tenant_id, kb, set(body.by_id))
    by_tag = {_norm(k): u for k, u in body.by_tag.items()}
    excluded = set(body.exclude_ids)

    def change(c: Chunk, entry: FaqEntryIn) -> FaqEntryIn | None:
        new = entry
        if c.tag_id in by_tag and c.chunk_index not in excluded:
            new = _applied(new, by_tag[c.tag_id])
        if c.chunk_index in body.by_id:  # an entry's own update wins over its tag's
            new = _applied(new, body.by_id[c.chunk_index])
        return new if new != entry else None

    return await faq.rewrite(tenant_id, kb, change)


async def update_tags(faq: FaqService, tags: TagRepo, tenant_id: int, kb_id: str, body: TagBatch) -> int:
    if not body.updates:
        raise ValidationFailed("updates must name at least one entry")
    kb = await faq.kb(tenant_id, kb_id)
    wanted: Mapping[int, str | None] = {k: _norm(v) for k, v in body.updates.items()}
    await _check_tags(tags, tenant_id, kb, set(wanted.values()))
    await _check_entries(faq, tenant_id, kb, set(wanted))

    def change(c: Chunk, entry: FaqEntryIn) -> FaqEntryIn | None:
        if c.chunk_index not in wanted or wanted[c.chunk_index] == c.tag_id:
            return None
        return entry.model_copy(update={"tag_id": wanted[c.chunk_index]})

    return await faq.rewrite(tenant_id, kb, change)


async def _entries(faq: FaqService, tags: TagRepo, tenant_id: int, kb_id: str
                   ) -> list[tuple[Chunk, FaqEntryIn, str]]:
    kb = await faq.kb(tenant_id, kb_id)
    chunks: Sequence[Chunk] = sorted(await faq.repo.all(tenant_id, kb.id), key=lambda c: c.chunk_index)
    names: dict[str, str] = {}
    for tag_id in {c.tag_id for c in chunks if c.tag_id}:
        tag = await tags.get(tenant_id, tag_id)
        names[tag_id] = tag.name if tag is not None and tag.knowledge_base_id == kb.id else ""
    return [(c, entry_of(c), names.get(c.tag_id or "", "")) for c in chunks]


def _flag(b: bool) -> str:
    return "TRUE" if b else "FALSE"


async def export_csv(faq: FaqService, tags: TagRepo, tenant_id: int, kb_id: str) -> bytes:
    """WeKnora's export: its import template's columns, UTF-8 with a BOM (for Excel)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_HEADERS)
    for _, e, tag_name in await _entries(faq, tags, tenant_id, kb_id):
        w.writerow([tag_name, e.standard_question, "##".join(e.similar_questions),
                    "##".join(e.negative_questions), "##".join(e.answers), _flag(e.answer_strategy == "all"),
                    _flag(not e.is_enabled), _flag(not e.is_recommended)])
    return b"\xef\xbb\xbf" + out.getvalue().encode("utf-8")


async def export_json(faq: FaqService, tags: TagRepo, tenant_id: int, kb_id: str) -> bytes:
    """The entries as a JSON list of entry payloads (the fields ``POST …/faq/entries`` takes, with the id and
    the tag's name), for export → edit → import."""
    rows = [{"id": c.chunk_index, "standard_question": e.standard_question,
             "similar_questions": e.similar_questions, "negative_questions": e.negative_questions,
             "answers": e.answers, "answer_strategy": e.answer_strategy, "tag_id": e.tag_id or "",
             "tag_name": tag_name, "is_enabled": e.is_enabled, "is_recommended": e.is_recommended}
            for c, e, tag_name in await _entries(faq, tags, tenant_id, kb_id)]
    return json.dumps(rows, ensure_ascii=False).encode("utf-8")
