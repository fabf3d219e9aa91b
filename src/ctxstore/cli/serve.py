"""``ctxstore serve``: the HTTP service (the http extra; docs/http.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, positive_int
from ctxstore.errors import ConfigurationError

if TYPE_CHECKING:
    from ctxstore.settings import Settings

#: The settings' defaults for the two options that default to a setting, restated so that
#: the parser needs no pydantic (tests/unit/test_cli_imports.py holds them equal to
#: Settings.model_fields).
SETTING_DEFAULTS = {"http_max_body_bytes": 4 * 1024 * 1024, "http_pool_size": 10}


def register(commands: Commands) -> None:
    serve = commands.add_parser(
        "serve", help="the HTTP service (needs the http extra; docs/http.md)"
    )
    add_database_url(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    serve.add_argument(
        "--port", type=positive_int, default=8080, help="port (default: %(default)s)"
    )
    serve.add_argument(
        "--workers", type=positive_int, default=1, help="processes (default: %(default)s)"
    )
    serve.add_argument(
        "--tokens-file",
        type=Path,
        help="a file of token grants, one a line (default: $CTXSTORE_HTTP_TOKENS_FILE; "
        "$CTXSTORE_HTTP_TOKENS, the grants themselves, wins over both)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=positive_int,
        help="largest request body in bytes (default: "
        f"{SETTING_DEFAULTS['http_max_body_bytes']}, $CTXSTORE_HTTP_MAX_BODY_BYTES)",
    )
    serve.add_argument(
        "--pool-size",
        type=positive_int,
        help="connections per worker (default: "
        f"{SETTING_DEFAULTS['http_pool_size']}, $CTXSTORE_HTTP_POOL_SIZE)",
    )
    serve.add_argument(
        "--graceful-timeout",
        type=positive_int,
        default=30,
        help="seconds SIGTERM waits for requests in flight (default: %(default)s)",
    )
    serve.add_argument(
        "--keep-alive",
        type=positive_int,
        default=75,
        help="idle connection seconds (default: %(default)s)",
    )
    serve.add_argument("--ssl-certfile", type=Path, help="TLS certificate chain (PEM)")
    serve.add_argument("--ssl-keyfile", type=Path, help="TLS private key (PEM)")
    serve.add_argument(
        "--ssl-ca-certs", type=Path, help="require client certificates signed by these CAs"
    )
    serve.add_argument("--no-access-log", action="store_true", help="no line per request")
    serve.add_argument(
        "--new-token",
        metavar="NAME:SCOPES",
        help="print a new token and its grant line (e.g. go-backend:read,write), then exit",
    )
    serve.add_argument(
        "--openapi", action="store_true", help="print the OpenAPI document, then exit"
    )
    serve.set_defaults(func=run)


def run(args: argparse.Namespace, _settings: Settings) -> int:
    # Each worker loads the settings itself (ctxstore.http.app): the options travel to
    # them as environment variables.
    try:
        from ctxstore.http import server  # noqa: PLC0415 - the http extra
    except ImportError as error:
        raise ConfigurationError(
            f"ctxstore serve needs the http extra ({error.name} is missing): "
            "pip install 'ctxstore[http]'"
        ) from None
    if args.new_token:
        return server.print_new_token(args.new_token)
    if args.openapi:
        return server.print_openapi()
    return server.serve(
        server.ServeOptions(
            host=args.host,
            port=args.port,
            workers=args.workers,
            database_url=args.database_url,
            tokens_file=args.tokens_file,
            max_body_bytes=args.max_body_bytes,
            pool_size=args.pool_size,
            graceful_timeout=args.graceful_timeout,
            keep_alive=args.keep_alive,
            ssl_certfile=args.ssl_certfile,
            ssl_keyfile=args.ssl_keyfile,
            ssl_ca_certs=args.ssl_ca_certs,
            access_log=not args.no_access_log,
        )
    )
