"""Sealed states keep no clinical free text in plaintext; analytics counts free text from
aggregate tables the owner refreshes.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03

Issue 24: ``chief_complaint``, ``symptoms``, ``body_parts``, ``red_flags`` and ``duration``
sat in plaintext beside every sealed state (and every history version), one join from
``sessions.user_id``, so that the analytics SQL could read them.  From this revision:

- A sealed state row (key_id set) holds none of them: the text lives only in its sealed
  document (``sealed_state_has_no_free_text``).  What the per-consultation view shows of
  them, counts and presence, moves to plaintext columns written beside the document
  (``red_flag_count``, ``symptom_count``, ``body_part_count``, ``has_chief_complaint``,
  ``has_symptom_duration``).  Existing rows get them from their arrays, then sealed rows
  lose the arrays: a backup taken after this revision holds no clinical text outside
  ciphertext.
- ``ctxstore_write_state_v2`` writes them.  ``ctxstore_write_state_v1`` stays for the
  previous release's processes: it derives the counts and, for a sealed write, drops the
  free text it is given.
- Free-text counts come from ``analytics_value_cells``: per UTC day, a value and the
  number of that day's consultations whose current state has it, stored only when at
  least k consultations of the day have it and at least k don't.  ``ctxstore analytics
  refresh`` writes them, running as the owner with the keys (sealed states are opened in
  the process); ``analytics_refreshed_days`` records what each day was computed from, so
  a refresh does only the days that changed and an interrupted one resumes.  No value
  fewer than k share is stored anywhere the analytics role can reach, so EXPLAIN has
  nothing to reveal.
- ``analytics_frequencies_v3`` (and the all-time frequency views) read those cells, and
  apply the current k again: raising k hides cells at once, lowering it shows more only
  after the next refresh.  The analytics role loses EXECUTE on
  ``analytics_frequencies_v2`` and ``analytics_value_frequencies_v2``, which read the
  state rows.

The downgrade restores 0017's functions, views and grants and drops the new columns and
tables.  Sealed states' free text stays in their documents only: the previous release's
frequency reports then don't count sealed consultations until they are written again.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
STATE_TABLES = ("consultation_states", "consultation_state_history")
FREE_TEXT = ("chief_complaint", "body_parts", "symptoms", "red_flags", "duration")
# column: (type, default, its value from the free text of a row written before)
COUNTS = {
    "red_flag_count": ("integer", "0", "coalesce(cardinality(red_flags), 0)"),
    "symptom_count": ("integer", "0", "coalesce(cardinality(symptoms), 0)"),
    "body_part_count": ("integer", "0", "coalesce(cardinality(body_parts), 0)"),
    "has_chief_complaint": ("boolean", "false", "chief_complaint IS NOT NULL"),
    "has_symptom_duration": ("boolean", "false", "duration IS NOT NULL"),
}
NO_FREE_TEXT = """key_id IS NULL OR (chief_complaint IS NULL AND duration IS NULL
        AND body_parts = '{}' AND symptoms = '{}' AND red_flags = '{}')"""

# -- the state writes -------------------------------------------------------------------------

COLUMNS = (
    "stage",
    *FREE_TEXT[:4],
    "pain_level",
    "duration",
    *COUNTS,
    "document",
    "format_version",
    "key_id",
    "sealed",
)
_V1_ARGUMENTS = """p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[],
    p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb,
    p_format_version smallint, p_key_id bigint, p_sealed bytea"""
_V2_ARGUMENTS = """p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[],
    p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer,
    p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean,
    p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint,
    p_key_id bigint, p_sealed bytea"""
# v1's callers send the free text even when sealing: counted, then dropped when sealed.
_V1_VALUES = {
    **{column: f"p_{column}" for column in COLUMNS},
    "chief_complaint": "CASE WHEN p_key_id IS NULL THEN p_chief_complaint END",
    "duration": "CASE WHEN p_key_id IS NULL THEN p_duration END",
    **{
        column: f"CASE WHEN p_key_id IS NULL THEN p_{column} ELSE '{{}}' END"
        for column in ("body_parts", "symptoms", "red_flags")
    },
    "red_flag_count": "coalesce(cardinality(p_red_flags), 0)",
    "symptom_count": "coalesce(cardinality(p_symptoms), 0)",
    "body_part_count": "coalesce(cardinality(p_body_parts), 0)",
    "has_chief_complaint": "p_chief_complaint IS NOT NULL",
    "has_symptom_duration": "p_duration IS NOT NULL",
}


def write_state_sql(
    name: str,
    arguments: str,
    values: dict[str, str],
    verb: str,
    written: Sequence[str] = COLUMNS,
) -> str:
    """0011's ctxstore_write_state_v1, writing the ``written`` columns from ``values``."""
    columns = ", ".join(written)
    given = ", ".join(values[column] for column in written)
    return f"""
{verb} FUNCTION {name}(p_session_id text, p_expected bigint,
    {arguments},
    OUT version bigint, OUT updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM FROM sessions AS s
     WHERE s.session_id = p_session_id AND (s.expires_at IS NULL OR s.expires_at > now())
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_expected IS DISTINCT FROM 0 THEN
        UPDATE consultation_states AS c
           SET version = c.version + 1, ({columns}) = ({given}), updated_at = now()
         WHERE c.session_id = p_session_id AND (p_expected IS NULL OR c.version = p_expected)
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL AND (p_expected IS NULL OR p_expected = 0) THEN
        INSERT INTO consultation_states AS c (session_id, version, {columns})
        VALUES (p_session_id, 1, {given})
        ON CONFLICT (session_id) DO NOTHING
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO consultation_state_history (session_id, version, {columns}, created_at)
    VALUES (p_session_id, version, {given}, updated_at);
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'consultation_states');
END
$$"""


