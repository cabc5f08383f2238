"""The typed per-turn state, split the way WeKnora's ChatManage is (spec §1.3).

* ``PipelineRequest`` — immutable: built once from the ``TurnRequest`` plus resolved defaults/agent overrides.
* ``PipelineState`` — written by stages (rewrite, intent, search/rerank/merge results, prompt pieces, answer).
* ``TurnContext`` (from streaming) — bus, reference registry, cancellation, timings.

``ChatManage.clone`` mirrors WeKnora's Clone: request shared (it is immutable, so sharing is copying — a deep
copy cost ~1.3 ms per turn), a subset of state copied, results and history reset, and — unlike WeKnora, whose
clone drops the context — the context shared, because Knora's parallel searches still need the cancellation
flag. The turn's read view (``reads``) is shared too, so every stage reads a KB or chunk row at most once per
turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from knora.domain.knowledge import AGENT_VECTOR_THRESHOLD, DEFAULT_KEYWORD_THRESHOLD
from knora.domain.search import SearchResult, SearchTarget
from knora.ports.chat import ChatModel, ChatModels
from knora.ports.turn import HistoryTurn, TurnContext
from knora.services.pipeline.deps import Reads
from knora.services.retrieval.turn_reads import TurnReads


class EventType(StrEnum):
    """Spec §1.4."""

    LOAD_HISTORY = "load_history"
    MEMORY_RECALL = "memory_recall"
    QUERY_UNDERSTAND = "query_understand"
    CHUNK_SEARCH = "chunk_search"
    CHUNK_SEARCH_PARALLEL = "chunk_search_parallel"
    ENTITY_SEARCH = "entity_search"
    CHUNK_RERANK = "chunk_rerank"
    WEB_FETCH = "web_fetch"
    CHUNK_MERGE = "chunk_merge"
    DATA_ANALYSIS = "data_analysis"
    INTO_CHAT_MESSAGE = "into_chat_message"
    CHAT_COMPLETION = "chat_completion"
    CHAT_COMPLETION_STREAM = "chat_completion_stream"
    FILTER_TOP_K = "filter_top_k"


class Intent(StrEnum):
    """Spec §1.5."""

    KB_SEARCH = "kb_search"
    WEB_SEARCH = "web_search"
    GREETING = "greeting"
    CHITCHAT = "chitchat"
    FOLLOW_UP = "follow_up"
    IMAGE_ONLY = "image_only"
    DOC_ONLY = "doc_only"
    SUMMARIZE = "summarize"
    CLARIFICATION = "clarification"


KNOWN_INTENTS = frozenset(i.value for i in Intent)
_NO_RETRIEVAL = frozenset({"web_search", "greeting", "chitchat", "follow_up", "image_only", "doc_only"})


def needs_kb_retrieval(intent: str) -> bool:
    """WeKnora retrieves only for kb_search/clarification/summarize/"" and turns retrieval OFF for any unknown
    string a model invents. Knora retrieves for unknown intents too: a misspelt label should not silently cost
    the user their knowledge base (docs/quick-answer.md, departure D1)."""
    return intent not in _NO_RETRIEVAL


@dataclass(frozen=True)
class SummaryConfig:
    prompt: str = ""
    context_template: str = ""
    temperature: float = 0.3
    max_completion_tokens: int = 2048
    thinking: bool | None = None


@dataclass(frozen=True)
class PipelineRequest:
    tenant_id: int
    session_id: str
    request_id: str
    query: str
    user_message_id: str = ""
    assistant_message_id: str = ""
    max_rounds: int = 5
    knowledge_base_ids: tuple[str, ...] = ()
    knowledge_ids: tuple[str, ...] = ()
    tag_ids: tuple[str, ...] = ()
    search_targets: tuple[SearchTarget, ...] = ()
    vector_threshold: float = AGENT_VECTOR_THRESHOLD
    keyword_threshold: float = DEFAULT_KEYWORD_THRESHOLD
    embedding_top_k: int = 10
    rerank_model_id: str = ""
    rerank_top_k: int = 10
    rerank_threshold: float = 0.3
    chat_model_id: str = ""
    summary: SummaryConfig = field(default_factory=SummaryConfig)
    fallback_strategy: str = "model"
    fallback_response: str = "Sorry, I am unable to answer this question."
    fallback_prompt: str = ""
    citations_enabled: bool = True
    enable_rewrite: bool = True
    enable_query_expansion: bool = True
    rewrite_prompt_system: str = ""
    rewrite_prompt_user: str = ""
    query_understand_model_id: str = ""
    faq_priority_enabled: bool = True
    faq_direct_answer_threshold: float = 0.9
    faq_score_boost: float = 1.2
    data_analysis_enabled: bool = False
    images: tuple[str, ...] = ()
    chat_model_supports_vision: bool = False
    vlm_model_id: str = ""
    intent_prompt_overrides: dict[str, str] = field(default_factory=dict)
    web_search_enabled: bool = False
    web_search_max_results: int = 5
    web_fetch_enabled: bool = False
    web_fetch_top_n: int = 3
    language: str = "the language of the user's question"
    history: tuple[HistoryTurn, ...] = ()
    entity_kb_ids: tuple[str, ...] = ()  # KBs in scope with a knowledge graph (spec §2.4)
    wiki_kb_ids: tuple[str, ...] = ()
    kb_types: dict[str, str] = field(default_factory=dict)  # kb id -> document | faq
    extra: dict[str, Any] = field(default_factory=dict)

    def with_(self, **changes: Any) -> PipelineRequest:
        return replace(self, **changes)

    @property
    def has_kb_scope(self) -> bool:
        return bool(self.search_targets or any(self.knowledge_base_ids) or any(self.knowledge_ids))

    @property
    def has_recall_threshold_override(self) -> bool:
        return any(t.disable_recall_thresholds for t in self.search_targets)


@dataclass
class PipelineState:
    rewrite_query: str = ""
    intent: str = ""
    history: list[HistoryTurn] = field(default_factory=list)
    search_result: list[SearchResult] = field(default_factory=list)
    rerank_result: list[SearchResult] = field(default_factory=list)
    merge_result: list[SearchResult] = field(default_factory=list)
    entity: list[str] = field(default_factory=list)
    entity_kb_ids: list[str] = field(default_factory=list)
    graph_result: dict[str, Any] = field(default_factory=dict)
    user_content: str = ""
    rendered_contexts: str = ""
    system_prompt: str = ""  # final system prompt (set by into_chat_message / completion)
    passages: list[dict[str, str]] = field(default_factory=list)  # [{handle, content}] shown to the model
    system_prompt_override: str = ""
    image_description: str = ""
    image_note: str = ""  # why the user's images were not described (no VLM, or it failed); shown to the user
    quoted_context: str = ""
    chat_response: str = ""
    reasoning: str = ""
    is_fallback: bool = False
    model_id: str = ""
    stage_info: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> what it kept (debug view)
    # model id -> resolved ChatModel (one lookup per turn)
    models: dict[str, ChatModel] = field(default_factory=dict)


def scoped_search(search: Any, reads: TurnReads | None) -> Any:
    if reads is None or search is None or getattr(search, "store", None) is not reads.store \
            or not hasattr(search, "with_store"):
        return search
    return search.with_store(reads)


@dataclass
class ChatManage:
    request: PipelineRequest
    state: PipelineState
    ctx: TurnContext
    # the turn's read view (set by the runner; plugins fall back to deps.reads)
    reads: TurnReads | None = None

    def reads_or(self, fallback: Reads | None) -> Reads | None:
        """The turn's read view when the runner made one, else ``fallback`` (a plugin's ``deps.reads``)."""
        return self.reads if self.reads is not None else fallback

    def search_or(self, search: Any) -> Any:
        """``search`` reading through the turn's view (KBs, tenant config, hit chunks read once per turn) —
        when the view wraps the search's own store (as wired); any other search is returned as it is."""
        return scoped_search(search, self.reads)

    @property
    def needs_retrieval(self) -> bool:
        """Spec §1.5 ``NeedsRetrieval`` with Knora's unknown-intent rule."""
        if self.state.intent == Intent.WEB_SEARCH:
            return self.request.web_search_enabled
        return needs_kb_retrieval(self.state.intent)

    @property
    def search_query(self) -> str:
        return self.state.rewrite_query.strip() or self.request.query

    @property
    def cancelled(self) -> bool:
        return self.ctx.cancelled.is_set()

    async def chat_model(self, chat_models: ChatModels, model_id: str = "") -> ChatModel:
        """Resolve a chat model once per turn: several stages ask for the same one, and resolving an unset id
        reads the models table."""
        key = model_id or ""
        if key not in self.state.models:
            self.state.models[key] = await chat_models.get(model_id or None, tenant_id=self.request.tenant_id)
        return self.state.models[key]

    def note(self, stage: str, **info: Any) -> None:
        """Record what a stage kept, for the STAGE_TIMING event and the message's debug field."""
        self.state.stage_info.setdefault(stage, {}).update(info)

    def clone(self) -> ChatManage:
        s = self.state
        state = PipelineState(
            rewrite_query=s.rewrite_query, intent=s.intent, image_description=s.image_description,
            quoted_context=s.quoted_context, system_prompt_override=s.system_prompt_override,
            rendered_contexts=s.rendered_contexts, entity=list(s.entity), entity_kb_ids=list(s.entity_kb_ids),
        )
        return ChatManage(request=self.request, state=state, ctx=self.ctx, reads=self.reads)
