"""The ``knora`` command line."""
