"""``null`` for a list or object field means "absent" (issue 13): WeKnora's Go clients send ``null`` for an
unset slice, map or pointer to a struct, and its handlers read that as "not given". ``absent_nulls`` drops
such keys from a parsed body before pydantic sees it, so that the field's default applies — at the top level,
inside nested models and inside lists (and dict values) of models. A field typed ``object`` that documents an
array or object (``knora.api.schemas.wire``) counts as a list or object field. A field whose type allows
None keeps the None; a scalar field given ``null`` is left to pydantic, which refuses it as before."""

from __future__ import annotations

import collections.abc as abc
import types
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, WithJsonSchema
from pydantic.fields import FieldInfo

_SEQUENCES = (list, tuple, set, frozenset, abc.Sequence, abc.MutableSequence, abc.Set, abc.MutableSet,
              abc.Collection, abc.Iterable)
_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _union_members(tp: Any) -> tuple[Any, ...] | None:
    """The members of ``X | Y`` (or ``Optional``/``Union``), each unwrapped; None if ``tp`` is no union."""
    if get_origin(tp) in (Union, types.UnionType):
        return tuple(_unwrap(a) for a in get_args(tp))
    return None


def _is_container(tp: Any) -> bool:
    """A list/set/tuple/dict type or a model (bare or parametrised)."""
    origin = get_origin(tp) or tp
    return _is_model(tp) or origin in _SEQUENCES or origin in _MAPPINGS


def null_is_absent(tp: Any) -> bool:
    """True for a field type whose ``null`` means "absent": a container or model, or a union of them
    that does not allow None."""
    tp = _unwrap(tp)
    members = _union_members(tp)
    if members is None:
        return _is_container(tp)
    if type(None) in members or Any in members:
        return False
    return any(_is_container(m) for m in members)


def _has_model(tp: Any) -> bool:
    """True if a model can occur somewhere inside a value of type ``tp``."""
    tp = _unwrap(tp)
    if _is_model(tp):
        return True
    return any(_has_model(a) for a in get_args(tp) if a is not Ellipsis)


def _documented_container(info: FieldInfo) -> bool:
    """A field typed ``object`` that documents a JSON array or object (``knora.api.schemas.wire``: the
    service validates it by hand, so pydantic alone would pass the ``null`` on as if it were sent)."""
    return any(isinstance(m, WithJsonSchema) and isinstance(m.json_schema, dict)
               and m.json_schema.get("type") in ("array", "object") for m in info.metadata)


@dataclass(frozen=True)
class _Field:
    tp: Any
    null_is_absent: bool
    has_model: bool


@cache
def _fields(model: type[BaseModel]) -> dict[str, _Field]:
    """The body keys of ``model`` (names and string aliases) with what ``absent_nulls`` needs of each."""
    out: dict[str, _Field] = {}
    for name, info in model.model_fields.items():
        absent = null_is_absent(info.annotation) or _documented_container(info)
        f = _Field(info.annotation, absent, _has_model(info.annotation))
        for key in (name, info.alias, info.validation_alias):
            if isinstance(key, str):
                out[key] = f
    return out


def _clean(tp: Any, value: Any) -> Any:
    """``value`` (of field type ``tp``) with ``absent_nulls`` applied to every model inside it."""
    tp = _unwrap(tp)
    if _is_model(tp):
        return absent_nulls(tp, value) if isinstance(value, dict) else value
    members = _union_members(tp)
    if members is not None:
        shaped = [m for m in members if _has_model(m)
                  and (_is_model(m) or get_origin(m) in _MAPPINGS) == isinstance(value, dict)]
        return _clean(shaped[0], value) if len(shaped) == 1 else value
    origin, args = get_origin(tp), get_args(tp)
    if origin in _SEQUENCES and isinstance(value, list) and args:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return value  # a fixed-shape tuple: left as it is
        return [_clean(args[0], v) for v in value]
    if origin in _MAPPINGS and isinstance(value, dict) and len(args) == 2:
        return {k: _clean(args[1], v) for k, v in value.items()}
    return value


def absent_nulls(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the keys whose ``null`` means "absent" for ``model`` (recursively); a new dict,
    ``data`` itself is not changed. Keys the model does not know are kept as they are."""
    fields = _fields(model)
    out: dict[str, Any] = {}
    for key, value in data.items():
        f = fields.get(key)
        if f is None:
            out[key] = value
        elif value is None:
            if not f.null_is_absent:
                out[key] = value
        else:
            out[key] = _clean(f.tp, value) if f.has_model else value
    return out
