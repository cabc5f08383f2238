"""OpenAI messages → the turn's query and history pairs."""

from __future__ import annotations

import pytest

from knora.domain.errors import BadRequest
from knora.services.openai_api.conversation import SOURCES_RULE, ClientMessage, split_conversation

pytestmark = pytest.mark.unit


def m(role: str, text: str) -> ClientMessage:
    return ClientMessage(role, text)


class TestSplitConversation:
    def test_last_user_message_is_the_query_and_pairs_are_history(self) -> None:
        c = split_conversation([m("system", "be nice"), m("user", "q1"), m("assistant", "a1"),
                                m("user", "q2"), m("assistant", "a2"), m("user", "q3")])
        assert c.query == "q3"
        assert [(h.query, h.answer) for h in c.history] == [("q1", "a1"), ("q2", "a2")]

    def test_unanswered_users_before_the_last_join_the_query(self) -> None:
        c = split_conversation([m("user", "q1"), m("assistant", "a1"), m("user", "first"),
                                m("user", "second")])
        assert c.query == "first\n\nsecond"
        assert [(h.query, h.answer) for h in c.history] == [("q1", "a1")]

    def test_the_sources_list_this_api_wrote_is_cut_from_history(self) -> None:
        c = split_conversation([m("user", "q1"), m("assistant", f"a1 [1]{SOURCES_RULE}\n- [1] Tea"),
                                m("user", "q2")])
        assert c.history[0].answer == "a1 [1]"

    def test_tool_messages_and_a_leading_assistant_are_left_out(self) -> None:
        c = split_conversation([m("assistant", "hello"), m("user", "q1"), m("tool", "{}"),
                                m("assistant", "a1"), m("user", "q2")])
        assert [(h.query, h.answer) for h in c.history] == [("q1", "a1")]

    @pytest.mark.parametrize("messages", [[], [m("system", "x")], [m("user", "q"), m("assistant", "a")],
                                          [m("user", "  ")]])
    def test_no_question_is_a_bad_request(self, messages: list[ClientMessage]) -> None:
        with pytest.raises(BadRequest):
            split_conversation(messages)
