"""``knora kb create|list|delete``."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from knora.cli._common import fail, find_kb, print_json, running_services
from knora.domain.errors import AppError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("kb", help="manage knowledge bases")
    sub = p.add_subparsers(dest="kb_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="create a knowledge base")
    c.add_argument("name")
    c.add_argument("--description", default="")
    c.add_argument("--chunk-size", type=int, default=None)
    c.add_argument("--chunk-overlap", type=int, default=None)
    c.add_argument("--parent-child", action="store_true", help="parent-child chunking (spec §9.3)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=_create)
    ls = sub.add_parser("list", help="list knowledge bases with document and chunk counts")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=_list)
    d = sub.add_parser("delete", help="delete a knowledge base (by name or id) and everything in it")
    d.add_argument("name")
    d.add_argument("--json", action="store_true")
    d.set_defaults(handler=_delete)


async def _create(args: argparse.Namespace) -> int:
    chunking: dict[str, Any] = {}
    if args.chunk_size:
        chunking["chunk_size"] = args.chunk_size
    if args.chunk_overlap:
        chunking["chunk_overlap"] = args.chunk_overlap
    if args.parent_child:
        chunking["enable_parent_child"] = True
    async with running_services() as c:
        if await c.repos.kbs.get_by_name(c.default_tenant_id, args.name) is not None:
            return fail(f"a knowledge base named {args.name!r} already exists")
        try:
            kb = await c.kb_service.create(c.default_tenant_id, {"name": args.name,
                                                                 "description": args.description,
                                                                 "chunking_config": chunking or None})
        except AppError as exc:
            return fail(exc.message)
    if args.json:
        print_json(kb.model_dump(mode="json"))
    else:
        Console().print(f"Created knowledge base [bold]{kb.name}[/bold] ({kb.id})")
    return 0


async def _list(args: argparse.Namespace) -> int:
    async with running_services() as c:
        kbs = await c.kb_service.list(c.default_tenant_id)
        stats = await c.kb_service.stats(c.default_tenant_id, [kb.id for kb in kbs])
    rows = [{"id": kb.id, "name": kb.name, "type": str(kb.type), **stats[kb.id].model_dump(),
             "embedding_model_id": kb.embedding_model_id} for kb in kbs]
    if args.json:
        print_json(rows)
        return 0
    table = Table("name", "id", "documents", "chunks", "processing", "embedder")
    for r in rows:
        table.add_row(r["name"], r["id"], str(r["knowledge_count"]), str(r["chunk_count"]),
                      str(r["processing_count"]), r["embedding_model_id"])
    Console().print(table)
    return 0


async def _delete(args: argparse.Namespace) -> int:
    async with running_services() as c:
        kb = await find_kb(c, args.name)
        if kb is None:
            return fail(f"no knowledge base named {args.name!r}")
        await c.kb_service.delete(c.default_tenant_id, kb.id)
    if args.json:
        print_json({"deleted": kb.id, "name": kb.name})
    else:
        Console().print(f"Deleted knowledge base [bold]{kb.name}[/bold]")
    return 0
