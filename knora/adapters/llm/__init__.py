"""Chat-model and reranker providers (the wire protocols) plus the ``provider:model`` registry."""
