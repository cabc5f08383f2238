"""Embedders behind ``knora.ports.embedder.Embedder``; build one from a ``provider:model`` spec with
``registry``."""
