"""The quick-answer runtime: an event-driven plugin pipeline (spec §1–§2)."""
