"""The encodings ctxstore ships: tiktoken's own, token for token, with no network."""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from ctxstore.encodings import BUNDLED, BundledEncoding, bundled_ranks, load_encoding
from ctxstore.errors import InvalidInputError, TokenizerUnavailableError
from ctxstore.tokens import TokenCounter

CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] = {
    "cl100k_base": openai_public.cl100k_base,
    "o200k_base": openai_public.o200k_base,
}


@pytest.fixture(scope="module")
def tiktokens_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """tiktoken's own encodings, built by its own constructors from its own cache.

    The official files are put where tiktoken looks for a downloaded copy (the cache file
    named by the SHA-1 of the URL); tiktoken checks their SHA-256 itself on load, so what
    it builds is exactly what it builds online.
    """
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in CONSTRUCTORS:
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        packed = resources.files("ctxstore.tokenizer_data") / f"{name}.tiktoken.gz"
        key = hashlib.sha1(url.encode()).hexdigest()
        (cache / key).write_bytes(gzip.decompress(packed.read_bytes()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        specs = {name: build() for name, build in CONSTRUCTORS.items()}
    yield {
        "specs": specs,
        "encodings": {name: tiktoken.Encoding(**spec) for name, spec in specs.items()},
    }


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_a_shipped_encoding_is_defined_as_tiktoken_defines_it(
    tiktokens_own: dict[str, Any], name: str
) -> None:
    spec = tiktokens_own["specs"][name]
    ours = BUNDLED[name]
    assert ours.pat_str == spec["pat_str"]
    assert ours.special_tokens == spec["special_tokens"]
    assert bundled_ranks(ours) == spec["mergeable_ranks"]


PIECES = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=8),
    st.sampled_from(list("患者主诉头痛三天伴有恶心。，！？、膝盖疼")),
    st.sampled_from(["🤒", "👍🏽", "👨‍👩‍👧", "\u200d", "\ufe0f"]),
    st.sampled_from([" ", "  ", "\n", "\r\n", "\t", "\u3000", "\xa0", "   \n\n  "]),
    st.sampled_from(["'s", "'LL", "123456", "<|endoftext|>", "http://x.y/z", "Hello"]),
)
#: Text as consultations have it: Chinese, emoji, runs of whitespace, any code point.
TEXT = st.lists(PIECES, max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_token_ids_are_tiktokens_own(tiktokens_own: dict[str, Any], text: str) -> None:
    for name, theirs in tiktokens_own["encodings"].items():
        ours = load_encoding(name)
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), name


def test_a_long_whitespace_run_and_a_long_word_count_the_same(
    tiktokens_own: dict[str, Any],
) -> None:
    for text in (" " * 5000, "\n" * 3000 + "x", "a" * 20000, "头" * 8000, "🤒" * 2000):
        for name, theirs in tiktokens_own["encodings"].items():
            assert load_encoding(name).encode_ordinary(text) == theirs.encode_ordinary(text)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
    ],
)
def test_a_model_counts_with_its_encoding(model: str, encoding: str) -> None:
    counter = TokenCounter.for_model(model)
    assert counter.encoding_name == encoding
    assert counter.count("患者主诉头痛三天") > 0


@pytest.mark.parametrize("model", ["claude-3-5-sonnet", "", "   ", 42])
def test_an_unknown_model_is_refused_clearly(model: Any) -> None:
    with pytest.raises(InvalidInputError, match="model"):
        TokenCounter.for_model(model)


def test_the_same_consultation_counts_differently_under_the_two_encodings() -> None:
    text = "患者：医生您好，我膝盖疼了一周，上下楼梯时明显，有时候会有下坠感。"
    assert TokenCounter("o200k_base").count(text) != TokenCounter("cl100k_base").count(text)


def test_a_damaged_rank_file_is_refused(tmp_path: Path) -> None:
    wrong = BundledEncoding("o200k_base", "0" * 64, "", {})
    with pytest.raises(TokenizerUnavailableError, match="not the official one"):
        bundled_ranks(wrong)


def test_an_encoding_not_shipped_and_not_cached_names_the_offline_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    load_encoding.cache_clear()
    try:
        with pytest.raises(TokenizerUnavailableError, match="cl100k_base and o200k_base"):
            load_encoding("no_such_encoding")
    finally:
        load_encoding.cache_clear()
