"""``ctxstore serve``: the HTTP service (the http extra; docs/http.md).

Every option but the helper outputs (--new-token, --openapi) has an environment form, a
``CTXSTORE_*`` setting (docs/configuration.md): the option wins, the variable comes
next, then the setting's default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxstore.cli.options import Commands, add_database_url, positive_int
from ctxstore.errors import ConfigurationError

if TYPE_CHECKING:
    from ctxstore.settings import Settings

#: The settings' defaults the help shows, restated so that the parser needs no pydantic
#: (tests/unit/test_cli_imports.py holds them equal to Settings.model_fields).
SETTING_DEFAULTS: dict[str, object] = {
    "http_host": "127.0.0.1",
    "http_port": 8080,
    "http_workers": 1,
    "http_max_body_bytes": 4 * 1024 * 1024,
    "http_pool_size": 10,
    "http_graceful_timeout": 30,
    "http_keep_alive": 75,
    "http_log_format": "text",
    "http_log_level": "info",
}
#: The values of --log-format and --log-level, as ctxstore.settings allows them (the
#: same test holds the two equal).
LOG_CHOICES = {
    "http_log_format": ("text", "json"),
    "http_log_level": ("debug", "info", "warning", "error"),
}
#: Each option's destination and the setting it stands for: what a given option exports
#: as that setting's variable (``CTXSTORE_`` and the name in capitals).
OPTION_SETTINGS = {
    "database_url": "database_url",
    "host": "http_host",
    "port": "http_port",
    "workers": "http_workers",
    "tokens_file": "http_tokens_file",
    "max_body_bytes": "http_max_body_bytes",
    "pool_size": "http_pool_size",
    "graceful_timeout": "http_graceful_timeout",
    "keep_alive": "http_keep_alive",
    "ssl_certfile": "http_ssl_certfile",
    "ssl_keyfile": "http_ssl_keyfile",
    "ssl_ca_certs": "http_ssl_ca_certs",
    "log_format": "http_log_format",
    "log_level": "http_log_level",
}


def port_number(value: str) -> int:
    number = positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number up to 65535, not {value!r}")
    return number


def _variable(setting: str) -> str:
    return "$CTXSTORE_" + setting.upper()


def _falls_back(what: str, setting: str) -> str:
    """Help that names the setting an option falls back to, and its default."""
    default = SETTING_DEFAULTS.get(setting)
    fallback = f", else {default}" if default is not None else ""
    return f"{what} (default: {_variable(setting)}{fallback})"


def _setting_option(parser: argparse.ArgumentParser, flag: str, what: str, **options: Any) -> None:
    """An option that defaults to None: not given, the setting decides."""
    dest = flag.removeprefix("--").replace("-", "_")
    parser.add_argument(flag, help=_falls_back(what, OPTION_SETTINGS[dest]), **options)


def register(commands: Commands) -> None:
    serve = commands.add_parser(
        "serve", help="the HTTP service (needs the http extra; docs/http.md)"
    )
    add_database_url(serve)
    _setting_option(serve, "--host", "address to bind, 0.0.0.0 for every interface")
    _setting_option(serve, "--port", "port", type=port_number)
    _setting_option(serve, "--workers", "processes, each with its pool", type=positive_int)
    serve.add_argument(
        "--tokens-file",
        type=Path,
        help="a file of token grants, one a line (default: $CTXSTORE_HTTP_TOKENS_FILE; "
        "$CTXSTORE_HTTP_TOKENS, the grants themselves, wins over both)",
    )
    _setting_option(serve, "--max-body-bytes", "largest request body in bytes", type=positive_int)
    _setting_option(serve, "--pool-size", "connections per worker", type=positive_int)
    _setting_option(
        serve,
        "--graceful-timeout",
        "seconds SIGTERM waits for requests in flight",
        type=positive_int,
    )
    _setting_option(serve, "--keep-alive", "idle connection seconds", type=positive_int)
    _setting_option(serve, "--ssl-certfile", "TLS certificate chain (PEM)", type=Path)
    _setting_option(serve, "--ssl-keyfile", "TLS private key (PEM)", type=Path)
    _setting_option(
        serve,
        "--ssl-ca-certs",
        "require client certificates signed by these CAs",
        type=Path,
    )
    serve.add_argument(
        "--no-access-log",
        action="store_true",
        help="no line per request (default: $CTXSTORE_HTTP_ACCESS_LOG, else a line each)",
    )
    _setting_option(
        serve,
        "--log-format",
        "text or one JSON object a line",
        choices=LOG_CHOICES["http_log_format"],
    )
    _setting_option(serve, "--log-level", "log level", choices=LOG_CHOICES["http_log_level"])
    serve.add_argument(
        "--new-token",
        metavar="NAME:SCOPES",
        help="print a new token and its grant line (e.g. go-backend:read,write), then exit",
    )
    serve.add_argument(
        "--openapi", action="store_true", help="print the OpenAPI document, then exit"
    )
    serve.set_defaults(func=run)


def given_settings(args: argparse.Namespace) -> dict[str, str]:
    """The options given, as the settings they stand for (field name: text, as the
    environment would spell it)."""
    given = {
        setting: str(getattr(args, dest))
        for dest, setting in OPTION_SETTINGS.items()
        if getattr(args, dest) is not None
    }
    if args.no_access_log:
        given["http_access_log"] = "0"
    return given


def run(args: argparse.Namespace, settings: Settings) -> int:
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
    # Each worker loads the settings itself (ctxstore.http.app): the options given travel
    # to them as the variables they stand for.
    return server.serve(server.ServeOptions.resolve(settings, given_settings(args)))
