"""The embedded engine ("sqlite"): FTS5 BM25 over pre-tokenised text plus in-memory vector sets.

Rows live in the metadata store's own SQLite file (one file to back up), in tables this engine creates.
Vectors are float32 blobs there and are loaded per knowledge base into a :class:`VectorSet` on first use.
Another process (the CLI ingesting while the server runs) may write the same file, so every write also appends
to a change log; before a search the engine reads the log's last sequence number (one indexed lookup) and
replays only what it missed.

Keyword search: FTS5 is the durable truth; an in-memory :class:`KeywordIndex` (postings.py) computes the same
BM25 top-k exactly and much faster. Each row's token ids are stored too (``knora_ret_kw``, ids from the
``knora_ret_terms`` dictionary) so the index loads without re-tokenising; it follows the change log like the
vector sets do. Until it is loaded (in a background thread above ``kw_sync_rows`` rows) FTS5 answers, with the
term pruning below.

Scores: vector = cosine in [-1, 1]; keyword = FTS5 BM25 ``s`` divided by ``Σ idf(t)`` over the query's
distinct terms — not capped: a row that repeats the query's terms scores above 1, and capping would make the
best rows tie before fusion min-max-normalises them (HybridSearch shows keyword scores capped at 1). ``Σ idf``
is what a row of average length containing every query term once
scores, so the normalised value reads as "how much of the query's information this row covers" (terms absent
from the corpus count too): monotonic in BM25 for a given
query, comparable across queries and corpus sizes, and a keyword threshold of 0.3 means "about a third of the
query's weighted terms matched" (idf as FTS5 computes it, from the fts5vocab table).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.sqlite_keyword import KeywordSearch
from knora.adapters.retrieval.sqlite_vectors import VectorSearch
from knora.domain.search import EngineHit
from knora.ports.retrieval import Capability, EngineQuery
from knora.settings import Settings


def sqlite_path(url: str) -> Path:
    """The file behind a ``sqlite(+aiosqlite)://`` URL."""
    _, _, rest = url.partition(":///")
    if not rest or rest.startswith(":memory:"):
        raise ValueError(f"the sqlite retrieval engine needs a database file, got {url!r}")
    return Path(rest.split("?", 1)[0])


class SqliteEngine(VectorSearch, KeywordSearch):
    """Keyword (FTS5 / in-memory BM25) and vector (numpy / HNSW) search in the metadata store's SQLite file.

    Storage and writes are :class:`SqliteStore`'s, vector search :class:`VectorSearch`'s, keyword search
    :class:`KeywordSearch`'s; this class is the RetrievalEngine the registry builds."""

    @property
    def name(self) -> str:
        return "sqlite"

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({"vector", "keyword"})

    # --- lifecycle ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        await asyncio.to_thread(self._open)

    # --- search ---------------------------------------------------------------------------------------------
    async def search(self, query: EngineQuery) -> list[EngineHit]:
        if query.top_k <= 0 or not query.knowledge_base_ids:
            return []
        if query.mode == "keyword":
            return await asyncio.to_thread(self._keyword, query)
        if query.embedding is None:
            return []
        return await asyncio.to_thread(self._vector, query)


def build(settings: Settings) -> SqliteEngine:
    tok.configure(settings.data_dir / "cache")
    return SqliteEngine(sqlite_path(settings.effective_database_url), index_dir=settings.data_dir / "index")
