"""reStructuredText (``.rst``, ``.rest``): parsed with docutils into its document tree and written out as
Markdown, which the chunker understands — sections become headings (so chunks carry their section path),
literal and code blocks fences, tables pipe tables, lists lists, admonitions "Note: …" paragraphs. The title
is the document's title (its first, unique top-level section), else the first section title, else the file
stem.

Closed by default: docutils' ``include`` and ``raw`` directives would read files from the server's disk or
URLs (``file_insertion_enabled`` and ``raw_enabled`` are off), and its reports go nowhere (a malformed file
still gives its text). The roles and directives Sphinx adds (``:ref:``, ``:func:``, ``.. code-block::``, ``..
toctree::``, ``.. versionadded::`` …) are understood well enough to keep their text and drop their plumbing,
since most ``.rst`` files teams have are Sphinx sources."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.states import Inliner

from knora.adapters.parsers._common import decode_text, file_stem, markdown_table, normalise_text
from knora.ports.parser import ParsedDocument, ParseError

_SETTINGS: dict[str, object] = {
    "file_insertion_enabled": False, "raw_enabled": False, "report_level": 5, "halt_level": 5,
    "syntax_highlight": "none", "_disable_config": True,
    "input_encoding": "unicode", "doctitle_xform": True, "sectsubtitle_xform": False,
    "embed_stylesheet": False, "smart_quotes": False,
}
# Sphinx's cross-reference roles: "title <target>" shows the title, a bare target itself
_SPHINX_ROLES = ("ref", "doc", "term", "numref", "any", "download", "keyword", "option", "envvar", "token",
                 "func", "meth", "class", "mod", "attr", "data", "const", "exc", "obj", "type", "member",
                 "var", "macro", "enum", "struct", "program", "command", "file", "samp", "kbd", "guilabel",
                 "menuselection", "mimetype", "makevar", "manpage", "dfn", "abbr", "pep", "rfc", "regexp",
                 "math", "eq", "issue", "pr", "user", "py:func", "py:meth", "py:class", "py:mod", "py:attr",
                 "py:data", "py:const", "py:exc", "py:obj", "c:func", "c:type", "c:macro", "c:member",
                 "cpp:func", "cpp:class", "js:func", "js:class", "js:meth")
_DROPPED_DIRECTIVES = ("toctree", "index", "highlight", "literalinclude", "tabularcolumns", "currentmodule",
                       "module", "py:module", "py:currentmodule", "sectionauthor", "codeauthor",
                       "autosummary", "automodule", "autoclass", "autofunction", "automethod",
                       "autoattribute", "autodata", "autoexception", "graphviz", "plot", "mermaid", "uml",
                       "ifconfig", "meta")
_BODY_DIRECTIVES = ("versionadded", "versionchanged", "deprecated", "versionremoved", "seealso", "only",
                    "centered", "hlist", "glossary", "tab", "tabs", "group-tab", "card", "grid",
                    "grid-item-card", "dropdown", "tab-set", "tab-item", "productionlist")
_DESCRIBED = ("function", "class", "method", "attribute", "data", "exception", "describe", "object",
              "py:function", "py:class", "py:method", "py:attribute", "py:data", "py:exception",
              "c:function", "c:type", "c:macro", "c:member", "cpp:function", "cpp:class", "js:function",
              "option", "envvar", "program", "confval")
_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)
_LEFTOVER_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)?:`([^`]+)`")


class _AnyOptions(dict[str, Callable[[str], str]]):
    """An option spec that accepts every option (Sphinx's directives have many; their values are dropped)."""

    def __init__(self) -> None:
        super().__init__(class_=directives.unchanged)

    def __getitem__(self, key: str) -> Callable[[str], str]:
        return directives.unchanged

    def __contains__(self, key: object) -> bool:
        return True


def _cross_reference(name: str, rawtext: str, text: str, lineno: int, inliner: Inliner,
                     options: Mapping[str, object] | None = None,
                     content: Sequence[str] = ()) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    match = _TARGET.match(text)
    shown = match.group(1) if match and match.group(1) else (match.group(2) if match else text)
    return [nodes.literal(rawtext, shown.lstrip("~!"))], []


class _Dropped(Directive):
    optional_arguments = 10
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return []


class _Body(_Dropped):
    """Keeps the directive's content (and its argument as a first paragraph, e.g. ``versionadded:: 2.1``)."""

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        args = list(self.arguments)
        if self.name.startswith("version") or self.name == "deprecated":
            words = {"versionadded": "New in version", "versionchanged": "Changed in version",
                     "versionremoved": "Removed in version"}.get(self.name, "Deprecated since version")
            container += nodes.paragraph(text=f"{words} {args.pop(0) if args else ''}".strip() + ":")
        elif self.name == "seealso":
            container += nodes.paragraph(text="See also:")
        if args:
            container += nodes.paragraph(text=" ".join(args))
        self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


class _Code(_Dropped):
    def run(self) -> list[nodes.Node]:
        block = nodes.literal_block("\n".join(self.content), "\n".join(self.content))
        if self.arguments:
            block["language"] = self.arguments[0]
        return [block]


class _Described(_Dropped):
    """An API description (``.. function:: name(args)``): its signature as a literal line, then its text."""

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        if self.arguments:
            container += nodes.paragraph("", "", nodes.literal(text=" ".join(self.arguments)))
        self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


def _register() -> None:
    for role in _SPHINX_ROLES:
        roles.register_local_role(role, _cross_reference)  # type: ignore[arg-type]  # stubs: references only
    table: list[tuple[tuple[str, ...], type[Directive]]] = [
        (_DROPPED_DIRECTIVES, _Dropped), (_BODY_DIRECTIVES, _Body), (_DESCRIBED, _Described),
        (("code-block", "sourcecode"), _Code)]
    for names, cls in table:
        for name in names:
            directives.register_directive(name, cls)


_register()


class _Writer:
    """Markdown from a docutils tree: blocks joined by blank lines."""

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def inline(self, node: nodes.Node) -> str:
        return re.sub(r"\s+", " ", node.astext()).strip()

    def add(self, text: str) -> None:
        if text.strip():
            self.blocks.append(text.rstrip())

    def children(self, node: nodes.Element, level: int) -> None:
        for child in node.children:
            self.block(child, level)

    def block(self, node: nodes.Node, level: int) -> None:  # noqa: C901 - one branch per node kind
        if isinstance(node, (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message,
                             nodes.raw, nodes.pending, nodes.transition, nodes.image)):
            return
        if isinstance(node, nodes.section):
            title = next((c for c in node.children if isinstance(c, nodes.title)), None)
            if title is not None:
                self.add("#" * min(level, 6) + " " + self.inline(title))
            self.children(node, level + 1)
        elif isinstance(node, nodes.title):
            return  # written by its section
        elif isinstance(node, (nodes.literal_block, nodes.doctest_block)):
            given: list[object] = list(node.get("classes", []))
            classes = [str(name) for name in given if name != "code"]
            language = str(node.get("language") or (classes[0] if classes else ""))
            self.add(f"```{language}\n{node.astext()}\n```")
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            ordered = isinstance(node, nodes.enumerated_list)
            items: list[str] = []
            for number, item in enumerate(node.children, 1):
                sub = _Writer()
                if isinstance(item, nodes.Element):
                    sub.children(item, level)
                text = "\n".join(sub.blocks).replace("\n", "\n   ")
                items.append(f"{number}. {text}" if ordered else f"- {text}")
            self.add("\n".join(items))
        elif isinstance(node, nodes.definition_list):
            for item in node.findall(nodes.definition_list_item, include_self=False, descend=False):
                term = next((c for c in item.children if isinstance(c, nodes.term)), None)
                definition = next((c for c in item.children if isinstance(c, nodes.definition)), None)
                self.add(f"- **{self.inline(term) if term else ''}**: "
                         f"{self.inline(definition) if definition else ''}")
        elif isinstance(node, (nodes.field_list, nodes.docinfo)):
            for field in node.children:
                if isinstance(field, nodes.field) and len(field.children) == 2:
                    self.add(f"{self.inline(field.children[0])}: {self.inline(field.children[1])}")
                elif isinstance(field, nodes.Element):
                    self.add(f"{field.tagname.capitalize()}: {self.inline(field)}")
        elif isinstance(node, nodes.table):
            self.add(_table(node))
        elif isinstance(node, nodes.Admonition) and isinstance(node, nodes.Element):
            title = next((c for c in node.children if isinstance(c, nodes.title)), None)
            label = self.inline(title) if title else node.tagname.capitalize()
            sub = _Writer()
            sub.children(node, level)
            self.add(f"{label}: " + "\n\n".join(sub.blocks))
        elif isinstance(node, nodes.topic) and "contents" in node.get("classes", []):
            return  # a generated table of contents
        elif isinstance(node, nodes.line_block):
            self.add("\n".join(self.inline(line) for line in node.children))
        elif isinstance(node, (nodes.paragraph, nodes.rubric, nodes.caption, nodes.attribution)):
            self.add(self.inline(node))
        elif isinstance(node, nodes.Element) and node.children and not isinstance(node, nodes.TextElement):
            self.children(node, level)
        else:
            self.add(self.inline(node))


def _table(node: nodes.table) -> str:
    rows: list[list[str]] = []
    for row in node.findall(nodes.row):
        rows.append([re.sub(r"\s+", " ", entry.astext()).strip() for entry in row.children])
    return markdown_table(rows)


def rst_to_markdown(source: str) -> tuple[str, str]:
    """(title, Markdown text) of reStructuredText ``source``."""
    tree = publish_doctree(source, settings_overrides={**_SETTINGS, "warning_stream": io.StringIO()})
    title = str(tree.get("title") or "")
    writer = _Writer()
    level = 1
    if title:
        writer.add("# " + re.sub(r"\s+", " ", title).strip())
        level = 2
    writer.children(tree, level)
    if not title:
        first = next(tree.findall(nodes.title), None)
        title = first.astext() if first is not None else ""
    text = _LEFTOVER_ROLE.sub(r"\1", "\n\n".join(writer.blocks))
    return re.sub(r"\s+", " ", title).strip(), text


class RstParser:
    extensions: frozenset[str] = frozenset({"rst", "rest"})

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        source = normalise_text(decode_text(data))
        try:
            title, text = rst_to_markdown(source)
        except RecursionError as exc:
            raise ParseError(f"{file_name!r} nests its structure too deeply to read") from exc
        except Exception:  # docutils gave up on malformed markup: the text as written is still worth indexing
            title, text = "", source
        return ParsedDocument(title=title or file_stem(file_name), text=normalise_text(text),
                              metadata={"format": "rst"})
