"""Context assembly on top of the storage.

manager.py (ContextManager: add messages without losing one), compression.py (which
messages go into a context), builder.py (ContextBuilder: the Context Contract within a
token budget).
"""
