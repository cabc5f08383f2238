"""``data_analysis`` (spec §2.15): when a CSV/Excel document is among the passages, let the model write one
read-only DuckDB query over it and add the query's result as a passage.

Safety is the shared sandbox's (``ports.sql_sandbox``; the DuckDB one in ``adapters/duckdb_sandbox.py``,
the same the agent's data tools use): the rows are loaded into a private in-memory database that is then
locked (no files, network, extensions or ATTACH, configuration frozen), and the SQL must be one SELECT/WITH
statement that reads only this document's table and calls no file, network, extension or settings function.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from knora import prompts
from knora.domain.model_json import extract_object
from knora.domain.search import MatchType, SearchResult
from knora.ports.chat import ChatMessage, ChatOptions
from knora.ports.sql_sandbox import QueryResult, SqlRefused
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType

log = logging.getLogger(__name__)

DATA_SUFFIXES = (".csv", ".xlsx", ".xls")
MAX_RESULT_ROWS = 101  # the prompt shows up to this many records
SCHEMA = {"type": "object", "properties": {"knowledge_id": {"type": "string"}, "sql": {"type": "string"}},
          "required": ["knowledge_id", "sql"]}


def table_name(knowledge_id: str) -> str:
    return "k_" + re.sub(r"[^0-9A-Za-z_]", "_", knowledge_id)


def rows_from_file(data: bytes, filename: str) -> tuple[list[str], list[list[Any]]]:
    if filename.lower().endswith(".csv"):
        text = data.decode("utf-8-sig", errors="replace")
        reader = list(csv.reader(io.StringIO(text)))
        return (reader[0], reader[1:]) if reader else ([], [])
    if filename.lower().endswith(".xls") and not data.startswith(b"PK\x03\x04"):  # (a renamed .xlsx: below)
        return _xls_rows(data)
    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    header: list[str] = []
    rows: list[list[Any]] = []
    for ws in wb.worksheets:
        sheet = list(ws.iter_rows(values_only=True))
        if not sheet:
            continue
        if not header:
            header = [str(h) if h is not None else f"col{i}" for i, h in enumerate(sheet[0])]
            header.append("__sheet_name")
        rows.extend([*list(r), ws.title] for r in sheet[1:])
    wb.close()
    return header, rows


def _xls_rows(data: bytes) -> tuple[list[str], list[list[Any]]]:
    """A legacy ``.xls`` as one table, like an ``.xlsx`` above: the first sheet's header, every sheet's rows
    with ``__sheet_name``."""
    from knora.adapters.parsers.xls import sheet_rows

    header: list[str] = []
    rows: list[list[Any]] = []
    for title, values in sheet_rows(data):
        if not values:
            continue
        if not header:
            header = [str(h) if h not in (None, "") else f"col{i}" for i, h in enumerate(values[0])]
            header.append("__sheet_name")
        rows.extend([*r, title] for r in values[1:])
    return header, rows


def format_result(sql: str, result: QueryResult) -> str:
    """The passage the answer model reads (WeKnora's layout, so its prompts keep working)."""
    lines = [f"=== DuckDB Query Results ===\n\nExecuted SQL: {sql}\n\nReturned {len(result.rows)} rows\n\n"]
    if not result.rows:
        lines.append("No matching records found.\n")
    else:
        lines.append("=== Data Details ===\n\n")
        if len(result.rows) > 10:
            lines.append(f"(more than 10 rows; showing {len(result.rows)})\n")
        for i, row in enumerate(result.rows, 1):
            record = json.dumps(dict(zip(result.columns, row, strict=False)), ensure_ascii=False, default=str)
            lines.append(f"record {i}: {record}\n")
    return "".join(lines)


def schema_description(table: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cols = "\n".join(f"- {h} (VARCHAR)" for h in header)
    return f"Table name: {table}\nColumns: {len(header)}\nRows: {len(rows)}\n\nColumn info:\n{cols}"


class DataAnalysis:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.DATA_ANALYSIS,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if not cm.needs_retrieval:
            return await next()
        st, _req = cm.state, cm.request
        files = [r for r in st.merge_result if r.knowledge_filename.lower().endswith(DATA_SUFFIXES)]
        st.merge_result = [r for r in st.merge_result
                           if r.chunk_type not in ("table_column", "table_summary")]
        if not files or self._deps.reads is None or self._deps.read_blob is None or self._deps.sql is None:
            return await next()
        first = files[0]
        try:
            result = await self._analyse(cm, first)
        except Exception as exc:  # noqa: BLE001 - spec: any failure continues silently
            log.info("data_analysis skipped: %s", exc)
            cm.note("data_analysis", error=str(exc))
            return await next()
        if result is not None:
            st.merge_result.append(result)
            cm.note("data_analysis", knowledge_id=first.knowledge_id)
        return await next()

    async def _analyse(self, cm: ChatManage, hit: SearchResult) -> SearchResult | None:
        req = cm.request
        reads, sandbox = cm.reads_or(self._deps.reads), self._deps.sql
        # all three are checked by on_event before it calls this
        assert reads is not None
        assert self._deps.read_blob is not None
        assert sandbox is not None
        found = await reads.knowledge([hit.knowledge_id])
        docs = [k for k in found if k.tenant_id == req.tenant_id]
        if not docs or not docs[0].file_path:
            return None
        doc = docs[0]
        data = await self._deps.read_blob(doc.file_path)
        header, rows = rows_from_file(data, doc.file_name or hit.knowledge_filename)
        if not header:
            return None
        table = table_name(doc.id)
        model = await cm.chat_model(self._deps.chat_models, req.chat_model_id)
        if not getattr(model, "generative", True):
            return None
        prompt = prompts.render(prompts.content("data_analysis"),
                                {"query": req.query, "knowledge_id": doc.id,
                                 "schema": schema_description(table, header, rows)})
        resp = await model.chat([ChatMessage(role="user", content=prompt)], ChatOptions(
            temperature=0.1, response_format={"type": "json_schema",
                                              "json_schema": {"name": "data_analysis", "schema": SCHEMA}}))
        payload = extract_object(resp.content.strip()) or {}
        sql = str(payload.get("sql") or "").replace(doc.id, table).replace(f'"{table}"', table)
        try:
            result = await asyncio.to_thread(sandbox.query_rows, header, rows, table, sql,
                                             max_rows=MAX_RESULT_ROWS)
        except SqlRefused:
            return None  # unsafe or off-table SQL is ignored, not reported
        output = format_result(sql.strip().rstrip(";").strip(), result)
        return SearchResult(id=f"analysis_{doc.id}", content=output, knowledge_id=doc.id, score=1.0,
                            match_type=MatchType.DATA_ANALYSIS, knowledge_title=doc.title,
                            knowledge_filename=doc.file_name, knowledge_description=doc.description,
                            knowledge_base_id=doc.knowledge_base_id, chunk_type="text")
