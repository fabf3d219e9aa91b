"""append() as ctxstore_append_v2: appends racing to create a session all land.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

ctxstore_append_v1 read a session row that committed between its UPDATE and its
existence check as "no fit" and returned nothing, so a first append without an expected
version was refused.  v2 stops only when the row is there and can't take the messages
(too many, expired); one that can is extended on the next turn of the loop.  v1 stays
until no process of the previous release calls it.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
_MESSAGE_ARRAYS = """
    p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[],
    p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[],
    p_token_count integer[], p_format_version smallint[], p_token_encoding text[],
    p_key_id bigint[], p_sealed bytea[]"""
_MESSAGE_ARGUMENTS = """
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed"""

FUNCTIONS = {
    "ctxstore_append_v2": f"""
CREATE FUNCTION ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS},
    OUT start integer, OUT version bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    LOOP
        IF p_expected IS DISTINCT FROM 0 THEN
            UPDATE sessions AS s
               SET expires_at = now() + p_ttl,
                   turn_count = s.turn_count + p_turns,
                   first_activity_at = CASE WHEN s.message_count = 0 THEN v_first
                                            ELSE s.first_activity_at END,
                   last_activity_at = v_last,
                   message_count = s.message_count + v_added,
                   content_hash = CASE WHEN s.message_count = 0 THEN p_added_hash
                                       WHEN s.message_count = p_known_count
                                        AND s.content_hash = p_known_hash
                                       THEN p_extended_hash END,
                   version = s.version + 1,
                   user_id = coalesce(p_user_id, s.user_id),
                   updated_at = now()
             WHERE s.session_id = p_session_id
               AND (p_expected IS NULL OR s.version = p_expected)
               AND s.message_count + v_added <= p_max_messages
               AND (s.expires_at IS NULL OR s.expires_at > now())
            RETURNING s.message_count - v_added, s.version INTO start, version;
            EXIT WHEN FOUND;
            -- A row this UPDATE didn't see may have committed since: only a row that is
            -- there and can't take the messages ends the call (the caller reads why); one
            -- that can is extended on the next turn of the loop.
            IF p_expected IS NOT NULL
               OR EXISTS (SELECT FROM sessions AS s
                           WHERE s.session_id = p_session_id
                             AND (s.message_count + v_added > p_max_messages
                                  OR s.expires_at <= now())) THEN
                RETURN;
            END IF;
        END IF;
        INSERT INTO sessions AS s (session_id, user_id, message_count, content_hash, version,
                                   expires_at, turn_count, first_activity_at, last_activity_at)
        VALUES (p_session_id, p_user_id, v_added, p_added_hash, 1, now() + p_ttl, p_turns,
                v_first, v_last)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING 0, s.version INTO start, version;
        EXIT WHEN FOUND OR p_expected = 0;
        -- created meanwhile by another writer: extend it
    END LOOP;
    IF version IS NOT NULL THEN
        PERFORM ctxstore_insert_messages_v1(p_session_id, start, {_MESSAGE_ARGUMENTS});
    END IF;
END
$$""",
}

PRIVILEGES = """
DO $$
DECLARE
    v_owner text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'owner');
    v_app text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'app');
    v_function text;
BEGIN
    FOR v_function IN SELECT p.oid::regprocedure::text FROM pg_proc AS p
                       WHERE p.proname = ANY(string_to_array('{names}', ' ')) LOOP
        EXECUTE 'REVOKE ALL ON FUNCTION ' || v_function || ' FROM PUBLIC';
        IF v_app IS NOT NULL THEN
            EXECUTE 'GRANT EXECUTE ON FUNCTION ' || v_function || ' TO ' || quote_ident(v_app);
        END IF;
        IF v_owner IS NOT NULL THEN
            EXECUTE 'ALTER FUNCTION ' || v_function || ' OWNER TO ' || quote_ident(v_owner);
        END IF;
    END LOOP;
END
$$"""


def upgrade() -> None:
    for definition in FUNCTIONS.values():
        op.execute(definition)
    op.execute(PRIVILEGES.format(names=" ".join(FUNCTIONS)))


def downgrade() -> None:
    for name in reversed(list(FUNCTIONS)):
        op.execute(f"DROP FUNCTION {name}")
