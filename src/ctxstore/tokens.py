"""Token counting with tiktoken, offline, and the exact token cost of contract parts.

cl100k_base (the default) and o200k_base load offline (``ctxstore.encodings``);
``TokenCounter.for_model("gpt-4o")`` counts with the encoding the model uses.

Exact costs without re-tokenizing history: the Context Contract serializer puts every
element of ``recent_messages`` and ``retrieved_knowledge`` on a line of its own,
``,{...}`` followed by a newline (the first element without the comma).  tiktoken's
pre-tokenizer never joins text across such a newline-ended punctuation run, so the
token count of the whole contract is exactly the count of its skeleton (arrays empty)
plus each element's own count, minus a constant ``first_element_saving`` per non-empty
array.  Each message's element count is computed once, when the message is written, by
the storage's own counter, and stored; readers report the encoding it was made with, and
context assembly recounts a message whose stored count is in another encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from ctxstore.encodings import BUNDLED, Encoder, encoding_for_model, load_encoding
from ctxstore.jsontext import compact_json
from ctxstore.models import Message
from ctxstore.timestamps import go_timestamp

DEFAULT_ENCODING = "cl100k_base"
#: The contract form a stored count measures: times as Go writes them.  Counts stored
#: before it (labelled with the bare encoding, times in isoformat) are recounted.
ELEMENT_FORM = "go-times"
#: The label suffix of an untimed message's stored count: its element up to its
#: ``timestamp`` key, which is the session's fill (see ``TokenCounter.untimed_cost``).
UNTIMED = "untimed"


def contract_message(
    message: Message,
    fill_turn_id: str,
    fill_timestamp: datetime,
    fill_text: str | None = None,
) -> dict[str, Any]:
    """The contract's form of a message: turn_id and timestamp always present.

    Messages from older formats have neither; the fill is deterministic (see
    ``legacy_fill``), so the same history always gives the same contract.  The time is
    written as Go writes it, so a Go program reads back the very text it stored.
    ``fill_text``: ``go_timestamp(fill_timestamp)`` when the caller has it already.
    """
    stamp = message.timestamp
    if stamp is not None:
        text = go_timestamp(stamp)
    else:
        text = fill_text if fill_text is not None else go_timestamp(fill_timestamp)
    return {
        "role": message.role,
        "content": message.content,
        "turn_id": message.turn_id or fill_turn_id,
        "timestamp": text,
    }


def legacy_fill(position: int, session_created_at: datetime) -> tuple[str, datetime]:
    """Turn id and timestamp for a message that has none (docs/legacy-formats.md, 1 -> 2).

    The turn id is derived from the message's position (``legacy-000042``) and the
    timestamp is the session's creation time.
    """
    return f"legacy-{position:06d}", session_created_at


def element_json(element: dict[str, Any]) -> str:
    """How an array element of the contract is serialized (compact, UTF-8 as is)."""
    return compact_json(element)


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens with one encoding; knows the exact cost of contract elements.

    ``encoding_name`` identifies the counting: a stored count is reused only by a counter
    of the same name, so a subclass that counts another way needs a name of its own.
    """

    encoding_name: str = DEFAULT_ENCODING

    @classmethod
    def for_model(cls, model: str) -> TokenCounter:
        """The counter of the encoding ``model`` uses: ``for_model("gpt-4o")`` counts with
        o200k_base.  An unknown model is an InvalidInputError."""
        return cls(encoding_for_model(model))

    # The labels are compared for every message a context reads: kept once made (the
    # fields are frozen; a cached property leaves equality and the hash to the fields).
    @cached_property
    def count_label(self) -> str:
        """What a stored count is labelled with: the encoding and the element form it
        measured.  A count under another label is never used, only recounted."""
        return f"{self.encoding_name}+{ELEMENT_FORM}"

    @property
    def encoder(self) -> Encoder:
        return load_encoding(self.encoding_name)

    def count(self, text: str) -> int:
        return len(self.encoder.encode_ordinary(text))

    def element_cost(self, element: dict[str, Any]) -> int:
        """Tokens one array element adds to the contract (in its ",{...}\\n" form)."""
        return self.count("," + element_json(element) + "\n")

    @property
    def first_element_saving(self) -> int:
        """Tokens saved by the first element of an array, which has no leading comma."""
        return _first_element_saving(self.encoding_name)

    def message_cost(self, message: Message) -> int | None:
        """A message's whole cost, or None when it needs the session's fill.

        Counted in three parts, cut where a key's word begins (see ``untimed_cost``): the
        head (cached by role), the content (the one part encoded every time) and the
        envelope, its turn id and time, counted once per shape (``_envelope``)."""
        fields = message.__dict__
        stamp = fields["timestamp"]
        if fields["turn_id"] is None or stamp is None:
            return None
        envelope = _turn_part(fields["turn_id"]) + _timestamp_tail(go_timestamp(stamp))
        return (
            _head(self, fields["role"])
            + self.count(_content_part(fields["content"]))
            + _envelope(self, envelope)
        )

    @cached_property
    def untimed_label(self) -> str:
        """The label of an untimed message's stored count (``untimed_cost``)."""
        return untimed_label(self.count_label)

    def stored_cost(self, message: Message) -> tuple[int, str] | tuple[None, None]:
        """What a storage keeps for a message: its count and the count's label.

        A timed message's whole cost (``count_label``); an untimed one's cost without its
        fill (``untimed_label``); (None, None) for a message with no turn id, whose fill
        depends on its position.
        """
        if message.turn_id is None:
            return None, None
        whole = self.message_cost(message)
        if whole is None:
            return self.untimed_cost(message), self.untimed_label
        return whole, self.count_label

    def untimed_cost(self, message: Message) -> int:
        """The cost of a message with a turn id and no time, without its fill time.

        Its element ends ``..."turn_id":"...","timestamp":"<fill>"}`` and the key's word
        always starts a pre-token of its own (in every tiktoken pattern a run of
        punctuation, here ``","``, ends where a letter begins, and no token spans two
        pre-tokens), so the element costs exactly this plus ``fill_cost(fill)``.

        By the same rule (``split_before_key``) the count is cut before the ``content``
        and ``turn_id`` keys: the element's head, the role's part, is counted once per role
        and encoding; the content, one tiktoken call a message; the turn id's part once per
        shape (``_envelope``).  A subclass's ``count`` must add up across these cuts as
        tiktoken's does.
        """
        fields = message.__dict__
        return (
            _head(self, fields["role"])
            + self.count(_content_part(fields["content"]))
            + _envelope(self, _turn_part(fields["turn_id"]))
        )

    def fill_cost(self, fill_text: str) -> int:
        """The rest of an untimed message's cost: its timestamp key and the fill's text."""
        return self.count(_timestamp_tail(fill_text))