# 0011's ctxstore_write_state_v1 (the same statements, without the counts), for the downgrade.
OLD_COLUMNS = tuple(column for column in COLUMNS if column not in COUNTS)


# -- analytics --------------------------------------------------------------------------------

CELLS_SQL = """
CREATE TABLE analytics_value_cells (
    kind text NOT NULL,
    day date NOT NULL,
    value text NOT NULL,
    consultations integer NOT NULL,
    CONSTRAINT pk_analytics_value_cells PRIMARY KEY (kind, day, value),
    CONSTRAINT ck_analytics_value_cells_consultations_positive CHECK (consultations > 0)
)"""
REFRESHED_DAYS_SQL = """
CREATE TABLE analytics_refreshed_days (
    day date NOT NULL,
    sessions integer NOT NULL,
    fingerprint numeric NOT NULL,
    min_group_size integer NOT NULL,
    refreshed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pk_analytics_refreshed_days PRIMARY KEY (day)
)"""
TABLES = ("analytics_value_cells", "analytics_refreshed_days")

KINDS = ("chief_complaint", "body_part", "symptom", "red_flag", "symptom_duration")
_DEFINER = "LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"
_K = "(SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)"
FREQUENCIES = "analytics_frequencies_v3"
FREQUENCIES_SIGNATURE = f"{FREQUENCIES}(text, timestamptz, timestamptz)"


def _whole_day(end: str) -> str:
    return f"""
    IF {end} <> date_trunc('day', {end}, 'UTC') THEN
        RAISE EXCEPTION '{FREQUENCIES}: {end} must be a whole day (UTC midnight), not %', {end}
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;"""


FREQUENCIES_SQL = f"""
CREATE FUNCTION {FREQUENCIES}(
    kind text, since timestamptz DEFAULT NULL, until timestamptz DEFAULT NULL
) RETURNS TABLE (value text, consultations bigint)
{_DEFINER}
AS $function$
BEGIN
    IF kind IS NULL OR kind NOT IN ({", ".join(f"'{kind}'" for kind in KINDS)}) THEN
        RAISE EXCEPTION '{FREQUENCIES}: unknown kind %', kind
            USING ERRCODE = '22023', HINT = 'use one of {", ".join(KINDS)}';
    END IF;{_whole_day("since")}{_whole_day("until")}
    -- The cells the last refresh stored, each shown again only if it passes today's k.
    RETURN QUERY
    SELECT c.value, sum(c.consultations)::bigint
      FROM public.analytics_value_cells AS c
      JOIN public.analytics_refreshed_days AS d ON d.day = c.day
     WHERE c.kind = {FREQUENCIES}.kind
       AND ({FREQUENCIES}.since IS NULL OR c.day >= ({FREQUENCIES}.since AT TIME ZONE 'UTC')::date)
       AND ({FREQUENCIES}.until IS NULL OR c.day < ({FREQUENCIES}.until AT TIME ZONE 'UTC')::date)
       AND c.consultations >= {_K} AND d.sessions - c.consultations >= {_K}
     GROUP BY c.value;
END
$function$
"""

