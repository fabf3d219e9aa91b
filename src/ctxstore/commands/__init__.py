"""What the ``ctxstore`` command's subcommands do, apart from the library's API.

One module per command (or group), each built on the public storage API and ``ctxstore.db``;
``ctxstore.cli`` parses the arguments and calls them, and each is usable from Python too:

- ``analytics``: the reports (``ctxstore analytics``, ``ctxstore db min-group-size``);
- ``aggregates``: the free-text counts they read (``ctxstore analytics refresh``);
- ``demo``: ``ctxstore demo`` and ``ctxstore dev``;
- ``sample``: ``ctxstore seed-sample``;
- ``upgrade``: ``ctxstore upgrade-data``;
- ``recount``: ``ctxstore recount``;
- ``redis_import``: ``ctxstore import-redis``;
- ``expiry``: ``ctxstore purge-expired``;
- ``rotate_keys``: ``ctxstore rotate-keys``.
"""
