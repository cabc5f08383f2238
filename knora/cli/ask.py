"""``knora ask "question"``: one chat turn in the terminal, streamed, with numbered citations.

When a server is running (``knora.cli.client``) the turn is asked through its API — ``POST /sessions``, then
``POST /knowledge-chat/:id`` (``/agent-chat/:id`` with ``--agent``) — and its SSE frames are printed as they
arrive. Otherwise the same turn machinery runs in-process against the configured data dir / database
(session, messages, stream log, stop). Either way the turn shows up in the web UI's history. Ctrl-C stops
generation the way the UI's stop button does: the partial answer is kept.
Registered by ``knora.cli.main`` through ``register(subparsers)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from knora.cli._common import add_mode_flag, choose_mode, find_kb_json

if TYPE_CHECKING:
    from knora.cli.client import ApiClient
    from knora.root import Services


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser("ask", help="ask a question; streams a cited answer")
    p.add_argument("query", help="the question")
    p.add_argument("--kb", action="append", default=[], metavar="NAME",
                   help="knowledge base name or id to search (repeat for several; default: all)")
    p.add_argument("--session", metavar="ID", help="continue this session (default: a new one)")
    p.add_argument("--agent", metavar="ID", help="agent id (e.g. builtin-smart-reasoning)")
    p.add_argument("--web", action="store_true", help="enable web search")
    p.add_argument("--no-citations", action="store_true", help="ask the model not to cite")
    p.add_argument("--json", action="store_true", help="print every stream frame as one JSON line")
    add_mode_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 130


class CitationPrinter:
    """Writes answer text with public ``<kb …/>``/``<web …/>`` tags as ``[n]`` marks; sources at the end."""

    def __init__(self, out: TextIO) -> None:
        from knora.services.citations.numbered import NumberedCitations

        self.out = out
        self.citations = NumberedCitations()

    def write(self, text: str) -> None:
        self.out.write(self.citations.render(text))
        self.out.flush()

    def footer(self) -> str:
        return self.citations.footer()


class FramePrinter:
    """Prints a turn's SSE frames (the same JSON in-process and over HTTP): the answer on ``out`` with
    ``[n]`` marks, tool calls and errors on ``err``; ``code`` is the exit code they add up to."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args, self.out, self.err = args, out, err
        self.printer = CitationPrinter(out)
        self.code = 0
        self.message_id = ""  # the assistant message, from the first frame (agent_query): what stop names

    def frame(self, frame: dict[str, Any]) -> None:
        kind = frame.get("response_type")
        if kind == "agent_query":
            self.message_id = str(frame.get("assistant_message_id") or self.message_id)
        if self.args.json:
            print(json.dumps(frame, ensure_ascii=False), file=self.out, flush=True)
        elif kind == "answer":
            self.printer.write(str(frame.get("content", "")))
        elif kind == "tool_call":
            print(f"… {frame.get('content', '')}", file=self.err, flush=True)
        elif kind == "error":
            print(f"\nerror: {frame.get('content', '')}", file=self.err, flush=True)
            self.code = 1 if frame.get("done") else self.code
        elif kind == "stop":
            print("\n[stopped]", file=self.err, flush=True)

    def end(self, session_id: str) -> None:
        if not self.args.json:
            footer = self.printer.footer()
            print("\n" + (f"\n{footer}" if footer else ""), file=self.out)
            print(f"session {session_id}", file=self.err)


async def _resolve_kbs(c: Services, tenant_id: int, refs: list[str]) -> list[str]:
    kbs = c.repos.kbs
    if not refs:
        return [kb.id for kb in await kbs.list(tenant_id)]
    out = []
    for ref in refs:
        kb = await kbs.get_by_name(tenant_id, ref)
        out.append(kb.id if kb is not None else ref)
    return out


