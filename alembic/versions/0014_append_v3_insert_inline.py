"""append() as ctxstore_append_v3: a turn's INSERT in the function that updates the row.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02

ctxstore_append_v2 ran its UPDATE of the session row, then called a second PL/pgSQL
function for the INSERT, handing it fourteen arrays.  Measured on PostgreSQL 15 beside a
prepared one-row commit (336 µs), that call took 626 µs; the same UPDATE and INSERT as
two statements of one function, 590 µs (docs/turn-cost.md).  One statement with a
modifying CTE would be as fast but Citus refuses it inside a delegated function (0A000).
v3 is the common turn (the session is there, live, at the expected version and has room);
anything else (a new session, a refusal, a writer racing to create the row) is v2's,
unchanged.  v2 stays until no process of the previous release calls it.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
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
    "ctxstore_append_v3": f"""
CREATE FUNCTION ctxstore_append_v3(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS},
    OUT start integer, OUT version bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
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
        IF FOUND THEN
            INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                                  name, metadata, digest, token_count, format_version,
                                  token_encoding, key_id, sealed)
            SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
                   m.ts::timestamptz, m.ts_offset, m.name, m.metadata, m.digest,
                   m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed
              FROM unnest({_MESSAGE_ARGUMENTS}) AS m(seq, role, content, turn_id, ts,
                       ts_offset, name, metadata, digest, token_count, format_version,
                       token_encoding, key_id, sealed);
            IF p_key_id[1] IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
            END IF;
            RETURN;
        END IF;
    END IF;
    -- A new session, one that can't take the messages, or a race: v2 sorts them out.
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v2(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, {_MESSAGE_ARGUMENTS}) AS a;
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
