"""``knora key create|list|revoke``: the default tenant's API keys.

Through the running server's API when one is up (``/tenants/{id}/api-keys``, with the CLI's key, an owner
key of the default tenant: the server applies its rules as for any caller, writes its audit log, and every
replica drops a revoked key within a second), else in-process on the configured data dir. A new key is
printed once: only its hash is stored. ``--role`` is viewer unless told (a key is never an owner's);
``--expires-days`` makes it stop working after that many days.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from knora.cli._common import add_mode_flag, announce_generated, choose_mode, fail, print_json

if TYPE_CHECKING:
    from knora.cli.client import ApiClient
    from knora.domain.access import ApiKey

KEY_ROLES = ("viewer", "contributor", "admin")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("key", help="the default tenant's API keys")
    sub = p.add_subparsers(dest="key_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="create a key (printed once)")
    c.add_argument("--name", required=True)
    c.add_argument("--role", choices=KEY_ROLES, default="viewer",
                   help="what the key may do (default: viewer)")
    c.add_argument("--expires-days", type=float, default=None, help="stops working after this many days")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=_create)
    ls = sub.add_parser("list", help="list keys: prefix, role, last use, expiry (never the key)")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=_list)
    r = sub.add_parser("revoke", help="revoke a key (by id, or by name when one key has it)")
    r.add_argument("key")
    r.add_argument("--json", action="store_true")
    r.set_defaults(handler=_revoke)
    for parser in (c, ls, r):
        add_mode_flag(parser)


def _row_json(k: dict[str, Any]) -> dict[str, Any]:
    """A key as ``GET /tenants/{id}/api-keys`` lists it, in the CLI's shape."""
    return {"id": k["id"], "name": k["name"], "prefix": str(k.get("api_key") or "").rstrip("…"),
            "role": k["role"], "last_used_at": k.get("last_used_at"), "expires_at": k.get("expires_at"),
            "created_at": k.get("created_at"), "created_by": k.get("created_by")}


def _iso(d: datetime | None) -> str | None:
    return d.isoformat() if d else None


def _row(k: ApiKey) -> dict[str, Any]:
    """A key in-process, in the CLI's shape."""
    iso = _iso
    return {"id": k.id, "name": k.name, "prefix": k.prefix, "role": k.role.value,
            "last_used_at": iso(k.last_used_at), "expires_at": iso(k.expires_at),
            "created_at": iso(k.created_at), "created_by": k.created_by}


async def _tenant_path(api: ApiClient) -> str:
    me = await api.data("GET", "/auth/me")
    return f"/tenants/{me['tenant']['id']}/api-keys"


def _find(rows: list[dict[str, Any]], wanted: str) -> dict[str, Any] | str:
    """The key with this id, else the one key with this name; else why not."""
    for r in rows:
        if r["id"] == wanted:
            return r
    named = [r for r in rows if r["name"] == wanted]
    if len(named) == 1:
        return named[0]
    if named:
        return f"{len(named)} keys are named {wanted!r}: name one by its id (knora key list)"
    return f"no key {wanted!r} (knora key list)"


async def _create(args: argparse.Namespace) -> int:
    from knora.cli.client import ApiClient, ApiError

    if args.expires_days is not None and args.expires_days <= 0:
        return fail("--expires-days: more than 0")
    expires_unix = (int(time.time() + args.expires_days * 86400) if args.expires_days is not None else None)
    server = choose_mode(args)
    if server is not None:
        body: dict[str, Any] = {"name": args.name, "role": args.role}
        if expires_unix is not None:
            body["expires_at_unix"] = expires_unix
        try:
            async with ApiClient(server) as api:
                made = await api.data("POST", await _tenant_path(api), json=body)
        except ApiError as exc:
            return fail(exc.message)
        row, key = _row_json(made), str(made["token"])
    else:
        from datetime import UTC, datetime

        from knora.cli._common import audit, running_services
        from knora.domain.access import Role
        from knora.domain.errors import AppError

        expires = datetime.fromtimestamp(expires_unix, UTC) if expires_unix is not None else None
        async with running_services() as c:
            announce_generated(c)
            try:
                created, key = await c.tenants.create_key(c.default_tenant_id, args.name, Role(args.role),
                                                          expires_at=expires, created_by="cli")
            except AppError as exc:
                return fail(exc.message)
            await audit(c, c.default_tenant_id, "knora key create", f"key_id={created.id}")
        row = _row(created)
    if args.json:
        print_json({**row, "key": key})
        return 0
    expiry = f", expires {row['expires_at']}" if row["expires_at"] else ""
    print(f"Created API key {row['name']} ({row['role']}{expiry}), id {row['id']}")
    print(f"API key (shown once, keep it): {key}")
    return 0


async def _list(args: argparse.Namespace) -> int:
    rows = await _rows(args)
    if isinstance(rows, int):
        return rows
    if args.json:
        print_json(rows)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "prefix", "role", "last used", "expires", "id")
    for r in rows:
        table.add_row(r["name"], (r["prefix"] + "…") if r["prefix"] else "—", r["role"],
                      r["last_used_at"] or "never", r["expires_at"] or "never", r["id"])
    Console().print(table)
    return 0


async def _rows(args: argparse.Namespace) -> list[dict[str, Any]] | int:
    """The keys, or the exit code of a failure (said on stderr)."""
    from knora.cli.client import ApiClient, ApiError

    server = choose_mode(args)
    if server is not None:
        try:
            async with ApiClient(server) as api:
                return [_row_json(k) for k in await api.data("GET", await _tenant_path(api))]
        except ApiError as exc:
            return fail(exc.message)
    from knora.cli._common import running_services

    async with running_services() as c:
        announce_generated(c)
        return [_row(k) for k in await c.tenants.list_keys(c.default_tenant_id)]


async def _revoke(args: argparse.Namespace) -> int:
    from knora.cli.client import ApiClient, ApiError

    server = choose_mode(args)
    if server is not None:
        try:
            async with ApiClient(server) as api:
                path = await _tenant_path(api)
                found = _find([_row_json(k) for k in await api.data("GET", path)], args.key)
                if isinstance(found, str):
                    return fail(found)
                await api.request("DELETE", f"{path}/{found['id']}")
        except ApiError as exc:
            return fail(exc.message)
    else:
        from knora.cli._common import audit, running_services
        from knora.domain.errors import AppError

        async with running_services() as c:
            announce_generated(c)
            found = _find([_row(k) for k in await c.tenants.list_keys(c.default_tenant_id)], args.key)
            if isinstance(found, str):
                return fail(found)
            try:
                await c.tenants.revoke_key(c.default_tenant_id, found["id"])
            except AppError as exc:
                return fail(exc.message)
            await audit(c, c.default_tenant_id, "knora key revoke", f"key_id={found['id']}")
    if args.json:
        print_json({"revoked": found["id"], "name": found["name"]})
    else:
        print(f"Revoked API key {found['name']} ({found['id']})")
    return 0
