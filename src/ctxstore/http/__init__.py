"""The HTTP service (``ctxstore serve``): ctxstore's API for the Go backend and every
other language.  Needs the ``http`` extra: ``pip install 'ctxstore[http]'``.

Handlers translate HTTP to the library and back and hold no storage logic; see
docs/http.md for the resources, conditional requests, errors and tokens.

server.py (``ctxstore serve`` under uvicorn), app.py (the ASGI app and the store's
lifetime), settings.py, middleware.py (authentication, body size, logging), auth.py and
security.py (tokens and scopes), routes.py and ops.py (the resources; probes, metrics,
OpenAPI), registry.py (route declaration), bodies.py, schemas.py, conditions.py (ETags),
problems.py (RFC 9457 errors), docs.py and openapi.py (the OpenAPI document), logs.py,
metrics.py.
"""
