"""AsciiDoc: the document title, sections as headings, source blocks as fences, tables as pipe tables, lists,
inline macros read for their text; comments, attributes and include:: dropped (nothing read from disk)."""

from __future__ import annotations

import pytest

from knora.adapters.parsers.registry import parse_bytes

pytestmark = pytest.mark.unit

GUIDE = """\
= User Guide
Jane Doe <jane@example.org>
:toc:
:source-highlighter: rouge

// a comment line
include::/etc/passwd[]

== Installing

Run the installer. See <<config,the configuration>> and https://example.org[the project site].

[source,bash]
----
./install.sh --prefix /opt
----

.Supported systems
* Debian 12
** bookworm
* Ubuntu 24.04

NOTE: Root is *required*.

[[config]]
=== Configuration

|===
|Key |Default

|port
|8080

|host |localhost
|===

////
a hidden comment block
////
"""


def test_structure_becomes_markdown() -> None:
    doc = parse_bytes(GUIDE.encode(), "guide.adoc")
    assert doc.title == "User Guide"
    assert doc.metadata["format"] == "adoc"
    text = doc.text
    assert text.startswith("# User Guide")
    assert "## Installing" in text
    assert "### Configuration" in text
    assert "See the configuration and the project site." in text
    assert "```bash\n./install.sh --prefix /opt\n```" in text
    assert "**Supported systems**\n- Debian 12\n  - bookworm\n- Ubuntu 24.04" in text
    assert "NOTE: Root is **required**." in text
    assert "| Key | Default |\n| --- | --- |\n| port | 8080 |\n| host | localhost |" in text
    for dropped in ("toc", "source-highlighter", "comment", "include::", "root:", "[[config]]", "////"):
        assert dropped not in text


def test_asciidoc_extension_and_heading_fallback() -> None:
    doc = parse_bytes("== 安装\n\n运行安装程序。\n".encode(), "指南.asciidoc")
    assert doc.title == "安装"
    assert "## 安装" in doc.text
