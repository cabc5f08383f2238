"""The one key rule of every blob store, so that a key one store accepts no other refuses, and two spellings
the local directory maps to one file (``a//b``, ``/a/b``) name one object in S3 and PostgreSQL as well."""

from __future__ import annotations

from knora.domain.common import safe_name


def key_parts(key: str) -> list[str]:
    """The non-empty parts of ``key``; ValueError for a key with no part, a ``.`` or ``..`` part, or a part
    :func:`safe_name` would change (the local store maps parts to path components, so nothing may leave its
    root)."""
    parts = [p for p in key.split("/") if p]
    if not parts or any(p in (".", "..") or p != safe_name(p) for p in parts):
        raise ValueError(f"unsafe blob key {key!r}")
    return parts


def canonical_key(key: str) -> str:
    """``key`` checked and written one way (``a/b``): the name an object store or a table keeps it under."""
    return "/".join(key_parts(key))
