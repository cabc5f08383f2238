"""Document ingestion: upload / URL / manual text → parse → chunk → embed → chunk rows + retrieval index."""
