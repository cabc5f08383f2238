"""Whole, quotable sentences out of passages: headings, running headers, page numbers and fragments left
out; abbreviations, initials and decimals never split a sentence; wrapped lines joined; offsets point at the
source."""

from __future__ import annotations

import pytest

from knora.adapters.llm.extractive_sentences import (
    passage_sentences,
    quotable_sentences,
    split_block,
    starts_mid_sentence,
)

pytestmark = pytest.mark.unit


def quotable(content: str) -> list[str]:
    return [s.text for _, s in quotable_sentences([content])[0]]


def texts(text: str) -> list[str]:
    return [text[a:b] for a, b in split_block(text)]


class TestHeadings:
    def test_headings_are_not_quoted(self) -> None:
        doc = ("# Installing socat\n\n## Requirements\n\nsocat needs a POSIX system.\n\n"
               "Build Options\n=============\n\nRun make to build it.\n\n1.2 Building From Source\n\n"
               "Run make install as root.")
        assert quotable(doc) == ["socat needs a POSIX system.", "Run make to build it.",
                                 "Run make install as root."]
        reasons = {s.text: s.reason for s in passage_sentences(doc)}
        assert reasons["# Installing socat"] == reasons["Build Options"] == "heading"
        assert "=============" not in reasons  # a setext underline is no sentence at all


class TestRunningHeadersAndPages:
    PAGE_3 = ("User Guide for Foo 2.1\n3\nThe daemon reads /etc/foo.conf at start. Changes need a\n"
              "restart of the service.")
    PAGE_4 = "User Guide for Foo 2.1\n4\nFoo listens on port 8080 by default.\nPage 4 of 10"

    def test_lines_repeated_across_passages_and_page_numbers_are_dropped(self) -> None:
        got = [[s.text for _, s in p] for p in quotable_sentences([self.PAGE_3, self.PAGE_4])]
        assert got == [["The daemon reads /etc/foo.conf at start.", "Changes need a restart of the service."],
                       ["Foo listens on port 8080 by default."]]

    def test_a_header_alone_is_kept_as_a_heading_not_dropped(self) -> None:
        sentences = passage_sentences(self.PAGE_4)
        assert sentences[0].text == "User Guide for Foo 2.1"
        assert sentences[0].reason == "heading"

    def test_a_header_printed_across_a_page_break_does_not_cut_the_sentence(self) -> None:
        doc = ("Before you start the server you have to\nFoo Manual\n12\ninstall the certificates first.\n"
               "Then start it.")
        assert quotable(doc) == ["Before you start the server you have to install the certificates first.",
                                 "Then start it."]

    def test_wrapped_prose_is_not_taken_for_an_interrupting_header(self) -> None:
        doc = ("gzip (GNU zip) is a compression utility designed to be a replacement\n"
               "for 'compress'. Its main advantages over compress are much better\n"
               "compression and freedom from patented algorithms.  The GNU Project\n"
               "uses it as the standard compression program for its system.")
        assert quotable(doc) == [
            "gzip (GNU zip) is a compression utility designed to be a replacement for 'compress'.",
            "Its main advantages over compress are much better compression and freedom from patented "
            "algorithms.",
            "The GNU Project uses it as the standard compression program for its system."]

    def test_repeated_prose_lines_are_not_running_headers(self) -> None:
        line = "Its main advantages over compress are much better"
        got = quotable_sentences([f"Intro.\n{line}\ncompression.", f"{line}\ncompression. More."])
        assert [s.text for _, s in got[0]] == ["Intro.", f"{line} compression."]

    def test_markup_only_lines_are_dropped(self) -> None:
        doc = ('<p align="center"><img src="logo.png" alt="Zstandard"></p>\n\n'
               "[![Build](https://ci/badge.svg)](https://ci)\n![logo](logo.png)\n\nZstandard is fast.")
        assert quotable(doc) == ["Zstandard is fast."]

    def test_chinese_page_footer(self) -> None:
        assert quotable("服务启动时读取配置文件。\n第 3 页 共 10 页\n默认端口是8080。") == [
            "服务启动时读取配置文件。", "默认端口是8080。"]


