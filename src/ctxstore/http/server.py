"""``ctxstore serve``: the service under uvicorn, its logging, and its helper outputs.

uvicorn is the ASGI server: one process, or ``--workers N`` processes sharing the
socket.  Options become environment variables (ctxstore.http.settings) so every worker
reads the same configuration.  SIGTERM (or Ctrl-C) stops accepting connections, lets
the requests in flight finish (up to ``--graceful-timeout`` seconds), closes the pool
and exits 0.
"""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ctxstore.db.engine import DATABASE_URL_ENV
from ctxstore.errors import ConfigurationError
from ctxstore.http.auth import TOKENS_FILE_ENV, new_token
from ctxstore.http.connections import LOOP_FACTORY
from ctxstore.http.logs import configure_logging
from ctxstore.http.metrics import MULTIPROC_ENV
from ctxstore.http.settings import (
    ACCESS_LOG_ENV,
    MAX_BODY_ENV,
    POOL_SIZE_ENV,
    HttpSettings,
)
from ctxstore.settings import load_settings

APP = "ctxstore.http.app:app_from_environment"


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    database_url: str | None = None
    tokens_file: Path | None = None
    max_body_bytes: int | None = None
    pool_size: int | None = None
    graceful_timeout: int = 30
    #: Seconds an idle keep-alive connection stays open: above a client's idle timeout
    #: would be safest; 75 s, as nginx, leaves Go's 90 s default racing only rarely.
    keep_alive: int = 75
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_ca_certs: Path | None = None
    access_log: bool = True


def serve(options: ServeOptions) -> int:
    import uvicorn  # noqa: PLC0415 - the http extra; its absence is reported by the CLI

    _export(options)
    # What each worker will load: refuse a bad configuration before binding the port.
    settings = load_settings()
    HttpSettings.from_settings(settings)
    if (options.ssl_certfile is None) != (options.ssl_keyfile is None):
        raise ConfigurationError("--ssl-certfile and --ssl-keyfile go together")
    configure_logging(settings.http_log_format, settings.http_log_level)
    metrics_dir = None
    if options.workers > 1 and not os.environ.get(MULTIPROC_ENV):
        # Each worker writes its samples here; a scrape sums them (metrics.py).
        metrics_dir = tempfile.mkdtemp(prefix="ctxstore-metrics-")
        os.environ[MULTIPROC_ENV] = metrics_dir
    if options.workers == 1:
        # uvicorn raises the signal again once it has shut down: ignored, the process
        # ends with 0 like the multi-worker supervisor does.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        uvicorn.run(
            APP,
            factory=True,
            # The connection limits uvicorn lacks: an event loop whose servers put a
            # gate in front of uvicorn's protocol (connections.py).
            loop=LOOP_FACTORY,
            http="httptools",
            ws="none",
            host=options.host,
            port=options.port,
            workers=options.workers,
            log_config=None,
            access_log=False,  # ours names the route template, never the ids in the path
            server_header=False,
            timeout_graceful_shutdown=options.graceful_timeout,
            timeout_keep_alive=options.keep_alive,
            ssl_certfile=options.ssl_certfile,
            ssl_keyfile=options.ssl_keyfile,
            ssl_ca_certs=options.ssl_ca_certs,
            ssl_cert_reqs=ssl.CERT_REQUIRED if options.ssl_ca_certs else ssl.CERT_NONE,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def _export(options: ServeOptions) -> None:
    if options.database_url:
        os.environ[DATABASE_URL_ENV] = options.database_url
    if options.tokens_file is not None:
        os.environ[TOKENS_FILE_ENV] = str(options.tokens_file)
    if options.max_body_bytes is not None:
        os.environ[MAX_BODY_ENV] = str(options.max_body_bytes)
    if options.pool_size is not None:
        os.environ[POOL_SIZE_ENV] = str(options.pool_size)
    os.environ[ACCESS_LOG_ENV] = "1" if options.access_log else "0"


def print_new_token(spec: str) -> int:
    """``--new-token NAME:SCOPES``: a token (shown once) and the line that grants it."""
    name, _, scopes = spec.partition(":")
    token, line = new_token(name, scopes.split(","))
    print(f"token (give it to the client; it is not stored anywhere): {token}")
    print(f"grant (add this line to {TOKENS_FILE_ENV}'s file or to CTXSTORE_HTTP_TOKENS):")
    print(line)
    return 0


def print_openapi() -> int:
    from ctxstore.http.app import documentation_app  # noqa: PLC0415
    from ctxstore.http.openapi import openapi_document, render  # noqa: PLC0415

    sys.stdout.write(render(openapi_document(documentation_app())))
    return 0
