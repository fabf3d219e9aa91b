"""Stored summaries, consultation states and user profiles -> models.

Each is one call of the upgrade mapper (formats/mapper.py, docs/legacy-formats.md): a
format newer than this code knows is an UnsupportedFormatError, never a silent downgrade;
fields the current code doesn't know stay in a state's or profile's document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxstore.formats.mapper import FORMAT_KEY, PROFILES, STATES, SUMMARIES
from ctxstore.models import ConsultationState, Summary, UserProfile


def load_state(document: Any, format_version: int, *, session_id: str) -> ConsultationState:
    """A stored consultation state document of any known format -> the current model."""
    return STATES.load(document, format_version, session_id=session_id)


def load_profile(document: Any, format_version: int, *, user_id: str) -> UserProfile:
    """A stored user profile document of any known format -> the current model."""
    return PROFILES.load(document, format_version, user_id=user_id)


def load_summary(fields: Mapping[str, Any], format_version: int, *, session_id: str) -> Summary:
    """A stored summary (its columns by name) of any known format -> Summary.

    ``fields`` holds text, covers_until, token_count, created_at and summary_version: a
    dict, or a database row readable by name.  A ``format_version`` among them is ignored
    in favour of the argument.
    """
    # items(), not iteration: a database row iterates over its values.
    document = {key: value for key, value in fields.items() if key != FORMAT_KEY}
    return SUMMARIES.load(
        document,
        format_version,
        session_id=session_id,
        summary_version=document.get("summary_version"),
    )
