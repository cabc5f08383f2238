"""Stream logs and stop signals: memory (embedded) and Redis (several replicas)."""
