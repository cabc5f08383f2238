"""``safe_name``: the stored name of an uploaded file shows what it is."""

from __future__ import annotations

import pytest

from knora.domain.common import safe_name


@pytest.mark.parametrize(("raw", "expected"), [
    ("invoice\u202efdp.exe", "invoicefdp.exe"),  # RTL override: displayed as "invoiceexe.pdf"
    ("\u202areport\u202c.pdf", "report.pdf"),  # embedding + pop
    ("a\u2066b\u2069.txt", "ab.txt"),  # isolates
    ("\u200ez\u200fw\u061c.md", "zw.md"),  # implicit marks, Arabic letter mark
    ("zero\u200bwidth\ufeff.txt", "zerowidth.txt"),
    ("line\u2028break\u0085.txt", "linebreak.txt"),
    ("lone\ud800.txt", "lone.txt"),
    ("\u202e", ""),
    ("Über résumé 文档.pdf", "Über_résumé_文档.pdf"),  # visible non-ASCII stays
    ("../../etc/passwd", "passwd"),
])
def test_invisible_and_direction_characters_are_removed(raw: str, expected: str) -> None:
    assert safe_name(raw) == expected
    safe_name(raw).encode("utf-8")  # storable as a file name
