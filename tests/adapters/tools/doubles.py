"""In-memory stand-ins for the store-api repositories the tools read (the port methods they use, no more)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.ports.store import Page


@dataclass
class Store:
    kbs_: list[KnowledgeBase] = field(default_factory=list)
    docs: list[Knowledge] = field(default_factory=list)
    chunks_: list[Chunk] = field(default_factory=list)
    blobs_: dict[str, bytes] = field(default_factory=dict)

    @property
    def kbs(self) -> Any:
        store = self

        class Kbs:
            async def list(self, tenant_id: int) -> list[KnowledgeBase]:
                return [k for k in store.kbs_ if k.tenant_id == tenant_id]
        return Kbs()

    @property
    def knowledge(self) -> Any:
        store = self

        class Docs:
            async def get(self, tenant_id: int | None, kid: str) -> Knowledge | None:
                return next((d for d in store.docs if d.id == kid and tenant_id in (None, d.tenant_id)), None)

            async def list(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                           filters: Any = None) -> Page:
                items = [d for d in store.docs if d.tenant_id == tenant_id and d.knowledge_base_id == kb_id]
                return Page(items=items[(page - 1) * page_size: page * page_size], total=len(items))
        return Docs()

    @property
    def chunks(self) -> Any:
        store = self

        class Chunks:
            async def get(self, tenant_id: int, cid: str) -> Chunk | None:
                return next((c for c in store.chunks_ if c.id == cid and c.tenant_id == tenant_id), None)

            async def list(self, tenant_id: int, kid: str, *, page: int, page_size: int,
                           chunk_types: Any = None) -> Page:
                items = sorted((c for c in store.chunks_ if c.tenant_id == tenant_id and c.knowledge_id == kid
                                and (not chunk_types or str(c.chunk_type) in chunk_types)),
                               key=lambda c: c.chunk_index)
                return Page(items=items[(page - 1) * page_size: page * page_size], total=len(items))
        return Chunks()

    async def get(self, key: str) -> bytes:  # BlobStore.get
        return self.blobs_[key]

    def add_doc(self, kb: str, title: str, texts: list[str], *, tenant: int = 1, file_type: str = "md",
                blob: bytes | None = None) -> Knowledge:
        doc = Knowledge(tenant_id=tenant, knowledge_base_id=kb, title=title, file_name=title,
                        file_type=file_type)
        if blob is not None:
            doc.file_path = f"{tenant}/{kb}/{doc.id}/{title}"
            self.blobs_[doc.file_path] = blob
        self.docs.append(doc)
        for i, t in enumerate(texts):
            self.chunks_.append(Chunk(tenant_id=tenant, knowledge_base_id=kb, knowledge_id=doc.id, content=t,
                                      chunk_index=i))
        return doc
