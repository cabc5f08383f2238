"""Model configurations of a tenant (``/models``). The API key is stored but never leaves through the API."""

from __future__ import annotations

import builtins

from sqlalchemy import select

from knora.adapters.db.repos._mapping import SessionFactory, apply, row_to, to_row
from knora.adapters.db.repos._sealed import Sealer
from knora.adapters.db.tables import ModelRow
from knora.domain.common import utcnow
from knora.domain.models import ModelConfig
from knora.ports.secrets import SecretBox


class SqlModelRepo:
    def __init__(self, sessions: SessionFactory, box: SecretBox | None = None) -> None:
        self._sessions = sessions
        self._sealer = Sealer(box, ModelRow)  # credentials sealed at rest

    async def create(self, m: ModelConfig) -> ModelConfig:
        async with self._sessions.begin() as s:
            s.add(to_row(ModelRow, self._sealer.seal(m)))
        return m

    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None:
        async with self._sessions() as s:
            row = await s.get(ModelRow, model_id)
            if row is None or (tenant_id is not None and row.tenant_id != tenant_id):
                return None
            return self._sealer.open(row_to(ModelConfig, row))

    async def list(self, tenant_id: int, *, type: str | None = None) -> list[ModelConfig]:
        q = select(ModelRow).where(ModelRow.tenant_id == tenant_id)
        if type:
            q = q.where(ModelRow.type == type)
        async with self._sessions() as s:
            rows = (await s.execute(q.order_by(ModelRow.created_at))).scalars().all()
            return [self._sealer.open(row_to(ModelConfig, r)) for r in rows]

    async def list_every_tenant(self, *, type: str) -> builtins.list[ModelConfig]:
        async with self._sessions() as s:
            rows = (await s.execute(select(ModelRow).where(ModelRow.type == type)
                                    .order_by(ModelRow.created_at))).scalars().all()
            return [self._sealer.open(row_to(ModelConfig, r)) for r in rows]

    async def update(self, m: ModelConfig) -> ModelConfig:
        m = m.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(ModelRow, m.id)
            if row is None:
                raise LookupError(m.id)
            apply(row, self._sealer.seal(m))
        return m

    async def delete(self, tenant_id: int, model_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(ModelRow, model_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            await s.delete(row)
        return True
