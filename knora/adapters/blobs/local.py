"""Uploaded originals as files under ``<data_dir>/blobs``.

Keys are built by Knora (``tenant/kb/knowledge/<safe name>``), but the store still refuses anything that could
leave its root, so a crafted file name can never write outside it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from knora.domain.common import safe_name


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self._root = root.resolve()
        self._root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        parts = [p for p in key.split("/") if p]
        if not parts or any(p in (".", "..") or p != safe_name(p) for p in parts):
            raise ValueError(f"unsafe blob key {key!r}")
        path = (self._root / Path(*parts)).resolve()
        if self._root not in path.parents:
            raise ValueError(f"unsafe blob key {key!r}")
        return path

    async def put(self, key: str, data: bytes) -> str:
        path = self._path(key)

        def _write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            tmp.write_bytes(data)
            os.replace(tmp, path)

        await asyncio.to_thread(_write)
        return key

    async def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError as exc:
            raise KeyError(key) from exc

    async def delete(self, key: str) -> None:
        path = self._path(key)
        await asyncio.to_thread(lambda: path.unlink(missing_ok=True))

    async def delete_prefix(self, prefix: str) -> None:
        """Remove a whole folder of blobs (a knowledge base's uploads)."""
        path = self._path(prefix)
        await asyncio.to_thread(lambda: shutil.rmtree(path, ignore_errors=True))
