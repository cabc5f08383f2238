from __future__ import annotations

import pytest

from knora.domain.files import file_type

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("name", "expected"), [
    ("report.PDF", "pdf"), ("a/b/c.tar.gz", "gz"), ("C:\\\\docs\\\\memo.docx", "docx"),
    ("Dockerfile", "dockerfile"), ("svc/Containerfile", "dockerfile"), ("Makefile", "mk"),
    ("GNUmakefile", "mk"), ("Jenkinsfile", "groovy"), ("Gemfile", "rb"),
    ("README", ""), (".bashrc", ""), ("", ""),
])
def test_file_type(name: str, expected: str) -> None:
    assert file_type(name) == expected
