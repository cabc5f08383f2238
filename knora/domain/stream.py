"""Events on the per-request bus, and stream events in the append-only log (spec §5, api §2)."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, Field

_M = TypeVar("_M", bound=BaseModel)


class BusEvent(StrEnum):
    """Bus event types that producers (pipeline, agent, title generator) emit; spec appendix A.1."""

    THOUGHT = "thought"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    REFLECTION = "reflection"
    REFERENCES = "references"
    FINAL_ANSWER = "final_answer"
    ERROR = "error"
    SESSION_TITLE = "session_title"
    STOP = "stop"
    AGENT_COMPLETE = "agent.complete"
    TOOL_APPROVAL_REQUIRED = "tool_approval_required"
    TOOL_APPROVAL_RESOLVED = "tool_approval_resolved"
    STAGE_TIMING = "stage_timing"  # Knora: per-stage milliseconds and what each stage kept (debug view)


class ResponseType(StrEnum):
    """``response_type`` values on the wire (api §2.3)."""

    AGENT_QUERY = "agent_query"
    ANSWER = "answer"
    REFERENCES = "references"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    ERROR = "error"
    REFLECTION = "reflection"
    SESSION_TITLE = "session_title"
    COMPLETE = "complete"
    STOP = "stop"
    TOOL_APPROVAL_REQUIRED = "tool_approval_required"
    TOOL_APPROVAL_RESOLVED = "tool_approval_resolved"
    DEBUG = "debug"  # Knora extension: stage timings; ignored by WeKnora clients


TERMINAL_TYPES = frozenset({ResponseType.COMPLETE, ResponseType.STOP})


class Event(BaseModel):
    """One event on the per-request bus."""

    type: BusEvent
    id: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class StreamEvent(BaseModel):
    """One entry of the append-only stream log; ``seq`` is assigned by the log (0-based, gap-free)."""

    seq: int = -1
    id: str = ""
    type: str
    content: str = ""
    done: bool = False
    timestamp: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)
    # Who this append is, for the log only (never dumped): a log that may send an append twice (a retry after
    # a lost reply, or a caller retrying the same event) stores an event whose key it has seen once, and
    # returns the seq it got. The Redis log sets it at the first append of an event that has none.
    append_key: str = Field(default="", exclude=True)


def _built(cls: type[_M], values: dict[str, Any]) -> _M:
    """An instance from values that are already valid and complete (every field given), without validation.

    ``model_construct`` does the same with per-field default and alias handling; on the per-token path of a
    thousand concurrent streams that handling was a measurable share of the process's work."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


def stream_event(type_: str, content: str = "", done: bool = False, data: dict[str, Any] | None = None,
                 event_id: str = "", *, seq: int = -1, timestamp: float | None = None) -> StreamEvent:
    """A ``StreamEvent`` built by trusted code (the stream handler, the logs) without validation."""
    return _built(StreamEvent, {"seq": seq, "id": event_id, "type": type_, "content": content, "done": done,
                                "timestamp": time.time() if timestamp is None else timestamp,
                                "data": {} if data is None else data, "append_key": ""})


def bus_event(type_: BusEvent, data: dict[str, Any], event_id: str) -> Event:
    """An ``Event`` built by the bus itself without validation (``type_`` is a ``BusEvent``)."""
    return _built(Event, {"type": type_, "id": event_id, "data": data})
