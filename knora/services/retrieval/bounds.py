"""How much of a query the retrieval machinery sees.

The API accepts search queries up to ``MAX_QUERY_BYTES`` (100 kB) and chat queries up to
``max_query_chars`` (16 384 characters), as WeKnora's clients may send long ones. But embedding, keyword
tokenisation, FAQ matching and reranking all cost in proportion to the query's length (a reranker scores the
query against every candidate), and a 99 kB query cost 47–76 s of server time (issue 20 item 11) while
adding nothing a search can use: an embedding model reads its first ~512 tokens, and the keyword engines
already keep only 64 distinct terms. So the engines get the first ``MAX_ENGINE_QUERY_CHARS`` characters,
about 500 tokens of prose — ended at a word boundary when one is near.
"""

from __future__ import annotations

MAX_ENGINE_QUERY_CHARS = 2000
_BOUNDARY_WINDOW = 200


def engine_query(text: str, limit: int = MAX_ENGINE_QUERY_CHARS) -> str:
    """``text`` unchanged when short enough, else its first ``limit`` characters, cut back to the last
    whitespace within the final ``_BOUNDARY_WINDOW`` characters (no half word becomes a keyword term)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:cut].rstrip() if cut >= limit - _BOUNDARY_WINDOW else head
