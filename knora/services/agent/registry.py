"""The tool registry: the engine's only view of tools (spec §6.4.2, §6.6).

First registration of a name wins (a later MCP tool cannot hijack a built-in), definitions are sorted by name
so the prompt prefix is stable across rounds and turns (provider prompt caching), arguments are coerced and
validated against the tool's JSON schema before ``execute`` runs, every call has a timeout, and the output the
model sees is capped (head 70 % + tail 30 %) so one tool cannot flood the context window.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import jsonschema
import jsonschema.protocols
import jsonschema.validators

from knora.ports.tool import Tool, ToolContext, ToolResult, tool_output_limit, tool_timeout

log = logging.getLogger(__name__)

DEFAULT_MAX_OUTPUT_CHARS = 24000
DEFAULT_TOOL_TIMEOUT = 60.0
_RESERVED = 200
ERROR_HINT = "\n\n[Analyze the error above and try a different approach.]"


def truncate_output(text: str, budget: int) -> str:
    """Spec §6.4.2 ``TruncateToolOutput``: keep head 70 % / tail 30 % of (budget − 200), with a marker."""
    if len(text) <= budget:
        return text
    keep = max(budget - _RESERVED, 0)
    head = keep * 7 // 10
    tail = keep - head
    marker = (f"\n\n... [output truncated: {len(text)} → {head + tail} chars, "
              f"showing first {head} + last {tail}] ...\n\n")
    return text[:head] + marker + (text[-tail:] if tail else "")


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _cast(value: Any, schema: dict[str, Any]) -> Any:
    """Coerce the string forms models like to send ("3", "true", "[…]") into the schema's type
    (CastParams)."""
    typ = schema.get("type")
    types = typ if isinstance(typ, list) else [typ]
    if isinstance(value, str):
        text = value.strip()
        if "integer" in types and _is_int(text):
            return int(text)
        if "number" in types:
            try:
                return float(text)
            except ValueError:
                pass
        if "boolean" in types and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        if "array" in types and "string" not in types:
            return [value]
    if isinstance(value, list) and "array" in types and isinstance(schema.get("items"), dict):
        return [_cast(v, schema["items"]) for v in value]
    if isinstance(value, dict) and "object" in types:
        return cast_args(value, schema)
    return value


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def cast_args(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    return {k: (_cast(v, props[k]) if isinstance(props.get(k), dict) else v) for k, v in args.items()}


_VALIDATORS: dict[int, tuple[dict[str, Any], jsonschema.protocols.Validator]] = {}


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """Validators are cached per schema object: building one costs more than validating small arguments."""
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    if len(_VALIDATORS) > 4096:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def validate_args(args: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Schema errors as readable lines; extra properties are allowed (spec §6.4.2)."""
    if not schema:
        return []
    try:
        found = sorted(_validator(schema).iter_errors(args), key=lambda e: [str(p) for p in e.path])
    except (jsonschema.SchemaError, TypeError, ValueError, LookupError):
        log.info("tool schema is not valid JSON schema; arguments not validated")  # e.g. a sloppy MCP server
        return []
    errors = []
    for err in found:
        where = ".".join(str(p) for p in err.path) or "arguments"
        errors.append(f"{where}: {err.message}")
    return errors


class ToolRegistry:
    def __init__(self, *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
                 default_timeout: float = DEFAULT_TOOL_TIMEOUT) -> None:
        self._tools: dict[str, Tool] = {}
        self.max_output_chars = max_output_chars if max_output_chars > 0 else DEFAULT_MAX_OUTPUT_CHARS
        self.default_timeout = default_timeout

    def register(self, tool: Tool) -> bool:
        """False (and a warning) when the name is taken: the first registration wins."""
        if tool.name in self._tools:
            log.warning("tool %r already registered; later registration refused", tool.name)
            return False
        self._tools[tool.name] = tool
        return True

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def tools(self) -> list[Tool]:
        return [self._tools[n] for n in self.names()]

    def definitions(self) -> list[dict[str, Any]]:
        """OpenAI function tools, sorted by name."""
        return [{"type": "function", "function": {
            "name": t.name, "description": t.description,
            "parameters": t.parameters or {"type": "object", "properties": {}}}} for t in self.tools()]

    async def execute(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Never raises for tool-side problems: every failure becomes a ``success=False`` result with a
        hint."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.fail(f"tool not found: {name}. Available tools: {', '.join(self.names())}"
                                   + ERROR_HINT)
        schema = tool.parameters or {}
        args = cast_args(args, schema)
        problems = validate_args(args, schema)
        if problems:
            return ToolResult.fail("Invalid tool arguments:\n" + "\n".join(problems) + ERROR_HINT)
        timeout = tool_timeout(tool) or self.default_timeout
        try:
            result = await asyncio.wait_for(tool.execute(args, ctx), timeout=timeout)
        except TimeoutError:
            return ToolResult.fail(f"tool {name} timed out after {timeout:g}s" + ERROR_HINT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("tool %s raised", name, exc_info=True)
            return ToolResult.fail(f"{type(exc).__name__}: {exc}" + ERROR_HINT)
        budget = max(self.max_output_chars, tool_output_limit(tool) or 0)
        result = result.model_copy(update={"output": truncate_output(result.output, budget)})
        if not result.success and not result.error.endswith(ERROR_HINT):
            result = result.model_copy(update={"error": (result.error or "tool call failed") + ERROR_HINT})
        return result

    async def cleanup(self) -> None:
        for tool in self._tools.values():
            close = getattr(tool, "cleanup", None)
            if close is not None:
                try:
                    await close()
                except Exception:
                    log.debug("cleanup of %s failed", tool.name, exc_info=True)
