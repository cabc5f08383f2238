"""The PluginError catalogue (spec §1.2).

A plugin returns ``None`` (success) or a ``PluginError``. The predefined values are templates: ``with_error``
returns a copy carrying the cause, so identity comparison is replaced by ``error_type`` comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class PluginError:
    error_type: str
    description: str
    err: BaseException | str | None = None

    def with_error(self, err: BaseException | str) -> PluginError:
        return replace(self, err=err)

    @property
    def message(self) -> str:
        if self.err is None:
            return self.description
        return f"{self.description}: {self.err}"

    @property
    def is_search_nothing(self) -> bool:
        return self.error_type == ERR_SEARCH_NOTHING.error_type


ERR_SEARCH_NOTHING = PluginError("search_nothing", "No relevant content found")
ERR_SEARCH = PluginError("search_failed", "Failed to search knowledge base")
ERR_RERANK = PluginError("rerank_failed", "Reranking failed")
ERR_GET_RERANK_MODEL = PluginError("get_rerank_model_failed", "Failed to get rerank model")
ERR_GET_CHAT_MODEL = PluginError("get_chat_model_failed", "Failed to get chat model")
ERR_TEMPLATE_PARSE = PluginError("template_parse_failed", "Failed to parse context template")
ERR_TEMPLATE_EXECUTE = PluginError("template_execution_failed", "Failed to generate search content")
ERR_MODEL_CALL = PluginError("model_call_failed", "Failed to call model")
ERR_GET_HISTORY = PluginError("get_history_failed", "Failed to get conversation history")

CATALOGUE = (ERR_SEARCH_NOTHING, ERR_SEARCH, ERR_RERANK, ERR_GET_RERANK_MODEL, ERR_GET_CHAT_MODEL,
             ERR_TEMPLATE_PARSE, ERR_TEMPLATE_EXECUTE, ERR_MODEL_CALL, ERR_GET_HISTORY)
