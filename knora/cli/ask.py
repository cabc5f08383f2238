"""``knora ask "question"``: one chat turn in the terminal, streamed, with numbered citations.

It runs the same turn machinery as the HTTP API (session, messages, stream log, stop), in-process against the
configured data dir / database, so the turn shows up in the web UI's history too. Ctrl-C stops generation the
way the UI's stop button does: the partial answer is kept.
Registered by ``knora.cli.main`` through ``register(subparsers)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, TextIO

from knora.root import Services
from knora.services.citations.numbered import NumberedCitations


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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knora.settings import Settings

    try:
        return asyncio.run(_run(args, Settings()))
    except KeyboardInterrupt:
        return 130


class CitationPrinter:
    """Writes answer text with public ``<kb …/>``/``<web …/>`` tags as ``[n]`` marks; sources at the end."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.citations = NumberedCitations()

    def write(self, text: str) -> None:
        self.out.write(self.citations.render(text))
        self.out.flush()

    def footer(self) -> str:
        return self.citations.footer()


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
    printer = CitationPrinter(out)
    code = 0
    try:
        async for raw in stream_frames(c.stream_log, turn.session_id, turn.assistant_message_id,
                                       turn.request_id, live=True, wait_for_title=turn.wants_title):
            if raw.startswith(b":"):
                continue
            frame = json.loads(raw.split(b"data:", 1)[1])
            kind = frame["response_type"]
            if args.json:
                print(json.dumps(frame, ensure_ascii=False), file=out, flush=True)
            elif kind == "answer":
                printer.write(frame["content"])
            elif kind == "tool_call":
                print(f"… {frame['content']}", file=err, flush=True)
            elif kind == "error":
                print(f"\nerror: {frame['content']}", file=err, flush=True)
                code = 1 if frame["done"] else code
            elif kind == "stop":
                print("\n[stopped]", file=err, flush=True)
    except asyncio.CancelledError:
        await c.chat_service.stop(tenant, turn.session_id, turn.assistant_message_id)
        code = 130
    await c.chat_service.wait_idle()
    if not args.json:
        footer = printer.footer()
        print("\n" + (f"\n{footer}" if footer else ""), file=out)
        print(f"session {turn.session_id}", file=err)
    return code


async def _run(args: argparse.Namespace, settings: Any) -> int:
    from knora.root import build_services

    c = await build_services(settings.model_copy(update={"sample_kb": False}))
    try:
        task = asyncio.ensure_future(ask(c, args))
        try:
            return await asyncio.shield(task)
        except (KeyboardInterrupt, asyncio.CancelledError):
            task.cancel()
            return await task
    finally:
        await c.aclose()
