"""One comparable form of text for the list searches (document list ``keyword``, tag and session search).

A name typed on macOS arrives decomposed (``U`` + combining diaeresis) and the same name typed elsewhere
composed (``Ü``); SQLite's ``lower()`` only folds ASCII. So ``Ü`` did not find ``Ü``, and ``ü`` did not find
``Ü`` (issue 20 item 11). Both sides are compared as NFC, lower-cased with full Unicode case mapping:
``fold()`` for the query in Python and ``folded(column)`` in SQL — a function registered on every SQLite
connection (``register_sqlite``), ``lower(normalize(…, NFC))`` on PostgreSQL (whose ``lower`` follows the
database's ``LC_CTYPE``: Unicode-aware under any UTF-8 locale). ``lower`` rather than ``casefold`` because
PostgreSQL has no casefold, and both sides must agree.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from sqlalchemy import String
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

SQLITE_FUNCTION = "knora_fold"


def fold(text: str) -> str:
    """NFC, lower-cased, NFC again (lower-casing can leave a decomposed sequence)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).lower())


def _fold_or_none(value: Any) -> Any:
    return fold(value) if isinstance(value, str) else value


def register_sqlite(dbapi_conn: Any) -> None:
    """Makes ``knora_fold(x)`` available on a SQLite connection (deterministic, so usable in indexes)."""
    dbapi_conn.create_function(SQLITE_FUNCTION, 1, _fold_or_none, deterministic=True)


class folded(FunctionElement[str]):  # noqa: N801 - reads as the SQL function it compiles to
    """``column`` in the form ``fold`` gives a query."""

    type = String()
    inherit_cache = True


@compiles(folded)
def _folded_default(element: folded, compiler: Any, **kw: Any) -> str:
    return f"lower(normalize({compiler.process(element.clauses, **kw)}, NFC))"


@compiles(folded, "sqlite")
def _folded_sqlite(element: folded, compiler: Any, **kw: Any) -> str:
    return f"{SQLITE_FUNCTION}({compiler.process(element.clauses, **kw)})"
