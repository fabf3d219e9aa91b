"""Tokenizer encodings with no network: which one a model uses, and loading it offline.

ctxstore ships OpenAI's rank files for ``o200k_base`` (GPT-4o, GPT-4.1, the o-series,
GPT-5) and ``cl100k_base`` (GPT-4, GPT-3.5) in ``ctxstore/tokenizer_data``, gzipped.  On
load each is checked against the SHA-256 tiktoken itself pins for the official file
(``tiktoken_ext.openai_public``), and tiktoken's own engine encodes with it, so the token
ids are tiktoken's by construction.  The older encodings (r50k, p50k) are not shipped:
they load through tiktoken (its cache, or a download).

Which encoding a model uses is tiktoken's own table (``tiktoken.model``), so a model
name tiktoken knows needs nothing here.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Protocol

from ctxstore.errors import InvalidInputError, TokenizerUnavailableError

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"


class Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class BundledEncoding:
    """An encoding whose rank file ships with ctxstore, as tiktoken defines it."""

    name: str
    #: Of the uncompressed rank file: tiktoken's ``expected_hash`` for the official copy.
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


# The definitions of tiktoken_ext.openai_public, as published; tests/unit/test_encodings.py
# checks them against tiktoken's own constructors.
BUNDLED: dict[str, BundledEncoding] = {
    "cl100k_base": BundledEncoding(
        name="cl100k_base",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        special_tokens={
            ENDOFTEXT: 100257,
            FIM_PREFIX: 100258,
            FIM_MIDDLE: 100259,
            FIM_SUFFIX: 100260,
            ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": BundledEncoding(
        name="o200k_base",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
}


def encoding_for_model(model: str) -> str:
    """The encoding ``model`` counts with (``gpt-4o`` -> ``o200k_base``), by tiktoken's table."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"model must be a model name such as 'gpt-4o', not {model!r}")
    from tiktoken.model import encoding_name_for_model  # noqa: PLC0415 - heavy import

    try:
        return encoding_name_for_model(model)
    except KeyError:
        raise InvalidInputError(
            f"unknown model {model!r}: tiktoken does not know which encoding it uses; "
            f"name the encoding instead ({', '.join(sorted(BUNDLED))} work offline)"
        ) from None


@lru_cache(maxsize=8)
def load_encoding(name: str) -> Encoder:
    """The encoding ``name``, loaded once per process: offline when ctxstore ships it."""
    try:
        import tiktoken  # noqa: PLC0415 - heavy import, only when counting tokens
    except ImportError as error:
        raise TokenizerUnavailableError(
            "token counting needs tiktoken: pip install tiktoken"
        ) from error
    bundled = BUNDLED.get(name)
    if bundled is not None:
        encoding: Encoder = tiktoken.Encoding(
            name=bundled.name,
            pat_str=bundled.pat_str,
            mergeable_ranks=bundled_ranks(bundled),
            special_tokens=bundled.special_tokens,
        )
        return encoding
    try:
        loaded: Encoder = tiktoken.get_encoding(name)
    except Exception as error:
        raise TokenizerUnavailableError(
            f"cannot load the tiktoken encoding {name!r}: {type(error).__name__}: {error}. "
            f"Offline, {' and '.join(sorted(BUNDLED))} are available (shipped with ctxstore); "
            "other encodings need tiktoken's cache (TIKTOKEN_CACHE_DIR) or network access."
        ) from error
    return loaded


def bundled_ranks(bundled: BundledEncoding) -> dict[bytes, int]:
    """The rank file of a shipped encoding, refused unless it is the official one."""
    packed = resources.files("ctxstore.tokenizer_data") / f"{bundled.name}.tiktoken.gz"
    try:
        contents = gzip.decompress(packed.read_bytes())
    except (OSError, EOFError) as error:
        raise TokenizerUnavailableError(
            f"the {bundled.name} rank file shipped with ctxstore is missing or damaged "
            f"({error}); reinstall ctxstore"
        ) from error
    if hashlib.sha256(contents).hexdigest() != bundled.sha256:
        raise TokenizerUnavailableError(
            f"the {bundled.name} rank file shipped with ctxstore is not the official one "
            "(its SHA-256 differs from tiktoken's); reinstall ctxstore"
        )
    # The format tiktoken.load.load_tiktoken_bpe reads: "<base64 token> <rank>" a line.
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in contents.splitlines() if line)
    }
