"""Compile a regular expression that came from a model or a user, with a linear-time engine.

Python's ``re`` backtracks: ``^(a+)+$`` over 25 characters took about a second on the event loop, and each
added character doubles it (issue 20, item 4d), so one tool call could freeze every request. RE2 matches in
time linear in the text and bounds the memory a pattern may take, so an untrusted pattern cannot stall the
loop however it is written.

Policy for syntax RE2 does not have (back-references, look-around, possessive quantifiers): refuse with a
clear error that names the construct, rather than fall back to ``re`` (the very risk) or search the pattern
as a literal (a silent, wrong answer). The caller turns the error into a tool failure the model can read and
correct.
"""

from __future__ import annotations

from typing import Any

import re2

MAX_PATTERN_CHARS = 1000
_MAX_MEM = 8 << 20  # bytes RE2 may use for one compiled program and its DFA cache


class UnsafePatternError(ValueError):
    """The pattern is invalid, too long or uses syntax the linear-time engine does not support."""


def compile_untrusted(pattern: str, *, ignore_case: bool = True) -> Any:
    """Compile ``pattern`` with RE2; the result has ``search(text)`` returning a match with ``start()``.

    Raises :class:`UnsafePatternError` with a message meant for the model that wrote the pattern.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafePatternError(f"pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = _MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise UnsafePatternError(_reason(exc)) from None


def _reason(exc: Exception) -> str:
    detail = exc.args[0] if exc.args else exc
    text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
    hint = ("back-references, look-ahead/look-behind and possessive quantifiers are not supported "
            "(linear-time RE2 syntax); use plain alternatives, character classes and quantifiers")
    unsupported = ("invalid escape", "perl operator", "bad repetition operator")
    return f"{text}; {hint}" if any(u in text for u in unsupported) else text
