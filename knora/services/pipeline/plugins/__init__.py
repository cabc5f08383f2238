"""One module per pipeline plugin; ``registration.py`` lists them in WeKnora's DI order (spec §1.1)."""