class TestFragments:
    def test_a_passage_starting_mid_sentence_loses_its_first_piece(self) -> None:
        assert quotable("and then restarts the daemon. The port is 8080.") == ["The port is 8080."]
        assert quotable(", which is why it fails. The port is 8080.") == ["The port is 8080."]
        assert quotable("，所以会失败。默认端口是8080。") == ["默认端口是8080。"]

    def test_a_lower_case_command_name_may_start_a_sentence(self) -> None:
        assert starts_mid_sentence("the daemon reads its configuration")
        assert not starts_mid_sentence("socat is a relay for bidirectional data transfers.")
        assert quotable("socat is a relay for data transfers.") == ["socat is a relay for data transfers."]

    def test_a_last_sentence_cut_by_the_chunker_is_dropped(self) -> None:
        assert quotable("Run make to build it. If you want readline support you have to") == [
            "Run make to build it."]
        assert quotable("Run make to build it.\n\nInstall the readline development headers and the") == [
            "Run make to build it."]
        assert quotable("默认端口是8080。修改后需要重启服务，否则") == ["默认端口是8080。"]

    def test_a_short_last_line_without_punctuation_is_kept(self) -> None:
        assert quotable("Contact the maintainers.\n\nMaintainer: Jane Roe") == [
            "Contact the maintainers.", "Maintainer: Jane Roe"]

    def test_list_items_and_table_rows_are_kept(self) -> None:
        doc = ("Steps:\n\n- Install the package\n- Start the service\n\n"
               "| Port | Use |\n| --- | --- |\n| 80 | web |")
        assert quotable(doc) == ["- Install the package", "- Start the service", "Port: 80, Use: web"]


class TestSplitting:
    def test_abbreviations_initials_and_decimals_do_not_split(self) -> None:
        text = ("Use a tool, e.g. socat, for this. Dr. Smith wrote it at the U.S. Army lab; version 3.5 is "
                "current. John F. Kennedy visited in 1963. It costs approx. five dollars. Done!")
        assert texts(text) == [
            "Use a tool, e.g. socat, for this.",
            "Dr. Smith wrote it at the U.S. Army lab; version 3.5 is current.",
            "John F. Kennedy visited in 1963.", "It costs approx. five dollars.", "Done!"]

    def test_question_and_exclamation_marks_and_quotes(self) -> None:
        assert texts('He asked "Why?" Then he left! Was it late? Yes.') == [
            'He asked "Why?"', "Then he left!", "Was it late?", "Yes."]

    def test_chinese_boundaries(self) -> None:
        assert texts("服务启动时读取配置文件。默认端口是8080！可以修改吗？“可以。”然后重启；完成") == [
            "服务启动时读取配置文件。", "默认端口是8080！", "可以修改吗？", "“可以。”", "然后重启；完成"]

    def test_wrapped_lines_are_joined_and_offsets_point_at_the_source(self) -> None:
        doc = "# Title\n\nThe server reads its configuration file when it starts and\nreloads it on SIGHUP."
        [heading, sentence] = passage_sentences(doc)
        assert sentence.text == ("The server reads its configuration file when it starts and reloads it on "
                                 "SIGHUP.")
        assert doc[sentence.start:sentence.end] == (
            "The server reads its configuration file when it starts and\nreloads it on SIGHUP.")
        assert doc[heading.start:heading.end] == "# Title"

    def test_wrapped_chinese_lines_join_without_a_space(self) -> None:
        first = "服务启动时按顺序读取系统目录和用户目录中的全部配置文件并合并同名的选项然后"
        assert quotable(first + "\n检查端口。") == [first + "检查端口。"]

    def test_short_lines_starting_upper_case_are_not_joined(self) -> None:
        assert quotable("Author: Jane Roe\nVersion: 2.3\nIt works.") == [
            "Author: Jane Roe", "Version: 2.3", "It works."]