async def ask(c: Services, args: argparse.Namespace, out: TextIO = sys.stdout,
              err: TextIO = sys.stderr) -> int:
    """One turn on running services; returns the exit code (0 ok, 1 error frame, 2 bad input, 130 stopped)."""
    from knora.domain.errors import AppError
    from knora.services.streaming.question import Question, start_question
    from knora.services.streaming.sse import stream_frames

    tenant = c.default_tenant_id
    try:
        question = Question(query=args.query, knowledge_base_ids=await _resolve_kbs(c, tenant, args.kb),
                            session_id=args.session or None, agent_id=args.agent or "", web_search=args.web,
                            citations=not args.no_citations)
        turn = await start_question(c.session_service, c.chat_service, tenant, question)
    except AppError as exc:
        print(f"error: {exc.message}", file=err)
        return 2
    printer = FramePrinter(args, out, err)
    try:
        async for raw in stream_frames(c.stream_log, turn.session_id, turn.assistant_message_id,
                                       turn.request_id, live=True, wait_for_title=turn.wants_title):
            if not raw.startswith(b":"):
                printer.frame(json.loads(raw.split(b"data:", 1)[1]))
    except asyncio.CancelledError:
        await c.chat_service.stop(tenant, turn.session_id, turn.assistant_message_id)
        printer.code = 130
    await c.chat_service.wait_idle()
    printer.end(turn.session_id)
    return printer.code


async def ask_remote(api: ApiClient, args: argparse.Namespace, out: TextIO = sys.stdout,
                     err: TextIO = sys.stderr) -> int:
    """The same turn through the server's API; the frames are printed as they arrive."""
    from knora.cli.client import ApiError, sse_frames

    try:
        kbs = await api.data("GET", "/knowledge-bases")
        ids = [str((find_kb_json(kbs, ref) or {"id": ref})["id"]) for ref in args.kb] if args.kb \
            else [str(kb["id"]) for kb in kbs]
        session_id = args.session or str((await api.data("POST", "/sessions", json={}))["id"])
    except ApiError as exc:
        print(f"error: {exc.message}", file=err)
        return 2 if 400 <= exc.status < 500 else 1
    body = {"query": args.query, "knowledge_base_ids": ids, "agent_id": args.agent or "",
            "web_search_enabled": args.web, "citations_enabled": not args.no_citations, "channel": "api"}
    path = f"/{'agent' if args.agent else 'knowledge'}-chat/{session_id}"
    printer = FramePrinter(args, out, err)
    try:
        async with api.stream("POST", path, body) as response:
            async for frame in sse_frames(api.lines(response)):
                printer.frame(frame)
    except ApiError as exc:
        print(f"{chr(10) if printer.message_id else ''}error: {exc.message}", file=err)
        if not printer.message_id:  # refused before the turn started
            return 2 if 400 <= exc.status < 500 else 1
        printer.code = 1  # lost midway: what arrived stands, the turn goes on on the server
    except asyncio.CancelledError:
        if printer.message_id:
            try:
                await api.request("POST", f"/sessions/{session_id}/stop",
                                  json={"message_id": printer.message_id})
            except ApiError as exc:
                print(f"\nerror: could not stop the answer: {exc.message}", file=err)
        print("\n[stopped]", file=err, flush=True)
        printer.code = 130
    printer.end(session_id)
    return printer.code


async def _run(args: argparse.Namespace) -> int:
    server = choose_mode(args)
    if server is not None:
        from knora.cli.client import ApiClient

        async with ApiClient(server) as api:
            return await _shielded(ask_remote(api, args))
    from knora.root import build_services
    from knora.settings import Settings

    c = await build_services(Settings(sample_kb=False))
    try:
        return await _shielded(ask(c, args))
    finally:
        await c.aclose()


async def _shielded(turn: Any) -> int:
    """Runs the turn so that Ctrl-C reaches it as a cancellation it handles (stop, keep the partial
    answer)."""
    task: asyncio.Future[int] = asyncio.ensure_future(turn)
    try:
        return await asyncio.shield(task)
    except (KeyboardInterrupt, asyncio.CancelledError):
        task.cancel()
        return await task
