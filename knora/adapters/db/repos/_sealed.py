"""Which fields of a stored record are credentials, and sealing/opening them around the generic mapping
(``to_row``/``row_to``/``apply``): a text field is sealed as it is, an object field as its JSON, kept under
one key so the column stays a JSON object."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import select

from knora.adapters.db.repos._mapping import SessionFactory
from knora.adapters.db.tables import Base, MCPServiceRow, ModelRow, WebSearchProviderRow
from knora.ports.secrets import SecretBox

M = TypeVar("M", bound=BaseModel)

SEALED_KEY = "$sealed"

# table → (text fields, object fields) that hold credentials
SEALED_FIELDS: dict[type[Base], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ModelRow: (("api_key",), ()),
    MCPServiceRow: ((), ("headers", "auth_config", "env_vars")),
    WebSearchProviderRow: ((), ("parameters",)),  # parameters.api_key, with the rest of the settings
}


class Sealer:
    def __init__(self, box: SecretBox | None, table: type[Base]) -> None:
        self._box = box
        self._text, self._objects = SEALED_FIELDS[table]

    def seal(self, record: M) -> M:
        if self._box is None:
            return record
        box = self._box
        update: dict[str, Any] = {f: box.seal(getattr(record, f)) for f in self._text}
        for f in self._objects:
            value = getattr(record, f)
            update[f] = {SEALED_KEY: box.seal(json.dumps(value))} if value else {}
        return record.model_copy(update=update)

    def open(self, record: M) -> M:
        if self._box is None:
            return record
        box = self._box
        update: dict[str, Any] = {f: box.open(getattr(record, f)) for f in self._text}
        for f in self._objects:
            value = getattr(record, f)
            if isinstance(value, dict) and set(value) == {SEALED_KEY}:
                update[f] = json.loads(box.open(str(value[SEALED_KEY])))
        return record.model_copy(update=update)


def _resealed(box: SecretBox, value: Any, *, text: bool) -> Any:
    if text:
        return box.reseal(str(value or ""))
    if isinstance(value, dict) and set(value) == {SEALED_KEY}:
        return {SEALED_KEY: box.reseal(str(value[SEALED_KEY]))}
    return {SEALED_KEY: box.seal(json.dumps(value))} if value else {}


async def reseal_all(sessions: SessionFactory, box: SecretBox) -> dict[str, int]:
    """Every stored credential sealed again with ``box``'s current key (plain ones from before sealing
    included), one transaction per table; rows per table. Fails, changing nothing in that table, when a value
    opens with none of the box's keys."""
    counts: dict[str, int] = {}
    for table, (text, objects) in SEALED_FIELDS.items():
        async with sessions.begin() as s:
            rows = (await s.execute(select(table))).scalars().all()
            for row in rows:
                for f in text:
                    setattr(row, f, _resealed(box, getattr(row, f), text=True))
                for f in objects:
                    setattr(row, f, _resealed(box, getattr(row, f), text=False))
            counts[str(table.__tablename__)] = len(rows)
    return counts
