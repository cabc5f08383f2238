"""``knora blobs migrate``: copies the uploaded originals of knowledge bases bound to another blob store (by
default ``local``, ``<KNORA_DATA_DIR>/blobs``) into the store ``KNORA_BLOB_STORE`` configures, verifies every
copy and rebinds the knowledge bases (``knora.services.kb.blob_migration``, docs/deploy.md).

An operator's command: in-process on the settings' database, like ``knora secrets rotate``. Safe to rerun.
Exit status: 0 when every knowledge base bound to the source was moved, 1 when some were not (listed), 2 for
a command that cannot run (the source is the target, an unreadable source).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from knora.cli._common import fail, print_json

STORES = ("local", "s3", "postgres")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("blobs", help="uploaded originals: move them into the configured blob store")
    sub = p.add_subparsers(dest="blobs_command", metavar="ACTION", required=True)
    m = sub.add_parser("migrate", help="copy originals of knowledge bases bound to another store into "
                                       "KNORA_BLOB_STORE's, verify them and rebind the knowledge bases")
    m.add_argument("--from", dest="source", choices=STORES, default="local",
                   help="the store the knowledge bases are bound to now (default: local)")
    m.add_argument("--source-dir", type=Path, default=None,
                   help="with --from local: the directory holding the originals "
                        "(default: <KNORA_DATA_DIR>/blobs)")
    m.add_argument("--allow-missing", action="store_true",
                   help="rebind a knowledge base even when a document's original is in neither store")
    m.add_argument("--dry-run", action="store_true", help="read and count, write nothing")
    m.add_argument("--json", action="store_true", help="the report as one JSON line")
    m.set_defaults(handler=_migrate)


async def _migrate(args: argparse.Namespace) -> int:
    from knora.adapters.blobs.local import LocalBlobStore
    from knora.adapters.blobs.registry import BLOB_STORES, build_blob_store
    from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
    from knora.adapters.db.repos.blob_bindings import SqlBlobBindings
    from knora.ports.blobs import BlobStore
    from knora.services.kb.blob_migration import CopyMismatch, migrate_blobs
    from knora.services.kb.storage import view_of
    from knora.settings import Settings

    settings = Settings()
    source, target_name = args.source, settings.blob_store
    if source == target_name:
        return fail(f"nothing to migrate: KNORA_BLOB_STORE={target_name} is the store to copy from "
                    f"(--from {source}). Set KNORA_BLOB_STORE (and its settings, docs/deploy.md) to the "
                    "store the originals should move to, then run this again.", 2)
    if args.source_dir is not None and source != "local":
        return fail("--source-dir is for --from local", 2)
    folder = (args.source_dir or settings.data_dir / "blobs").expanduser()
    if source == "local" and not folder.is_dir():
        return fail(f"{folder} is not a directory: pass --source-dir with the directory the originals are in "
                    "(the old server's <KNORA_DATA_DIR>/blobs)", 2)
    db = make_engine(settings.effective_database_url)
    stores: list[BlobStore] = []
    try:
        try:
            target = build_blob_store(settings, db)
            stores.append(target)
            source_store: BlobStore = (LocalBlobStore(folder) if source == "local"
                                       else BLOB_STORES.get(source)(settings, db))
            stores.append(source_store)
        except (ValueError, RuntimeError) as exc:
            return fail(f"cannot open the {source} store: {exc}", 2)
        await migrate(db)
        view = view_of(settings)
        try:
            report = await migrate_blobs(
                SqlBlobBindings(make_sessionmaker(db)), source_store, target, source=source,
                target_provider=view.provider, target_backend_id=view.backend_id,
                allow_missing=args.allow_missing, dry_run=args.dry_run,
                progress=lambda line: print(line, file=sys.stderr, flush=True))
        except CopyMismatch as exc:
            return fail(str(exc), 1)
    finally:
        for store in stores:
            await store.close()
        await db.dispose()
    if args.json:
        print_json(report.as_dict())
    else:
        verb = "would copy" if report.dry_run else "copied"
        print(f"{source} → {report.target}: {report.knowledge_bases} knowledge base(s) bound to {source}, "
              f"{report.rebound} rebound; {verb} {report.objects_copied} object(s) "
              f"({report.bytes_copied} bytes), {report.objects_present} already there, "
              f"{report.objects_kept} newer in {report.target} kept; {report.already_bound} already bound to "
              f"{report.target}, {report.bound_elsewhere} bound to another store")
        for key in report.missing:
            print(f"missing from both stores: {key}")
    if report.not_rebound:
        return fail(f"{len(report.not_rebound)} knowledge base(s) left bound to {source}: "
                    + ", ".join(report.not_rebound), 1)
    return 0