# view: its value column, also the kind it counts
FREQUENCY_VIEWS = {
    "analytics_complaint_frequencies": "chief_complaint",
    "analytics_body_part_frequencies": "body_part",
    "analytics_symptom_frequencies": "symptom",
    "analytics_red_flag_frequencies": "red_flag",
    "analytics_symptom_duration_frequencies": "symptom_duration",
}


def frequency_view(view: str, function: str) -> str:
    kind = FREQUENCY_VIEWS[view]
    return f"""
        SELECT f.value AS {kind}, f.consultations
          FROM {function}('{kind}', NULL, NULL) AS f
        """


# Readers of the state rows the analytics role may no longer call.
STATE_READERS = (
    "analytics_frequencies_v2(text, timestamptz, timestamptz)",
    "analytics_value_frequencies_v2(text, timestamptz, timestamptz)",
)

# -- the per-consultation views: 0016's, with the counts read from their columns --------------


def _pseudonym(column: str) -> str:
    return (
        f"encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to({column}, 'UTF8'))), 'hex')"
    )


def _structured(counted: bool) -> str:
    if counted:
        flags, symptoms, parts = (f"coalesce(c.{n}, 0)" for n in list(COUNTS)[:3])
        complaint = "coalesce(c.has_chief_complaint, false)"
        duration = "coalesce(c.has_symptom_duration, false)"
    else:
        flags, symptoms, parts = (
            f"coalesce(cardinality(c.{n}), 0)" for n in ("red_flags", "symptoms", "body_parts")
        )
        complaint, duration = "c.chief_complaint IS NOT NULL", "c.duration IS NOT NULL"
    return f"""c.stage,
               {flags} > 0 AS has_red_flags,
               {flags} AS red_flag_count,
               {symptoms} AS symptom_count,
               {parts} AS body_part_count,
               {complaint} AS has_chief_complaint,
               {duration} AS has_symptom_duration,
               c.pain_level,
               s.message_count,
               s.turn_count,"""


_VERSIONS = """coalesce((SELECT max(summary_version) FROM summaries AS su
                          WHERE su.session_id = s.session_id), 0) AS summary_version,
               coalesce(c.version, 0) AS state_version
          FROM sessions AS s
         CROSS JOIN ctxstore_pseudonym_key AS k
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id"""


def details_sql(counted: bool) -> str:
    return f"""
        SELECT {_pseudonym("s.session_id")} AS consultation,
               {_structured(counted)}
               s.first_activity_at AS first_activity,
               extract(epoch FROM s.last_activity_at - s.first_activity_at) AS duration_seconds,
               {_VERSIONS}
        """


def consultations_sql(counted: bool) -> str:
    return f"""
        SELECT {_pseudonym("s.session_id")} AS consultation,
               {_structured(counted)}
               (s.first_activity_at AT TIME ZONE 'UTC')::date AS first_day,
               CASE WHEN s.last_activity_at - s.first_activity_at < interval '5 minutes'
                    THEN 'under 5 min'
                    WHEN s.last_activity_at - s.first_activity_at < interval '15 minutes'
                    THEN '5-15 min'
                    WHEN s.last_activity_at - s.first_activity_at < interval '1 hour'
                    THEN '15-60 min'
                    WHEN s.last_activity_at - s.first_activity_at < interval '1 day'
                    THEN '1-24 h'
                    WHEN s.last_activity_at - s.first_activity_at >= interval '1 day'
                    THEN 'over 1 day'
               END AS duration_bucket,
               {_VERSIONS}
        """


def _views(counted: bool) -> None:
    for name, definition in (
        ("analytics_consultation_details", details_sql(counted)),
        ("analytics_consultations", consultations_sql(counted)),
    ):
        op.execute(f"CREATE OR REPLACE VIEW {name} WITH (security_barrier) AS {definition}")


# -- privileges -------------------------------------------------------------------------------

_ROLES = """
DO $$
DECLARE
    v_owner text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'owner'));
    v_app text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'app'));
    v_analytics text :=
        quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'analytics'));
BEGIN
{body}
END
$$"""


def _as_roles(*grants: tuple[str, str]) -> str:
    """Each (statement, role variable): the statement ending in the recorded role's
    name, run when that role is recorded."""
    return _ROLES.format(
        body="\n".join(
            f"    IF {role} IS NOT NULL THEN\n"
            f"        EXECUTE '{statement} ' || {role};\n"
            "    END IF;"
            for statement, role in grants
        )
    )


V2_SIGNATURE = (
    "ctxstore_write_state_v2(text, bigint, text, text, text[], text[], text[], smallint, "
    "text, integer, integer, integer, boolean, boolean, jsonb, smallint, bigint, bytea)"
)


