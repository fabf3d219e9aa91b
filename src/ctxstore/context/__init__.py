"""Context assembly on top of the storage: the manager (and later, the builder)."""
