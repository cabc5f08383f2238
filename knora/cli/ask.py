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
import uuid
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
    """Turns public ``<kb …/>``/``<web …/>`` tags into ``[n]`` marks and lists the sources at the end."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.numbers = NumberedCitations()

    def write(self, text: str) -> None:
        self.out.write(self.numbers.feed(text))
        self.out.flush()

    def footer(self) -> str:
        tail = self.numbers.flush()
        if tail:
            self.write(tail)
        return "\n".join(f"[{s.number}] {f'{s.title} <{s.url}>' if s.kind == 'web' and s.url else s.title}"
                         for s in self.numbers.sources)


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
    from knora.services.streaming.intake import ChatBody
    from knora.services.streaming.sse import stream_frames

    tenant = c.default_tenant_id
    try:
        session = (await c.session_service.get(tenant, args.session) if args.session
                   else await c.session_service.create(tenant, source="api"))
        body = ChatBody(query=args.query, knowledge_base_ids=await _resolve_kbs(c, tenant, args.kb),
                        agent_id=args.agent or "", web_search_enabled=args.web,
                        citations_enabled=not args.no_citations, channel="api")
        turn = await c.chat_service.start(tenant, session.id, body, str(uuid.uuid4()),
                                          "agent" if args.agent else "knowledge")
    except AppError as exc:
        print(f"error: {exc.message}", file=err)
        return 2
    printer = CitationPrinter(out)
    code = 0
    try:
        async for raw in stream_frames(c.stream_log, session.id, turn.assistant_message_id, turn.request_id,
                                       live=True, wait_for_title=turn.wants_title):
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
        await c.chat_service.stop(tenant, session.id, turn.assistant_message_id)
        code = 130
    await c.chat_service.wait_idle()
    if not args.json:
        footer = printer.footer()
        print("\n" + (f"\n{footer}" if footer else ""), file=out)
        print(f"session {session.id}", file=err)
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
