"""Summary jobs: summarization in the background, claimed by one worker at a time.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04

Issue 29: ``SummarizeInBackground`` enqueues a job when a session's unsummarized history
passes its trigger, instead of calling the LLM inside ``get_context``; a summarize
worker (``ctxstore summarize-worker``, or the in-process runner) claims it with a lease.

One row per session (the primary key): a trigger passed again while the job waits only
moves ``until_seq`` on, so a session is never summarized twice at once.  ``state`` is
``queued`` (due at ``run_after``), ``running`` (leased to ``lease_token`` until
``lease_until``; a lease that runs out makes the job due again) or ``dead`` (its
attempts used up: it waits for an operator, ``ctxstore summarize-worker --requeue-dead``).
``last_error`` holds the error's class name only: a summarizer's message can quote the
conversation.

The table has a ``session_id`` column, so on Citus it is distributed beside ``sessions``
and each claim is a single-shard UPDATE.  No foreign key: a job whose session is gone is
dropped by the worker that claims it; an erasure deletes the user's jobs.  The app role
reads and writes it; the analytics role never sees it.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = """
CREATE TABLE summary_jobs (
    session_id text NOT NULL,
    until_seq integer NOT NULL,
    state text NOT NULL DEFAULT 'queued',
    attempts integer NOT NULL DEFAULT 0,
    run_after timestamptz NOT NULL DEFAULT now(),
    lease_token uuid,
    lease_until timestamptz,
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    CONSTRAINT pk_summary_jobs PRIMARY KEY (session_id),
    CONSTRAINT ck_summary_jobs_state CHECK (state IN ('queued', 'running', 'dead')),
    CONSTRAINT ck_summary_jobs_lease CHECK ((state = 'running') = (lease_token IS NOT NULL))
)"""

_ROLES = """
DO $$
DECLARE
    v_owner text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'owner'));
    v_app text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'app'));
BEGIN
    IF v_owner IS NOT NULL THEN
        EXECUTE 'ALTER TABLE summary_jobs OWNER TO ' || v_owner;
    END IF;
    IF v_app IS NOT NULL THEN
        EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON summary_jobs TO ' || v_app;
    END IF;
END
$$"""


def upgrade() -> None:
    op.execute(_TABLE)
    # The workers' scan for due jobs (dead ones wait for an operator, not a worker).
    op.execute("CREATE INDEX ix_summary_jobs_due ON summary_jobs (run_after) WHERE state <> 'dead'")
    op.execute(_ROLES)


def downgrade() -> None:
    op.execute("DROP TABLE summary_jobs")
