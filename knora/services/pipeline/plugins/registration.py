"""The plugins of the quick-answer pipeline in WeKnora's DI registration order (spec §1.1).

The order matters where an event has several plugins: ``query_understand`` runs the rewrite, then entity
extraction; ``chunk_rerank`` runs rerank and then — because wiki boost calls ``next()`` first — the boost
after rerank's work, skipped when rerank stops the chain. Adding a plugin is one line here plus its module.
"""

from __future__ import annotations

from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.framework import Plugin
from knora.services.pipeline.plugins.chat_completion import ChatCompletion, ChatCompletionStream
from knora.services.pipeline.plugins.chunk_search import ChunkSearch
from knora.services.pipeline.plugins.data_analysis import DataAnalysis
from knora.services.pipeline.plugins.entity_search import EntitySearch
from knora.services.pipeline.plugins.extract_entity import ExtractEntity
from knora.services.pipeline.plugins.filter_top_k import FilterTopK
from knora.services.pipeline.plugins.into_chat_message import IntoChatMessage
from knora.services.pipeline.plugins.load_history import LoadHistory
from knora.services.pipeline.plugins.merge import ChunkMerge
from knora.services.pipeline.plugins.query_understand import QueryUnderstand
from knora.services.pipeline.plugins.rerank import ChunkRerank
from knora.services.pipeline.plugins.search_parallel import ChunkSearchParallel
from knora.services.pipeline.plugins.web_fetch import WebFetch
from knora.services.pipeline.plugins.wiki_boost import WikiBoost


def default_plugins(deps: PipelineDeps) -> list[Plugin]:
    return [
        ChunkSearch(deps), ChunkRerank(deps), WebFetch(deps), ChunkMerge(deps), DataAnalysis(deps),
        IntoChatMessage(), ChatCompletion(deps), ChatCompletionStream(deps), FilterTopK(),
        QueryUnderstand(deps),
        LoadHistory(), ExtractEntity(deps), EntitySearch(deps), ChunkSearchParallel(deps), WikiBoost(),
    ]
