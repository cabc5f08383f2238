"""``ChatModelWrapper``: the base of a ``ChatModel`` that adds behaviour around another one (deadlines,
metering) and forwards everything else, so wrappers stack in any order and a caller probing an optional
capability (``generative``, ``close``) still finds the innermost model's."""

from __future__ import annotations

from typing import Any

from knora.ports.chat import ChatModel


class ChatModelWrapper:
    def __init__(self, inner: ChatModel) -> None:
        self._inner = inner

    @property
    def inner(self) -> ChatModel:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def supports_tools(self) -> bool:
        return self._inner.supports_tools

    def __getattr__(self, name: str) -> Any:
        # Optional capabilities callers probe with getattr (``generative``, ``close``) stay the inner model's.
        return getattr(self._inner, name)
