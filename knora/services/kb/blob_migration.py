"""Moving knowledge bases' uploaded originals from the store they are bound to into the configured one
(``knora blobs migrate``, docs/deploy.md): for an operator who goes from one server (``local``) to several
replicas (``s3``, ``postgres``), or from one shared store to another.

Per knowledge base bound to the source store: every blob under its folder (originals and the images parsed
out of them) and every document's ``file_path`` is read from the source, written to the target, read back
and compared (size and SHA-256); only when all of them are there is the knowledge base rebound to the target.
Nothing is deleted from the source. A rerun (after a crash, a network error, Ctrl-C) skips what the target
already holds with the same bytes, so it is safe to run as often as needed; an object the target holds with
other bytes was written there by a server already on the new settings (every store's put is whole or
absent), so it is newer and kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from knora.ports.blobs import BlobStore


class BoundKB(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def tenant_id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str: ...


class BlobBindings(Protocol):
    """``knora.adapters.db.repos.blob_bindings.SqlBlobBindings``."""

    async def knowledge_bases(self) -> Sequence[BoundKB]: ...

    async def file_paths(self, kb_id: str) -> list[str]: ...

    async def rebind(self, kb_id: str, *, source: str, provider: str, backend_id: str) -> bool: ...


class CopyMismatch(RuntimeError):
    """The target returned other bytes than were written: nothing is rebound; a rerun tries again."""


@dataclass
class MigrationReport:
    source: str
    target: str
    dry_run: bool = False
    knowledge_bases: int = 0  # bound to the source when the run started
    rebound: int = 0
    already_bound: int = 0  # bound to the target before the run
    bound_elsewhere: int = 0  # bound to a third store: not this run's
    objects_copied: int = 0
    bytes_copied: int = 0
    objects_present: int = 0  # already in the target with the same bytes (an earlier run's)
    objects_kept: int = 0  # in the target with other bytes: written there since, kept
    missing: list[str] = field(default_factory=list)  # a document's original in neither store
    not_rebound: list[str] = field(default_factory=list)  # knowledge bases left bound to the source

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _digest(data: bytes) -> tuple[int, str]:
    return len(data), hashlib.sha256(data).hexdigest()


async def _get(store: BlobStore, key: str) -> bytes | None:
    try:
        return await store.get(key)
    except KeyError:
        return None


async def migrate_blobs(bindings: BlobBindings, source_store: BlobStore, target: BlobStore, *,
                        source: str, target_provider: str, target_backend_id: str,
                        allow_missing: bool = False, dry_run: bool = False,
                        progress: Callable[[str], None] | None = None) -> MigrationReport:
    """Copies the originals of every knowledge base bound to ``source`` (read from ``source_store``) into
    ``target`` and rebinds them (see the module). ``allow_missing`` rebinds a knowledge base even when one of
    its documents' originals is in neither store (it is lost either way); without it such a knowledge base
    stays bound to the source and is listed in ``not_rebound``. ``dry_run`` reads and counts, writes
    nothing."""
    if source == target_provider:
        raise ValueError(f"the source store is the target store ({source})")
    report = MigrationReport(source=source, target=target_provider, dry_run=dry_run)
    say = progress or (lambda _line: None)
    for kb in await bindings.knowledge_bases():
        if kb.provider == target_provider:
            report.already_bound += 1
            continue
        if kb.provider != source:
            report.bound_elsewhere += 1
            continue
        report.knowledge_bases += 1
        folder = f"{kb.tenant_id}/{kb.id}"
        keys = sorted(set(await source_store.keys(folder)) | set(await bindings.file_paths(kb.id)))
        missing: list[str] = []
        for key in keys:
            data = await _get(source_store, key)
            held = await _get(target, key)
            if data is None:
                if held is None:
                    missing.append(key)
                else:  # uploaded through a server already on the target store
                    report.objects_present += 1
                continue
            if held is not None:
                if _digest(held) == _digest(data):
                    report.objects_present += 1
                else:
                    report.objects_kept += 1
                continue
            if not dry_run:
                await target.put(key, data)
                back = await _get(target, key)
                if back is None or _digest(back) != _digest(data):
                    raise CopyMismatch(f"{key}: the {target_provider} store returned "
                                       f"{'nothing' if back is None else f'{len(back)} other bytes'} after "
                                       f"{len(data)} bytes were written; nothing was rebound, run again")
            report.objects_copied += 1
            report.bytes_copied += len(data)
        report.missing += missing
        label = f"{kb.name!r} ({kb.id}, tenant {kb.tenant_id})"
        if missing and not allow_missing:
            report.not_rebound.append(kb.id)
            say(f"{label}: {len(missing)} original(s) in neither store, left bound to {source} "
                "(--allow-missing rebinds it anyway)")
            continue
        if dry_run:
            say(f"{label}: {len(keys) - len(missing)} object(s) checked, would be rebound")
            continue
        if await bindings.rebind(kb.id, source=source, provider=target_provider,
                                 backend_id=target_backend_id):
            report.rebound += 1
            say(f"{label}: {len(keys) - len(missing)} object(s) in {target_provider}, rebound")
        else:
            report.not_rebound.append(kb.id)
            say(f"{label}: deleted or rebound meanwhile, left as it is")
    return report
