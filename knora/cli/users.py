"""``knora user create|list``: accounts, made by the operator.

Always in-process, on the configured data dir and database, like ``knora secrets``: making an account with a
password is the operator's act, not a tenant's. The HTTP API has no route for it on purpose — registration
is open, by invitation or closed (``KNORA_REGISTRATION``), and an API key (all the CLI holds for a running
server) is not a user and may not make one. Running next to a server is fine (SQLite WAL, or the shared
PostgreSQL): the server sees the new account at once.

The password is ``--password``, else asked for when standard input is a terminal (empty: generate one), else
generated; a generated password is printed once. The new user joins the default tenant (or ``--tenant``)
with ``--role`` (viewer unless told).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from typing import Any

from knora.cli._common import announce_generated, fail, print_json

ROLES = ("viewer", "contributor", "admin", "owner")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("user", help="user accounts (in-process: the operator's)")
    sub = p.add_subparsers(dest="user_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="create an account and add it to a tenant")
    c.add_argument("--email", required=True)
    c.add_argument("--username",
                   help="3-64 letters, digits, '_', '.', '-' (default: the e-mail's local part)")
    c.add_argument("--password", help="the password (else asked for on a terminal, or generated and printed "
                   "once); visible to other users of this machine in the process list: prefer the prompt")
    c.add_argument("--role", choices=ROLES, default="viewer", help="role in the tenant (default: viewer)")
    c.add_argument("--tenant", type=int, default=None, help="the tenant's id (default: the default tenant)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=_create)
    ls = sub.add_parser("list", help="list accounts with their tenants and roles")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=_list)


def _password(args: argparse.Namespace) -> tuple[str, bool] | None:
    """(password, whether generated); None when the two typed passwords differ."""
    if args.password:
        return args.password, False
    if sys.stdin.isatty():
        import getpass

        typed = getpass.getpass("Password (empty: generate one): ")
        if typed:
            return (typed, False) if getpass.getpass("Again: ") == typed else None
    return secrets.token_urlsafe(12), True


async def _create(args: argparse.Namespace) -> int:
    from knora.cli._common import audit, running_services
    from knora.domain.access import Role
    from knora.domain.errors import AppError

    chosen = _password(args)
    if chosen is None:
        return fail("the passwords differ")
    password, generated = chosen
    email = args.email.strip()
    username = (args.username or email.split("@", 1)[0]).strip()
    async with running_services() as c:
        announce_generated(c)
        tenant_id = args.tenant if args.tenant is not None else c.default_tenant_id
        tenant = await c.tenants.get(tenant_id)
        if tenant is None:
            return fail(f"no tenant with id {tenant_id} (knora tenant list)")
        try:
            user = await c.accounts.register(username, email, password)
            member = await c.members.enrol(tenant_id, user.id, Role(args.role), "cli")
        except AppError as exc:
            hint = (f" ({username!r}, from the e-mail: choose one with --username)"
                    if exc.message.startswith("username") and not args.username else "")
            return fail(exc.message + hint)
        await audit(c, tenant_id, "knora user create", f"user_id={user.id} role={member.role.value}")
    row: dict[str, Any] = {"id": user.id, "username": user.username, "email": user.email,
                           "tenant_id": tenant_id, "tenant": tenant.name, "role": member.role.value}
    if args.json:
        print_json({**row, "password": password} if generated else row)
        return 0
    print(f"Created user {user.username} <{user.email}>: {member.role.value} of {tenant.name} ({tenant_id})")
    if generated:
        print(f"Password (shown once, keep it): {password}")
    return 0


async def _list(args: argparse.Namespace) -> int:
    from knora.cli._common import running_services

    async with running_services() as c:
        announce_generated(c)
        rows: list[dict[str, Any]] = []
        for user in await c.accounts.users():
            memberships = await c.accounts.memberships(user.id)
            rows.append({"id": user.id, "username": user.username, "email": user.email,
                         "active": user.is_active,
                         "tenants": [{"tenant_id": m.tenant_id, "tenant": m.tenant_name, "role": m.role.value}
                                     for m in memberships]})
    if args.json:
        print_json(rows)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("username", "e-mail", "tenants (role)", "id")
    for r in rows:
        tenants = ", ".join(f"{m['tenant']} ({m['role']})" for m in r["tenants"]) or "—"
        table.add_row(r["username"] + ("" if r["active"] else " (inactive)"), r["email"], tenants, r["id"])
    Console().print(table)
    return 0
