"""Images understood (issue 15): a document's images stored, served (tenant-checked) and attached to their
chunks; VLM captions indexed as ``image_caption`` chunks; per-upload ``process_config``; chat images
described by the VLM in query understanding, or the user told they were not.

The VLM is the real HTTP fake model server (``tests/fakes/model_server.py``), which describes an image by its
size and main colour. The image-bearing format here is a small parser registered for the test (``figdoc``: a
PNG made by Pillow, reported as one image in a line of text) standing in for the image, PDF and slide parsers
written alongside; it records the ``ParseOptions`` it was given in the document metadata.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from PIL import Image

from knora.adapters.parsers import registry
from knora.ports.parser import ParseContext, ParsedDocument, ParsedImage
from knora.root import Services
from knora.settings import Settings
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration

TEXT = "Quarterly revenue figure.\n\n"


def png(colour: tuple[int, int, int], size: tuple[int, int] = (120, 80)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


class FigureParser:
    """``figdoc``: the bytes are one PNG; the text is a caption line and a closing line, the image between."""

    extensions = frozenset({"figdoc"})

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx

    def parse(self, data: bytes, file_name: str) -> ParsedDocument:
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
        text = "" if file_name.startswith("scan") else TEXT + "The figure is above this line."
        o = self.ctx.options
        return ParsedDocument(text=text, images=[ParsedImage(data=data, mime="image/png",
                                                             offset=len(TEXT) if text else 0,
                                                             width=width, height=height)],
                              metadata={"ocr": str(o.ocr), "extract_images": str(o.extract_images),
                                        "budget": str(o.time_budget_seconds)})


@pytest.fixture
def figdoc() -> Iterator[None]:
    registry.register(FigureParser, FigureParser.extensions)
    yield
    registry.PARSERS.unregister("figdoc")


@pytest.fixture
async def app(figdoc: None, make_settings: Callable[..., Settings],
              fake: FakeModelServer) -> AsyncIterator[tuple[Services, httpx.AsyncClient]]:
    settings = make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url, chat_api_key="k",
                             parse_timeout_seconds=100)
    async with started(settings) as c, client_for(c) as http:
        yield c, http


async def vlm_model(http: httpx.AsyncClient, fake: FakeModelServer) -> str:
    r = await http.post("/api/v1/models", json={"name": "fake-vlm", "type": "vlm", "source": "remote",
                                                "parameters": {"base_url": fake.base_url, "api_key": "k"}})
    assert r.status_code in (200, 201), r.text
    return str(r.json()["data"]["id"])


async def wait_done(http: httpx.AsyncClient, kid: str) -> dict[str, Any]:
    for _ in range(400):
        k = (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]
        if k["parse_status"] in ("completed", "failed"):
            return dict(k)
        await asyncio.sleep(0.05)
    raise AssertionError("document not processed")


async def upload(http: httpx.AsyncClient, kb: str, data: bytes, name: str = "chart.figdoc",
                 **form: str) -> httpx.Response:
    return await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)},
                           data=form)


async def chunks(http: httpx.AsyncClient, kid: str, kind: str = "text") -> list[dict[str, Any]]:
    r = await http.get(f"/api/v1/chunks/{kid}", params={"chunk_type": kind, "page_size": 100})
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


class TestDocumentImages:
    async def test_captioned_stored_served_indexed_and_deleted(self, app: tuple[Services, httpx.AsyncClient],
                                                                fake: FakeModelServer) -> None:
        c, http = app
        vlm = await vlm_model(http, fake)
        r = await http.post("/api/v1/knowledge-bases", json={
            "name": "Figures", "vlm_config": {"enabled": True, "model_id": vlm}})
        assert r.status_code in (200, 201), r.text
        kb = r.json()["data"]
        assert kb["vlm_config"] == {"enabled": True, "model_id": vlm}
        image = png((220, 30, 30))
        kid = (await upload(http, kb["id"], image)).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["parse_status"] == "completed", k["error_message"]
        assert k["metadata"]["images"] == "1"
        assert k["metadata"]["image_captions"] == "1 captioned"
        # the VLM got the image as an OpenAI vision part (a data: URL)
        vision = [b for b in fake.chat_requests
                  if any(isinstance(m.get("content"), list) for m in b["messages"])]
        assert len(vision) == 1
        part = vision[0]["messages"][-1]["content"][1]
        assert part["type"] == "image_url"
        assert base64.b64decode(part["image_url"]["url"].split(",", 1)[1]) == image

        [text] = await chunks(http, kid)
        info = json.loads(text["image_info"])
        assert [set(i) >= {"url", "original_url", "start_pos", "end_pos", "caption", "ocr_text"}
                for i in info] == [True]
        assert info[0]["start_pos"] == len(TEXT) - text["start_at"]
        assert "mostly red" in info[0]["caption"]
        [caption] = await chunks(http, kid, "image_caption")
        assert caption["parent_chunk_id"] == text["id"]
        assert caption["content"] == "The picture shows a 120x80 pixel image, mostly red."
        assert json.loads(caption["image_info"])[0]["url"] == info[0]["url"]

        got = await http.get(info[0]["url"])
        assert got.status_code == 200
        assert got.headers["content-type"] == "image/png"
        assert got.content == image

        # the caption is searchable: a question about what the picture shows finds it
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/hybrid-search",
                            json={"query_text": "picture mostly red pixel image"})
        assert r.status_code == 200, r.text
        hits = r.json()["data"]
        assert any(h["id"] == caption["id"] for h in hits), hits

        # another tenant cannot read the image (404, as for an unknown document)
        _, key = await c.tenants.create("other")
        async with client_for(c, **{"X-API-Key": key}) as other:
            assert (await other.get(info[0]["url"])).status_code == 404
        assert (await http.get(f"/api/v1/knowledge/{kid}/images/7.png")).status_code == 404
        assert (await http.get(f"/api/v1/knowledge/{kid}/images/..%2F..%2Fx.png")).status_code == 404

        assert (await http.delete(f"/api/v1/knowledge/{kid}")).status_code == 200
        with pytest.raises(KeyError):
            await c.blobs.get(f"{k['tenant_id']}/{kb['id']}/{kid}/images/0.png")

    async def test_a_caption_reaches_the_answer(self, app: tuple[Services, httpx.AsyncClient],
                                                 fake: FakeModelServer) -> None:
        _, http = app
        vlm = await vlm_model(http, fake)
        kb = (await http.post("/api/v1/knowledge-bases", json={
            "name": "Figures", "vlm_config": {"enabled": True, "model_id": vlm}})).json()["data"]["id"]
        kid = (await upload(http, kb, png((220, 30, 30)))).json()["data"]["id"]
        assert (await wait_done(http, kid))["parse_status"] == "completed"
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={
            "query": "Which colour is the picture, mostly red pixel image?", "knowledge_base_ids": [kb]})
        assert r.status_code == 200, r.text
        answer_req = fake.chat_requests[-1]
        shown = json.dumps(answer_req["messages"], ensure_ascii=False)
        assert "**Image caption:** The picture shows a 120x80 pixel image, mostly red." in shown

    async def test_an_image_without_text_is_indexed_by_its_caption(
            self, app: tuple[Services, httpx.AsyncClient], fake: FakeModelServer) -> None:
        _, http = app
        vlm = await vlm_model(http, fake)
        kb = (await http.post("/api/v1/knowledge-bases", json={
            "name": "Scans", "vlm_config": {"enabled": True, "model_id": vlm}})).json()["data"]["id"]
        kid = (await upload(http, kb, png((250, 250, 250)), name="scan.figdoc")).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["parse_status"] == "completed", k["error_message"]
        assert await chunks(http, kid) == []
        [caption] = await chunks(http, kid, "image_caption")
        assert caption["content"].endswith("mostly white.")
        # without a VLM the same file has nothing to index
        plain = (await http.post("/api/v1/knowledge-bases", json={"name": "P"})).json()["data"]["id"]
        kid = (await upload(http, plain, png((250, 250, 250)), name="scan.figdoc")).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["parse_status"] == "failed"
        assert "contains no text" in k["error_message"]

    async def test_images_follow_a_copy_and_a_move(self, app: tuple[Services, httpx.AsyncClient]) -> None:
        c, http = app
        src = (await http.post("/api/v1/knowledge-bases", json={"name": "S"})).json()["data"]["id"]
        image = png((30, 60, 220))
        kid = (await upload(http, src, image)).json()["data"]["id"]
        assert (await wait_done(http, kid))["parse_status"] == "completed"
        r = await http.post("/api/v1/knowledge-bases/copy", json={"source_id": src, "target_id": None})
        assert r.status_code == 200, r.text
        dst = r.json()["data"]["target_id"]
        await c.jobs.wait_idle(30)
        [copied] = (await http.get(f"/api/v1/knowledge-bases/{dst}/knowledge")).json()["data"]
        [text] = await chunks(http, copied["id"])
        url = json.loads(text["image_info"])[0]["url"]
        assert copied["id"] in url
        assert (await http.delete(f"/api/v1/knowledge/{kid}")).status_code == 200  # the source goes
        assert (await http.get(url)).content == image
        # a move keeps the document id (and its image URLs); the blobs change folder
        other = (await http.post("/api/v1/knowledge-bases", json={"name": "O"})).json()["data"]["id"]
        r = await http.post("/api/v1/knowledge/move", json={
            "knowledge_ids": [copied["id"]], "source_kb_id": dst, "target_kb_id": other,
            "mode": "reuse_vectors"})
        assert r.status_code == 200, r.text
        await c.jobs.wait_idle(30)
        assert (await http.get(url)).content == image
        with pytest.raises(KeyError):
            await c.blobs.get(f"{copied['tenant_id']}/{dst}/{copied['id']}/images/0.png")

    async def test_an_e_mail_picture_is_captioned(self, app: tuple[Services, httpx.AsyncClient],
                                                  fake: FakeModelServer) -> None:
        """A real format: an .eml made by the email package with an inline PNG (the registry's parser)."""
        from email.message import EmailMessage

        _, http = app
        vlm = await vlm_model(http, fake)
        kb = (await http.post("/api/v1/knowledge-bases", json={
            "name": "Mail", "vlm_config": {"enabled": True, "model_id": vlm}})).json()["data"]["id"]
        mail = EmailMessage()
        mail["From"], mail["To"], mail["Subject"] = "a@example.com", "b@example.com", "Site photo"
        mail.set_content("The photo of the loading dock is attached below.")
        mail.add_attachment(png((30, 180, 60), (90, 60)), maintype="image", subtype="png",
                            filename="dock.png", disposition="inline")
        kid = (await upload(http, kb, mail.as_bytes(), name="photo.eml")).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["parse_status"] == "completed", k["error_message"]
        [caption] = await chunks(http, kid, "image_caption")
        assert caption["content"] == "The picture shows a 90x60 pixel image, mostly green."
        url = json.loads(caption["image_info"])[0]["url"]
        assert (await http.get(url)).headers["content-type"] == "image/png"

    async def test_without_a_vlm_the_image_is_kept_uncaptioned(
            self, app: tuple[Services, httpx.AsyncClient]) -> None:
        _, http = app
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Plain"})).json()["data"]["id"]
        kid = (await upload(http, kb, png((30, 60, 220)))).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["parse_status"] == "completed", k["error_message"]
        assert "image_captions" not in k["metadata"]
        [text] = await chunks(http, kid)
        [info] = json.loads(text["image_info"])
        assert info["caption"] == ""
        assert await chunks(http, kid, "image_caption") == []

    async def test_a_failing_vlm_is_recorded_not_fatal(self, app: tuple[Services, httpx.AsyncClient],
                                                       fake: FakeModelServer) -> None:
        _, http = app
        vlm = await vlm_model(http, fake)
        kb = (await http.post("/api/v1/knowledge-bases", json={
            "name": "F", "vlm_config": {"enabled": True, "model_id": vlm}})).json()["data"]["id"]
        fake.describe_images = False
        from tests.fakes.model_server import Reply

        fake.script([Reply(status=400, error="image too large")])
        kid = (await upload(http, kb, png((30, 180, 60)))).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["parse_status"] == "completed", k["error_message"]
        assert k["metadata"]["image_captions"].startswith("0 captioned, 1 failed (image 1: ")
        assert "image too large" in k["metadata"]["image_captions"]

    async def test_vlm_config_needs_a_vlm_model(self, app: tuple[Services, httpx.AsyncClient]) -> None:
        _, http = app
        r = await http.post("/api/v1/knowledge-bases", json={"name": "X", "vlm_config": {"enabled": True}})
        assert r.status_code == 400
        r = await http.post("/api/v1/knowledge-bases", json={
            "name": "X", "vlm_config": {"enabled": True, "model_id": "builtin-chat"}})
        assert r.status_code == 400
        assert "vlm_config.model_id" in r.json()["error"]["message"]


class TestProcessConfig:
    async def test_options_reach_the_parser_and_are_kept_for_a_reparse(
            self, app: tuple[Services, httpx.AsyncClient]) -> None:
        _, http = app
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "P"})).json()["data"]["id"]
        cfg = {"parser_engine_overrides": {"ocr": "false"}, "chunking_config": {"chunk_size": 100},
               "enable_multimodel": False}
        r = await upload(http, kb, png((10, 10, 10)), process_config=json.dumps(cfg))
        assert r.status_code == 200, r.text
        kid = r.json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["metadata"]["doc_ocr"] == "False"
        assert k["metadata"]["doc_extract_images"] == "True"
        assert float(k["metadata"]["doc_budget"]) == pytest.approx(80.0)  # 0.8 of parse_timeout_seconds
        assert json.loads(k["metadata"]["process_config"])["chunking_config"] == {"chunk_size": 100}
        assert (await http.post(f"/api/v1/knowledge/{kid}/reparse")).status_code == 200
        k = await wait_done(http, kid)
        assert k["metadata"]["doc_ocr"] == "False"

    async def test_batch_reparse_sets_new_options(self, app: tuple[Services, httpx.AsyncClient]) -> None:
        _, http = app
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "P"})).json()["data"]["id"]
        kid = (await upload(http, kb, png((10, 10, 10)))).json()["data"]["id"]
        assert (await wait_done(http, kid))["metadata"]["doc_ocr"] == "True"
        r = await http.post("/api/v1/knowledge/batch-reparse", json={
            "kb_id": kb, "ids": [kid], "process_config": {"parser_engine_overrides": {"ocr": "off"}}})
        assert r.status_code == 200, r.text  # queued before it answers: the next read is not the old parse
        assert (await wait_done(http, kid))["metadata"]["doc_ocr"] == "False"
        r = await http.post("/api/v1/knowledge/batch-reparse", json={
            "kb_id": kb, "ids": [kid], "process_config": {"enable_multimodel": 1}})
        assert r.status_code == 400

    async def test_no_images_kept_when_asked(self, app: tuple[Services, httpx.AsyncClient]) -> None:
        _, http = app
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "P"})).json()["data"]["id"]
        cfg = {"parser_engine_overrides": {"extract_images": "false"}}
        kid = (await upload(http, kb, png((10, 10, 10)), process_config=json.dumps(cfg))).json()["data"]["id"]
        k = await wait_done(http, kid)
        assert k["metadata"]["doc_extract_images"] == "False"
        assert "images" not in k["metadata"]
        [text] = await chunks(http, kid)
        assert text["image_info"] == ""

    @pytest.mark.parametrize("cfg", [
        "not json", "[1]", json.dumps({"enable_multimodel": "yes"}),
        json.dumps({"parser_engine_overrides": {"pdf_force_scanned": "true"}}),
        json.dumps({"parser_engine_overrides": {"ocr": "maybe"}}),
        json.dumps({"parser_engine_overrides": {"ocr_engine": "tesseract"}}),
        json.dumps({"chunking_config": {"chunk_size": "big"}}),
        json.dumps({"chunking_config": {"chunk_size": 5}}),
        json.dumps({"vlm_config": {"enabled": True}}),
    ])
    async def test_bad_values_are_400(self, app: tuple[Services, httpx.AsyncClient], cfg: str) -> None:
        _, http = app
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "P"})).json()["data"]["id"]
        r = await upload(http, kb, png((10, 10, 10)), process_config=cfg)
        assert r.status_code == 400, r.text
        assert r.json()["success"] is False
        assert "process_config" in r.json()["error"]["message"]

    async def test_url_route_reads_it_too(self, app: tuple[Services, httpx.AsyncClient]) -> None:
        _, http = app
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "P"})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url", json={
            "url": "https://example.com/a.figdoc", "process_config": {"parser_engine_overrides": {"ocr": 1}}})
        assert r.status_code == 400, r.text


