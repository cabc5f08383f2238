"""A small writer of OLE compound files ([MS-CFB] version 3) and of Outlook .msg items ([MS-OXMSG]) in them,
for tests: no permissively licensed Python library writes .msg files.

``cfb(tree)`` writes a compound file from a nested dict (name → bytes for a stream, name → dict for a
storage): 512-byte sectors, one FAT (DIFAT in the header only, so files up to ~7 MB), streams under 4096
bytes in the mini stream (64-byte mini sectors, their own mini FAT), and each storage's children as a balanced
binary tree of directory entries, all black (readers do not check the red-black colouring; a balanced tree
keeps their recursion shallow). ``make_msg(...)`` builds the property streams of a message with attachments
and embedded messages.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

SECTOR = 512
MINI = 64
CUTOFF = 4096
FREESECT, ENDOFCHAIN, FATSECT, NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF

Tree = dict[str, "bytes | Tree"]


@dataclass
class _Entry:
    name: str
    kind: int  # 1 storage, 2 stream, 5 root
    data: bytes = b""
    children: list[int] = field(default_factory=list)
    left: int = NOSTREAM
    right: int = NOSTREAM
    child: int = NOSTREAM
    start: int = ENDOFCHAIN
    size: int = 0


def _key(name: str) -> tuple[int, str]:
    return (len(name), name.upper())


def _flatten(tree: Tree, entries: list[_Entry], parent: int) -> None:
    for name, value in tree.items():
        index = len(entries)
        if isinstance(value, dict):
            entries.append(_Entry(name, 1))
            entries[parent].children.append(index)
            _flatten(value, entries, index)
        else:
            entries.append(_Entry(name, 2, data=value))
            entries[parent].children.append(index)


def _balance(entries: list[_Entry], ids: list[int]) -> int:
    """Links ``ids`` (sorted) as a balanced tree through left/right; returns its root."""
    if not ids:
        return NOSTREAM
    mid = len(ids) // 2
    root = ids[mid]
    entries[root].left = _balance(entries, ids[:mid])
    entries[root].right = _balance(entries, ids[mid + 1:])
    return root


def _chain(fat: list[int], start: int, count: int) -> None:
    for i in range(count):
        fat[start + i] = start + i + 1 if i + 1 < count else ENDOFCHAIN


def cfb(tree: Tree) -> bytes:
    entries = [_Entry("Root Entry", 5)]
    _flatten(tree, entries, 0)
    for entry in entries:
        if len(entry.name) > 31:
            raise ValueError(f"name too long for a compound file: {entry.name!r}")
        kids = sorted(entry.children, key=lambda i: _key(entries[i].name))
        entry.child = _balance(entries, kids)

    # mini stream: every stream under the cutoff, in 64-byte mini sectors
    mini = bytearray()
    minifat: list[int] = []
    for entry in entries:
        if entry.kind == 2:
            entry.size = len(entry.data)
            if 0 < entry.size < CUTOFF:
                count = -(-entry.size // MINI)
                entry.start = len(minifat)
                minifat.extend([0] * count)
                _chain(minifat, entry.start, count)
                mini += entry.data + b"\0" * (count * MINI - entry.size)

    sectors: list[bytes] = []  # regular sectors after the header, in order
    fat: list[int] = []

    def allocate(data: bytes) -> int:
        if not data:
            return ENDOFCHAIN
        count = -(-len(data) // SECTOR)
        start = len(sectors)
        padded = data + b"\0" * (count * SECTOR - len(data))
        sectors.extend(padded[i * SECTOR:(i + 1) * SECTOR] for i in range(count))
        fat.extend([0] * count)
        _chain(fat, start, count)
        return start

    for entry in entries:
        if entry.kind == 2 and entry.size >= CUTOFF:
            entry.start = allocate(entry.data)
    entries[0].start = allocate(bytes(mini))
    entries[0].size = len(mini)
    minifat_bytes = b"".join(struct.pack("<I", v) for v in minifat)
    minifat_bytes += b"\xff" * (-len(minifat_bytes) % SECTOR)
    minifat_start = allocate(minifat_bytes)
    directory = b"".join(_dir_entry(e) for e in entries)
    directory += _empty_dir_entry() * (-len(entries) % (SECTOR // 128))
    dir_start = allocate(directory)

    n_fat = 1
    while (len(sectors) + n_fat) > n_fat * (SECTOR // 4):
        n_fat += 1
    if n_fat > 109:
        raise ValueError("compound file too large for this writer (needs a DIFAT chain)")
    fat_start = len(sectors)
    fat.extend([FATSECT] * n_fat)
    fat.extend([FREESECT] * (n_fat * (SECTOR // 4) - len(fat)))
    fat_bytes = b"".join(struct.pack("<I", v) for v in fat)
    sectors.extend(fat_bytes[i * SECTOR:(i + 1) * SECTOR] for i in range(n_fat))

    difat = [fat_start + i for i in range(n_fat)] + [FREESECT] * (109 - n_fat)
    header = (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 16
              + struct.pack("<HHHHH", 0x003E, 0x0003, 0xFFFE, 9, 6) + b"\0" * 6
              + struct.pack("<IIIIIIIII", 0, n_fat, dir_start, 0, CUTOFF,
                            minifat_start if minifat else ENDOFCHAIN,
                            len(minifat_bytes) // SECTOR if minifat else 0, ENDOFCHAIN, 0)
              + b"".join(struct.pack("<I", v) for v in difat))
    assert len(header) == SECTOR
    return header + b"".join(sectors)


def _dir_entry(e: _Entry) -> bytes:
    name = (e.name + "\0").encode("utf-16-le")
    return (name + b"\0" * (64 - len(name)) + struct.pack("<HBB", len(name), e.kind, 1)
            + struct.pack("<III", e.left, e.right, e.child) + b"\0" * 16 + b"\0" * 4 + b"\0" * 16
            + struct.pack("<IQ", e.start if e.kind != 1 else 0, e.size if e.kind != 1 else 0))


def _empty_dir_entry() -> bytes:
    return b"\0" * 64 + struct.pack("<HBB", 0, 0, 0) + struct.pack("<III", NOSTREAM, NOSTREAM, NOSTREAM) \
        + b"\0" * 36 + struct.pack("<IQ", 0, 0)


# --- Outlook .msg -------------------------------------------------------------------------------------------

PT_LONG, PT_BOOLEAN, PT_SYSTIME, PT_STRING8, PT_UNICODE, PT_BINARY, PT_OBJECT = (
    0x0003, 0x000B, 0x0040, 0x001E, 0x001F, 0x0102, 0x000D)


@dataclass
class MsgAttachment:
    name: str
    data: bytes = b""
    mime: str = ""
    content_id: str = ""
    hidden: bool = False
    message: MsgSpec | None = None  # an attached Outlook item (attach method 5)
    method: int = 0  # 0: by value (1), or 5 for ``message``; set to force another


@dataclass
class MsgSpec:
    subject: str = ""
    body: str = ""
    html: bytes = b""  # PR_HTML, binary
    sender_name: str = ""
    sender_email: str = ""
    to: str = ""
    cc: str = ""
    submit_time: int | None = None  # FILETIME ticks
    attachments: list[MsgAttachment] = field(default_factory=list)
    rtf: bytes = b""  # PR_RTF_COMPRESSED, written with ``lzfu``
    code_page: int | None = None
    string8: bool = False  # write strings as 001E in ``code_page`` instead of 001F


def lzfu(rtf: bytes) -> bytes:
    """``rtf`` as Outlook's compressed RTF ([MS-OXRTFCP]): literals only (valid, if not small), then the
    end-of-data reference to the dictionary's write position."""
    write = 207  # after the pre-filled dictionary
    body = bytearray()
    tokens: list[bytes] = [bytes([b]) for b in rtf]
    end = ((write + len(rtf)) % 4096) << 4
    tokens.append(struct.pack(">H", end))
    for at in range(0, len(tokens), 8):
        group = tokens[at:at + 8]
        control = sum(1 << i for i, t in enumerate(group) if len(t) == 2)
        body.append(control)
        body += b"".join(group)
    return struct.pack("<IIII", len(body) + 12, len(rtf), 0x75465A4C, 0) + bytes(body)


