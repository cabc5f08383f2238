"""Uploaded originals as files under ``<data_dir>/blobs`` (``KNORA_BLOB_STORE=local``, the embedded default).

Keys are built by Knora (``tenant/kb/knowledge/<safe name>``), but the store still refuses anything that could
leave its root (:mod:`keys`), so a crafted file name can never write outside it. One process's directory:
replicas on other machines do not see it, so ``knora serve`` refuses it with several-replica settings
(``Settings.several_replicas``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from pathlib import Path

from knora.adapters.blobs.keys import key_parts


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self._root = root.resolve()
        self._root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self._root / Path(*key_parts(key))).resolve()
        if self._root not in path.parents:
            raise ValueError(f"unsafe blob key {key!r}")
        return path

    async def put(self, key: str, data: bytes) -> str:
        path = self._path(key)

        def _write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A temporary name of this writer's own (two writers of one key never share, and tear, one file),
            # short whatever the key's length, and starting with a dot, which no key part can.
            tmp = path.parent / f".{uuid.uuid4().hex}.part"
            try:
                tmp.write_bytes(data)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)

        await asyncio.to_thread(_write)
        return key

    async def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except (FileNotFoundError, IsADirectoryError) as exc:
            raise KeyError(key) from exc

    async def exists(self, key: str) -> bool:
        path = self._path(key)
        return await asyncio.to_thread(path.is_file)

    async def delete(self, key: str) -> None:
        path = self._path(key)
        await asyncio.to_thread(lambda: path.unlink(missing_ok=True))

    async def delete_prefix(self, prefix: str) -> None:
        """Remove a whole folder of blobs (a knowledge base's uploads)."""
        path = self._path(prefix)
        await asyncio.to_thread(lambda: shutil.rmtree(path, ignore_errors=True))

    async def keys(self, prefix: str) -> list[str]:
        folder = self._path(prefix)

        def _walk() -> list[str]:
            if not folder.is_dir():
                return []
            # a writer's temporary file starts with a dot, which no key part can
            return sorted(p.relative_to(self._root).as_posix() for p in folder.rglob("*")
                          if p.is_file() and not p.name.startswith("."))

        return await asyncio.to_thread(_walk)

    async def close(self) -> None:
        return None