class TestParserEngines:
    async def test_ocr_and_vlm_are_listed(self, app: tuple[Services, httpx.AsyncClient],
                                          fake: FakeModelServer) -> None:
        _, http = app
        body = (await http.get("/api/v1/system/parser-engines")).json()
        assert body["vlm"] == {"configured": False, "model_ids": [], "knowledge_base_ids": []}
        assert [e["name"] for e in body["ocr"]["engines"]] == ["rapidocr"]
        assert isinstance(body["ocr"]["available"], bool)
        assert any("figdoc" in e["FileTypes"] for e in body["data"])
        vlm = await vlm_model(http, fake)
        assert (await http.get("/api/v1/system/parser-engines")).json()["vlm"]["model_ids"] == [vlm]


async def image_agent(http: httpx.AsyncClient, vlm: str = "") -> str:
    r = await http.post("/api/v1/agents", json={"name": "Eyes", "config": {
        "agent_mode": "quick-answer", "image_upload_enabled": True, "vlm_model_id": vlm}})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


class TestChatImages:
    async def test_the_vlm_describes_the_image_for_retrieval_and_answer(
            self, app: tuple[Services, httpx.AsyncClient], fake: FakeModelServer) -> None:
        c, http = app
        vlm = await vlm_model(http, fake)
        agent = await image_agent(http, vlm)
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        data = "data:image/png;base64," + base64.b64encode(png((240, 220, 40), (64, 32))).decode()
        r = await http.post(f"/api/v1/agent-chat/{sid}", json={
            "query": "What is in this picture?", "agent_id": agent, "images": [{"data": data}]})
        assert r.status_code == 200, r.text
        s = parse_sse(r.content)
        understood = [f for f in s.of("tool_result") if f["data"].get("tool_name") == "query_understand"]
        assert understood
        assert "image_note" not in understood[0]["data"]
        vision = [b for b in fake.chat_requests if any(isinstance(m.get("content"), list)
                                                        for m in b["messages"])]
        assert len(vision) == 1
        assert vision[0]["model"] == "fake-vlm"
        # the answer model was given the description (it has no vision)
        answer_req = fake.chat_requests[-1]
        assert "64x32 pixel image, mostly yellow" in json.dumps(answer_req["messages"], ensure_ascii=False)
        assert "not described" not in s.answer()
        # the description is kept as the image's caption on the stored question (later turns' history)
        await c.chat_service.wait_idle()
        msgs = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"]
        asked = next(m for m in msgs if m["role"] == "user")
        assert asked["images"][0]["url"] == data
        assert "64x32 pixel image, mostly yellow" in asked["images"][0]["caption"]

    async def test_without_a_vlm_the_user_is_told(self, app: tuple[Services, httpx.AsyncClient],
                                                  fake: FakeModelServer) -> None:
        _, http = app
        agent = await image_agent(http)
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        data = "data:image/png;base64," + base64.b64encode(png((1, 2, 3))).decode()
        r = await http.post(f"/api/v1/agent-chat/{sid}", json={
            "query": "What is in this picture?", "agent_id": agent, "images": [{"data": data}]})
        assert r.status_code == 200, r.text
        s = parse_sse(r.content)
        assert s.answer().startswith("_Note: the 1 attached image(s) were not described")
        understood = [f for f in s.of("tool_result") if f["data"].get("tool_name") == "query_understand"]
        assert "no vision model" in understood[0]["data"]["image_note"]
        assert understood[0]["data"]["output"] == understood[0]["data"]["image_note"]
        assert not any(isinstance(m.get("content"), list) for b in fake.chat_requests for m in b["messages"])

    @pytest.mark.parametrize("images", [[{"data": "https://example.com/a.png"}], [{"url": "x"}],
                                        [{"data": "data:text/html;base64,PGI+"}],
                                        [{"data": "data:image/png;base64,AAAA"}] * 6])
    async def test_bad_images_are_400(self, app: tuple[Services, httpx.AsyncClient],
                                      images: list[dict[str, str]]) -> None:
        _, http = app
        agent = await image_agent(http)
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await http.post(f"/api/v1/agent-chat/{sid}", json={"query": "q", "agent_id": agent,
                                                                "images": images})
        assert r.status_code == 400, r.text


