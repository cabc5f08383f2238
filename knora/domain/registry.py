"""``Registry[T]``: one name → implementation table per kind of adapter, resolved lazily.

Why one generic class: parsers, embedders, retrieval engines, web search providers, stream logs, job queues
and model providers all pick an implementation by a configured name. Each used to keep its own dict, its own
error message and (in settings) its own ``Literal[...]`` copy of the names, and the copies drifted. A registry
declares the names once; ``settings.py`` validates against ``names()``, the composition root calls
``get(name)``.

Why lazy: an entry may be an import string (``"package.module:attribute"``), imported on first ``get``. So a
registry can list its names without importing the implementations (asyncpg, redis, onnxruntime …), and
``settings.py`` — imported by everything — can check a name without pulling an adapter in. An entry may also
be the object itself (a factory function that imports inside its body is just as lazy).

This module lives in ``domain`` because it imports nothing of Knora: adapters and settings both sit above it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar, cast

T = TypeVar("T")


class UnknownName(ValueError):
    """A name no registry entry has; the message lists the known names (it ends up in a settings error)."""

    def __init__(self, kind: str, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(known)}")
        self.kind = kind
        self.name = name
        self.known = known


def _resolve(target: str) -> object:
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"registry import string must be 'module:attribute', got {target!r}")
    obj: object = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names of one kind of implementation (``kind`` names it in errors: "retrieval engine", …).

    Entries are ``T`` itself or an import string resolved to ``T`` on first use (then cached). ``T`` is
    usually a factory ``Callable``; it must not be ``str``, since a string entry means "import this".
    """

    def __init__(self, kind: str, entries: Mapping[str, str | T] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, str | T] = dict(entries or {})
        self._resolved: dict[str, T] = {}

    def register(self, name: str, target: str | T) -> None:
        """Add or replace ``name``; a replaced entry is resolved again on next use."""
        self._entries[name] = target
        self._resolved.pop(name, None)

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a plug-in removed, or a test's temporary entry)."""
        self._entries.pop(name, None)
        self._resolved.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The known names, sorted (what settings accept and errors list)."""
        return tuple(sorted(self._entries))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def check(self, name: str) -> str:
        """``name`` if known, without importing anything; else :class:`UnknownName` (a ``ValueError``)."""
        if name not in self._entries:
            raise UnknownName(self.kind, name, self.names())
        return name

    def get(self, name: str) -> T:
        """The implementation registered as ``name``, importing it on first use."""
        if name in self._resolved:
            return self._resolved[name]
        target = self._entries.get(name)
        if target is None:
            raise UnknownName(self.kind, name, self.names())
        value = cast(T, _resolve(target)) if isinstance(target, str) else target
        self._resolved[name] = value
        return value