def filetime(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    import datetime

    moment = datetime.datetime(year, month, day, hour, minute, tzinfo=datetime.UTC)
    delta = moment - datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC)
    return (delta.days * 86400 + delta.seconds) * 10_000_000


def _props(header: bytes, fixed: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(header)
    for prop, kind, value in fixed:
        out += struct.pack("<II", (prop << 16) | kind, 0x6) + value.ljust(8, b"\0")
    return bytes(out)


def _string(storage: Tree, fixed: list[tuple[int, int, bytes]], prop: int, text: str, spec: MsgSpec) -> None:
    if not text:
        return
    if spec.string8:
        data = text.encode(f"cp{spec.code_page}" if spec.code_page else "cp1252") + b"\0"
        kind = PT_STRING8
    else:
        data = text.encode("utf-16-le") + b"\0\0"
        kind = PT_UNICODE
    storage[f"__substg1.0_{prop:04X}{kind:04X}"] = data
    fixed.append((prop, kind, struct.pack("<I", len(data))))


def _message_tree(spec: MsgSpec, header_size: int) -> Tree:
    storage: Tree = {}
    fixed: list[tuple[int, int, bytes]] = []
    _string(storage, fixed, 0x0037, spec.subject, spec)
    _string(storage, fixed, 0x1000, spec.body, spec)
    _string(storage, fixed, 0x0C1A, spec.sender_name, spec)
    _string(storage, fixed, 0x0C1F, spec.sender_email, spec)
    _string(storage, fixed, 0x0E04, spec.to, spec)
    _string(storage, fixed, 0x0E03, spec.cc, spec)
    if spec.html:
        storage["__substg1.0_10130102"] = spec.html
        fixed.append((0x1013, PT_BINARY, struct.pack("<I", len(spec.html))))
    if spec.rtf:
        storage["__substg1.0_10090102"] = lzfu(spec.rtf)
    if spec.submit_time is not None:
        fixed.append((0x0039, PT_SYSTIME, struct.pack("<Q", spec.submit_time)))
    if spec.code_page is not None:
        fixed.append((0x3FFD, PT_LONG, struct.pack("<I", spec.code_page)))
    for i, att in enumerate(spec.attachments):
        storage[f"__attach_version1.0_#{i:08X}"] = _attachment_tree(att, spec)
    n = len(spec.attachments)
    if header_size == 32:
        head = b"\0" * 8 + struct.pack("<IIII", 0, n, 0, n) + b"\0" * 8
    else:
        head = b"\0" * 8 + struct.pack("<IIII", 0, n, 0, n)
    storage["__properties_version1.0"] = _props(head, fixed)
    return storage


def _attachment_tree(att: MsgAttachment, spec: MsgSpec) -> Tree:
    storage: Tree = {}
    fixed: list[tuple[int, int, bytes]] = []
    _string(storage, fixed, 0x3707, att.name, spec)
    _string(storage, fixed, 0x3001, att.name, spec)
    _string(storage, fixed, 0x370E, att.mime, spec)
    _string(storage, fixed, 0x3712, att.content_id, spec)
    method = att.method or (5 if att.message is not None else 1)
    fixed.append((0x3705, PT_LONG, struct.pack("<I", method)))
    if att.hidden:
        fixed.append((0x7FFE, PT_BOOLEAN, struct.pack("<I", 1)))
    if att.message is not None:
        storage["__substg1.0_3701000D"] = _message_tree(att.message, 24)
        fixed.append((0x3701, PT_OBJECT, struct.pack("<I", 0xFFFFFFFF)))
    else:
        storage["__substg1.0_37010102"] = att.data
        fixed.append((0x3701, PT_BINARY, struct.pack("<I", len(att.data))))
    storage["__properties_version1.0"] = _props(b"\0" * 8, fixed)
    return storage


def make_msg(spec: MsgSpec) -> bytes:
    """An Outlook .msg item for ``spec``, as Outlook lays it out (without the named-property map, which
    readers of the standard properties do not need)."""
    tree = _message_tree(spec, 32)
    tree["__nameid_version1.0"] = {"__substg1.0_00020102": b"", "__substg1.0_00030102": b"",
                                   "__substg1.0_00040102": b""}
    return cfb(tree)
