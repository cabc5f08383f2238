"""Which chunks answer a query: hybrid search, fusion, FAQ rules, scoping and query expansion (spec §3, §1.8,
§2.7)."""
