"""reStructuredText: sections as headings, code as fences, tables as pipe tables, Sphinx's roles and
directives read for their text, and docutils' file- and URL-reading directives closed."""

from __future__ import annotations

import pytest

from knora.adapters.parsers.registry import parse_bytes
from knora.domain.knowledge import ChunkingConfig
from knora.services.ingest.chunker import split_document

pytestmark = pytest.mark.unit

GUIDE = """\
=========
 MyTool
=========

:Author: Jane Doe

.. contents::

Introduction
============

MyTool syncs *folders*. See :ref:`the install guide <install>` and :func:`mytool.run`.

.. note::
   It needs Python 3.11.

.. code-block:: python
   :linenos:

   import mytool
   mytool.run()

.. toctree::
   :maxdepth: 2

   install

Options
-------

- ``--fast`` skips checksums
- ``--dry-run`` prints what would change

+--------+---------+
| option | default |
+========+=========+
| fast   | off     |
+--------+---------+

.. versionadded:: 1.1
   The dry-run flag.

.. _install:

Installing
==========

Install it with pip::

    pip install mytool

:unknownrole:`kept text`
"""


def test_structure_becomes_markdown() -> None:
    doc = parse_bytes(GUIDE.encode(), "guide.rst")
    assert doc.title == "MyTool"
    assert doc.metadata["format"] == "rst"
    text = doc.text
    assert text.startswith("# MyTool")
    assert "## Introduction" in text
    assert "### Options" in text
    assert "## Installing" in text
    assert "See the install guide and mytool.run." in text  # roles keep their text, not their markup
    assert "Note: It needs Python 3.11." in text
    assert "```python\nimport mytool\nmytool.run()\n```" in text
    assert "```\npip install mytool\n```" in text  # a literal block after '::'
    assert "| option | default |\n| --- | --- |\n| fast | off |" in text
    assert "- --fast skips checksums\n- --dry-run prints what would change" in text
    assert "New in version 1.1:" in text
    assert "The dry-run flag." in text
    assert "kept text" in text
    assert ":unknownrole:" not in text
    for plumbing in ("toctree", "maxdepth", "linenos", ".. _install", "contents::"):
        assert plumbing not in text


def test_chunks_carry_their_section() -> None:
    doc = parse_bytes(GUIDE.encode(), "guide.rst")
    drafts = split_document(doc.text, ChunkingConfig(chunk_size=120, chunk_overlap=0))
    assert any("pip install mytool" in d.content and "Installing" in d.content for d in drafts)


@pytest.mark.parametrize("directive", [
    ".. include:: /etc/passwd",
    ".. raw:: html\n   :file: /etc/passwd",
    ".. raw:: html\n\n   <script>alert(1)</script>",
    ".. csv-table:: leak\n   :file: /etc/passwd",
    ".. raw:: html\n   :url: http://127.0.0.1:9/secret",
])
def test_directives_that_read_files_or_urls_are_closed(directive: str) -> None:
    doc = parse_bytes(f"Title\n=====\n\nBefore.\n\n{directive}\n\nAfter.\n".encode(), "x.rst")
    assert "root:" not in doc.text
    assert "<script>" not in doc.text
    assert "Before." in doc.text
    assert "After." in doc.text


def test_malformed_markup_still_gives_its_text() -> None:
    doc = parse_bytes(b"Title\n===\n\n.. [#] dangling *emphasis and `quote\n\n==\nx\n", "broken.rst")
    assert "dangling" in doc.text


def test_a_document_without_sections_is_titled_by_its_file() -> None:
    doc = parse_bytes("一段没有标题的说明。\n\n第二段。".encode(), "notes/说明.rst")
    assert doc.title == "说明"
    assert "一段没有标题的说明。" in doc.text
