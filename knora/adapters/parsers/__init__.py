"""File parsers, one module per format, behind ``knora.ports.parser.Parser``; pick one with ``registry``."""
