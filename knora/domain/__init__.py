"""Plain typed records shared by every layer. No I/O here."""
