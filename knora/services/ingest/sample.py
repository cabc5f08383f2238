"""The bundled sample knowledge base, ingested in the background on first start (``settings.sample_kb``).

A newcomer who runs ``make run`` can ask a question at once. It is created once per data dir: a marker file
remembers that it was, so a user who deletes the sample KB does not get it back on the next start.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from knora.services.ingest.service import DuplicateKnowledge, IngestService
from knora.services.kb.service import KnowledgeBaseService
from knora.settings import Settings

log = logging.getLogger(__name__)

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample"
MARKER = ".sample_kb_created"


async def ensure_sample_kb(s: Settings, tenant_id: int, kbs: KnowledgeBaseService,
                           ingest: IngestService) -> str | None:
    """Create and fill the sample KB unless it exists or was created before; returns its id when created."""
    marker = s.data_dir / MARKER
    if marker.exists() or await kbs.repos.kbs.get_by_name(tenant_id, s.sample_kb_name) is not None:
        return None
    files = sorted(p for p in SAMPLE_DIR.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))
    if not files:
        log.warning("no sample documents found in %s", SAMPLE_DIR)
        return None
    kb = await kbs.create(tenant_id, {
        "name": s.sample_kb_name, "description": "Knora's own guide and FAQ, to try questions on at once"})
    marker.write_text(kb.id)
    for path in files:
        data = await asyncio.to_thread(path.read_bytes)
        try:
            await ingest.add_file(tenant_id, kb.id, path.name, data, channel="sample")
        except DuplicateKnowledge:
            continue
    log.info("sample knowledge base %s: %d documents queued", kb.id, len(files))
    return str(kb.id)
