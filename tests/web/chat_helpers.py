"""Helpers for the chat browser tests: a knowledge base seeded over the API, and a fake-model "director" that
answers title/rewrite/keyword requests by itself and hands out scripted answers for the real turns."""

from __future__ import annotations

import json
import re
import time
from collections import deque
from typing import Any

from tests.fakes.model_server import FakeModelServer, Reply
from tests.web.conftest import KnoraServer

LIGHTHOUSE = ("The Phare du Créac'h on Ushant is among the most powerful lighthouses in Europe. "
              "Keepers lived at the light until it was automated in 1994.")


def seed_kb(server: KnoraServer, title: str = "Créac'h lighthouse",
            content: str = LIGHTHOUSE) -> dict[str, Any]:
    kb = server.api("POST", "/knowledge-bases", json={"name": "Lighthouses"})
    doc = server.api("POST", f"/knowledge-bases/{kb['id']}/knowledge/manual",
                     json={"title": title, "content": content, "status": "publish"})
    for _ in range(600):
        if server.api("GET", f"/knowledge/{doc['id']}")["parse_status"] in ("completed", "failed"):
            break
        time.sleep(0.1)
    assert server.api("GET", f"/knowledge/{doc['id']}")["parse_status"] == "completed"
    return {"kb": kb, "doc": doc}


def _text(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages", []):
        c = m.get("content")
        parts.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(parts)


def _last_user(body: dict[str, Any]) -> str:
    """The user's own words (the rewrite prompt wraps them as "… Latest message: <q> <no_image_attached
    />")."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            text = str(m["content"])
            found = re.search(r"Latest message:\s*(.*?)\s*(?:<no_image|<image|$)", text, re.DOTALL)
            return found.group(1).strip() if found else text
    return ""


class Director:
    """Installed as ``fake.handler``: auxiliary requests get canned replies, answer requests pop
    ``answers``."""

    def __init__(self, fake: FakeModelServer) -> None:
        self.answers: deque[Reply] = deque()
        self.answer_requests: list[dict[str, Any]] = []
        fake.handler = self

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = _text(body)
        if "short title" in text:
            return Reply(content="Lighthouse keepers")
        if "rewrite_query" in text:
            q = re.sub(r"\s+", " ", _last_user(body))[:200]
            return Reply(content=json.dumps({"rewrite_query": q, "intent": "", "image_description": ""}))
        if "Extract at most 5 keywords" in text:
            return Reply(content=_last_user(body)[:80])
        self.answer_requests.append(body)
        if self.answers:
            return self.answers.popleft()
        return Reply(content="(no scripted answer)")

    def add(self, *replies: Reply) -> Director:
        self.answers.extend(replies)
        return self
