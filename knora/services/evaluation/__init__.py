"""Evaluation: BEIR-layout datasets, retrieval and answer metrics, the runner behind ``knora eval`` and the
``/evaluation`` routes (docs/evaluation.md)."""
