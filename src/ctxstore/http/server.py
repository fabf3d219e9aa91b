"""``ctxstore serve``: the service under uvicorn, its logging, and its helper outputs.

uvicorn is the ASGI server: one process, or ``--workers N`` processes sharing the
socket.  Each option has a ``CTXSTORE_HTTP_*`` setting; an option given is exported as
its variable, so every worker reads the same configuration.  SIGTERM (or Ctrl-C) stops
accepting connections, lets the requests in flight finish (up to ``--graceful-timeout``
seconds), closes the pool and exits 0.
"""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ctxstore.errors import ConfigurationError
from ctxstore.http.auth import TOKENS_FILE_ENV, new_token
from ctxstore.http.connections import LOOP_FACTORY
from ctxstore.http.logs import configure_logging
from ctxstore.http.metrics import MULTIPROC_ENV
from ctxstore.http.settings import HttpSettings
from ctxstore.settings import DEFAULT_HOST, Settings, load_settings

APP = "ctxstore.http.app:app_from_environment"


@dataclass(frozen=True)
class ServeOptions:
    """What the supervisor binds and how it stops, resolved: each option given, else
    its ``CTXSTORE_HTTP_*`` variable, else the setting's default."""

    host: str = DEFAULT_HOST
    port: int = 8080
    workers: int = 1
    graceful_timeout: int = 30
    #: Seconds an idle keep-alive connection stays open: above a client's idle timeout
    #: would be safest; 75 s, as nginx, leaves Go's 90 s default racing only rarely.
    keep_alive: int = 75
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_ca_certs: Path | None = None
    #: The options given, as the variables they stand for ({"CTXSTORE_HTTP_POOL_SIZE":
    #: "4"}): exported before uvicorn starts, so that every worker, which loads the
    #: settings itself, reads what the supervisor resolved.
    exported: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def resolve(cls, settings: Settings, given: Mapping[str, str] | None = None) -> ServeOptions:
        """``settings`` with the options ``given`` (setting name: text) over them,
        validated as the environment's values are (a bad one names its variable)."""
        given = dict(given or {})
        resolved = settings.replaced(given)
        return cls(
            host=resolved.http_host,
            port=resolved.http_port,
            workers=resolved.http_workers,
            graceful_timeout=resolved.http_graceful_timeout,
            keep_alive=resolved.http_keep_alive,
            ssl_certfile=_path(resolved.http_ssl_certfile),
            ssl_keyfile=_path(resolved.http_ssl_keyfile),
            ssl_ca_certs=_path(resolved.http_ssl_ca_certs),
            exported={_variable_of(name): text for name, text in given.items()},
        )


def _path(value: str | None) -> Path | None:
    return Path(value) if value is not None else None


def _variable_of(setting: str) -> str:
    alias = Settings.model_fields[setting].validation_alias
    if not isinstance(alias, str):
        raise ConfigurationError(f"{setting!r} is not a ctxstore setting")
    return alias


def serve(options: ServeOptions) -> int:
    import uvicorn  # noqa: PLC0415 - the http extra; its absence is reported by the CLI

    os.environ.update(options.exported)
    # What each worker will load: refuse a bad configuration before binding the port.
    settings = load_settings()
    HttpSettings.from_settings(settings)
    if (options.ssl_certfile is None) != (options.ssl_keyfile is None):
        raise ConfigurationError(
            "--ssl-certfile and --ssl-keyfile (CTXSTORE_HTTP_SSL_CERTFILE and "
            "CTXSTORE_HTTP_SSL_KEYFILE) go together"
        )
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
