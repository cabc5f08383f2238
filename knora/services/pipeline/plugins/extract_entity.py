"""``extract_entity`` (spec §2.4): ask the model for the entities of the ORIGINAL query, when a KB in scope
has a knowledge graph. Runs on ``query_understand`` after the rewrite plugin; every failure just continues.

WeKnora additionally requires ``NEO4J_ENABLE=true``; Knora's graph lives in the metadata database, so "a KB in
scope holds a graph" (``request.entity_kb_ids``, computed at assembly) is the only precondition.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from knora import prompts
from knora.domain.model_json import extract_json
from knora.ports.chat import ChatMessage, ChatOptions
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType

log = logging.getLogger(__name__)

def parse_graph(text: str) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(nodes [{name, attributes}], relations [{source, target, relation}]) from the model's reply."""
    value = extract_json(text, accept=lambda v: isinstance(v, dict | list))
    items = [value] if isinstance(value, dict) else [v for v in value if isinstance(v, dict)] \
        if isinstance(value, list) else []
    nodes: dict[str, dict[str, Any]] = {}
    relations: list[dict[str, str]] = []
    for item in items:
        if isinstance(item.get("entity"), str) and item["entity"].strip():
            name = item["entity"].strip()
            node = nodes.setdefault(name, {"name": name, "attributes": []})
            attrs = item.get("entity_attributes") or []
            node["attributes"].extend(a for a in attrs if isinstance(a, str) and a not in node["attributes"])
        elif isinstance(item.get("entity1"), str) and isinstance(item.get("entity2"), str):
            a, b = item["entity1"].strip(), item["entity2"].strip()
            if a and b and a != b:
                relations.append({"source": a, "target": b, "relation": str(item.get("relation", ""))})
    for rel in relations:
        for end in (rel["source"], rel["target"]):
            nodes.setdefault(end, {"name": end, "attributes": []})
    return list(nodes.values()), relations


class ExtractEntity:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.QUERY_UNDERSTAND,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        req = cm.request
        if not req.entity_kb_ids or self._deps.graph_store is None:
            return await next()
        try:
            model = await cm.chat_model(self._deps.chat_models, req.chat_model_id)
        except Exception as exc:  # noqa: BLE001 - spec: errors are swallowed
            log.warning("extract_entity: no model: %s", exc)
            return await next()
        if not getattr(model, "generative", True):
            return await next()
        system = prompts.content("default_extract_entity")
        user = prompts.render(prompts.user_content("default_extract_entity"), {"query": req.query})
        try:
            resp = await model.chat([ChatMessage(role="system", content=system),
                                     ChatMessage(role="user", content=user)],
                                    ChatOptions(temperature=0.3, max_tokens=4096, thinking=False,
                                                extra={"purpose": "entity_extraction"}))
            nodes, _ = parse_graph(resp.content)
        except Exception as exc:  # noqa: BLE001 - spec: errors are swallowed
            log.warning("extract_entity failed: %s", exc)
            return await next()
        cm.state.entity = [n["name"] for n in nodes]
        cm.state.entity_kb_ids = list(req.entity_kb_ids)
        cm.note("extract_entity", entities=cm.state.entity)
        return await next()
