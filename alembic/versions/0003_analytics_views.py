"""Session activity columns and analytics views.

One row per consultation, stage funnel and transitions, frequencies, red-flag rates.  None
of the views exposes message content, summary text or profiles.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (name, definition), in creation order (later views read earlier ones).
VIEWS: list[tuple[str, str]] = [
    (
        "analytics_consultations",
        """
        SELECT s.session_id,
               s.user_id,
               c.stage,
               c.chief_complaint,
               coalesce(c.body_parts, '{}') AS body_parts,
               coalesce(c.symptoms, '{}') AS symptoms,
               coalesce(c.red_flags, '{}') AS red_flags,
               coalesce(cardinality(c.red_flags), 0) > 0 AS has_red_flags,
               c.pain_level,
               c.duration AS symptom_duration,
               s.message_count,
               s.turn_count,
               s.first_activity_at AS first_activity,
               s.last_activity_at AS last_activity,
               s.last_activity_at - s.first_activity_at AS duration,
               coalesce((SELECT max(summary_version) FROM summaries AS su
                          WHERE su.session_id = s.session_id), 0) AS summary_version,
               coalesce(c.version, 0) AS state_version
          FROM sessions AS s
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
        """,
    ),
    (
        # One row per accepted state version: a plain projection, so a report filtered
        # by consultation joins into it through the history's primary key.
        "analytics_stage_history",
        """
        SELECT h.session_id, h.version, h.stage, h.created_at AS changed_at
          FROM consultation_state_history AS h
        """,
    ),
    (
        "analytics_stage_reached",
        """
        SELECT DISTINCT h.session_id, h.stage FROM consultation_state_history AS h
        """,
    ),
    (
        "analytics_stage_funnel",
        """
        SELECT r.stage,
               count(*) AS reached,
               count(*) FILTER (WHERE c.stage = r.stage) AS ended_here
          FROM analytics_stage_reached AS r
          JOIN consultation_states AS c ON c.session_id = r.session_id
         GROUP BY r.stage
        """,
    ),
    (
        "analytics_stage_changes",
        """
        SELECT session_id, from_stage, to_stage, changed_at
          FROM (SELECT h.session_id,
                       lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage,
                       h.created_at AS changed_at
                  FROM consultation_state_history AS h) AS steps
         WHERE from_stage IS DISTINCT FROM to_stage
        """,
    ),
    (
        "analytics_stage_transitions",
        """
        SELECT from_stage, to_stage, count(*) AS transitions
          FROM analytics_stage_changes GROUP BY from_stage, to_stage
        """,
    ),
    (
        "analytics_complaint_mentions",
        """
        SELECT session_id, chief_complaint AS value FROM consultation_states
         WHERE chief_complaint IS NOT NULL
        """,
    ),
    (
        "analytics_body_part_mentions",
        """
        SELECT DISTINCT session_id, unnest(body_parts) AS value FROM consultation_states
        """,
    ),
    (
        "analytics_symptom_mentions",
        """
        SELECT DISTINCT session_id, unnest(symptoms) AS value FROM consultation_states
        """,
    ),
    (
        "analytics_complaint_frequencies",
        """
        SELECT value AS chief_complaint, count(*) AS consultations
          FROM analytics_complaint_mentions GROUP BY value
        """,
    ),
    (
        "analytics_body_part_frequencies",
        """
        SELECT value AS body_part, count(*) AS consultations
          FROM analytics_body_part_mentions GROUP BY value
        """,
    ),
    (
        "analytics_symptom_frequencies",
        """
        SELECT value AS symptom, count(*) AS consultations
          FROM analytics_symptom_mentions GROUP BY value
        """,
    ),
    (
        "analytics_red_flags_daily",
        """
        SELECT date_trunc('day', first_activity, 'UTC') AS day,
               count(*) AS consultations,
               count(*) FILTER (WHERE has_red_flags) AS with_red_flags,
               round(count(*) FILTER (WHERE has_red_flags)::numeric / count(*), 4) AS rate
          FROM analytics_consultations GROUP BY 1
        """,
    ),
    (
        "analytics_red_flags_weekly",
        """
        SELECT date_trunc('week', first_activity, 'UTC') AS week,
               count(*) AS consultations,
               count(*) FILTER (WHERE has_red_flags) AS with_red_flags,
               round(count(*) FILTER (WHERE has_red_flags)::numeric / count(*), 4) AS rate
          FROM analytics_consultations GROUP BY 1
        """,
    ),
]


def upgrade() -> None:
    # Activity kept on the session row by every write (see db/tables.py), filled here for
    # sessions written before this revision.
    op.add_column(
        "sessions",
        sa.Column("turn_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    for column in ("first_activity_at", "last_activity_at"):
        op.add_column(
            "sessions",
            sa.Column(
                column, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
            ),
        )
    op.execute(
        """
        UPDATE sessions AS s
           SET turn_count = (SELECT count(*) FROM messages AS m
                              WHERE m.session_id = s.session_id AND m.role = 'user'),
               first_activity_at = coalesce((SELECT m.ts FROM messages AS m
                                              WHERE m.session_id = s.session_id AND m.seq = 0),
                                            s.created_at),
               last_activity_at = coalesce((SELECT m.ts FROM messages AS m
                                             WHERE m.session_id = s.session_id
                                               AND m.seq = s.message_count - 1),
                                           s.updated_at)
        """
    )
    op.create_index(op.f("ix_sessions_first_activity_at"), "sessions", ["first_activity_at"])
    for name, definition in VIEWS:
        op.execute(f"CREATE VIEW {name} AS {definition}")


def downgrade() -> None:
    for name, _ in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    op.drop_index(op.f("ix_sessions_first_activity_at"), table_name="sessions")
    for column in ("last_activity_at", "first_activity_at", "turn_count"):
        op.drop_column("sessions", column)
