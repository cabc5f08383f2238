"""Interned strings (knowledge, tag, KB ids, types) as small ints, for the numpy filter columns of the
in-memory indexes (vector sets and keyword postings). ``None`` (and, with ``empty_is_none``, ``""``) is -1;
codes are never reused."""

from __future__ import annotations

from collections.abc import Iterable


class Codes:
    def __init__(self, *, empty_is_none: bool = False) -> None:
        self._ids: dict[str, int] = {}
        self._empty_is_none = empty_is_none

    def code(self, s: str | None) -> int:
        """The code of ``s``, assigned on first sight."""
        if s is None or (self._empty_is_none and s == ""):
            return -1
        c = self._ids.get(s)
        if c is None:
            c = self._ids[s] = len(self._ids)
        return c

    def get(self, s: str, default: int) -> int:
        return self._ids.get(s, default)

    def known(self, values: Iterable[str]) -> list[int]:
        """Codes of the values seen so far (an unseen value matches no row)."""
        return [self._ids[v] for v in values if v in self._ids]
