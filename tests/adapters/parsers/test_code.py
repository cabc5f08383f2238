"""Source and configuration files: verbatim text, the language in the metadata, binary files in disguise
refused, and chunks that fall between functions rather than one file-sized block."""

from __future__ import annotations

import pytest

from knora.adapters.parsers.code import LANGUAGES, CodeParser
from knora.adapters.parsers.csv import CsvParser
from knora.adapters.parsers.html import HtmlParser
from knora.adapters.parsers.json import JsonParser
from knora.adapters.parsers.md import MarkdownParser
from knora.adapters.parsers.registry import get_parser, parse_bytes
from knora.adapters.parsers.txt import TextParser
from knora.domain.knowledge import ChunkingConfig
from knora.ports.parser import ParseError
from knora.services.ingest.chunker import split_document

pytestmark = pytest.mark.unit

PYTHON = '''"""Billing helpers."""

import math


def invoice_total(lines: list[float], tax: float) -> float:
    """Sum of the lines plus tax."""
    subtotal = sum(lines)
    if subtotal < 0:
        raise ValueError("negative invoice")
    return math.fsum([subtotal, subtotal * tax])


class Ledger:
    def __init__(self) -> None:
        self.entries: dict[str, float] = {}

    def post(self, account: str, amount: float) -> None:
        self.entries[account] = self.entries.get(account, 0.0) + amount
'''


def test_python_kept_verbatim_with_its_language() -> None:
    doc = parse_bytes(PYTHON.encode(), "src/billing.py")
    assert doc.text == PYTHON.strip()
    assert doc.title == "billing.py"
    assert doc.metadata == {"format": "code", "language": "python", "lines": "19"}
    assert "        self.entries[account]" in doc.text  # indentation kept


@pytest.mark.parametrize(("name", "language"), [
    ("app.ts", "typescript"), ("App.TSX", "typescript"), ("main.go", "go"), ("lib.rs", "rust"),
    ("Main.java", "java"), ("deploy.sh", "shell"), ("build.gradle", "groovy"), ("schema.sql", "sql"),
    ("ci.yml", "yaml"), ("pyproject.toml", "toml"), ("api.proto", "protobuf"), ("setup.ps1", "powershell"),
    ("app.dockerfile", "dockerfile"), ("pom.xml", "xml"),
])
def test_languages_by_extension(name: str, language: str) -> None:
    doc = parse_bytes(b"x = 1\n", name)
    assert doc.metadata["language"] == language


def test_no_extension_claimed_twice() -> None:
    others = (TextParser.extensions | MarkdownParser.extensions | HtmlParser.extensions
              | JsonParser.extensions | CsvParser.extensions)
    assert not others & CodeParser.extensions
    for ext in LANGUAGES:
        assert isinstance(get_parser(ext), CodeParser)


def test_encodings_windows_scripts_and_chinese_comments() -> None:
    ps1 = "\ufeffWrite-Host '你好'\r\n".encode("utf-16-le")
    assert parse_bytes(b"\xff\xfe" + ps1[2:], "hello.ps1").text == "Write-Host '你好'"
    gbk = "# 计算总额\nprint(1)\n".encode("gb18030")
    assert parse_bytes(gbk, "legacy.py").text == "# 计算总额\nprint(1)"


@pytest.mark.parametrize("data", [
    b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40,  # a compiled binary renamed .c
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 100,  # an image renamed .c
    bytes(range(1, 32)) * 200,  # control characters, no NUL
])
def test_binary_content_under_a_code_name_is_refused(data: bytes) -> None:
    with pytest.raises(ParseError, match="not a text file"):
        parse_bytes(data, "program.c")


def test_chunks_fall_between_blocks_not_as_one_fenced_block() -> None:
    source = "\n\n\n".join(PYTHON for _ in range(6))
    doc = parse_bytes(source.encode(), "billing.py")
    drafts = split_document(doc.text, ChunkingConfig(chunk_size=512, chunk_overlap=0))
    assert len(drafts) > 3
    assert all(len(d.content) <= 512 for d in drafts)
    assert all(doc.text[d.start_at:d.end_at] == d.content for d in drafts)
    # every cut falls at a line end, and most at a blank line between blocks (chunks may *start* inside a
    # line: the overlap begins at a word boundary)
    assert all(d.end_at == len(doc.text) or doc.text[d.end_at] == "\n" for d in drafts)
    assert sum(doc.text.startswith("\n\n", d.end_at) for d in drafts) >= len(drafts) // 2


def test_comment_lines_are_not_headings_under_the_heading_strategies() -> None:
    from knora.services.ingest.chunker import config_for_format

    source = "\n\n".join(f"# step {i}: prepare the ledger\nvalue_{i} = compute({i})\n" + "x = 1\n" * 30
                         for i in range(8))
    doc = parse_bytes(source.encode(), "job.py")
    auto = ChunkingConfig(strategy="auto").normalised()
    naive = split_document(doc.text, auto)
    assert any(d.context_header.startswith("step") for d in naive)  # what the chunker alone would do
    for strategy in ("auto", "heading"):
        config = config_for_format(ChunkingConfig(strategy=strategy).normalised(), doc.metadata["format"])
        assert all(d.context_header == "" for d in split_document(doc.text, config))
    markdown = ChunkingConfig(strategy="heading")
    assert config_for_format(markdown, "md") is markdown


def test_extension_less_build_files_by_name() -> None:
    doc = parse_bytes(b"FROM python:3.11-slim\nRUN pip install knora\n", "deploy/Dockerfile")
    assert doc.title == "Dockerfile"
    assert doc.metadata["language"] == "dockerfile"
    assert parse_bytes(b"all:\n\tpython -m build\n", "Makefile").text == "all:\n\tpython -m build"
    with pytest.raises(ParseError, match="unsupported file type"):
        parse_bytes(b"just words", "README")


def test_dotenv_files_are_not_code() -> None:
    with pytest.raises(ParseError, match="unsupported file type"):
        parse_bytes(b"DATABASE_PASSWORD=hunter2\n", "prod.env")
