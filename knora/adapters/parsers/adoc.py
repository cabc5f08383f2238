"""AsciiDoc (``.adoc``, ``.asciidoc``), read line by line into Markdown, which the chunker understands:
document and section titles (``= Title``, ``== Section``) become ``#`` headings, listing and literal blocks
fences (``[source,go]`` names the language), ``|===`` tables pipe tables, lists lists; comments, attribute
entries, ``include::`` and conditional directives are dropped (nothing is read from disk); inline macros keep
their text (``link:url[text]`` → text, ``<<id,text>>`` → text). The title is the document title, else the
first heading, else the file stem.

No maintained, permissively licensed AsciiDoc parser exists for Python (the reference implementations are Ruby
and a GPL Python one), so this covers the structure a knowledge base needs — sections, blocks, tables, lists
and the text — not rendering fidelity."""

from __future__ import annotations

import re

from knora.adapters.parsers._common import decode_text, file_stem, markdown_table, normalise_text
from knora.ports.parser import ParsedDocument

_HEADING = re.compile(r"^(={1,6}|#{1,6})[ \t]+(.+?)[ \t]*(?:\1)?[ \t]*$")
_ATTRIBUTE = re.compile(r"^:!?[\w-]+!?:(?:[ \t].*)?$")
_BLOCK_ATTRS = re.compile(r"^\[(.*)\][ \t]*$")
_BLOCK_TITLE = re.compile(r"^\.(?![.\s])(.+)$")
_DIRECTIVE = re.compile(r"^(include|ifdef|ifndef|ifeval|endif|toc)::.*$")
_IMAGE = re.compile(r"^image::([^\[]*)\[([^\]]*)\][ \t]*$")
_FENCE_DELIMS = ("----", "....", "```")  # listing, literal, fenced code: content kept verbatim
_OPEN_DELIMS = ("====", "****", "____", "--", "++++")  # example, sidebar, quote, open, passthrough
_LIST = re.compile(r"^([*\-]{1,5}|\.{1,5}|\d+\.)[ \t]+(.*)$")
_INLINE_SUBS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"<<([^,>]+),\s*([^>]+)>>"), r"\2"),
    (re.compile(r"<<([^>]+)>>"), r"\1"),
    (re.compile(r"xref:[^\[\s]+\[([^\]]+)\]"), r"\1"),
    (re.compile(r"(?:link|mailto):([^\[\s]+)\[\]"), r"\1"),
    (re.compile(r"(?:link|mailto):[^\[\s]+\[([^\]]+)\]"), r"\1"),
    (re.compile(r"(https?://[^\[\s]+)\[\]"), r"\1"),
    (re.compile(r"https?://[^\[\s]+\[([^\]]+)\]"), r"\1"),
    (re.compile(r"footnote:\[([^\]]*)\]"), r" (\1)"),
    (re.compile(r"(?:kbd|btn|menu|pass|icon|anchor):([^\[\s]*)\[([^\]]*)\]"), r"\1\2"),
    (re.compile(r"\[\[[^\]]+\]\]"), ""),
    (re.compile(r"\{(?:nbsp|zwsp)\}"), " "),
    (re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])"), r"**\1**"),
    (re.compile(r"(?<!\w)\+([^+\n]+)\+(?!\w)"), r"`\1`"),
)


def _inline(text: str) -> str:
    for pattern, replacement in _INLINE_SUBS:
        text = pattern.sub(replacement, text)
    return text


def _table(lines: list[str]) -> str:
    cells: list[str] = []
    rows: list[list[str]] = []
    width = 0
    for line in lines:
        if not line.strip():
            if cells and not width:  # a blank line ends the header row and fixes the column count
                width = len(cells)
            continue
        if line.lstrip().startswith("|"):
            cells.extend(c.strip() for c in line.strip()[1:].split("|"))
        elif cells:
            cells[-1] = (cells[-1] + " " + line.strip()).strip()
    width = width or len(cells)
    for start in range(0, len(cells), max(width, 1)):
        rows.append([_inline(c) for c in cells[start:start + width]])
    return markdown_table(rows)


def adoc_to_markdown(source: str) -> tuple[str, str]:  # noqa: C901 - one branch per line kind
    """(title, Markdown text) of AsciiDoc ``source``."""
    out: list[str] = []
    title = ""
    first_heading = ""
    language = ""
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if stripped.startswith("////"):  # comment block
            while i < len(lines) and not lines[i].strip().startswith("////"):
                i += 1
            i += 1
            continue
        if stripped.startswith("//") or _ATTRIBUTE.match(stripped) or _DIRECTIVE.match(stripped):
            continue
        if stripped in _FENCE_DELIMS or (stripped.startswith("```") and stripped[3:].isidentifier()):
            end = stripped if stripped in _FENCE_DELIMS else "```"
            lang = language or (stripped[3:] if stripped.startswith("```") else "")
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != end:
                body.append(lines[i])
                i += 1
            i += 1
            out += ["", f"```{lang}", *body, "```", ""]
            language = ""
            continue
        if stripped.startswith("|==="):
            body = []
            while i < len(lines) and not lines[i].strip().startswith("|==="):
                body.append(lines[i])
                i += 1
            i += 1
            out += ["", _table(body), ""]
            continue
        if stripped in _OPEN_DELIMS:
            continue  # the block's content is ordinary text
        attrs = _BLOCK_ATTRS.match(stripped)
        if attrs:
            parts = [p.strip() for p in attrs.group(1).split(",")]
            language = parts[1] if parts and parts[0] in ("source", "listing") and len(parts) > 1 else ""
            continue
        image = _IMAGE.match(stripped)
        if image:
            alt = image.group(2).split(",")[0].strip()
            out.append(f"[image: {alt or image.group(1)}]")
            continue
        if stripped == "+":
            continue  # list continuation
        heading = _HEADING.match(stripped)
        if heading:
            text = _inline(heading.group(2)).strip()
            level = len(heading.group(1))
            if level == 1 and not title and heading.group(1) == "=":
                title = text
            first_heading = first_heading or text
            out += ["", "#" * level + " " + text, ""]
            continue
        block_title = _BLOCK_TITLE.match(stripped)
        if block_title and not _LIST.match(stripped):
            out += ["", f"**{_inline(block_title.group(1)).strip()}**"]
            continue
        item = _LIST.match(stripped)
        if item:
            marker, text = item.group(1), item.group(2)
            depth = len(marker) - 1 if marker[0] in "*-." else 0
            bullet = "1." if marker[0] == "." or marker[0].isdigit() else "-"
            out.append("  " * depth + f"{bullet} {_inline(text)}")
            continue
        out.append(_inline(line.rstrip()))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()
    return title or first_heading, text


class AsciiDocParser:
    extensions: frozenset[str] = frozenset({"adoc", "asciidoc"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        title, text = adoc_to_markdown(normalise_text(decode_text(data)))
        return ParsedDocument(title=title or file_stem(file_name), text=normalise_text(text),
                              metadata={"format": "adoc"})
