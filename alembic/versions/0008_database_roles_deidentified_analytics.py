"""Roles of this database alone, and de-identified analytics views (issue 13).

Roles.  Role names are cluster-wide; before this revision every database migrated with the
default prefix shared ``ctxstore_owner``/``_app``/``_analytics``, so a login meant for one
database read every other.  This revision gives the database its own roles
(ctxstore.db.roles: ``{prefix}_{database}_{kind}``), after checking that any of them that
already exists may be taken over (CTXSTORE_ADOPT_EXISTING_ROLES), moves the ownership of
every ctxstore object and the grants to them, revokes from the roles that held them before
(the shared roles) everything in this database, records the roles in ``ctxstore_roles``,
and lets only its own roles CONNECT (and only the owner and app create temporary objects):
PUBLIC loses CONNECT and TEMPORARY on this database.

Analytics.  The analytics role read user ids, session ids and per-consultation free text.
The views are replaced: per-consultation views hold a pseudonym (HMAC-SHA256 of the session
id under a key in ``ctxstore_pseudonym_key``, which only the owner reads; the views run as
the owner) and structured fields only; free text (chief complaint, body parts, symptoms,
red flags, symptom duration) is only counted, and a value shows only when at least
``min_group_size`` consultations have it (``ctxstore_analytics_settings``, from
CTXSTORE_ANALYTICS_MIN_GROUP_SIZE at this migration, default 5).  Every view is a
security_barrier view, so no predicate of the caller sees a row the view hides.  Windowed
counts come from ``analytics_value_frequencies(kind, since, until)``, which suppresses the
same way.  sha256() is built in (PostgreSQL 11+): no extension is needed.

The downgrade restores the views of 0003 with their grants, PUBLIC's CONNECT and TEMPORARY,
and drops the tables made here; the database keeps its own roles (they own its objects, as
after a fresh install at 0007 by this version of ctxstore; the shared roles get nothing
back).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from alembic.util import load_python_file
from sqlalchemy import Connection, text

# What it used of ctxstore, frozen beside it: a revision imports no ctxstore module.
_frozen = load_python_file(Path(__file__).parents[1] / "frozen", "roles.py")
quote_identifier, APP_TABLES, KINDS = _frozen.quote_identifier, _frozen.APP_TABLES, _frozen.KINDS
ensure_roles, role_names = _frozen.ensure_roles, _frozen.role_names
min_group_size_from_environment = _frozen.min_group_size_from_environment
MigrationError = _frozen.MigrationError

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PRIVATE_TABLES = ("ctxstore_roles", "ctxstore_analytics_settings", "ctxstore_pseudonym_key")


def _pseudonym(column: str) -> str:
    """HMAC-SHA256(key, session id) as hex: sha256(key^opad || sha256(key^ipad || id))."""
    return (
        f"encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to({column}, 'UTF8'))), 'hex')"
    )


_K = "(SELECT min_group_size FROM ctxstore_analytics_settings)"


def _frequencies(column: str, mentions: str) -> str:
    return f"""
        SELECT value AS {column}, count(DISTINCT session_id) AS consultations
          FROM ({mentions}) AS mentions
         WHERE value IS NOT NULL
         GROUP BY value
        HAVING count(DISTINCT session_id) >= {_K}
        """


# (name, definition), in creation order.  Per consultation: a pseudonym and structured
# fields.  Aggregates read the tables directly (no pseudonym to compute).
VIEWS: list[tuple[str, str]] = [
    (
        "analytics_consultations",
        f"""
        SELECT {_pseudonym("s.session_id")} AS consultation,
               c.stage,
               coalesce(cardinality(c.red_flags), 0) > 0 AS has_red_flags,
               coalesce(cardinality(c.red_flags), 0) AS red_flag_count,
               coalesce(cardinality(c.symptoms), 0) AS symptom_count,
               coalesce(cardinality(c.body_parts), 0) AS body_part_count,
               c.chief_complaint IS NOT NULL AS has_chief_complaint,
               c.duration IS NOT NULL AS has_symptom_duration,
               c.pain_level,
               s.message_count,
               s.turn_count,
               s.first_activity_at AS first_activity,
               extract(epoch FROM s.last_activity_at - s.first_activity_at) AS duration_seconds,
               coalesce((SELECT max(summary_version) FROM summaries AS su
                          WHERE su.session_id = s.session_id), 0) AS summary_version,
               coalesce(c.version, 0) AS state_version
          FROM sessions AS s
         CROSS JOIN ctxstore_pseudonym_key AS k
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
        """,
    ),
    (
        # One row per accepted state version, with what a windowed report needs (the
        # consultation's first activity, whether this version is the current one), so
        # reports never join on pseudonyms.
        "analytics_stage_history",
        f"""
        SELECT {_pseudonym("h.session_id")} AS consultation,
               h.version,
               h.stage,
               h.version = c.version AS is_current,
               s.first_activity_at AS first_activity
          FROM consultation_state_history AS h
          JOIN sessions AS s ON s.session_id = h.session_id
          LEFT JOIN consultation_states AS c ON c.session_id = h.session_id
         CROSS JOIN ctxstore_pseudonym_key AS k
        """,
    ),
    (
        "analytics_stage_reached",
        f"""
        SELECT DISTINCT {_pseudonym("h.session_id")} AS consultation, h.stage
          FROM consultation_state_history AS h
         CROSS JOIN ctxstore_pseudonym_key AS k
        """,
    ),
    (
        "analytics_stage_changes",
        f"""
        SELECT {_pseudonym("steps.session_id")} AS consultation,
               steps.version, steps.from_stage, steps.to_stage
          FROM (SELECT h.session_id, h.version,
                       lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM consultation_state_history AS h) AS steps
         CROSS JOIN ctxstore_pseudonym_key AS k
         WHERE steps.from_stage IS DISTINCT FROM steps.to_stage
        """,
    ),
    (
        "analytics_stage_funnel",
        """
        SELECT r.stage,
               count(*) AS reached,
               count(*) FILTER (WHERE c.stage = r.stage) AS ended_here
          FROM (SELECT DISTINCT session_id, stage FROM consultation_state_history) AS r
          JOIN consultation_states AS c ON c.session_id = r.session_id
         GROUP BY r.stage
        """,
    ),
    (
        "analytics_stage_transitions",
        """
        SELECT from_stage, to_stage, count(*) AS transitions
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM consultation_state_history AS h) AS steps
         WHERE from_stage IS DISTINCT FROM to_stage
         GROUP BY from_stage, to_stage
        """,
    ),
    (
        "analytics_red_flags_daily",
        """
        SELECT date_trunc('day', s.first_activity_at, 'UTC') AS day,
               count(*) AS consultations,
               count(*) FILTER (WHERE cardinality(c.red_flags) > 0) AS with_red_flags,
               round(count(*) FILTER (WHERE cardinality(c.red_flags) > 0)::numeric
                     / count(*), 4) AS rate
          FROM sessions AS s
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
         GROUP BY 1
        """,
    ),
    (
        "analytics_red_flags_weekly",
        """
        SELECT date_trunc('week', s.first_activity_at, 'UTC') AS week,
               count(*) AS consultations,
               count(*) FILTER (WHERE cardinality(c.red_flags) > 0) AS with_red_flags,
               round(count(*) FILTER (WHERE cardinality(c.red_flags) > 0)::numeric
                     / count(*), 4) AS rate
          FROM sessions AS s
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
         GROUP BY 1
        """,
    ),
    (
        "analytics_complaint_frequencies",
        _frequencies(
            "chief_complaint",
            "SELECT session_id, chief_complaint AS value FROM consultation_states",
        ),
    ),
    (
        "analytics_body_part_frequencies",
        _frequencies(
            "body_part", "SELECT session_id, unnest(body_parts) AS value FROM consultation_states"
        ),
    ),
    (
        "analytics_symptom_frequencies",
        _frequencies(
            "symptom", "SELECT session_id, unnest(symptoms) AS value FROM consultation_states"
        ),
    ),
    (
        "analytics_red_flag_frequencies",
        _frequencies(
            "red_flag", "SELECT session_id, unnest(red_flags) AS value FROM consultation_states"
        ),
    ),
    (
        "analytics_symptom_duration_frequencies",
        _frequencies(
            "symptom_duration", "SELECT session_id, duration AS value FROM consultation_states"
        ),
    ),
    (
        "analytics_suppression",
        "SELECT min_group_size FROM ctxstore_analytics_settings",
    ),
]

#: The free-text fields analytics_value_frequencies counts, and where each comes from.
VALUE_KINDS = {
    "chief_complaint": "ARRAY[c.chief_complaint]",
    "body_part": "c.body_parts",
    "symptom": "c.symptoms",
    "red_flag": "c.red_flags",
    "symptom_duration": "ARRAY[c.duration]",
}

_CASES = "\n".join(f"WHEN '{kind}' THEN {array}" for kind, array in VALUE_KINDS.items())

FUNCTION = "analytics_value_frequencies(text, timestamptz, timestamptz)"

# SECURITY DEFINER (runs as the owner), with a search_path no caller can put objects in
# front of; the analytics role gets EXECUTE, PUBLIC does not.
FUNCTION_SQL = f"""
CREATE FUNCTION analytics_value_frequencies(
    kind text, since timestamptz DEFAULT NULL, until timestamptz DEFAULT NULL
) RETURNS TABLE (value text, consultations bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $function$
BEGIN
    IF kind IS NULL OR kind NOT IN ({", ".join(f"'{kind}'" for kind in VALUE_KINDS)}) THEN
        RAISE EXCEPTION 'analytics_value_frequencies: unknown kind %', kind
            USING ERRCODE = '22023',
                  HINT = 'use one of {", ".join(VALUE_KINDS)}';
    END IF;
    RETURN QUERY
    SELECT m.v, count(DISTINCT m.sid)
      FROM (SELECT c.session_id AS sid,
                   unnest(CASE kind {_CASES} END) AS v
              FROM public.consultation_states AS c
              JOIN public.sessions AS s ON s.session_id = c.session_id
             WHERE (since IS NULL OR s.first_activity_at >= since)
               AND (until IS NULL OR s.first_activity_at < until)) AS m
     WHERE m.v IS NOT NULL
     GROUP BY m.v
    HAVING count(DISTINCT m.sid) >=
           (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
END
$function$
"""

# The key: SHA-256 over three random UUIDs (gen_random_uuid: PostgreSQL 13+, from the
# server's strong random source), zero-padded to SHA-256's block and kept XOR ipad/opad.
KEY_SQL = """
DO $$
DECLARE
    padded bytea := sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text
                                      || gen_random_uuid()::text, 'UTF8'))
                    || decode(repeat('00', 32), 'hex');
    ipad bytea := padded;
    opad bytea := padded;
