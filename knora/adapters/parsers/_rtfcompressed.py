"""Outlook's compressed RTF ([MS-OXRTFCP], "LZFu"): how a .msg stores its body when it keeps only RTF.

An LZ77 variant over a 4096-byte ring dictionary that starts pre-filled with common RTF words; every control
byte says, bit by bit (low bit first), whether the next token is a literal byte or a 2-byte reference
(12-bit offset into the dictionary, 4-bit length - 2). A reference to the current write position ends the
data. Output is capped at the size the header declares and at ``max_bytes``.
"""

from __future__ import annotations

import struct

from knora.ports.parser import ParseError

_PREBUF = (b"{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss \\fmodern "
           b"\\fscript \\fdecor MS Sans SerifSymbolArialTimes New RomanCourier{\\colortbl\\red0\\green0"
           b"\\blue0\r\n\\par \\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx")
_COMPRESSED, _UNCOMPRESSED = 0x75465A4C, 0x414C454D  # "LZFu", "MELA"


def decompress_rtf(data: bytes, max_bytes: int = 64 * 1024 * 1024) -> bytes:
    """The RTF in ``data`` (a PR_RTF_COMPRESSED stream), or ParseError when it is damaged."""
    if len(data) < 16:
        raise ParseError("the compressed RTF body is truncated")
    _comp_size, raw_size, kind, _crc = struct.unpack_from("<IIII", data)
    limit = min(raw_size, max_bytes)
    if kind == _UNCOMPRESSED:
        return data[16:16 + limit]
    if kind != _COMPRESSED:
        raise ParseError(f"the RTF body uses an unknown compression ({kind:#x})")
    ring = bytearray(4096)
    ring[:len(_PREBUF)] = _PREBUF
    write = len(_PREBUF)
    out = bytearray()
    pos, end = 16, len(data)
    while pos < end and len(out) < limit:
        control = data[pos]
        pos += 1
        for bit in range(8):
            if pos >= end or len(out) >= limit:
                break
            if not control & (1 << bit):
                ring[write] = data[pos]
                out.append(data[pos])
                write = (write + 1) % 4096
                pos += 1
                continue
            if pos + 2 > end:
                raise ParseError("the compressed RTF body is truncated")
            token = (data[pos] << 8) | data[pos + 1]
            pos += 2
            offset, length = token >> 4, (token & 0xF) + 2
            if offset == write:
                return bytes(out[:limit])
            for i in range(length):
                byte = ring[(offset + i) % 4096]
                ring[write] = byte
                out.append(byte)
                write = (write + 1) % 4096
    return bytes(out[:limit])
