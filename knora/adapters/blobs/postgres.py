"""Uploaded originals in the metadata database (``KNORA_BLOB_STORE=postgres``): for a small deployment of a
few replicas that would rather not run an object store next to PostgreSQL.

An object is a row of ``blob_objects`` (key, size) and its bytes are ``blob_pieces`` rows of at most
``PIECE_BYTES`` each (``bytea``, stored uncompressed: originals are mostly compressed already). Pieces, not
one value: a write sends one piece at a time, so a 50 MB upload is not copied a second time into one
statement, and no value approaches PostgreSQL's 1 GB field limit. A read streams the pieces through a
server-side cursor and joins them (the port returns one ``bytes``, so a read peaks at about twice the object
while joining).

Atomicity and concurrent writers: a put is one transaction that first upserts the object's row (which locks
it until commit), then replaces its pieces; a second writer of the same key waits on that row lock, so the
last writer wins whole. A get is one statement (one snapshot): it sees one committed version, never a mix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from knora.adapters.blobs.keys import canonical_key
from knora.domain.common import utcnow

if TYPE_CHECKING:
    from knora.settings import Settings

PIECE_BYTES = 1024 * 1024

_UPSERT = text("INSERT INTO blob_objects (key, size, pieces, updated_at) VALUES (:key, :size, :pieces, :at) "
               "ON CONFLICT (key) DO UPDATE SET size = excluded.size, pieces = excluded.pieces, "
               "updated_at = excluded.updated_at")
_DROP_PIECES = text("DELETE FROM blob_pieces WHERE key = :key")
_ADD_PIECE = text("INSERT INTO blob_pieces (key, seq, data) VALUES (:key, :seq, :data)")
# LEFT JOIN: an empty object has its row and no piece; no row at all is a missing key
_READ = text("SELECT p.data FROM blob_objects o LEFT JOIN blob_pieces p ON p.key = o.key "
             "WHERE o.key = :key ORDER BY p.seq")
_EXISTS = text("SELECT 1 FROM blob_objects WHERE key = :key")
_DELETE = text("DELETE FROM blob_objects WHERE key = :key")  # pieces go with it (ON DELETE CASCADE)
_KEYS = text("SELECT key FROM blob_objects WHERE starts_with(key, :prefix) ORDER BY key")
_DELETE_PREFIX = text("DELETE FROM blob_objects WHERE starts_with(key, :prefix)")


class PostgresBlobStore:
    def __init__(self, engine: AsyncEngine, *, piece_bytes: int = PIECE_BYTES) -> None:
        if engine.dialect.name != "postgresql":
            raise ValueError("KNORA_BLOB_STORE=postgres keeps originals in the PostgreSQL database; "
                             f"KNORA_DATABASE_URL points at {engine.dialect.name}")
        self._engine = engine
        self._piece = piece_bytes

    async def put(self, key: str, data: bytes) -> str:
        name = canonical_key(key)
        view = memoryview(data)
        count = (len(data) + self._piece - 1) // self._piece
        async with self._engine.begin() as conn:
            await conn.execute(_UPSERT, {"key": name, "size": len(data), "pieces": count,
                                         "at": utcnow()})
            await conn.execute(_DROP_PIECES, {"key": name})
            for seq in range(count):
                piece = view[seq * self._piece:(seq + 1) * self._piece].tobytes()
                await conn.execute(_ADD_PIECE, {"key": name, "seq": seq, "data": piece})
        return key

    async def get(self, key: str) -> bytes:
        name = canonical_key(key)
        pieces: list[bytes] = []
        found = False
        async with self._engine.connect() as conn:
            result = await conn.stream(_READ, {"key": name})
            async for row in result:
                found = True
                if row[0] is not None:
                    pieces.append(row[0])
        if not found:
            raise KeyError(key)
        return b"".join(pieces)

    async def exists(self, key: str) -> bool:
        name = canonical_key(key)
        async with self._engine.connect() as conn:
            return (await conn.execute(_EXISTS, {"key": name})).first() is not None

    async def delete(self, key: str) -> None:
        name = canonical_key(key)
        async with self._engine.begin() as conn:
            await conn.execute(_DELETE, {"key": name})

    async def delete_prefix(self, prefix: str) -> None:
        folder = canonical_key(prefix) + "/"
        async with self._engine.begin() as conn:
            await conn.execute(_DELETE_PREFIX, {"prefix": folder})

    async def keys(self, prefix: str) -> list[str]:
        folder = canonical_key(prefix) + "/"
        async with self._engine.connect() as conn:
            return [row[0] for row in await conn.execute(_KEYS, {"prefix": folder})]

    async def close(self) -> None:
        return None  # the engine is the metadata store's, disposed with it


def build(settings: Settings, engine: AsyncEngine) -> PostgresBlobStore:
    del settings
    return PostgresBlobStore(engine)
