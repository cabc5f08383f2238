"""``knora secrets new-key|rotate``: the key that seals stored credentials (model API keys, MCP headers and
tokens, web-search keys).

Rotating, on every replica: set ``KNORA_SECRET_KEY`` to a new key (``knora secrets new-key``) and
``KNORA_PREVIOUS_SECRET_KEYS`` to ``["<old key>"]``, restart, run ``knora secrets rotate`` once (it reseals
every stored credential with the new key), then drop the previous key.
"""

from __future__ import annotations

import argparse
from typing import Any

from knora.cli._common import fail, print_json


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("secrets", help="the key that seals stored credentials")
    sub = p.add_subparsers(dest="secrets_command", metavar="ACTION", required=True)
    sub.add_parser("new-key", help="print a new key for KNORA_SECRET_KEY").set_defaults(handler=_new_key)
    r = sub.add_parser("rotate", help="reseal every stored credential with KNORA_SECRET_KEY")
    r.add_argument("--json", action="store_true")
    r.set_defaults(handler=_rotate)


def _new_key(args: argparse.Namespace) -> int:
    from knora.adapters.secrets.fernet import new_key

    print(new_key())
    return 0


async def _rotate(args: argparse.Namespace) -> int:
    from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
    from knora.adapters.db.repos._sealed import reseal_all
    from knora.adapters.secrets.fernet import build
    from knora.ports.secrets import SecretError
    from knora.settings import Settings

    settings = Settings()
    try:
        box = build(settings)
    except ValueError as exc:
        return fail(str(exc), 2)
    db = make_engine(settings.effective_database_url)
    try:
        await migrate(db)
        counts = await reseal_all(make_sessionmaker(db), box)
    except SecretError as exc:
        return fail(f"{exc}. Nothing in that table was changed.", 1)
    finally:
        await db.dispose()
    if args.json:
        print_json(counts)
    else:
        print("resealed: " + ", ".join(f"{n} {table}" for table, n in counts.items()))
    return 0
