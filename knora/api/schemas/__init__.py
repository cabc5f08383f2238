"""Request and response models of the HTTP API, one module per router area.

They document WeKnora's JSON field names and types in ``/openapi.json``. Request models are read with
``knora.api.body.read_body``; response models are named with ``response_model=`` while routes keep returning
the envelope they build themselves (``knora.api.envelope.ok``): FastAPI sends a returned ``Response`` as it
is, so the bytes on the wire do not depend on these models.
"""