def _head(counter: TokenCounter, role: str) -> int:
    """What an element costs before its ``content`` key, from its cache when the counter
    can be a cache key (roles are few: the cache stays small)."""
    try:
        return _head_cost(counter, role)
    except TypeError:  # a counter that can't be hashed: counted every time
        return _head_cost.__wrapped__(counter, role)


@lru_cache(maxsize=256)
def _head_cost(counter: TokenCounter, role: str) -> int:
    return counter.count(',{"role":' + compact_json(role) + ',"')


def _body(message: Message) -> str:
    """An element from its ``content`` key to its ``timestamp`` key."""
    fields = message.__dict__
    return _content_part(fields["content"]) + _turn_part(fields["turn_id"])


def _content_part(content: str) -> str:
    """An element from its ``content`` key to its ``turn_id`` key."""
    return 'content":' + compact_json(content) + ',"'


def _turn_part(turn_id: str | None) -> str:
    """An element from its ``turn_id`` key to its ``timestamp`` key."""
    return 'turn_id":' + compact_json(turn_id or "") + ',"'


#: ASCII digits, each to "0", in UTF-8 (whose other characters' bytes are never ASCII):
#: a text's shape (``_envelope``).
_ZEROED = bytes.maketrans(b"123456789", b"000000000")
#: Envelope shapes kept per process (a turn's two messages share one; times and turn ids
#: of one format share a few): past this, the cache starts again.
_SHAPES_KEPT = 4096
_shape_counts: dict[tuple[str, bytes], int] = {}


def _envelope(counter: TokenCounter, text: str) -> int:
    """``counter.count(text)`` for a turn id's and a time's part of an element, counted
    once per shape (the text with every ASCII digit a "0") where that is exact: with
    tiktoken's own counting (no subclass) and an encoding whose pattern cuts digits into
    pieces of one to three, every such piece a single token (``_digits_are_tokens``), a
    digit never changes how a text is cut, nor what its piece costs.  Else counted."""
    if type(counter) is not TokenCounter or not _digits_are_tokens(counter.encoding_name):
        return counter.count(text)
    shape = text.encode("utf-8", "surrogatepass").translate(_ZEROED)
    key = (counter.encoding_name, shape)
    found = _shape_counts.get(key)
    if found is None:
        if len(_shape_counts) >= _SHAPES_KEPT:
            _shape_counts.clear()
        found = _shape_counts[key] = counter.count(shape.decode("utf-8", "surrogatepass"))
    return found


@lru_cache(maxsize=8)
def _digits_are_tokens(encoding_name: str) -> bool:
    r"""Whether the encoding is one ctxstore ships, built with its pattern (which cuts digits
    into ``\p{N}{1,3}`` pieces, no other piece holding a digit, every class treating the
    ten digits alike), and has a token for every string of one to three ASCII digits."""
    if encoding_name not in BUNDLED:
        return False
    encoder = load_encoding(encoding_name)
    digits = [str(number).zfill(width) for width in (1, 2, 3) for number in range(10**width)]
    return all(len(encoder.encode_ordinary(text)) == 1 for text in digits)


def _timestamp_tail(text: str) -> str:
    """How an untimed element ends from its timestamp key on (``untimed_cost`` counts
    what is before it with an empty text, ``fill_cost`` this with the fill's)."""
    return 'timestamp":' + compact_json(text) + "}\n"


def split_before_key(text: str, key: str) -> tuple[str, str]:
    """Compact JSON ``text`` cut where the word of its first ``,"key":`` begins: the two
    parts' token counts add up to the whole's in every tiktoken encoding (as in
    ``TokenCounter.untimed_cost``: a punctuation run ends where a letter begins, and no
    token spans two pre-tokens).  ``,"`` only occurs outside strings (a quote inside one
    is escaped), so it is an object's key.  ``("", text)`` if there is none."""
    if not key[:1].isascii() or not key[:1].isalpha():
        raise ValueError(f"{key!r} must start with a letter")
    at = text.find(',"' + key + '":')
    return ("", text) if at < 0 else (text[: at + 2], text[at + 2 :])


def untimed_label(count_label: str) -> str:
    """The untimed label that goes with a counter's ``count_label``."""
    return f"{count_label}+{UNTIMED}"


@lru_cache(maxsize=8)
def _first_element_saving(encoding_name: str) -> int:
    # Every element starts with '{"' (its first key is quoted); only that first
    # pre-token differs between ',{"...' and '{"...'.
    encoder = load_encoding(encoding_name)
    return len(encoder.encode_ordinary(',{"')) - len(encoder.encode_ordinary('{"'))
