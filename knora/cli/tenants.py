"""``knora tenant create|list``: tenants (teams), made and listed by the operator.

Always in-process, on the configured data dir and database: a tenant is created by a signed-in user, who
becomes its owner (``POST /tenants``), and an API key — all the CLI holds for a running server — may neither
create one nor see other tenants than its own. So the operator names the owner (``--owner``, an existing
account's e-mail or username; default: the owner account, ``KNORA_OWNER_EMAIL``) and sees every tenant.
"""

from __future__ import annotations

import argparse
from typing import Any

from knora.cli._common import announce_generated, fail, print_json


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("tenant", help="tenants (teams; in-process: the operator's)")
    sub = p.add_subparsers(dest="tenant_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="create a tenant owned by an existing account")
    c.add_argument("name")
    c.add_argument("--description", default="")
    c.add_argument("--owner", help="e-mail or username of its owner (default: KNORA_OWNER_EMAIL's account)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=_create)
    ls = sub.add_parser("list", help="list every tenant with its member count")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=_list)


async def _create(args: argparse.Namespace) -> int:
    from knora.cli._common import audit, running_services
    from knora.domain.errors import AppError

    async with running_services() as c:
        announce_generated(c)
        login = args.owner or c.settings.owner_email
        owner = await c.accounts.find(login)
        if owner is None:
            return fail(f"no account {login!r} (knora user create, or --owner)")
        try:
            tenant = await c.members.create_tenant(owner.id, args.name, args.description)
        except AppError as exc:
            return fail(exc.message)
        await audit(c, tenant.id, "knora tenant create", f"owner={owner.id}")
    row = {"id": tenant.id, "name": tenant.name, "description": tenant.description, "owner": owner.email}
    if args.json:
        print_json(row)
    else:
        print(f"Created tenant {tenant.name} ({tenant.id}), owned by {owner.username} <{owner.email}>")
    return 0


async def _list(args: argparse.Namespace) -> int:
    from knora.cli._common import running_services

    async with running_services() as c:
        announce_generated(c)
        rows: list[dict[str, Any]] = []
        for tenant in await c.tenants.all_tenants():
            _members, count = await c.members.members(tenant.id, page_size=1)
            rows.append({"id": tenant.id, "name": tenant.name, "description": tenant.description,
                         "members": count, "default": tenant.id == c.default_tenant_id})
    if args.json:
        print_json(rows)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "name", "members", "description")
    for r in rows:
        table.add_row(str(r["id"]), r["name"] + (" (default)" if r["default"] else ""), str(r["members"]),
                      r["description"])
    Console().print(table)
    return 0