class TestAgentImages:
    @pytest.mark.parametrize("with_vlm", [True, False])
    async def test_smart_reasoning_gets_the_description_or_the_note(
            self, app: tuple[Services, httpx.AsyncClient], fake: FakeModelServer, with_vlm: bool) -> None:
        _, http = app
        vlm = await vlm_model(http, fake) if with_vlm else ""
        r = await http.post("/api/v1/agents", json={"name": "Agent eyes", "config": {
            "agent_mode": "smart-reasoning", "image_upload_enabled": True, "vlm_model_id": vlm}})
        assert r.status_code == 201, r.text
        agent = r.json()["data"]["id"]
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        data = "data:image/png;base64," + base64.b64encode(png((220, 30, 30), (8, 6))).decode()
        r = await http.post(f"/api/v1/agent-chat/{sid}", json={
            "query": "What does this show?", "agent_enabled": True, "agent_id": agent,
            "images": [{"data": data}]})
        assert r.status_code == 200, r.text
        s = parse_sse(r.content)
        [step] = [f for f in s.of("tool_result") if f["data"].get("tool_name") == "image_analysis"]
        agent_calls = [b for b in fake.chat_requests if b.get("tools")]
        assert agent_calls
        seen = json.dumps(agent_calls[0]["messages"], ensure_ascii=False)
        assert not s.of("error")
        if with_vlm:
            assert step["data"]["output"] == "已查看图片内容"
            assert "[用户上传图片内容]" in seen
            assert "8x6 pixel image, mostly red" in seen
        else:
            assert "no vision model" in step["data"]["image_note"]
            assert "were not described" in seen


