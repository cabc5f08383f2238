"""SQLAlchemy repositories, one module per aggregate (see knora/ports/store.py for the contracts)."""