BEGIN
    FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(padded, i) # 54);
        opad := set_byte(opad, i, get_byte(padded, i) # 92);
    END LOOP;
    INSERT INTO ctxstore_pseudonym_key (inner_pad, outer_pad) VALUES (ipad, opad);
END
$$
"""

# -- what revisions 0003 and 0004 made: restored by the downgrade ------------------------------

OLD_VIEWS: list[tuple[str, str]] = [
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


def _live_connection() -> Connection:
    if op.get_context().as_sql:
        raise MigrationError(
            "revision 0008 inspects the cluster's roles and this database's grants, so it "
            "cannot be written out as SQL (--sql): run `ctxstore db upgrade` (or alembic "
            "without --sql) against the database"
        )
    return op.get_bind()


def _scalar(bind: Connection, sql: str, **params: object) -> object:
    return bind.execute(text(sql), params).scalar()


def _previous_holders(bind: Connection, keep: Sequence[str]) -> list[str]:
    """The roles that held this database's ctxstore objects before (0004's roles, shared
    by every database migrated with the same names): the owner of ``sessions``, the roles
    that may insert into it and those that may read ``analytics_consultations``; never the
    roles in ``keep`` nor the migrating user."""
    rows = bind.execute(
        text(
            """
            SELECT DISTINCT pg_get_userbyid(held.role)
              FROM (SELECT relowner AS role FROM pg_class WHERE oid = 'sessions'::regclass
                    UNION ALL
                    SELECT a.grantee FROM pg_class AS c, aclexplode(c.relacl) AS a
                     WHERE c.oid = 'sessions'::regclass AND a.privilege_type = 'INSERT'
                    UNION ALL
                    SELECT a.grantee FROM pg_class AS c, aclexplode(c.relacl) AS a
                     WHERE c.oid = to_regclass('analytics_consultations')
                       AND a.privilege_type = 'SELECT') AS held
             WHERE held.role <> 0
               AND pg_get_userbyid(held.role) <> ALL (CAST(:keep AS text[]))
               AND pg_get_userbyid(held.role) NOT IN (session_user, current_user)
             ORDER BY 1
            """
        ),
        {"keep": list(keep)},
    )
    return [str(name) for name in rows.scalars()]


def _give_to_owner(bind: Connection, owner: str, relations: Sequence[str]) -> None:
    """ALTER ... OWNER only where needed: it takes an ACCESS EXCLUSIVE lock."""
    for relation in relations:
        current = _scalar(
            bind,
            "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass(:r)",
            r=relation,
        )
        if current != owner:
            op.execute(f"ALTER TABLE {relation} OWNER TO {owner}")


def _create_private_tables() -> None:
    op.create_table(
        "ctxstore_roles",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("role_name", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "kind IN ('owner', 'app', 'analytics')", name=op.f("ck_ctxstore_roles_kind_known")
        ),
        sa.PrimaryKeyConstraint("kind", name=op.f("pk_ctxstore_roles")),
    )
    op.create_table(
        "ctxstore_analytics_settings",
        sa.Column("singleton", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("min_group_size", sa.Integer(), nullable=False),
        sa.CheckConstraint("singleton", name=op.f("ck_ctxstore_analytics_settings_one_row")),
        sa.CheckConstraint(
            "min_group_size >= 2",
            name=op.f("ck_ctxstore_analytics_settings_min_group_size_at_least_two"),
        ),
        sa.PrimaryKeyConstraint("singleton", name=op.f("pk_ctxstore_analytics_settings")),
    )
    op.create_table(
        "ctxstore_pseudonym_key",
        sa.Column("singleton", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("inner_pad", sa.LargeBinary(), nullable=False),
        sa.Column("outer_pad", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("singleton", name=op.f("ck_ctxstore_pseudonym_key_one_row")),
        sa.CheckConstraint(
            "octet_length(inner_pad) = 64 AND octet_length(outer_pad) = 64",
            name=op.f("ck_ctxstore_pseudonym_key_pads_64_bytes"),
        ),
        sa.PrimaryKeyConstraint("singleton", name=op.f("pk_ctxstore_pseudonym_key")),
    )


def upgrade() -> None:
    bind = _live_connection()
    roles = role_names()
    min_group_size = min_group_size_from_environment()
    database = quote_identifier(str(_scalar(bind, "SELECT current_database()")))

    # 1. This database's roles: the existing ones checked, the missing ones created.
    ensure_roles(bind, roles)
    op.execute(f"GRANT {roles.owner} TO CURRENT_USER")
    previous = _previous_holders(bind, roles.all())

    # 2. The analytics views of 0003 go; the private tables and the new views come.
    for name, _ in reversed(OLD_VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    _create_private_tables()
    op.execute(
        sa.text("INSERT INTO ctxstore_analytics_settings (min_group_size) VALUES (:k)").bindparams(
            k=min_group_size
        )
    )
    op.execute(KEY_SQL)
    for kind in KINDS:
        op.execute(
            sa.text("INSERT INTO ctxstore_roles (kind, role_name) VALUES (:k, :r)").bindparams(
                k=kind, r=roles.of(kind)
            )
        )
    for name, definition in VIEWS:
        op.execute(f"CREATE VIEW {name} WITH (security_barrier) AS {definition}")
    op.execute(FUNCTION_SQL)

    # 3. Everything to this database's owner; nothing left to the roles before it.
    _give_to_owner(bind, roles.owner, (*APP_TABLES, "alembic_version", *PRIVATE_TABLES))
    for name, _ in VIEWS:
        op.execute(f"ALTER VIEW {name} OWNER TO {roles.owner}")
    op.execute(f"ALTER FUNCTION {FUNCTION} OWNER TO {roles.owner}")
    everything = ", ".join((*APP_TABLES, "alembic_version", *PRIVATE_TABLES))
    for role in previous:
        quoted = quote_identifier(role)
        op.execute(f"REVOKE ALL ON {everything} FROM {quoted}")
        op.execute(f"REVOKE ALL ON SCHEMA public FROM {quoted}")
        op.execute(f"REVOKE ALL ON DATABASE {database} FROM {quoted}")

    # 4. What each role may do (as 0004, for the new names and views).
    op.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {roles.owner}")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {roles.app}, {roles.analytics}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(APP_TABLES)} TO {roles.app}")
    op.execute(f"GRANT SELECT ON {', '.join(name for name, _ in VIEWS)} TO {roles.analytics}")
    op.execute(f"REVOKE ALL ON FUNCTION {FUNCTION} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {FUNCTION} TO {roles.analytics}")

    # 5. Only this database's roles may connect; no temporary objects for analytics.
    op.execute(f"REVOKE CONNECT, TEMPORARY ON DATABASE {database} FROM PUBLIC")
    op.execute(f"GRANT CONNECT ON DATABASE {database} TO {', '.join(roles.all())}")
    op.execute(f"GRANT TEMPORARY ON DATABASE {database} TO {roles.owner}, {roles.app}")


def downgrade() -> None:
    bind = _live_connection()
    roles = role_names()
    database = quote_identifier(str(_scalar(bind, "SELECT current_database()")))

    op.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}")
    for name, _ in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    for name, definition in OLD_VIEWS:
        op.execute(f"CREATE VIEW {name} AS {definition}")
        op.execute(f"ALTER VIEW {name} OWNER TO {roles.owner}")
    op.execute(f"GRANT SELECT ON {', '.join(name for name, _ in OLD_VIEWS)} TO {roles.analytics}")
    for table in reversed(PRIVATE_TABLES):
        op.drop_table(table)

    op.execute(f"GRANT CONNECT, TEMPORARY ON DATABASE {database} TO PUBLIC")
    op.execute(f"REVOKE CONNECT, TEMPORARY ON DATABASE {database} FROM {', '.join(roles.all())}")
