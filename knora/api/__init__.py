"""Thin HTTP layer: parse, authorise, call a service, shape the response."""
