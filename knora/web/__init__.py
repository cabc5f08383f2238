"""Knora's own browser UI: static ES modules served at ``/`` by ``knora.web.mount``."""
