"""Knowledge-graph stores (GraphStore port)."""
