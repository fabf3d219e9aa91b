"""append() as ctxstore_append_v5: a refused append says where the session stands.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03

A sealed session's content hash is a keyed chain the database can't extend: an append
must extend it in the process, from the session's version, count and hash.  When
``ctxstore_append_v4`` refused an append because another writer got in between, the
process read those three in a second statement before trying again.
``ctxstore_append_v5`` is v4 plus, when it refuses, the session's current version, count,
content hash and whether it expired, read in the same call: a writer whose knowledge was
stale tries again at once.  v4 stays until no process of the previous release calls it.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
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
    "ctxstore_append_v5": f"""
CREATE FUNCTION ctxstore_append_v5(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS},
    OUT start integer, OUT version bigint, OUT current_version bigint,
    OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v4(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, {_MESSAGE_ARGUMENTS}) AS a;
    IF version IS NULL THEN
        SELECT s.version, s.message_count, s.content_hash,
               NOT (s.expires_at IS NULL OR s.expires_at > now())
          INTO current_version, current_count, current_hash, current_expired
          FROM sessions AS s WHERE s.session_id = p_session_id;
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
