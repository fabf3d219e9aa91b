"""OpenAI's tiktoken rank files, gzipped (read by ctxstore.encodings)."""
