"""One contract for every blob store (issue 16 item 2): the local directory, an S3-compatible server (moto's,
a real HTTP server speaking S3) and PostgreSQL (127.0.0.1:5432, a database of its own)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from knora.adapters.blobs.local import LocalBlobStore
from knora.adapters.blobs.registry import build_blob_store
from knora.adapters.db.engine import make_engine, migrate
from knora.domain.common import safe_name
from knora.ports.blobs import BlobStore
from knora.settings import Settings
from tests.conftest import s3_settings

pytestmark = pytest.mark.integration

# Keys as Knora builds them: tenant/kb/knowledge/<safe_name(the uploaded name)>, from hostile names
ODD_NAMES = ["报告-2024.v1.pdf", "naïve—résumé (final).md", "📄 notes~v2.txt", "長" * 80 + ".txt",
             "a.b.c-d_e", "x%2F..%5C;#?&=+$,.csv", "Ωμέγα Ελληνικά.docx"]
ODD_KEYS = [f"1/kb/doc/{safe_name(n)}" for n in ODD_NAMES] + ["tasks/kb.copy/7/0f1e2d3c.json"]
UNSAFE_KEYS = ["", "/", "a/../b", "../etc/passwd", "a/./b", "a/b c", "a/b%2F", "a\\b", "a/b\x00"]


@pytest.fixture(params=["local", "s3", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    # a plain fixture: the PostgreSQL database is made by a synchronous fixture, outside the event loop
    if request.param == "local":
        return Settings(data_dir=tmp_path)
    if request.param == "s3":
        return Settings(data_dir=tmp_path, **s3_settings(request.getfixturevalue("s3_endpoint")))
    return Settings(data_dir=tmp_path, blob_store="postgres", database_url=request.getfixturevalue("pg_url"))


@pytest.fixture
async def store(store_settings: Settings) -> AsyncIterator[BlobStore]:
    settings = store_settings
    engine = make_engine(settings.effective_database_url)
    await migrate(engine)
    blobs = build_blob_store(settings, engine)
    try:
        yield blobs
    finally:
        await blobs.close()
        await engine.dispose()


def _payload(seed: str, size: int) -> bytes:
    """``size`` bytes that differ per seed all along (a torn write shows), cheap to make."""
    block = hashlib.sha256(seed.encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


class TestBlobStoreContract:
    async def test_put_get_exists_delete(self, store: BlobStore) -> None:
        key = "1/kb/doc/guide.md"
        assert not await store.exists(key)
        assert await store.put(key, b"hello") == key
        assert await store.exists(key)
        assert await store.get(key) == b"hello"
        await store.put(key, b"replaced")
        assert await store.get(key) == b"replaced"
        await store.delete(key)
        assert not await store.exists(key)
        with pytest.raises(KeyError):
            await store.get(key)

    async def test_missing_key(self, store: BlobStore) -> None:
        with pytest.raises(KeyError):
            await store.get("1/kb/never/written.pdf")
        assert not await store.exists("1/kb/never/written.pdf")
        await store.delete("1/kb/never/written.pdf")  # a no-op, not an error
        await store.delete_prefix("1/kb/never")

    async def test_empty_object_is_not_a_missing_one(self, store: BlobStore) -> None:
        await store.put("1/kb/doc/empty.txt", b"")
        assert await store.exists("1/kb/doc/empty.txt")
        assert await store.get("1/kb/doc/empty.txt") == b""

    async def test_large_object(self, store: BlobStore) -> None:
        data = os.urandom(50 * 1024 * 1024 + 17)  # 50 MB and not a whole number of pieces
        await store.put("1/kb/big/scan.pdf", data)
        got = await store.get("1/kb/big/scan.pdf")
        assert len(got) == len(data)
        assert got == data
        smaller = data[: 3 * 1024 * 1024]
        await store.put("1/kb/big/scan.pdf", smaller)  # fewer pieces than before: none of the old left
        assert await store.get("1/kb/big/scan.pdf") == smaller

    @pytest.mark.parametrize("key", ODD_KEYS)
    async def test_keys_with_odd_characters(self, store: BlobStore, key: str) -> None:
        data = key.encode() * 3
        await store.put(key, data)
        assert await store.exists(key)
        assert await store.get(key) == data
        await store.delete(key)
        assert not await store.exists(key)

    async def test_one_key_however_it_is_spelt(self, store: BlobStore) -> None:
        await store.put("1//kb/doc/x.md/", b"x")
        assert await store.get("1/kb/doc/x.md") == b"x"
        assert await store.get("/1/kb/doc/x.md") == b"x"

    @pytest.mark.parametrize("key", UNSAFE_KEYS)
    async def test_unsafe_keys_are_refused_everywhere(self, store: BlobStore, key: str) -> None:
        with pytest.raises(ValueError, match="unsafe blob key"):
            await store.put(key, b"x")
        with pytest.raises(ValueError, match="unsafe blob key"):
            await store.get(key)

    async def test_delete_prefix_removes_only_under_it(self, store: BlobStore) -> None:
        under = ["1/kb/doc/a.md", "1/kb/doc/images/p1.png", "1/kb/doc/images/p2.png"]
        kept = ["1/kb/doc2/a.md", "1/kb/docs.md", "1/kb2/doc/a.md"]
        for key in under + kept:
            await store.put(key, key.encode())
        await store.delete_prefix("1/kb/doc")
        assert [await store.exists(k) for k in under] == [False] * len(under)
        assert [await store.get(k) for k in kept] == [k.encode() for k in kept]

    async def test_keys_lists_only_under_the_prefix(self, store: BlobStore) -> None:
        under = ["1/kb/doc/images/p1.png", "1/kb/doc/a.md", "1/kb/doc2/" + safe_name(ODD_NAMES[0])]
        kept = ["1/kb2/doc/a.md", "1/kbx.md", "2/kb/doc/a.md"]
        for key in under + kept:
            await store.put(key, key.encode())
        assert await store.keys("1/kb") == sorted(under)
        assert await store.keys("1//kb/") == sorted(under)  # one spelling of the prefix, as every key has
        assert await store.keys("1/kb/doc/images") == ["1/kb/doc/images/p1.png"]
        assert await store.keys("1/none") == []
        await store.put("1/kb/doc/empty.txt", b"")
        assert "1/kb/doc/empty.txt" in await store.keys("1/kb")
        with pytest.raises(ValueError, match="unsafe blob key"):
            await store.keys("../1")

    async def test_concurrent_writers_of_one_key_leave_one_whole_value(self, store: BlobStore) -> None:
        """Eight writers of one key at once, with readers beside them: every read and the last value are one
        writer's whole payload (3 MB: several pieces on PostgreSQL), never a mix or a part."""
        key = "1/kb/doc/contended.bin"
        payloads = {_payload(str(i), 3 * 1024 * 1024 + i) for i in range(8)}
        await store.put(key, _payload("first", 1000))
        seen: list[bytes] = []

        async def reader() -> None:
            for _ in range(6):
                seen.append(await store.get(key))

        await asyncio.gather(*(store.put(key, p) for p in payloads), reader(), reader())
        final = await store.get(key)
        assert final in payloads
        allowed = payloads | {_payload("first", 1000)}
        assert all(s in allowed for s in seen), "a read saw a torn or partial object"

    async def test_concurrent_writers_of_many_keys(self, store: BlobStore) -> None:
        keys = [f"1/kb/doc{i}/file-{i}.txt" for i in range(40)]
        await asyncio.gather(*(store.put(k, _payload(k, 70_000)) for k in keys))
        got = await asyncio.gather(*(store.get(k) for k in keys))
        assert got == [_payload(k, 70_000) for k in keys]


class TestLocalStore:
    async def test_no_key_leaves_the_root(self, tmp_path: Path) -> None:
        blobs = LocalBlobStore(tmp_path / "blobs")
        with pytest.raises(ValueError, match="unsafe blob key"):
            await blobs.put("../outside.txt", b"x")
        assert not (tmp_path / "outside.txt").exists()

    async def test_no_temporary_file_is_left(self, tmp_path: Path) -> None:
        blobs = LocalBlobStore(tmp_path / "blobs")
        await asyncio.gather(*(blobs.put("1/kb/doc/a.md", str(i).encode()) for i in range(10)))
        assert [p.name for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == ["a.md"]