# The state tables' deferred key checks, made immediate while the rows are rewritten:
# PostgreSQL refuses to ALTER a table with checks still pending (SQLSTATE 55006).
_KEY_CHECKS = ", ".join(f"fk_{table}_key_id_data_keys" for table in STATE_TABLES)


def upgrade() -> None:
    op.execute(f"SET CONSTRAINTS {_KEY_CHECKS} IMMEDIATE")
    for table in STATE_TABLES:
        added = ", ".join(
            f"ADD COLUMN {column} {kind} NOT NULL DEFAULT {default}"
            for column, (kind, default, _) in COUNTS.items()
        )
        op.execute(f"ALTER TABLE {table} {added}")
        counted = ", ".join(f"{column} = {derived}" for column, (_, _, derived) in COUNTS.items())
        dropped = ", ".join(
            f"{column} = NULL"
            if column in ("chief_complaint", "duration")
            else f"{column} = '{{}}'"
            for column in FREE_TEXT
        )
        op.execute(f"UPDATE {table} SET {counted}")
        op.execute(f"UPDATE {table} SET {dropped} WHERE key_id IS NOT NULL")
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT ck_{table}_sealed_state_has_no_free_text "
            f"CHECK ({NO_FREE_TEXT})"
        )
    op.execute(f"SET CONSTRAINTS {_KEY_CHECKS} DEFERRED")
    op.execute(
        write_state_sql(
            "ctxstore_write_state_v2",
            _V2_ARGUMENTS,
            {column: f"p_{column}" for column in COLUMNS},
            "CREATE",
        )
    )
    op.execute(
        write_state_sql("ctxstore_write_state_v1", _V1_ARGUMENTS, _V1_VALUES, "CREATE OR REPLACE")
    )
    _views(counted=True)

    op.execute(CELLS_SQL)
    op.execute(REFRESHED_DAYS_SQL)
    op.execute(FREQUENCIES_SQL)
    for view in FREQUENCY_VIEWS:
        op.execute(
            f"CREATE OR REPLACE VIEW {view} WITH (security_barrier) AS "
            f"{frequency_view(view, FREQUENCIES)}"
        )
    op.execute(
        _as_roles(
            *((f"ALTER TABLE {table} OWNER TO", "v_owner") for table in TABLES),
            (f"ALTER FUNCTION {V2_SIGNATURE} OWNER TO", "v_owner"),
            (f"GRANT EXECUTE ON FUNCTION {V2_SIGNATURE} TO", "v_app"),
            (f"ALTER FUNCTION {FREQUENCIES_SIGNATURE} OWNER TO", "v_owner"),
            (f"GRANT EXECUTE ON FUNCTION {FREQUENCIES_SIGNATURE} TO", "v_analytics"),
            *((f"REVOKE EXECUTE ON FUNCTION {f} FROM", "v_analytics") for f in STATE_READERS),
        )
    )
    op.execute(f"REVOKE ALL ON FUNCTION {V2_SIGNATURE} FROM PUBLIC")
    op.execute(f"REVOKE ALL ON FUNCTION {FREQUENCIES_SIGNATURE} FROM PUBLIC")


def downgrade() -> None:
    for view in FREQUENCY_VIEWS:
        op.execute(
            f"CREATE OR REPLACE VIEW {view} WITH (security_barrier) AS "
            f"{frequency_view(view, 'analytics_value_frequencies_v2')}"
        )
    op.execute(
        _as_roles(*((f"GRANT EXECUTE ON FUNCTION {f} TO", "v_analytics") for f in STATE_READERS))
    )
    op.execute(f"DROP FUNCTION {FREQUENCIES_SIGNATURE}")
    for table in reversed(TABLES):
        op.execute(f"DROP TABLE {table}")
    _views(counted=False)
    op.execute(
        write_state_sql(
            "ctxstore_write_state_v1",
            _V1_ARGUMENTS,
            {column: f"p_{column}" for column in OLD_COLUMNS},
            "CREATE OR REPLACE",
            OLD_COLUMNS,
        )
    )
    op.execute(f"DROP FUNCTION {V2_SIGNATURE}")
    for table in STATE_TABLES:
        dropped = ", ".join(f"DROP COLUMN {column}" for column in COUNTS)
        op.execute(
            f"ALTER TABLE {table} DROP CONSTRAINT ck_{table}_sealed_state_has_no_free_text, "
            f"{dropped}"
        )
