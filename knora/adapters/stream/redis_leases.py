"""Per-turn leases on Redis: which turns a live process is running, so another replica never closes them and
a crashed process's turns are closed once its leases lapse (issue 20, 6c)."""

from __future__ import annotations

from collections.abc import Collection

from knora.adapters.stream.redis import waiting_client


class RedisTurnLeases:
    """A key per running turn, ``{prefix}:turn:lease:{message}``, set with a TTL by the process running it and
    refreshed (one pipeline for all its turns) while it runs. A crashed process stops refreshing, so its
    keys lapse within ``ttl_seconds``; a live replica's turns keep theirs and are never closed by another."""

    shared = True

    def __init__(self, url: str, prefix: str = "knora", ttl_seconds: float = 5.0) -> None:
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self._client = waiting_client(url)

    def _key(self, message_id: str) -> str:
        return f"{self.prefix}:turn:lease:{message_id}"

    async def hold(self, message_ids: Collection[str]) -> None:
        if not message_ids:
            return
        ms = max(int(self.ttl_seconds * 1000), 1)
        pipe = self._client.pipeline(transaction=False)
        for mid in message_ids:
            pipe.set(self._key(mid), "1", px=ms)
        await pipe.execute()

    async def release(self, message_id: str) -> None:
        await self._client.delete(self._key(message_id))

    async def held(self, message_ids: Collection[str]) -> set[str]:
        ids = list(message_ids)
        if not ids:
            return set()
        pipe = self._client.pipeline(transaction=False)
        for mid in ids:
            pipe.exists(self._key(mid))
        return {mid for mid, present in zip(ids, await pipe.execute(), strict=True) if present}

    async def claim_close(self, message_id: str) -> bool:
        key = f"{self.prefix}:turn:closing:{message_id}"
        return bool(await self._client.set(key, "1", nx=True, ex=max(int(self.ttl_seconds * 10), 60)))

    async def close(self) -> None:
        await self._client.aclose()
