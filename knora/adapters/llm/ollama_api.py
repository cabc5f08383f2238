"""Ollama's management API, read-only: ``GET /api/version`` and ``GET /api/tags`` (the installed models).

What WeKnora's model settings page asks of an Ollama server before a model is added. Every request goes
through the outbound policy's pinned transport with a short timeout; Knora never calls ``/api/pull`` (it
does not download model weights)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from knora.netguard import AddressRefused, OutboundPolicy

PROBE_TIMEOUT_SECONDS = 3.0


class OllamaUnavailable(Exception):
    """The server could not be reached, was refused by the outbound policy, or did not answer as Ollama."""


@dataclass(frozen=True)
class OllamaModel:
    """One installed model as ``/api/tags`` lists it (WeKnora's ``OllamaModelInfo``)."""

    name: str
    size: int
    digest: str
    modified_at: str


def _root(base_url: str) -> str:
    return base_url.rstrip("/").removesuffix("/v1")


class OllamaApi:
    def __init__(self, base_url: str, policy: OutboundPolicy, *,
                 timeout: float = PROBE_TIMEOUT_SECONDS) -> None:
        self.base_url = _root(base_url)
        self._policy = policy
        self._timeout = timeout

    async def _get(self, path: str) -> object:
        try:
            await self._policy.check_url(self.base_url)
            async with httpx.AsyncClient(base_url=self.base_url, timeout=self._timeout,
                                         transport=self._policy.transport(), follow_redirects=False) as http:
                r = await http.get(path)
        except AddressRefused as exc:
            raise OllamaUnavailable(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise OllamaUnavailable(f"cannot reach Ollama at {self.base_url}: {exc!r}") from exc
        if r.status_code != 200:
            raise OllamaUnavailable(f"Ollama at {self.base_url} answered {r.status_code} to {path}")
        try:
            return r.json()
        except ValueError as exc:
            raise OllamaUnavailable(f"{self.base_url}{path} did not answer JSON: not Ollama") from exc

    async def version(self) -> str:
        body = await self._get("/api/version")
        version = body.get("version") if isinstance(body, dict) else None
        if not isinstance(version, str):
            raise OllamaUnavailable(f"{self.base_url}/api/version has no version: not an Ollama server")
        return version

    async def models(self) -> list[OllamaModel]:
        body = await self._get("/api/tags")
        listed = body.get("models") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise OllamaUnavailable(f"{self.base_url}/api/tags has no model list: not an Ollama server")
        out = []
        for m in listed:
            if isinstance(m, dict) and isinstance(m.get("name"), str):
                size = m.get("size")
                whole = isinstance(size, int) and not isinstance(size, bool)
                out.append(OllamaModel(name=m["name"],
                                       size=size if whole and isinstance(size, int) else 0,
                                       digest=str(m.get("digest") or ""),
                                       modified_at=str(m.get("modified_at") or "")))
        return out


def installed(name: str, models: list[OllamaModel]) -> bool:
    """Whether ``name`` is among ``models`` as Ollama names them: a name without a tag means ``:latest``."""
    wanted = name.strip()
    if not wanted:
        return False
    full = wanted if ":" in wanted else f"{wanted}:latest"
    return any(m.name in (wanted, full) for m in models)
