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

from knora.api import body
from knora.api.body import OFFLOAD_BYTES, parse_json, too_deep, too_deep_yielding
from knora.domain.errors import BadRequest

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
