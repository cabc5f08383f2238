"""Large request bodies are parsed in a worker thread, in steps that let the event loop run (issue 20): a
20 MB JSON body measured and parsed on the loop held every other request for seconds. The answers stay the
same: depth limit, malformed JSON, NaN and lone surrogates are the same 400s."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from knora.api import body
from knora.api.body import OFFLOAD_BYTES, parse, parse_json, too_deep, too_deep_yielding
from knora.api.schemas.knowledge_bases import CreateKnowledgeBaseRequest
from knora.domain.errors import BadRequest, ValidationFailed
from knora.domain.nulls import absent_nulls
from knora.services.streaming.intake import ChatBody

PAD = "x" * (OFFLOAD_BYTES + 1)
JSON_TYPE = {"Content-Type": "application/json"}


class TestOffLoop:
    async def test_a_large_body_is_parsed_in_a_worker_thread_and_a_small_one_inline(
            self, lite_client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
        threads: list[tuple[int, bool]] = []
        real = body.parse_json

        def recording(raw: bytes | str, *, yielding: bool = False) -> Any:
            threads.append((threading.get_ident(), yielding))
            return real(raw, yielding=yielding)

        monkeypatch.setattr(body, "parse_json", recording)
        loop_thread = threading.get_ident()  # the in-process app runs on this test's loop
        r = await lite_client.post("/api/v1/models", json={"name": "m", "type": "painter", "pad": PAD})
        assert r.status_code == 400, r.text
        assert "type must be one of" in r.json()["error"]["message"]  # parsed, then refused as before
        r = await lite_client.post("/api/v1/models", json={"name": "m", "type": "painter"})
        assert r.status_code == 400, r.text
        (large_thread, large_yielding), (small_thread, small_yielding) = threads
        assert large_thread != loop_thread
        assert large_yielding
        assert small_thread == loop_thread
        assert not small_yielding

    async def test_large_hostile_bodies_keep_their_answers(self, lite_client: httpx.AsyncClient) -> None:
        pad = b'"' + PAD.encode() + b'"'
        for raw, message in [
            (b'{"p": ' + pad + b', "d": ' + b"[" * 100 + b"]" * 100 + b"}", "JSON nested too deeply"),
            (b'{"p": ' + pad + b', "a": NaN}', "Malformed JSON body"),
            (b'{"p": ' + pad + b', "a": "\\ud800"}', "lone UTF-16 surrogate"),
            (b'{"p": ' + pad + b', oops}', "Malformed JSON body"),
        ]:
            r = await lite_client.post("/api/v1/models", content=raw, headers=JSON_TYPE)
            assert r.status_code == 400, r.text
            assert message in r.json()["error"]["message"]
        r = await lite_client.post("/api/v1/models", content=b'{"p": ' + pad + b', oops}', headers=JSON_TYPE)
        assert r.json()["error"]["details"] == [{"loc": ["body", len(pad) + 8], "msg": "JSON decode error"}]


class TestYieldingParse:
    """The stepwise parse gives the same answers as the one-call parse, whatever the step."""

    CASES = [b"[]", b"[" * 65 + b"]" * 65, b"[" * 64 + b"]" * 64, b'{"a": "' + b"[" * 1000 + b'"}',
             b'{"a": "\\"' + b"[" * 1000 + b'"}', b'{"a": "\\\\"}', b"[]" * 1000,
             b'[{"a": [1, {"b": [[]]}]}]', b'["unterminated [[[[', b'"\\', b'"ab\\"[[[[[[',
             b'{"a": "\\ud800"}']

    @pytest.mark.parametrize("window", [2, 3, 7, 64, 1 << 18])
    def test_depth_agrees(self, window: int) -> None:
        rnd = random.Random(window)
        soup = [b"[", b"]", b"{", b"}", b'"', b"\\", b"a", b'"ab[c"', b'"x\\"[y"']
        fuzz = [b"".join(rnd.choice(soup) for _ in range(rnd.randint(0, 60))) for _ in range(2000)]
        for raw in self.CASES + fuzz:
            for limit in (0, 1, 3, 64):
                assert too_deep_yielding(raw, limit, window) == too_deep(raw, limit), (raw, limit)

    @pytest.mark.parametrize("raw", CASES + [json.dumps({"a": [{"b": i} for i in range(100)]}).encode()])
    def test_parse_agrees(self, raw: bytes) -> None:
        assert _outcome(raw, yielding=True) == _outcome(raw, yielding=False)


def _outcome(raw: bytes, *, yielding: bool) -> tuple[str, Any]:
    try:
        return "value", parse_json(raw, yielding=yielding)
    except BadRequest as exc:
        return "refused", (exc.message, exc.details)


class _Leaf(BaseModel):
    tags: list[str] = Field(default_factory=lambda: ["default"])
    note: str | None = "n"


class _Tree(BaseModel):
    model_config = ConfigDict(extra="allow")

    ids: list[str] = Field(default_factory=list)
    pair: tuple[int, ...] = (1,)
    names: set[str] = Field(default_factory=set)
    meta: dict[str, int] = Field(default_factory=dict)
    leaf: _Leaf = Field(default_factory=_Leaf)
    leaves: list[_Leaf] = Field(default_factory=list)
    by_name: dict[str, _Leaf] = Field(default_factory=dict)
    maybe_ids: list[str] | None = ["kept"]
    maybe_leaf: _Leaf | None = None
    either: list[_Leaf] | _Leaf = Field(default_factory=list)
    title: str = ""
    aliased: list[int] = Field(default_factory=list, alias="aliasedIds")


@pytest.mark.unit
class TestNullIsAbsent:
    """Issue 13: Go sends ``null`` for an unset slice, map or struct pointer; WeKnora reads it as absent."""

    def test_null_lists_dicts_and_models_take_their_defaults(self) -> None:
        t = parse(_Tree, {"ids": None, "pair": None, "names": None, "meta": None, "leaf": None,
                          "leaves": None, "by_name": None, "either": None, "aliasedIds": None})
        assert t == _Tree()

    def test_a_field_that_allows_none_keeps_it(self) -> None:
        t = parse(_Tree, {"maybe_ids": None, "maybe_leaf": None, "leaf": {"note": None}})
        assert t.maybe_ids is None
        assert t.maybe_leaf is None
        assert t.leaf.note is None

    def test_nested_models_lists_and_dicts_of_models(self) -> None:
        t = parse(_Tree, {"leaf": {"tags": None}, "leaves": [{"tags": None}, {"tags": ["x"]}],
                          "by_name": {"a": {"tags": None}}, "maybe_leaf": {"tags": None},
                          "either": [{"tags": None}]})
        assert t.leaf.tags == ["default"]
        assert [leaf.tags for leaf in t.leaves] == [["default"], ["x"]]
        assert t.by_name["a"].tags == ["default"]
        assert t.maybe_leaf is not None
        assert t.maybe_leaf.tags == ["default"]
        assert t.either == [_Leaf()]

    def test_a_null_scalar_is_still_refused_and_unknown_keys_are_kept(self) -> None:
        with pytest.raises(ValidationFailed, match="title"):
            parse(_Tree, {"title": None})
        assert parse(_Tree, {"other": None}).model_extra == {"other": None}

    def test_the_body_is_not_changed_in_place(self) -> None:
        data = {"ids": None, "leaves": [{"tags": None}]}
        absent_nulls(_Tree, data)
        assert data == {"ids": None, "leaves": [{"tags": None}]}

    def test_the_go_sdk_chat_body(self) -> None:
        body = parse(ChatBody, {"query": "q", "knowledge_base_ids": ["kb"], "knowledge_ids": None,
                                "tag_ids": None, "mcp_service_ids": None, "mentioned_items": None,
                                "images": None, "agent_source_tenant_id": None})
        assert body.knowledge_ids == []
        assert body.images == []
        assert body.agent_source_tenant_id is None

    def test_documented_object_fields_count_as_objects(self) -> None:
        req = parse(CreateKnowledgeBaseRequest, {"name": "n", "chunking_config": None, "description": None})
        assert req.sent() == {"name": "n", "description": None}
