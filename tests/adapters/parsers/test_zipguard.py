"""Zip containers are decompressed under a budget of bytes actually produced (issue 20, 4e)."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import pytest

from knora.adapters.parsers.registry import parse_bytes
from knora.adapters.parsers.zipguard import bounded_archive
from knora.ports.parser import ParseError
from tests.fakes.bombs import lying_docx

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return lying_docx(real_bytes=128 << 20, claimed_bytes=4096)  # headers: 4 KB; really 128 MB


@pytest.mark.parametrize("ext", ["docx", "xlsx"])
def test_an_entry_larger_than_its_header_says_is_refused_without_holding_it_in_memory(ext: str,
                                                                                       bomb: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ParseError, match="holds more than its header says"):
            parse_bytes(bomb, f"bomb.{ext}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # reads of 64 KiB; before, zlib produced the whole entry in one call


def test_the_copy_is_stored_with_true_sizes_and_the_budget_holds() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(4):
            z.writestr(f"part{i}.xml", b"<a>" + bytes(range(256)) * 1024 + b"</a>")  # ~256 KB each
    data = bounded_archive(buf.getvalue(), 2 << 20, "docx")
    with zipfile.ZipFile(io.BytesIO(data)) as z:  # the copy is stored, with true sizes
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
        assert sum(i.file_size for i in z.infolist()) == 4 * (256 * 1024 + 7)
    with pytest.raises(ParseError, match="expand.* 800000"):
        bounded_archive(buf.getvalue(), 800_000, "docx")


def test_compression_methods_office_never_uses_are_refused() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as z:
        z.writestr("word/document.xml", b"<a/>")
    with pytest.raises(ParseError, match="compression method 12"):
        bounded_archive(buf.getvalue(), 1 << 20, "docx")
