"""Knowledge, data and planning tools against in-memory store doubles."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import openpyxl
import pytest

from knora.adapters.tools import (
    data_analysis,
    data_schema,
    database_query,
    get_document_info,
    grep_chunks,
    knowledge_search,
    list_knowledge_chunks,
    thinking,
    todo_write,
)
from knora.domain.knowledge import DEFAULT_KEYWORD_THRESHOLD, DEFAULT_VECTOR_THRESHOLD, KnowledgeBase
from knora.domain.search import SearchParams, SearchResult
from knora.ports.reranker import RerankScore
from knora.ports.tool import ToolContext, ToolDeps
from tests.adapters.sandbox.test_duckdb_sandbox import UNSAFE_SQL
from tests.adapters.tools.doubles import Store

pytestmark = pytest.mark.unit


@pytest.fixture
def store() -> Store:
    s = Store()
    s.kbs_.append(KnowledgeBase(id="kb1", tenant_id=1, name="Handbook"))
    s.add_doc("kb1", "Leave policy", ["Annual leave is 20 days.", "Sick leave needs a note after 3 days."])
    s.add_doc("kb1", "Travel", ["Book trains in second class.", "Flights need approval."])
    s.add_doc("kb2", "Secret", ["Annual bonus is 3 months."])  # another KB: outside the scope below
    return s


def ctx(**kw: Any) -> ToolContext:
    return ToolContext(tenant_id=1, knowledge_base_ids=["kb1"], **kw)


class TestGrep:
    async def test_regex_over_content_and_titles_in_scope(self, store: Store) -> None:
        tool = grep_chunks.GrepChunksTool(ToolDeps(repos=store))
        res = await tool.execute({"query": "annual|flight"}, ctx())
        assert res.success
        matches = sorted(r["match"] for r in res.data["results"])
        assert matches == ["Annual leave is 20 days.", "Flights need approval."]
        assert res.data["display_type"] == "grep_results"
        title = await tool.execute({"query": "^travel$"}, ctx())
        assert {r["knowledge_title"] for r in title.data["results"]} == {"Travel"}

    async def test_bad_regex(self, store: Store) -> None:
        res = await grep_chunks.GrepChunksTool(ToolDeps(repos=store)).execute({"query": "("}, ctx())
        assert not res.success
        assert "invalid regex" in res.error

    @pytest.mark.timeout(10)
    async def test_catastrophic_pattern_does_not_stall_the_loop(self, store: Store) -> None:
        """``^(a+)+$`` over 5,000 characters would backtrack for longer than the universe on ``re``."""
        store.add_doc("kb1", "Bomb", ["a" * 5000 + "!", "aaaa"])
        ticks = 0

        async def heartbeat() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        beat = asyncio.create_task(heartbeat())
        tool = grep_chunks.GrepChunksTool(ToolDeps(repos=store))
        try:
            res = await asyncio.wait_for(tool.execute({"query": "^(a+)+$"}, ctx()), timeout=10)
            await asyncio.sleep(0)
        finally:
            beat.cancel()
        assert res.success
        assert [r["match"] for r in res.data["results"]] == ["aaaa"]
        assert ticks > 0

    @pytest.mark.parametrize("query", [r"(a)\1", "(?=leave)", "(?<!sick )leave", "a++"])
    async def test_syntax_without_linear_time_match_is_refused(self, store: Store, query: str) -> None:
        res = await grep_chunks.GrepChunksTool(ToolDeps(repos=store)).execute({"query": query}, ctx())
        assert not res.success
        assert "invalid regex" in res.error
        assert "not supported" in res.error

    async def test_overlong_pattern_is_refused(self, store: Store) -> None:
        res = await grep_chunks.GrepChunksTool(ToolDeps(repos=store)).execute({"query": "a" * 1001}, ctx())
        assert not res.success
        assert "limit is 1000" in res.error

    async def test_case_insensitive_unicode_and_offsets(self, store: Store) -> None:
        store.add_doc("kb1", "Zürich", ["Straße in ÄRGERLICH Zürich"])
        res = await grep_chunks.GrepChunksTool(ToolDeps(repos=store)).execute({"query": "ärgerlich"}, ctx())
        assert [r["match"] for r in res.data["results"]] == ["Straße in ÄRGERLICH Zürich"]

    async def test_snippet_window_uses_character_offsets(self, store: Store) -> None:
        text = "ß" * 200 + "NEEDLE" + "x" * 200  # two UTF-8 bytes a character before the hit
        store.add_doc("kb1", "Long", [text])
        res = await grep_chunks.GrepChunksTool(ToolDeps(repos=store)).execute({"query": "needle"}, ctx())
        assert [r["match"] for r in res.data["results"]] == [text[140:260]]


class TestReading:
    async def test_list_chunks_pages_a_document(self, store: Store) -> None:
        doc = store.docs[0]
        tool = list_knowledge_chunks.ListKnowledgeChunksTool(ToolDeps(repos=store))
        res = await tool.execute({"knowledge_id": doc.id, "limit": 1, "offset": 0}, ctx())
        assert [r["content"] for r in res.data["results"]] == ["Annual leave is 20 days."]
        assert res.data["total_chunks"] == 2
        assert res.data["fetched_chunks"] == 1
        both = await tool.execute({"knowledge_id": doc.id, "chunk_id": "x"}, ctx())
        assert not both.success
        assert "exactly one" in both.error

    async def test_documents_outside_scope_are_not_found(self, store: Store) -> None:
        secret = store.docs[2]
        tool = list_knowledge_chunks.ListKnowledgeChunksTool(ToolDeps(repos=store))
        res = await tool.execute({"knowledge_id": secret.id}, ctx())
        assert not res.success
        info = await get_document_info.GetDocumentInfoTool(ToolDeps(repos=store)).execute(
            {"knowledge_ids": [store.docs[0].id, secret.id]}, ctx())
        assert [d["title"] for d in info.data["documents"]] == ["Leave policy"]
        assert info.data["documents"][0]["chunk_count"] == 2
        assert info.data["not_found"] == [secret.id]


class FakeSearch:
    def __init__(self, results: list[SearchResult]) -> None:
        self.results: list[SearchResult] = results
        self.params: list[SearchParams] = []

    async def search(self, tenant_id: int, params: SearchParams) -> list[SearchResult]:
        self.params.append(params)
        return [r for r in self.results if params.query_text.split()[0].lower() in r.content.lower()]


class FakeRerankers:
    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    async def get(self, model_id: str | None, *, tenant_id: int | None = None) -> Any:
        scores = self.scores

        class R:
            model_id = "fake"

            async def rerank(self, query: str, docs: list[str],
                             top_n: int | None = None) -> list[RerankScore]:
                out = [RerankScore(index=i, score=scores.get(d, 0.0)) for i, d in enumerate(docs)]
                return sorted(out, key=lambda s: -s.score)
        return R()


class TestKnowledgeSearch:
    def hits(self) -> list[SearchResult]:
        return [SearchResult(id=f"c{i}", content=t, knowledge_id="d", knowledge_base_id="kb1", score=0.5)
                for i, t in enumerate(["leave is 20 days", "leave requests go to HR", "parking rules"])]

    async def test_searches_every_query_with_agent_numbers_and_reranks(self) -> None:
        search = FakeSearch(self.hits())
        tool = knowledge_search.KnowledgeSearchTool(ToolDeps(search_service=search, rerankers=FakeRerankers(
            {"leave is 20 days": 0.9, "leave requests go to HR": 0.1})))
        res = await tool.execute({"queries": ["leave days", "parking"]}, ctx())
        assert [p.query_text for p in search.params] == ["leave days", "parking"]
        assert search.params[0].match_count == 30
        assert (search.params[0].vector_threshold, search.params[0].keyword_threshold) == (
            DEFAULT_VECTOR_THRESHOLD, DEFAULT_KEYWORD_THRESHOLD)
        assert [r["content"] for r in res.data["results"]] == ["leave is 20 days"]  # below 0.3 dropped
        assert res.data["results"][0]["score"] == 0.9

    async def test_top1_fallback_and_empty(self) -> None:
        tool = knowledge_search.KnowledgeSearchTool(ToolDeps(search_service=FakeSearch(self.hits()),
                                                             rerankers=FakeRerankers({"parking rules": 0.2})))
        res = await tool.execute({"queries": ["parking"]}, ctx())
        assert [r["content"] for r in res.data["results"]] == ["parking rules"]
        none = await tool.execute({"queries": ["zebra"]}, ctx())
        assert none.success
        assert none.output.startswith("No relevant content found in 1 knowledge base(s).")


def xlsx_bytes() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "2024"
    ws.append(["region", "sales"])
    ws.append(["north", 10])
    ws.append(["south", 5])
    ws2 = wb.create_sheet("2025")
    ws2.append(["region", "sales"])
    ws2.append(["north", 7])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


class TestData:
    async def test_csv_schema_and_query(self, store: Store) -> None:
        doc = store.add_doc("kb1", "sales.csv", [], file_type="csv",
                            blob=b"region,sales\nnorth,10\nsouth,5\n")
        deps = ToolDeps(repos=store, blobs=store)
        schema = await data_schema.DataSchemaTool(deps).execute({"knowledge_id": doc.id}, ctx())
        assert schema.data["table_name"] == "sales"
        assert schema.data["row_count"] == 2
        assert [c["name"] for c in schema.data["columns"]] == ["region", "sales"]
        q = await data_analysis.DataAnalysisTool(deps).execute(
            {"knowledge_id": doc.id, "sql": "SELECT sum(sales) AS total FROM sales"}, ctx())
        assert q.data["rows"] == [[15]]

    async def test_excel_sheets_share_one_table(self, store: Store) -> None:
        doc = store.add_doc("kb1", "sales.xlsx", [], file_type="xlsx", blob=xlsx_bytes())
        q = await data_analysis.DataAnalysisTool(ToolDeps(repos=store, blobs=store)).execute(
            {"knowledge_id": doc.id,
             "sql": "SELECT __sheet_name, sum(sales) FROM sales GROUP BY 1 ORDER BY 1"}, ctx())
        assert q.data["rows"] == [["2024", 15], ["2025", 7]]

    async def test_legacy_xls_sheets_share_one_table(self, store: Store) -> None:
        import xlwt

        wb = xlwt.Workbook()
        for title, rows in (("2024", [("north", 10), ("south", 5)]), ("2025", [("north", 7)])):
            ws = wb.add_sheet(title)
            for r, row in enumerate([("region", "sales"), *rows]):
                for c, value in enumerate(row):
                    ws.write(r, c, value)
        buf = io.BytesIO()
        wb.save(buf)
        doc = store.add_doc("kb1", "sales.xls", [], file_type="xls", blob=buf.getvalue())
        deps = ToolDeps(repos=store, blobs=store)
        q = await data_analysis.DataAnalysisTool(deps).execute(
            {"knowledge_id": doc.id,
             "sql": "SELECT __sheet_name, sum(sales) FROM sales GROUP BY 1 ORDER BY 1"}, ctx())
        assert q.data["rows"] == [["2024", 15], ["2025", 7]]
        broken = store.add_doc("kb1", "broken.xls", [], file_type="xls",
                               blob=b"\xd0\xcf\x11\xe0" + b"0" * 600)
        res = await data_analysis.DataAnalysisTool(deps).execute(
            {"knowledge_id": broken.id, "sql": "SELECT 1 FROM broken"}, ctx())
        assert not res.success
        assert ".xls workbook cannot be read" in (res.error or "")

    @pytest.mark.parametrize("sql", ["DROP TABLE sales", "SELECT 1; SELECT 2",
                                     "SELECT * FROM read_csv_auto('/etc/passwd')"])
    async def test_read_only_and_no_file_access(self, store: Store, sql: str) -> None:
        doc = store.add_doc("kb1", "sales.csv", [], file_type="csv", blob=b"a\n1\n")
        res = await data_analysis.DataAnalysisTool(ToolDeps(repos=store, blobs=store)).execute(
            {"knowledge_id": doc.id, "sql": sql}, ctx())
        assert not res.success

    @pytest.mark.parametrize("sql", [s for s, _ in UNSAFE_SQL])
    async def test_every_unsafe_path_is_refused(self, store: Store, sql: str) -> None:
        """The shared sandbox's list: files, URLs, extensions, ATTACH, COPY, settings, catalogue functions."""
        doc = store.add_doc("kb1", "sales.csv", [], file_type="csv", blob=b"region,n\nnorth,1\n")
        deps = ToolDeps(repos=store, blobs=store)
        res = await data_analysis.DataAnalysisTool(deps).execute({"knowledge_id": doc.id, "sql": sql}, ctx())
        assert not res.success
        res = await database_query.DatabaseQueryTool(deps).execute({"sql": sql}, ctx())
        assert not res.success

    async def test_database_query_sees_only_the_tenants_rows(self, store: Store) -> None:
        store.kbs_.append(KnowledgeBase(id="kbX", tenant_id=2, name="Other tenant"))
        store.add_doc("kbX", "Foreign", ["x"], tenant=2)
        tool = database_query.DatabaseQueryTool(ToolDeps(repos=store))
        res = await tool.execute({"sql": "SELECT title FROM knowledges ORDER BY title"},
                                 ToolContext(tenant_id=1))
        assert [r[0] for r in res.data["rows"]] == ["Leave policy",
                                                    "Travel"]  # kb2 has no KB row; kbX is tenant 2
        n = await tool.execute({"sql": "SELECT count(*) FROM chunks"}, ctx())
        assert n.data["rows"] == [[4]]


