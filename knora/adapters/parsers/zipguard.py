"""Zip containers (DOCX, XLSX) decompressed under a budget of bytes actually produced, not the bytes the
headers claim.

``check_zip_safety`` (in ``_common``) judges the central directory, which a hostile file writes itself: an
entry can claim 4 KB and hold 1 GiB. ``zipfile`` then stops at the claimed size, but only after decompressing
a whole read at once (``ZipFile.read`` asks zlib for up to 2 GiB in one call), which is how a 1 MB DOCX drove
the server to 2 GB. Here every entry is decompressed in small reads, the bytes are counted as they come out,
and the archive python-docx / openpyxl then open is a rewritten, uncompressed copy whose sizes are true.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from knora.adapters.parsers._common import check_zip_safety
from knora.ports.parser import ParseError

_READ = 64 * 1024
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}  # what Office writes; bz2/lzma decompress unbounded


def bounded_archive(data: bytes, max_expanded_bytes: int, kind: str) -> bytes:
    """A copy of the zip ``data`` with every entry stored uncompressed, or ParseError once more than
    ``max_expanded_bytes`` came out of it, an entry holds more than its header says, or it is damaged."""
    check_zip_safety(data, max_expanded_bytes, kind)
    budget = max_expanded_bytes
    out = io.BytesIO()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                if info.is_dir():
                    continue
                if info.compress_type not in _METHODS:
                    raise ParseError(f"refusing .{kind}: entry {info.filename!r} uses compression method "
                                     f"{info.compress_type}, which Office files do not use")
                budget = _copy_entry(src, dst, info, budget, max_expanded_bytes, kind)
    except ParseError:
        raise
    except (zipfile.BadZipFile, zlib.error) as exc:
        # A truncated read (the entry holds more than its header claims) ends in a CRC mismatch.
        raise ParseError(f"refusing .{kind}: the archive is damaged or an entry holds more than its header "
                         f"says (a zip bomb?): {exc}") from exc
    except (ValueError, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise ParseError(f"not a valid .{kind} file (the zip archive cannot be read): {exc}") from exc
    return out.getvalue()


def _copy_entry(src: zipfile.ZipFile, dst: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int,
                limit: int, kind: str) -> int:
    """Copies one entry in small reads; returns the budget left."""
    target = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    with src.open(info) as reader, dst.open(target, "w") as writer:
        while True:
            chunk = reader.read(_READ)  # at most 64 KiB of output per call, whatever the input ratio
            if not chunk:
                break
            budget -= len(chunk)
            if budget < 0:
                raise ParseError(f"refusing .{kind}: it expands to more than {limit} bytes "
                                 f"(stopped while reading {info.filename!r})")
            writer.write(chunk)
        if reader.read(1):  # pragma: no cover - zipfile stops at the declared size
            raise ParseError(f"refusing .{kind}: entry {info.filename!r} is larger than its header says")
    return budget
