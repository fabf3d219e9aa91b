"""The HTTP service (``ctxstore serve``): ctxstore's API for the Go backend and every
other language.  Needs the ``http`` extra: ``pip install 'ctxstore[http]'``.

Handlers translate HTTP to the library and back and hold no storage logic; see
docs/http.md for the resources, conditional requests, errors and tokens.
"""
