"""One typing.Protocol per capability. Services depend on these; adapters implement them."""
