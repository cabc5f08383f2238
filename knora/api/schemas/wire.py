"""Field types for request models that document a JSON type without validating it.

The services validate request fields themselves, with the messages WeKnora clients and our tests rely on
("name is required", "chunking_config must be an object", …); a pydantic type error would answer differently.
So a request field is declared with the type WeKnora sends (shown in ``/openapi.json``) but accepts any JSON
value (typed ``object`` so that code reading it must check), and the service or route keeps the final word.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, WithJsonSchema

Str = Annotated[object, WithJsonSchema({"type": "string"})]
Int = Annotated[object, WithJsonSchema({"type": "integer"})]
Bool = Annotated[object, WithJsonSchema({"type": "boolean"})]
Obj = Annotated[object, WithJsonSchema({"type": "object"})]
StrList = Annotated[object, WithJsonSchema({"type": "array", "items": {"type": "string"}})]
ObjList = Annotated[object, WithJsonSchema({"type": "array", "items": {"type": "object"}})]


class RequestBody(BaseModel):
    """A WeKnora request body. Unknown fields are kept (WeKnora clients send more than Knora reads)."""

    model_config = ConfigDict(extra="allow")

    def sent(self) -> dict[str, object]:
        """The fields as the client sent them (unknown ones included, none added): what the services take.

        The parsed values themselves, not ``model_dump``'s deep copy: every field is a plain JSON value, and
        copying a 20 MB body held the event loop for over a second."""
        given = self.model_fields_set
        values = {name: getattr(self, name) for name in type(self).model_fields if name in given}
        values.update(self.model_extra or {})
        return values
