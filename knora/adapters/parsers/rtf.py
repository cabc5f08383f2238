"""RTF via striprtf: paragraphs as lines, tables as markdown tables, ``\\uN`` escapes and code pages
(``\\ansicpg936``, font charsets) decoded, title and author from the ``\\info`` group.

striprtf tokenises every character with a Python loop and runs two backtracking regexes over the input (the
hyperlink rewrite over the whole text, the font-table regex over the font table), which are quadratic on
hostile input. So a linear pre-pass runs first, on the bytes:

- ``\\binN`` blobs are cut out (N raw bytes that may hold braces or backslashes), wherever they are;
- picture, OLE object and theme groups (``\\pict``, ``\\objdata`` …), which are most of a real RTF's bytes,
  are dropped whole, found by brace matching rather than character by character;
- the font table is rewritten to a canonical one (number and charset per font) so striprtf's regex over it
  is linear, and field instructions are taken out so its hyperlink regex never starts (a link's URL is put
  after its text here, as "text (url)");
- group nesting deeper than ``MAX_DEPTH`` is refused (a real document nests a few dozen levels).
"""

from __future__ import annotations

import codecs
import re

from knora.adapters.parsers._common import file_stem, markdown_table, normalise_text
from knora.ports.parser import ParsedDocument, ParseError

MAX_DEPTH = 4096
MAX_FONTS = 4096
_DROP = (b"pict", b"objdata", b"datastore", b"themedata", b"colorschememapping", b"xmlnstbl", b"listtable",
         b"listoverridetable", b"stylesheet", b"rsidtbl", b"generator", b"latentstyles", b"blipuid")
_TOKEN = re.compile(rb"\\bin(-?\d{1,10}) ?|\\[\\{}]|\{(?:\\\*)?(?:\\(" + b"|".join(_DROP)
                    + rb"|fonttbl|info|field|fldinst)(?![a-zA-Z]))?|\}")
_HYPERLINK = re.compile(rb'HYPERLINK\s+"([^"\\{}]{1,2048})"')
_FONT = re.compile(rb"\\f(\d{1,9})|\\fcharset(\d{1,3})")
_CPG = re.compile(rb"\\ansicpg(\d{1,5})")
_INFO_FIELD = re.compile(rb"\{\\(title|author|subject)(?![a-zA-Z]) ?((?:[^{}\\]|\\[^{}])*)\}")


