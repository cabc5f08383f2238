"""The tenant setting ``parser-engine-config`` as Knora has it.

WeKnora's setting configures its optional remote parse engines (MinerU, MinerU cloud, PaddleOCR-VL …) and
the engines chat attachments are parsed with. Knora parses every document in process with its parser
registry (``GET /system/parser-engines`` lists it) and has none of those engines, so the setting is empty:
reading it answers no endpoint, no key and no rules, and writing it accepts what the UI sends when nothing
is set (empty strings, ``false``, ``null``, ``[]``) and refuses any value, naming the field, rather than
storing a configuration Knora would not use."""

from __future__ import annotations

from typing import Any

from knora.domain.errors import ValidationFailed


def parser_engine_config() -> dict[str, Any]:
    return {"chat_parser_engine_rules": [], "mineru_endpoint": "", "mineru_api_key": ""}


def _unset(value: object) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def check_parser_engine_config(body: dict[str, Any]) -> dict[str, Any]:
    for field in sorted(body):
        if not _unset(body[field]):
            raise ValidationFailed(f"{field}: Knora has no configurable parse engine (documents are parsed "
                                   "in process by its parser registry; see GET /system/parser-engines)")
    return parser_engine_config()