class TestPlanning:
    async def test_thinking_keeps_history(self) -> None:
        c = ctx()
        tool = thinking.ThinkingTool(ToolDeps())
        await tool.execute({"thought": "a", "next_thought_needed": True, "thought_number": 1,
                            "total_thoughts": 2}, c)
        res = await tool.execute({"thought": "b", "next_thought_needed": False, "thought_number": 2,
                                  "total_thoughts": 2}, c)
        assert res.data["thought_history_length"] == 2
        assert "Thinking complete" in res.output

    async def test_todo_write_renders_progress(self) -> None:
        res = await todo_write.TodoWriteTool(ToolDeps()).execute({"task": "Compare", "steps": [
            {"description": "search A", "status": "completed"}, {"description": "search B",
                                                                 "status": "pending"}]},
            ctx())
        assert "Progress: 1/2 completed" in res.output
        assert "[x] 1. search A" in res.output


class FakeConversations:
    def __init__(self) -> None:
        from knora.domain.conversation import Message, Session

        self.s1, self.s2 = Session(tenant_id=1, title="Leave chat"), Session(tenant_id=1, title="Now")
        self._msgs = {self.s1.id: [
            Message(session_id=self.s1.id, tenant_id=1, request_id="r1", role="user",
                    content="How long is annual leave?"),
            Message(session_id=self.s1.id, tenant_id=1, request_id="r1", role="assistant", content="20 days.",
                    is_completed=True),
            Message(session_id=self.s1.id, tenant_id=1, request_id="r2", role="user",
                    content="annual leave again?"),
            Message(session_id=self.s1.id, tenant_id=1, request_id="r2", role="assistant", content="",
                    is_completed=False)],
            self.s2.id: [Message(session_id=self.s2.id, tenant_id=1, request_id="r3", role="user",
                                 content="annual leave?"),
                         Message(session_id=self.s2.id, tenant_id=1, request_id="r3", role="assistant",
                                 content="current", is_completed=True)]}
        outer = self

        class Sessions:
            async def list(self, tenant_id: int, *, page: int, page_size: int, **kw: Any) -> tuple[list[Any],
                                                                                                   int]:
                return [outer.s1, outer.s2], 2

        class Messages:
            async def recent(self, session_id: str, limit: int) -> list[Any]:
                return outer._msgs[session_id]

        self.sessions, self.messages = Sessions(), Messages()


async def test_search_conversations_skips_current_and_incomplete() -> None:
    from knora.adapters.tools.search_conversations import SearchConversationsTool

    conv = FakeConversations()
    res = await SearchConversationsTool(ToolDeps(conversations=conv)).execute(
        {"query": "annual leave"}, ToolContext(tenant_id=1, session_id=conv.s2.id))
    assert [(h["question"], h["answer"]) for h in res.data["results"]] == [("How long is annual leave?",
                                                                            "20 days.")]
    none = await SearchConversationsTool(ToolDeps(conversations=conv)).execute(
        {"query": "parking"}, ToolContext(tenant_id=1, session_id=conv.s2.id))
    assert none.success
    assert none.data["results"] == []
