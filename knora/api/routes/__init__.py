"""One router per resource, mounted under /api/v1 by knora.api.app."""
