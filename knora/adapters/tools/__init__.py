"""Built-in agent tools, one module each (spec §6.13). ``registry.CATALOG`` maps a name to its factory."""
