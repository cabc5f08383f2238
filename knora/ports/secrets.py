"""Credentials at rest: model API keys, MCP headers, tokens and environment, web-search keys are sealed before
they reach the database and opened when read back (the API never returns them either way)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

SEALED_PREFIX = "enc:v1:"  # a stored value without it is a plain one written before sealing existed


class SecretError(Exception):
    """A sealed value that no configured key opens (a wrong or lost ``KNORA_SECRET_KEY``)."""


@runtime_checkable
class SecretBox(Protocol):
    def seal(self, plain: str) -> str:
        """``plain`` sealed with the current key (``SEALED_PREFIX`` + token); "" stays ""."""
        ...

    def open(self, stored: str) -> str:
        """The plain value of a sealed one (any configured key); a value without the prefix as it is."""
        ...

    def reseal(self, stored: str) -> str:
        """``stored`` sealed with the current key, whatever key (or none) sealed it before."""
        ...

    def derive(self, purpose: str) -> bytes:
        """A 32-byte key for ``purpose`` (e.g. signing login tokens), derived from the current key: every
        replica sharing ``KNORA_SECRET_KEY`` derives the same one."""
        ...
