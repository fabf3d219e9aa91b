"""Stored consultation states and user profiles -> models, upgrading old formats.

Same rule as messages: one step vN -> vN+1 at a time, then validation; a format newer
than this code knows is an UnsupportedFormatError, never a silent downgrade.  Fields the
current code doesn't know stay in the document (the models allow extra fields).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ctxstore.errors import CorruptDataError, InvalidInputError, UnsupportedFormatError
from ctxstore.models import (
    PROFILE_FORMAT,
    STATE_FORMAT,
    ConsultationState,
    UserProfile,
    _Document,
)

Document = dict[str, Any]
Step = Callable[[Document], Document]
ModelT = TypeVar("ModelT", bound=_Document)


def _state_1_to_2(document: Document) -> Document:
    """Format 2 adds aggravating_factors and red_flags (lists), swelling and trauma."""
    return {
        "aggravating_factors": [],
        "swelling": None,
        "trauma": None,
        "red_flags": [],
        **document,
    }


STATE_UPGRADES: dict[int, Step] = {1: _state_1_to_2}
PROFILE_UPGRADES: dict[int, Step] = {}


def _upgrade(
    model: type[ModelT],
    steps: dict[int, Step],
    current: int,
    document: Any,
    format_version: int,
    where: dict[str, Any],
) -> ModelT:
    kind = model.__name__
    if format_version > current:
        raise UnsupportedFormatError(
            f"{kind} format {format_version} is newer than this ctxstore knows ({current})",
            **where,
        )
    if not isinstance(document, dict):
        raise CorruptDataError(f"stored {kind} is not a JSON object", **where)
    for step in range(format_version, current):
        if step not in steps:
            raise CorruptDataError(f"unknown {kind} format {format_version}", **where)
        document = steps[step](document)
    try:
        parsed: ModelT = model.parse(document)
    except InvalidInputError as error:
        raise CorruptDataError(f"stored {kind} does not validate: {error}", **where) from error
    return parsed


def load_state(document: Any, format_version: int, *, session_id: str) -> ConsultationState:
    return _upgrade(
        ConsultationState,
        STATE_UPGRADES,
        STATE_FORMAT,
        document,
        format_version,
        {"session_id": session_id},
    )


def load_profile(document: Any, format_version: int, *, user_id: str) -> UserProfile:
    return _upgrade(
        UserProfile, PROFILE_UPGRADES, PROFILE_FORMAT, document, format_version, {"user": user_id}
    )
