"""Secret boxes (knora/ports/secrets.py)."""
