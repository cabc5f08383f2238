from __future__ import annotations

import pytest

from knora.domain.files import content_type, file_type

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("name", "expected"), [
    ("report.PDF", "pdf"), ("a/b/c.tar.gz", "gz"), ("C:\\\\docs\\\\memo.docx", "docx"),
    ("Dockerfile", "dockerfile"), ("svc/Containerfile", "dockerfile"), ("Makefile", "mk"),
    ("GNUmakefile", "mk"), ("Jenkinsfile", "groovy"), ("Gemfile", "rb"),
    ("README", ""), (".bashrc", ""), ("", ""),
])
def test_file_type(name: str, expected: str) -> None:
    assert file_type(name) == expected


TEXT_TYPES = frozenset({"txt", "md", "pdf", "mk"})


@pytest.mark.parametrize(("name", "head", "expected"), [
    ("README", b"socat - multipurpose relay\n\nAbout\n=====\n", "txt"),
    ("BUGREPORTS", "请把错误报告发到邮件列表。\n".encode("gb18030"), "txt"),
    ("zone.dns", b"$ORIGIN example.org.\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 3600\n", "txt"),
    ("notes.utf16", "hello\nworld\n".encode("utf-16"), "txt"),
    ("guide.md", b"# Guide\n", "md"),  # a name the registry knows wins
    ("Makefile", b"all:\n\tcc main.c\n", "mk"),
    ("blob", b"\x00\x01\x02\x03binary", ""),  # NUL bytes: not text
    ("scan", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", ""),  # a PDF without its name stays refused
    ("archive", b"PK\x03\x04\x14\x00text-looking", ""),
    ("tool.exe", b"looks like text", "exe"),  # a binary format's name is never sniffed
    ("data.bin", b"plain words", "bin"),
    ("empty", b"  \n ", ""),
    ("controls", bytes(range(1, 32)) * 10, ""),
])
def test_content_type(name: str, head: bytes, expected: str) -> None:
    assert content_type(name, head, TEXT_TYPES) == expected


def test_content_type_without_a_text_parser_never_sniffs() -> None:
    assert content_type("README", b"plain words", frozenset({"md"})) == ""
