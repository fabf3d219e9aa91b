-- Revision 1004: analytics by calendar month (issue 50).
--
-- Free-text counts and the red-flag share are published per UTC calendar month, once,
-- by `ctxstore analytics refresh` as the owner, with the keys: a value shows for a month
-- only when at least k of the month's consultations have it and at least k don't.  A
-- month is the only period these figures have, so no two shown figures subtract into a
-- smaller group; a published month never changes (but for a new k), so two readings never
-- differ by a late consultation.  What the analytics role read that would undo it goes:
-- the day cells (analytics_frequencies_v3), the red-flag counts of any whole-day window
-- (analytics_red_flags_v3, the daily and weekly views, the overview's rate) and the
-- red-flag columns of the per-consultation view.  The three tables are new and small.

CREATE TABLE analytics_months (
    month date NOT NULL,
    consultations integer NOT NULL,
    with_red_flags integer,
    min_group_size integer NOT NULL,
    fingerprint text NOT NULL,
    published_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pk_analytics_months PRIMARY KEY (month),
    CONSTRAINT ck_analytics_months_first_of_month CHECK ((EXTRACT(day FROM month) = (1)::numeric)),
    CONSTRAINT ck_analytics_months_consultations_positive CHECK ((consultations > 0))
);

ALTER TABLE analytics_months OWNER TO :"owner_role";

CREATE TABLE analytics_month_kinds (
    month date NOT NULL,
    kind text NOT NULL,
    shown_values integer NOT NULL,
    withheld_values integer,
    withheld_consultations integer,
    CONSTRAINT pk_analytics_month_kinds PRIMARY KEY (month, kind),
    CONSTRAINT fk_analytics_month_kinds_month_analytics_months FOREIGN KEY (month) REFERENCES analytics_months(month) ON DELETE CASCADE
);

ALTER TABLE analytics_month_kinds OWNER TO :"owner_role";

CREATE TABLE analytics_month_cells (
    kind text NOT NULL,
    month date NOT NULL,
    value text NOT NULL,
    consultations integer NOT NULL,
    CONSTRAINT pk_analytics_month_cells PRIMARY KEY (kind, month, value),
    CONSTRAINT ck_analytics_month_cells_consultations_positive CHECK ((consultations > 0)),
    CONSTRAINT fk_analytics_month_cells_month_analytics_months FOREIGN KEY (month) REFERENCES analytics_months(month) ON DELETE CASCADE
);

ALTER TABLE analytics_month_cells OWNER TO :"owner_role";

CREATE FUNCTION analytics_check_months_v1(caller text, since date, until date) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF since <> date_trunc('month', since::timestamp)::date THEN
        RAISE EXCEPTION '%: since must be the first day of a month, not %', caller, since
            USING ERRCODE = '22023',
                  HINT = 'these figures are published per calendar month, the only period they have';
    END IF;
    IF until <> date_trunc('month', until::timestamp)::date THEN
        RAISE EXCEPTION '%: until must be the first day of a month, not %', caller, until
            USING ERRCODE = '22023',
                  HINT = 'these figures are published per calendar month, the only period they have';
    END IF;
END
$$;

ALTER FUNCTION analytics_check_months_v1(caller text, since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_month_values_v1(since date DEFAULT NULL::date, until date DEFAULT NULL::date) RETURNS TABLE(kind text, month date, value text, consultations integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM public.analytics_check_months_v1('analytics_month_values_v1', since, until);
    -- Only months published with today's k: a month awaiting its refresh after k changed
    -- shows nothing until then.
    RETURN QUERY
    SELECT c.kind, c.month, c.value, c.consultations
      FROM public.analytics_month_cells AS c
      JOIN public.analytics_months AS m ON m.month = c.month
     WHERE m.min_group_size = (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
       AND (analytics_month_values_v1.since IS NULL OR c.month >= analytics_month_values_v1.since)
       AND (analytics_month_values_v1.until IS NULL OR c.month < analytics_month_values_v1.until);
END
$$;

ALTER FUNCTION analytics_month_values_v1(since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_month_withheld_v1(since date DEFAULT NULL::date, until date DEFAULT NULL::date) RETURNS TABLE(kind text, month date, consultations integer, shown_values integer, withheld_values integer, withheld_consultations integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM public.analytics_check_months_v1('analytics_month_withheld_v1', since, until);
    RETURN QUERY
    SELECT w.kind, w.month, m.consultations, w.shown_values, w.withheld_values,
           w.withheld_consultations
      FROM public.analytics_month_kinds AS w
      JOIN public.analytics_months AS m ON m.month = w.month
     WHERE m.min_group_size = (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
       AND (analytics_month_withheld_v1.since IS NULL OR w.month >= analytics_month_withheld_v1.since)
       AND (analytics_month_withheld_v1.until IS NULL OR w.month < analytics_month_withheld_v1.until);
END
$$;

ALTER FUNCTION analytics_month_withheld_v1(since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_red_flag_months_v1(since date DEFAULT NULL::date, until date DEFAULT NULL::date) RETURNS TABLE(month date, consultations integer, with_red_flags integer, share numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM public.analytics_check_months_v1('analytics_red_flag_months_v1', since, until);
    RETURN QUERY
    SELECT m.month, m.consultations, m.with_red_flags,
           round(m.with_red_flags::numeric / m.consultations, 4)
      FROM public.analytics_months AS m
     WHERE m.min_group_size = (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
       AND (analytics_red_flag_months_v1.since IS NULL OR m.month >= analytics_red_flag_months_v1.since)
       AND (analytics_red_flag_months_v1.until IS NULL OR m.month < analytics_red_flag_months_v1.until);
END
$$;

ALTER FUNCTION analytics_red_flag_months_v1(since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(consultations bigint, messages bigint, avg_turns numeric, summarized_share numeric, median_minutes numeric, p90_minutes numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v4: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v4: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    -- No red-flag rate: two windows a day apart would difference to the day's red flags.
    -- The red-flag share is per published month (analytics_red_flag_months_v1).
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               CASE WHEN count(*) >= $3 THEN round(avg(c.turn_count), 2) END,
               CASE WHEN count(*) >= $3 THEN round(avg((c.summary_version > 0)::int), 4) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.9) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
    $q$ USING since, until, v_k;
END
$_$;

ALTER FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

-- The all-time frequency views: each value's sum over the published months, a sum of
-- shown figures only.
CREATE OR REPLACE VIEW analytics_body_part_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS body_part, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'body_part'::text
  GROUP BY v.value;

CREATE OR REPLACE VIEW analytics_complaint_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS chief_complaint, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'chief_complaint'::text
  GROUP BY v.value;

CREATE OR REPLACE VIEW analytics_red_flag_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS red_flag, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'red_flag'::text
  GROUP BY v.value;

CREATE OR REPLACE VIEW analytics_symptom_duration_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS symptom_duration, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'symptom_duration'::text
  GROUP BY v.value;

CREATE OR REPLACE VIEW analytics_symptom_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS symptom, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'symptom'::text
  GROUP BY v.value;

-- What a BI tool connecting as the analytics login reads: the same months and suppression.
CREATE VIEW analytics_monthly_values WITH (security_barrier='true') AS
 SELECT v.kind, v.month, v.value, v.consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations);

ALTER TABLE analytics_monthly_values OWNER TO :"owner_role";

CREATE VIEW analytics_monthly_withheld WITH (security_barrier='true') AS
 SELECT w.kind, w.month, w.consultations, w.shown_values, w.withheld_values,
    w.withheld_consultations
   FROM analytics_month_withheld_v1() w(kind, month, consultations, shown_values, withheld_values, withheld_consultations);

ALTER TABLE analytics_monthly_withheld OWNER TO :"owner_role";

CREATE VIEW analytics_monthly_red_flags WITH (security_barrier='true') AS
 SELECT r.month, r.consultations, r.with_red_flags, r.share
   FROM analytics_red_flag_months_v1() r(month, consultations, with_red_flags, share);

ALTER TABLE analytics_monthly_red_flags OWNER TO :"owner_role";

-- The per-consultation view without its red-flag columns: with them, a GROUP BY counted
-- any day's red flags exactly.
DROP VIEW analytics_consultations;

CREATE VIEW analytics_consultations WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(s.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    c.stage,
    COALESCE(c.symptom_count, 0) AS symptom_count,
    COALESCE(c.body_part_count, 0) AS body_part_count,
    COALESCE(c.has_chief_complaint, false) AS has_chief_complaint,
    COALESCE(c.has_symptom_duration, false) AS has_symptom_duration,
    c.pain_level,
    s.message_count,
    s.turn_count,
    ((s.first_activity_at AT TIME ZONE 'UTC'::text))::date AS first_day,
        CASE
            WHEN ((s.last_activity_at - s.first_activity_at) < '00:05:00'::interval) THEN 'under 5 min'::text
            WHEN ((s.last_activity_at - s.first_activity_at) < '00:15:00'::interval) THEN '5-15 min'::text
            WHEN ((s.last_activity_at - s.first_activity_at) < '01:00:00'::interval) THEN '15-60 min'::text
            WHEN ((s.last_activity_at - s.first_activity_at) < '1 day'::interval) THEN '1-24 h'::text
            WHEN ((s.last_activity_at - s.first_activity_at) >= '1 day'::interval) THEN 'over 1 day'::text
            ELSE NULL::text
        END AS duration_bucket,
    COALESCE(( SELECT max(su.summary_version) AS max
           FROM summaries su
          WHERE (su.session_id = s.session_id)), 0) AS summary_version,
    COALESCE(c.version, (0)::bigint) AS state_version
   FROM ((sessions s
     CROSS JOIN ctxstore_pseudonym_key k)
     LEFT JOIN consultation_states c ON ((c.session_id = s.session_id)));

ALTER TABLE analytics_consultations OWNER TO :"owner_role";

GRANT SELECT ON TABLE analytics_consultations TO :"analytics_role";

GRANT SELECT ON TABLE analytics_monthly_values TO :"analytics_role";

GRANT SELECT ON TABLE analytics_monthly_withheld TO :"analytics_role";

GRANT SELECT ON TABLE analytics_monthly_red_flags TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_check_months_v1(caller text, since date, until date) FROM PUBLIC;

REVOKE ALL ON FUNCTION analytics_month_values_v1(since date, until date) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_month_values_v1(since date, until date) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_month_withheld_v1(since date, until date) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_month_withheld_v1(since date, until date) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_red_flag_months_v1(since date, until date) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_red_flag_months_v1(since date, until date) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) TO :"analytics_role";

-- What would difference against the months: no longer the analytics role's.  The owner
-- keeps them for the previous release's commands; release 1.2 drops them.
REVOKE ALL ON FUNCTION analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone) FROM :"analytics_role";

REVOKE ALL ON FUNCTION analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) FROM :"analytics_role";

REVOKE ALL ON FUNCTION analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) FROM :"analytics_role";

REVOKE ALL ON TABLE analytics_red_flags_daily FROM :"analytics_role";

REVOKE ALL ON TABLE analytics_red_flags_weekly FROM :"analytics_role";