class TestMultimodalCheck:
    async def test_the_vlm_captions_the_test_image(self, app: tuple[Services, httpx.AsyncClient],
                                                   fake: FakeModelServer) -> None:
        _, http = app
        form = {"vlm_model": "fake-vlm", "vlm_base_url": fake.base_url, "vlm_api_key": "k",
                "vlm_interface_type": "openai", "storage_type": "minio", "chunk_size": "1000"}
        r = await http.post("/api/v1/initialization/multimodal/test", data=form,
                            files={"image": ("t.png", png((30, 180, 60), (10, 10)), "image/png")})
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        assert data["success"] is True
        assert data["caption"] == "The picture shows a 10x10 pixel image, mostly green."
        assert data["ocr"] == ""
        assert isinstance(data["processing_time"], int)
        # a model that fails is success: false with the reason; bad input is a 400
        fake.describe_images = False
        from tests.fakes.model_server import Reply

        fake.script([Reply(status=500, error="boom")])
        r = await http.post("/api/v1/initialization/multimodal/test", data=form,
                            files={"image": ("t.png", png((1, 1, 1)), "image/png")})
        assert r.json()["data"]["success"] is False
        assert "boom" in r.json()["data"]["message"]
        r = await http.post("/api/v1/initialization/multimodal/test", data=form,
                            files={"image": ("t.txt", b"hello", "text/plain")})
        assert r.status_code == 400
        r = await http.post("/api/v1/initialization/multimodal/test", data={"vlm_model": "x"},
                            files={"image": ("t.png", png((1, 1, 1)), "image/png")})
        assert r.status_code == 400
