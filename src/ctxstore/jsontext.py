"""Compact JSON text, as ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``
writes it, without that call's cost.

json.dumps makes a new encoder on every call with these options (about 4 µs); digests and
contract elements serialize a value per message, so the encoder is made once here (the C
one ``JSONEncoder.encode`` itself uses, where the interpreter has it).
"""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any


def compact_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, faster.

    What is serialized here has no cycles to check for (messages, contract elements).
    """
    if _C_ENCODE is None:
        return _COMPACT.encode(value)
    return "".join(_C_ENCODE(value, 0))


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_C_ENCODE = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _COMPACT.default, encode_basestring, None, ":", ",", False, False, True
    )
)
