"""Source code and configuration files: the text verbatim (lines, indentation and blank lines kept), the
language in ``metadata["language"]``, the file name as the title.

The text is *not* wrapped in a markdown fence: a fenced block is a protected span for the chunker, so a
whole file would become one oversize chunk. Unfenced, the chunker cuts at blank lines first (between
functions and blocks), then at line ends, which is where code splits naturally.

A binary file given a code extension (a compiled object renamed ``.c``, an image renamed ``.py``) is refused:
NUL bytes, or many control characters, in the first 64 KiB say it is not text.
"""

from __future__ import annotations

from pathlib import PurePath

from knora.adapters.parsers._common import decode_text, extension_of, normalise_text
from knora.domain.files import looks_binary
from knora.ports.parser import ParsedDocument, ParseError

# extension → language; what teams keep in their repositories (json, md, txt, csv, html have parsers of
# their own). Not ``.env``: dotenv files hold secrets, and a folder ingest should not carry them into answers.
LANGUAGES: dict[str, str] = {
    "py": "python", "pyi": "python", "pyw": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "typescript",
    "vue": "vue", "svelte": "svelte",
    "go": "go", "java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala", "groovy": "groovy",
    "gradle": "groovy", "clj": "clojure",
    "c": "c", "h": "c", "cpp": "cpp", "cc": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp",
    "cs": "csharp", "fs": "fsharp", "vb": "vbnet", "m": "objective-c", "mm": "objective-c",
    "rs": "rust", "swift": "swift", "dart": "dart", "zig": "zig", "nim": "nim",
    "rb": "ruby", "php": "php", "pl": "perl", "pm": "perl", "lua": "lua", "r": "r", "jl": "julia",
    "ex": "elixir", "exs": "elixir", "erl": "erlang", "hs": "haskell", "ml": "ocaml",
    "sh": "shell", "bash": "shell", "zsh": "shell", "fish": "shell", "ps1": "powershell",
    "psm1": "powershell", "bat": "batch", "cmd": "batch",
    "sql": "sql", "graphql": "graphql", "gql": "graphql", "proto": "protobuf", "thrift": "thrift",
    "tf": "terraform", "hcl": "hcl",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini", "cfg": "ini", "conf": "conf",
    "properties": "properties", "xml": "xml", "xsd": "xml", "plist": "xml",
    "css": "css", "scss": "scss", "sass": "sass", "less": "less",
    "dockerfile": "dockerfile", "mk": "makefile", "cmake": "cmake", "tex": "latex",
    "diff": "diff", "patch": "diff",
}
class CodeParser:
    extensions: frozenset[str] = frozenset(LANGUAGES)

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        ext = extension_of(file_name)
        language = LANGUAGES.get(ext, ext or "text")
        if looks_binary(data):
            raise ParseError(f"{PurePath(file_name).name!r} is not a text file (binary content under a "
                             f".{ext} name)")
        text = normalise_text(decode_text(data))
        name = PurePath(file_name.replace("\\", "/")).name
        lines = text.count("\n") + 1 if text else 0
        return ParsedDocument(title=name or file_name, text=text,
                              metadata={"format": "code", "language": language, "lines": str(lines)})
