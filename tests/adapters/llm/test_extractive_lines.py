"""Line classes of a passage: headings, page numbers, running headers, markup, list items and table rows."""

from __future__ import annotations

import pytest

from knora.adapters.llm.extractive_lines import LineKind, classify_lines, is_heading, repeated_lines

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("line", [
    "# Installing socat", "### Options", "1.2 Building From Source", "2. Configuration", "3 Networking",
    "Getting Started", "Frequently Asked Questions", "GNU GENERAL PUBLIC LICENSE", "第三章 配置",
    "一、概述", "安装说明", "IV. Results and Discussion"])
def test_heading_lines(line: str) -> None:
    assert is_heading(line)

@pytest.mark.parametrize("line", [
    "Run make to build it.", "Version: 2.3", "This Is Fine", "Steps Are Simple",
    "socat needs a POSIX system",
    "2. Install the package with apt", "服务启动时读取配置文件。", "修改后需要重启服务，否则会失败",
    "| Leeds | 41 |"])
def test_sentences_and_labels_are_not_headings(line: str) -> None:
    assert not is_heading(line)


def test_numbered_titles_are_headings_numbered_steps_and_bullets_are_list_items() -> None:
    doc = "2. Configuration\n2. Install the package with apt\n- Getting Started\n3. Run make."
    assert [ln.kind for ln in classify_lines(doc)] == [LineKind.HEADING, LineKind.LIST, LineKind.LIST,
                                                       LineKind.LIST]


def test_classify_lines() -> None:
    doc = ("# Title\n\nSome prose here.\n- an item\n12\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"
           "<img src=x.png>\nGuide 3")
    kinds = [(ln.text, ln.kind) for ln in classify_lines(doc, repeated_lines([doc, "Guide 4\nOther."]))]
    assert kinds == [
        ("# Title", LineKind.HEADING), ("", LineKind.BLANK), ("Some prose here.", LineKind.PROSE),
        ("- an item", LineKind.LIST), ("12", LineKind.DROPPED), ("| a | b |", LineKind.DROPPED),
        ("| --- | --- |", LineKind.DROPPED), ("a: 1, b: 2", LineKind.ROW),
        ("<img src=x.png>", LineKind.DROPPED), ("Guide 3", LineKind.DROPPED)]