class _Pre:
    """The result of the pre-pass: the cleaned RTF bytes and the raw ``\\info`` group."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.info = b""


def _prepass(data: bytes) -> _Pre:
    pre = _Pre()
    pos = 0  # start of bytes not yet copied
    i = 0  # where the next token search starts
    depth = 0
    drop_at: int | None = None  # depth at which a dropped group opened
    special: tuple[bytes, int, int] | None = None  # (fonttbl | info | fldinst, depth, start) being collected
    fields: list[tuple[int, bytes]] = []  # open \field groups: (depth, the URL its instruction links to)
    while True:
        m = _TOKEN.search(data, i)
        if m is None:
            break
        tok = m.group(0)
        if m.group(1) is not None:  # \binN: cut the control word and its N bytes
            n = max(int(m.group(1)), 0)
            i = min(m.end() + n, len(data))
            if drop_at is None and special is None:
                pre.parts.append(data[pos:m.start()])
                pos = i
            continue
        i = m.end()
        if tok.startswith(b"\\"):
            continue  # an escaped brace or backslash
        if tok.startswith(b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise ParseError(f"the RTF file nests groups more than {MAX_DEPTH} deep (a malformed or "
                                 "hostile file)")
            name = m.group(2)
            if name and drop_at is None and special is None:
                if name == b"field":
                    fields.append((depth, b""))
                elif name in (b"fonttbl", b"info", b"fldinst"):
                    special = (name, depth, m.start())
                else:
                    pre.parts.append(data[pos:m.start()])
                    drop_at = depth
            continue
        # "}"
        if drop_at is not None and depth == drop_at:
            drop_at = None
            pos = m.end()
        elif special is not None and depth == special[1]:
            group = data[special[2]:m.end()]
            pre.parts.append(data[pos:special[2]])
            if special[0] == b"fonttbl":
                pre.parts.append(_canonical_fonts(group))
            elif special[0] == b"info":
                pre.info = group
            elif fields and (link := _HYPERLINK.search(group)):  # fldinst: keep the link's URL
                fields[-1] = (fields[-1][0], link.group(1))
            special = None
            pos = m.end()
        elif fields and depth == fields[-1][0]:
            _, url = fields.pop()
            if url:  # after the link's text, as "text (url)"
                pre.parts.append(data[pos:m.end()])
                pre.parts.append(b" (" + url + b")")
                pos = m.end()
        depth -= 1
    if drop_at is None and special is None:
        pre.parts.append(data[pos:])
    return pre


def _canonical_fonts(group: bytes) -> bytes:
    """``{\\fonttbl …}`` reduced to ``{\\fN\\fcharsetC x;}`` per font: what striprtf needs, in a shape its
    font regex reads in linear time."""
    fonts: dict[bytes, bytes] = {}
    current: bytes | None = None
    for m in _FONT.finditer(group):
        if m.group(1) is not None:
            current = m.group(1)
            fonts.setdefault(current, b"0")
            if len(fonts) > MAX_FONTS:
                break
        elif current is not None:
            fonts[current] = m.group(2)
    entries = b"".join(b"{\\f" + n + b"\\fcharset" + c + b" x;}" for n, c in fonts.items())
    return b"{\\fonttbl" + entries + b"}"


def _codepage(data: bytes) -> str:
    m = _CPG.search(data[:4096])
    if m:
        name = f"cp{int(m.group(1))}"
        try:
            codecs.lookup(name)
            return name
        except LookupError:
            pass
    return "cp1252"


def _decode(data: bytes, codepage: str) -> str:
    """RTF is 7-bit with escapes; files that carry raw 8-bit text are read as UTF-8 when they are, else in
    their code page."""
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode(codepage, errors="replace")


def _to_text(rtf: str, codepage: str) -> str:
    from striprtf.striprtf import rtf_to_text

    # keeps striprtf's backtracking hyperlink regex from ever starting
    rtf = rtf.replace("{\\field{", "{\\field {")
    text = str(rtf_to_text(rtf, encoding=codepage, errors="replace"))  # type: ignore[no-untyped-call]
    # \uN escapes of characters outside the BMP come as surrogate pairs: join them
    return text.encode("utf-16", "surrogatepass").decode("utf-16", errors="replace")


def _tables(text: str) -> str:
    """Runs of lines ending in "|" (striprtf's rendering of table rows: ``\\cell`` → "|") become markdown
    tables."""
    out: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            out.append("\n" + markdown_table([list(r) for r in rows]) + "\n")
            rows.clear()

    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.endswith("|") and len(stripped) > 1:
            rows.append([c.strip() for c in stripped[:-1].split("|")])
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


class RtfParser:
    extensions: frozenset[str] = frozenset({"rtf"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        if data.lstrip()[:5] != b"{\\rtf":
            raise ParseError("not an RTF file (it does not start with {\\rtf)")
        pre = _prepass(data)
        codepage = _codepage(data)
        try:
            text = _to_text(_decode(b"".join(pre.parts), codepage), codepage)
        except (ValueError, OverflowError, IndexError, LookupError) as exc:
            raise ParseError(f"the RTF file is damaged: {type(exc).__name__}: {exc}") from exc
        text = normalise_text(re.sub(r"\n{3,}", "\n\n", _tables(text)))
        meta = {"format": "rtf"}
        title = ""
        for m in _INFO_FIELD.finditer(pre.info):
            try:
                wrapped = b"{\\rtf1\\ansicpg" + codepage[2:].encode() + b" " + m.group(2) + b"}"
                value = normalise_text(_to_text(_decode(wrapped, codepage), codepage))
            except (ValueError, OverflowError, IndexError, LookupError):
                continue
            value = " ".join(value.split())
            if not value:
                continue
            field = m.group(1).decode()
            if field == "title":
                title = value
            else:
                meta[field] = value
        return ParsedDocument(title=title or file_stem(file_name), text=text, metadata=meta)
