"""``knora kb create|list|delete``: through the running server's API when one is up, else in-process."""

from __future__ import annotations

import argparse
from typing import Any

from knora.cli._common import add_mode_flag, choose_mode, fail, find_kb, find_kb_json, print_json


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
    for parser in (c, ls, d):
        add_mode_flag(parser)


def _print(text: str) -> None:
    from rich.console import Console

    Console().print(text)


async def _create(args: argparse.Namespace) -> int:
    from knora.cli.client import ApiClient, ApiError

    chunking: dict[str, Any] = {}
    if args.chunk_size:
        chunking["chunk_size"] = args.chunk_size
    if args.chunk_overlap:
        chunking["chunk_overlap"] = args.chunk_overlap
    if args.parent_child:
        chunking["enable_parent_child"] = True
    body = {"name": args.name, "description": args.description, "chunking_config": chunking or None}
    server = choose_mode(args)
    if server is not None:
        try:
            async with ApiClient(server) as api:
                if find_kb_json(await api.data("GET", "/knowledge-bases"), args.name) is not None:
                    return fail(f"a knowledge base named {args.name!r} already exists")
                kb: dict[str, Any] = await api.data("POST", "/knowledge-bases",
                                                    json={k: v for k, v in body.items() if v is not None})
        except ApiError as exc:
            return fail(exc.message)
    else:
        from knora.cli._common import running_services
        from knora.domain.errors import AppError

        async with running_services() as c:
            if await c.repos.kbs.get_by_name(c.default_tenant_id, args.name) is not None:
                return fail(f"a knowledge base named {args.name!r} already exists")
            try:
                kb = (await c.kb_service.create(c.default_tenant_id, body)).model_dump(mode="json")
            except AppError as exc:
                return fail(exc.message)
    if args.json:
        print_json(kb)
    else:
        _print(f"Created knowledge base [bold]{kb['name']}[/bold] ({kb['id']})")
    return 0


_STATS = ("knowledge_count", "chunk_count", "processing_count")


async def _list(args: argparse.Namespace) -> int:
    from knora.cli.client import ApiClient, ApiError

    server = choose_mode(args)
    if server is not None:
        try:
            async with ApiClient(server) as api:
                listed: list[dict[str, Any]] = await api.data("GET", "/knowledge-bases")
        except ApiError as exc:
            return fail(exc.message)
        rows = [{"id": kb["id"], "name": kb["name"], "type": kb.get("type", ""),
                 **{k: int(kb.get(k) or 0) for k in _STATS},
                 "embedding_model_id": kb.get("embedding_model_id", "")} for kb in listed]
    else:
        from knora.cli._common import running_services

        async with running_services() as c:
            kbs = await c.kb_service.list(c.default_tenant_id)
            stats = await c.kb_service.stats(c.default_tenant_id, [kb.id for kb in kbs])
        rows = [{"id": kb.id, "name": kb.name, "type": str(kb.type), **stats[kb.id].model_dump(),
                 "embedding_model_id": kb.embedding_model_id} for kb in kbs]
    if args.json:
        print_json(rows)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "id", "documents", "chunks", "processing", "embedder")
    for r in rows:
        table.add_row(r["name"], r["id"], str(r["knowledge_count"]), str(r["chunk_count"]),
                      str(r["processing_count"]), r["embedding_model_id"])
    Console().print(table)
    return 0


async def _delete(args: argparse.Namespace) -> int:
    from knora.cli.client import ApiClient, ApiError

    server = choose_mode(args)
    if server is not None:
        try:
            async with ApiClient(server) as api:
                found = find_kb_json(await api.data("GET", "/knowledge-bases"), args.name)
                if found is None:
                    return fail(f"no knowledge base named {args.name!r}")
                await api.request("DELETE", f"/knowledge-bases/{found['id']}")
        except ApiError as exc:
            return fail(exc.message)
        kb_id, name = str(found["id"]), str(found["name"])
    else:
        from knora.cli._common import running_services

        async with running_services() as c:
            kb = await find_kb(c, args.name)
            if kb is None:
                return fail(f"no knowledge base named {args.name!r}")
            await c.kb_service.delete(c.default_tenant_id, kb.id)
        kb_id, name = kb.id, kb.name
    if args.json:
        print_json({"deleted": kb_id, "name": name})
    else:
        _print(f"Deleted knowledge base [bold]{name}[/bold]")
    return 0
