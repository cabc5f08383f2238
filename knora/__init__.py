"""Knora: WeKnora's question-answering runtime, in Python."""

__version__ = "0.1.0"
