"""``safe_name``: the stored name of an uploaded file shows what it is."""

from __future__ import annotations

import pytest

from knora.domain.common import folder_title, safe_name


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


def test_safe_name_keeps_emoji_and_stores_nfc() -> None:
    """Issue 20 item 11: a name with 😀 stays findable by 😀, and a decomposed Ü is stored composed."""
    assert safe_name("Party \U0001F600 notes.md") == "Party_\U0001F600_notes.md"
    assert safe_name("U\u0308bersicht.md") == "\u00dcbersicht.md"
    assert safe_name("a\ud800b.md") == "ab.md"  # a lone surrogate is still removed


@pytest.mark.parametrize(("raw", "expected"), [
    ("README", "README"), ("guide.md", "guide"), ("doc/socat/README", "socat/README"),
    ("handbook/ops/tides.md", "ops/tides"), ("C:\\docs\\gzip\\NEWS", "gzip/NEWS"),
    ("../../etc/passwd", "etc/passwd"),
    ("a/<b>/c.txt", "b/c"), ("x/../", ""), ("", ""),
])
def test_folder_title(raw: str, expected: str) -> None:
    assert folder_title(raw) == expected
