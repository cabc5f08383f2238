"""The bundled sample knowledge base, ingested in the background on first start (``settings.sample_kb``).

A newcomer who runs ``make run`` can ask a question at once. It is created once per data dir: a marker file
remembers that it was, so a user who deletes the sample KB does not get it back on the next start.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from knora.services.ingest.service import DuplicateKnowledge

log = logging.getLogger(__name__)

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample"
MARKER = ".sample_kb_created"


async def ensure_sample_kb(c: Any) -> str | None:
    """Create and fill the sample KB unless it exists or was created before; returns its id when created."""
    s = c.settings
    marker = s.data_dir / MARKER
    if marker.exists() or await c.repos.kbs.get_by_name(c.default_tenant_id, s.sample_kb_name) is not None:
        return None
    files = sorted(p for p in SAMPLE_DIR.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))
    if not files:
        log.warning("no sample documents found in %s", SAMPLE_DIR)
        return None
    kb = await c.kb_service.create(c.default_tenant_id, {
        "name": s.sample_kb_name, "description": "Knora's own guide and FAQ, to try questions on at once"})
    marker.write_text(kb.id)
    for path in files:
        data = await asyncio.to_thread(path.read_bytes)
        try:
            await c.ingest_service.add_file(c.default_tenant_id, kb.id, path.name, data, channel="sample")
        except DuplicateKnowledge:
            continue
    log.info("sample knowledge base %s: %d documents queued", kb.id, len(files))
    return str(kb.id)
