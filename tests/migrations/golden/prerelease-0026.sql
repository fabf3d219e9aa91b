--
-- PostgreSQL database dump
--

\restrict eVcTTjy4pMCiZ1ixaSJxA2mJnGDxxMRr0JAbCTA2ZYV3CWObV8prlKsd1QZpAxT

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: ctxstore_message_row_v1; Type: TYPE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TYPE public.ctxstore_message_row_v1 AS (
	seq integer,
	role text,
	content text,
	turn_id text,
	ts text,
	ts_offset integer,
	name text,
	metadata text,
	digest bytea,
	token_count integer,
	format_version smallint,
	token_encoding text,
	key_id bigint,
	sealed bytea,
	ts_nanos smallint
);


ALTER TYPE public.ctxstore_message_row_v1 OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_durations_v1(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_durations_v1(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(final_stage text, consultations bigint, median_minutes numeric, p90_minutes numeric, avg_turns numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    RETURN QUERY EXECUTE $q$
        SELECT c.stage,
               count(*),
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round(avg(c.turn_count), 2)
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
                 AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_durations_v1(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_durations_v2(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_durations_v2(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(final_stage text, consultations bigint, median_minutes numeric, p90_minutes numeric, avg_turns numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_durations_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_durations_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT c.stage,
               count(*),
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round(avg(c.turn_count), 2)
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
                 AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_durations_v2(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_durations_v3(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(final_stage text, consultations bigint, median_minutes numeric, p90_minutes numeric, avg_turns numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_durations_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_durations_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT c.stage,
               count(*),
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.9) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round(avg(c.turn_count), 2) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST
    $q$ USING since, until, v_k;
END
$_$;


ALTER FUNCTION public.analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_frequencies_v1(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_frequencies_v1(kind text, since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(value text, consultations bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF since IS NULL AND until IS NULL THEN
        IF kind IN ('chief_complaint', 'body_part', 'symptom', 'red_flag',
                    'symptom_duration') THEN
            RETURN QUERY EXECUTE format(
                'SELECT v.%I, v.consultations FROM %I AS v', kind,
                CASE kind WHEN 'chief_complaint' THEN 'analytics_complaint_frequencies'
                          ELSE 'analytics_' || kind || '_frequencies' END);
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT f.value, f.consultations
                   FROM analytics_value_frequencies(kind, since, until) AS f;
END
$$;


ALTER FUNCTION public.analytics_frequencies_v1(kind text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_frequencies_v2(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(value text, consultations bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_frequencies_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_frequencies_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY SELECT f.value, f.consultations
                   FROM analytics_value_frequencies_v2(kind, since, until) AS f;
END
$$;


ALTER FUNCTION public.analytics_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_frequencies_v3(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_frequencies_v3(kind text, since timestamp with time zone DEFAULT NULL::timestamp with time zone, until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(value text, consultations bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF kind IS NULL OR kind NOT IN ('chief_complaint', 'body_part', 'symptom', 'red_flag', 'symptom_duration') THEN
        RAISE EXCEPTION 'analytics_frequencies_v3: unknown kind %', kind
            USING ERRCODE = '22023', HINT = 'use one of chief_complaint, body_part, symptom, red_flag, symptom_duration';
    END IF;
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_frequencies_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_frequencies_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    -- The cells the last refresh stored, each shown again only if it passes today's k.
    RETURN QUERY
    SELECT c.value, sum(c.consultations)::bigint
      FROM public.analytics_value_cells AS c
      JOIN public.analytics_refreshed_days AS d ON d.day = c.day
     WHERE c.kind = analytics_frequencies_v3.kind
       AND (analytics_frequencies_v3.since IS NULL OR c.day >= (analytics_frequencies_v3.since AT TIME ZONE 'UTC')::date)
       AND (analytics_frequencies_v3.until IS NULL OR c.day < (analytics_frequencies_v3.until AT TIME ZONE 'UTC')::date)
       AND c.consultations >= (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st) AND d.sessions - c.consultations >= (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
     GROUP BY c.value;
END
$$;


ALTER FUNCTION public.analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_funnel_v1(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_funnel_v1(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(stage text, reached bigint, ended_here bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT f.stage, f.reached, f.ended_here FROM analytics_stage_funnel AS f;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT h.stage,
               count(DISTINCT h.consultation),
               count(DISTINCT h.consultation) FILTER (WHERE h.is_current)
          FROM analytics_stage_history AS h
         WHERE ($1 IS NULL OR h.first_activity >= $1)
                 AND ($2 IS NULL OR h.first_activity < $2)
         GROUP BY h.stage
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_funnel_v1(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_funnel_v2(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(stage text, reached bigint, ended_here bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_funnel_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_funnel_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT f.stage, f.reached, f.ended_here FROM analytics_stage_funnel AS f;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT h.stage,
               count(DISTINCT h.consultation),
               count(DISTINCT h.consultation) FILTER (WHERE h.is_current)
          FROM analytics_stage_history AS h
         WHERE ($1 IS NULL OR h.first_activity >= $1)
                 AND ($2 IS NULL OR h.first_activity < $2)
         GROUP BY h.stage
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_min_group_size_v1(); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_min_group_size_v1() RETURNS TABLE(min_group_size integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY SELECT st.min_group_size FROM ctxstore_analytics_settings AS st;
END
$$;


ALTER FUNCTION public.analytics_min_group_size_v1() OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_overview_v1(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_overview_v1(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(consultations bigint, messages bigint, avg_turns numeric, red_flag_rate numeric, summarized_share numeric, median_minutes numeric, p90_minutes numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               round(avg(c.turn_count), 2),
               round(avg(c.has_red_flags::int), 4),
               round(avg((c.summary_version > 0)::int), 4),
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1)
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
                 AND ($2 IS NULL OR c.first_activity < $2)
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_overview_v1(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_overview_v2(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_overview_v2(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(consultations bigint, messages bigint, avg_turns numeric, red_flag_rate numeric, summarized_share numeric, median_minutes numeric, p90_minutes numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               round(avg(c.turn_count), 2),
               round(avg(c.has_red_flags::int), 4),
               round(avg((c.summary_version > 0)::int), 4),
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1)
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
                 AND ($2 IS NULL OR c.first_activity < $2)
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_overview_v2(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_overview_v3(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(consultations bigint, messages bigint, avg_turns numeric, red_flag_rate numeric, summarized_share numeric, median_minutes numeric, p90_minutes numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               CASE WHEN count(*) >= $3 THEN round(avg(c.turn_count), 2) END,
               CASE WHEN count(*) FILTER (WHERE c.has_red_flags) >= $3 AND count(*) - count(*) FILTER (WHERE c.has_red_flags) >= $3 THEN round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4) END,
               CASE WHEN count(*) >= $3 THEN round(avg((c.summary_version > 0)::int), 4) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.9) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
    $q$ USING since, until, v_k;
END
$_$;


ALTER FUNCTION public.analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_red_flags_v1(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_red_flags_v1(bucket text, since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(period timestamp with time zone, consultations bigint, with_red_flags bigint, rate numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'analytics_red_flags_v1: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               count(*) FILTER (WHERE c.has_red_flags),
               round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4)
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
                 AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY 1 ORDER BY 1
    $q$ USING since, until, bucket;
END
$_$;


ALTER FUNCTION public.analytics_red_flags_v1(bucket text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_red_flags_v2(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_red_flags_v2(bucket text, since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(period timestamp with time zone, consultations bigint, with_red_flags bigint, rate numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_red_flags_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_red_flags_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'analytics_red_flags_v2: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               count(*) FILTER (WHERE c.has_red_flags),
               round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4)
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
                 AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY 1 ORDER BY 1
    $q$ USING since, until, bucket;
END
$_$;


ALTER FUNCTION public.analytics_red_flags_v2(bucket text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_red_flags_v3(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(period timestamp with time zone, consultations bigint, with_red_flags bigint, rate numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               CASE WHEN count(*) FILTER (WHERE c.has_red_flags) >= $4 AND count(*) - count(*) FILTER (WHERE c.has_red_flags) >= $4 THEN count(*) FILTER (WHERE c.has_red_flags) END,
               CASE WHEN count(*) FILTER (WHERE c.has_red_flags) >= $4 AND count(*) - count(*) FILTER (WHERE c.has_red_flags) >= $4 THEN round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY 1 ORDER BY 1
    $q$ USING since, until, bucket, v_k;
END
$_$;


ALTER FUNCTION public.analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_transitions_v1(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_transitions_v1(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(from_stage text, to_stage text, transitions bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT t.from_stage, t.to_stage, t.transitions
                       FROM analytics_stage_transitions AS t
                      ORDER BY t.transitions DESC, t.from_stage NULLS FIRST, t.to_stage;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT steps.from_stage, steps.to_stage, count(*)
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.consultation ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM analytics_stage_history AS h
                 WHERE ($1 IS NULL OR h.first_activity >= $1)
                 AND ($2 IS NULL OR h.first_activity < $2)) AS steps
         WHERE steps.from_stage IS DISTINCT FROM steps.to_stage
         GROUP BY steps.from_stage, steps.to_stage
         ORDER BY count(*) DESC, steps.from_stage NULLS FIRST, steps.to_stage
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_transitions_v1(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_transitions_v2(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(from_stage text, to_stage text, transitions bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_transitions_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_transitions_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT t.from_stage, t.to_stage, t.transitions
                       FROM analytics_stage_transitions AS t
                      ORDER BY t.transitions DESC, t.from_stage NULLS FIRST, t.to_stage;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT steps.from_stage, steps.to_stage, count(*)
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.consultation ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM analytics_stage_history AS h
                 WHERE ($1 IS NULL OR h.first_activity >= $1)
                 AND ($2 IS NULL OR h.first_activity < $2)) AS steps
         WHERE steps.from_stage IS DISTINCT FROM steps.to_stage
         GROUP BY steps.from_stage, steps.to_stage
         ORDER BY count(*) DESC, steps.from_stage NULLS FIRST, steps.to_stage
    $q$ USING since, until;
END
$_$;


ALTER FUNCTION public.analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_value_frequencies(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_value_frequencies(kind text, since timestamp with time zone DEFAULT NULL::timestamp with time zone, until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(value text, consultations bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF kind IS NULL OR kind NOT IN ('chief_complaint', 'body_part', 'symptom', 'red_flag', 'symptom_duration') THEN
        RAISE EXCEPTION 'analytics_value_frequencies: unknown kind %', kind
            USING ERRCODE = '22023',
                  HINT = 'use one of chief_complaint, body_part, symptom, red_flag, symptom_duration';
    END IF;
    RETURN QUERY
    SELECT m.v, count(DISTINCT m.sid)
      FROM (SELECT c.session_id AS sid,
                   unnest(CASE kind WHEN 'chief_complaint' THEN ARRAY[c.chief_complaint]
WHEN 'body_part' THEN c.body_parts
WHEN 'symptom' THEN c.symptoms
WHEN 'red_flag' THEN c.red_flags
WHEN 'symptom_duration' THEN ARRAY[c.duration] END) AS v
              FROM public.consultation_states AS c
              JOIN public.sessions AS s ON s.session_id = c.session_id
             WHERE (since IS NULL OR s.first_activity_at >= since)
               AND (until IS NULL OR s.first_activity_at < until)) AS m
     WHERE m.v IS NOT NULL
     GROUP BY m.v
    HAVING count(DISTINCT m.sid) >=
           (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
END
$$;


ALTER FUNCTION public.analytics_value_frequencies(kind text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_value_frequencies_v2(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.analytics_value_frequencies_v2(kind text, since timestamp with time zone DEFAULT NULL::timestamp with time zone, until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(value text, consultations bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF kind IS NULL OR kind NOT IN ('chief_complaint', 'body_part', 'symptom', 'red_flag', 'symptom_duration') THEN
        RAISE EXCEPTION 'analytics_value_frequencies_v2: unknown kind %', kind
            USING ERRCODE = '22023',
                  HINT = 'use one of chief_complaint, body_part, symptom, red_flag, symptom_duration';
    END IF;
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_value_frequencies_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_value_frequencies_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    -- A day's cell shows when k or more of the day's consultations have the value and k
    -- or more don't; a window counts the sum of its days' shown cells.
    RETURN QUERY
    SELECT cell.v, sum(cell.n)::bigint
      FROM (SELECT m.day, m.v, count(DISTINCT m.sid) AS n
              FROM (SELECT c.session_id AS sid,
                           date_trunc('day', s.first_activity_at, 'UTC') AS day,
                           unnest(CASE kind
                   WHEN 'chief_complaint' THEN ARRAY[c.chief_complaint]
                   WHEN 'body_part' THEN c.body_parts
                   WHEN 'symptom' THEN c.symptoms
                   WHEN 'red_flag' THEN c.red_flags
                   WHEN 'symptom_duration' THEN ARRAY[c.duration]
                                  END) AS v
                      FROM public.consultation_states AS c
                      JOIN public.sessions AS s ON s.session_id = c.session_id
                     WHERE (since IS NULL OR s.first_activity_at >= since)
                   AND (until IS NULL OR s.first_activity_at < until)) AS m
             WHERE m.v IS NOT NULL
             GROUP BY m.day, m.v) AS cell
      JOIN (SELECT date_trunc('day', s.first_activity_at, 'UTC') AS day, count(*) AS size
              FROM public.sessions AS s
             WHERE (since IS NULL OR s.first_activity_at >= since)
                   AND (until IS NULL OR s.first_activity_at < until)
             GROUP BY 1) AS days ON days.day = cell.day
     WHERE cell.n >= (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st) AND days.size - cell.n >= (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
     GROUP BY cell.v;
END
$$;


ALTER FUNCTION public.analytics_value_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_if_unchanged_v1(text, bigint, text, interval, integer, bytea, integer, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_if_unchanged_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    UPDATE sessions AS s
       SET message_count = p_new_count, content_hash = p_new_hash, version = s.version + 1,
           updated_at = now(), user_id = coalesce(p_user_id, s.user_id),
           expires_at = now() + p_ttl, turn_count = s.turn_count + p_turns,
           first_activity_at = coalesce(p_first_ts, s.first_activity_at),
           last_activity_at = v_last
     WHERE s.session_id = p_session_id AND s.message_count = p_known_count
       AND s.content_hash = p_known_hash
       AND (p_expected IS NULL OR s.version = p_expected)
       AND (s.expires_at IS NULL OR s.expires_at > now())
    RETURNING s.version INTO v_version;
    IF FOUND THEN
        PERFORM ctxstore_insert_messages_v1(p_session_id, p_known_count, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed);
    END IF;
    RETURN v_version;
END
$$;


ALTER FUNCTION public.ctxstore_append_if_unchanged_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_if_unchanged_v2(text, bigint, text, interval, integer, bytea, integer, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_if_unchanged_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
    UPDATE sessions AS s
       SET message_count = p_new_count, content_hash = p_new_hash, version = s.version + 1,
           updated_at = now(), user_id = coalesce(s.user_id, p_user_id),
           expires_at = now() + p_ttl, turn_count = s.turn_count + p_turns,
           first_activity_at = coalesce(p_first_ts, s.first_activity_at),
           last_activity_at = v_last
     WHERE s.session_id = p_session_id AND s.message_count = p_known_count
       AND s.content_hash = p_known_hash
       AND (p_expected IS NULL OR s.version = p_expected)
       AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
       AND (s.expires_at IS NULL OR s.expires_at > now())
    RETURNING s.version INTO v_version;
    IF FOUND THEN
        PERFORM ctxstore_insert_messages_v1(p_session_id, p_known_count, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed);
        RETURN v_version;
    END IF;
    
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;
    RETURN NULL;
END
$$;


ALTER FUNCTION public.ctxstore_append_if_unchanged_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_if_unchanged_v3(text, bigint, text, interval, integer, bytea, integer, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[], smallint[], text[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
    UPDATE sessions AS s
       SET message_count = p_new_count, content_hash = p_new_hash, version = s.version + 1,
           updated_at = now(), user_id = coalesce(s.user_id, p_user_id),
           expires_at = now() + p_ttl, turn_count = s.turn_count + p_turns,
           first_activity_at = coalesce(p_first_ts, s.first_activity_at),
           last_activity_at = v_last
     WHERE s.session_id = p_session_id AND s.message_count = p_known_count
       AND s.content_hash = p_known_hash
       AND (p_expected IS NULL OR s.version = p_expected)
       AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
       AND (s.expires_at IS NULL OR s.expires_at > now())
    RETURNING s.version INTO v_version;
    IF FOUND THEN
        PERFORM ctxstore_insert_messages_v2(p_session_id, p_known_count, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed, p_ts_nanos);
        IF cardinality(p_write_ids) > 0 THEN
            INSERT INTO applied_session_writes (session_id, write_id)
            SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
            ON CONFLICT DO NOTHING;
        END IF;
        RETURN v_version;
    END IF;
    
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;
    RETURN NULL;
END
$$;


ALTER FUNCTION public.ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v1(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
            IF p_expected IS NOT NULL
               OR EXISTS (SELECT FROM sessions WHERE session_id = p_session_id) THEN
                RETURN;  -- no fit: the caller reads why
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
        PERFORM ctxstore_insert_messages_v1(p_session_id, start, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed);
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_append_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v2(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
        PERFORM ctxstore_insert_messages_v1(p_session_id, start, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed);
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v3(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
              FROM unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS m(seq, role, content, turn_id, ts,
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
               p_first_ts, p_last_ts, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS a;
END
$$;


ALTER FUNCTION public.ctxstore_append_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v4(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
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
               user_id = coalesce(s.user_id, p_user_id),
               updated_at = now()
         WHERE s.session_id = p_session_id
           AND (p_expected IS NULL OR s.version = p_expected)
           AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
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
              FROM unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS m(seq, role, content, turn_id, ts,
                       ts_offset, name, metadata, digest, token_count, format_version,
                       token_encoding, key_id, sealed);
            IF p_key_id[1] IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
            END IF;
            RETURN;
        END IF;
    END IF;
    -- A new session, one that can't take the messages, another user's, or a race.
    IF p_user_id IS NOT NULL THEN
        -- creators of one session id take turns, so only the first claims it
        PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore session ' || p_session_id, 0));
    END IF;
    
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v2(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS a;
END
$$;


ALTER FUNCTION public.ctxstore_append_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v5(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v5(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v4(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS a;
    IF version IS NULL THEN
        SELECT s.version, s.message_count, s.content_hash,
               NOT (s.expires_at IS NULL OR s.expires_at > now())
          INTO current_version, current_count, current_hash, current_expired
          FROM sessions AS s WHERE s.session_id = p_session_id;
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_append_v5(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v6(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[], smallint[], text[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
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
               user_id = coalesce(s.user_id, p_user_id),
               updated_at = now()
         WHERE s.session_id = p_session_id
           AND (p_expected IS NULL OR s.version = p_expected)
           AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
           AND s.message_count + v_added <= p_max_messages
           AND (s.expires_at IS NULL OR s.expires_at > now())
        RETURNING s.message_count - v_added, s.version INTO start, version;
        IF FOUND THEN
            INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                          name, metadata, digest, token_count, format_version,
                          token_encoding, key_id, sealed, ts_nanos)
    SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
           m.ts::timestamptz, m.ts_offset, m.name, m.metadata, m.digest,
           m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
           m.ts_nanos
      FROM unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed, p_ts_nanos) AS m(seq, role, content, turn_id, ts,
               ts_offset, name, metadata, digest, token_count, format_version,
               token_encoding, key_id, sealed, ts_nanos);
            IF p_key_id[1] IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
            END IF;
            IF cardinality(p_write_ids) > 0 THEN
            INSERT INTO applied_session_writes (session_id, write_id)
            SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
            ON CONFLICT DO NOTHING;
        END IF;
            RETURN;
        END IF;
    END IF;
    -- A new session, one that can't take the messages, another user's, or a race.
    IF p_user_id IS NOT NULL THEN
        -- creators of one session id take turns, so only the first claims it
        PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore session ' || p_session_id, 0));
    END IF;
    
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v2(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS a;
    IF version IS NULL THEN
        SELECT s.version, s.message_count, s.content_hash,
               NOT (s.expires_at IS NULL OR s.expires_at > now())
          INTO current_version, current_count, current_hash, current_expired
          FROM sessions AS s WHERE s.session_id = p_session_id;
    ELSE
        IF EXISTS (SELECT FROM unnest(p_ts_nanos) AS n WHERE n IS NOT NULL) THEN
            UPDATE messages AS t SET ts_nanos = n.nanos
              FROM unnest(p_seq, p_ts_nanos) AS n(seq, nanos)
             WHERE t.session_id = p_session_id AND t.seq = start + n.seq
               AND n.nanos IS NOT NULL;
        END IF;
        IF cardinality(p_write_ids) > 0 THEN
            INSERT INTO applied_session_writes (session_id, write_id)
            SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_append_v7(text, bigint, text, interval, integer, integer, bytea, bytea, bytea, integer, timestamp with time zone, timestamp with time zone, public.ctxstore_message_row_v1[], text[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows public.ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_rows);
    v_sealed boolean := (p_rows[1]).key_id IS NOT NULL;
    v_user text;
    v_pass integer;
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
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
               user_id = coalesce(s.user_id, p_user_id),
               updated_at = now()
         WHERE s.session_id = p_session_id
           AND (p_expected IS NULL OR s.version = p_expected)
           AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
           AND s.message_count + v_added <= p_max_messages
           AND (s.expires_at IS NULL OR s.expires_at > now())
           -- a sealed chain is extended from the very hash stored, never left unknown
           AND (NOT v_sealed OR s.message_count = 0
                OR (s.message_count = p_known_count
                    AND s.content_hash IS NOT DISTINCT FROM p_known_hash))
        RETURNING s.message_count - v_added, s.version, s.user_id INTO start, version, v_user;
        IF FOUND THEN
            INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                                  name, metadata, digest, token_count, format_version,
                                  token_encoding, key_id, sealed, ts_nanos)
            SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
                   m.ts::timestamptz, m.ts_offset, m.name, m.metadata::jsonb, m.digest,
                   m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
                   m.ts_nanos
              FROM unnest(p_rows) AS m;
            IF cardinality(p_write_ids) > 0 THEN
                INSERT INTO applied_session_writes (session_id, write_id)
                SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
                ON CONFLICT DO NOTHING;
            END IF;
        END IF;
    END IF;
    IF version IS NULL THEN
        IF v_sealed AND p_expected IS DISTINCT FROM 0 THEN
            -- Refused as it stands, read only (a refusal writes nothing, not even a
            -- lock).  Else locked and read again, so that its hash stays what is checked
            -- here until v6 extends it: before v6's lock on the session id, as the UPDATE
            -- above may already hold the row (one it waited for, then found changed).
            FOR v_pass IN 1..2 LOOP
                IF v_pass = 1 THEN
                    SELECT s.version, s.message_count, s.content_hash,
                           NOT (s.expires_at IS NULL OR s.expires_at > now())
                      INTO current_version, current_count, current_hash, current_expired
                      FROM sessions AS s WHERE s.session_id = p_session_id;
                ELSE
                    SELECT s.version, s.message_count, s.content_hash,
                           NOT (s.expires_at IS NULL OR s.expires_at > now())
                      INTO current_version, current_count, current_hash, current_expired
                      FROM sessions AS s WHERE s.session_id = p_session_id
                       FOR NO KEY UPDATE;
                END IF;
                IF FOUND AND current_count > 0 AND NOT current_expired
                   AND (current_count IS DISTINCT FROM p_known_count
                        OR current_hash IS DISTINCT FROM p_known_hash) THEN
                    RETURN;  -- refused, nothing written: the writer resumes the stored chain
                END IF;
            END LOOP;
            current_version := NULL;
            current_count := NULL;
            current_hash := NULL;
            current_expired := NULL;
        END IF;
        -- A new session, one that can't take the messages, another user's, or a race: v6.
        SELECT a.start, a.version, a.current_version, a.current_count, a.current_hash,
               a.current_expired
          INTO start, version, current_version, current_count, current_hash, current_expired
          FROM ctxstore_append_v6(p_session_id, p_expected, p_user_id, p_ttl,
                   p_max_messages, p_known_count, p_known_hash, p_added_hash,
                   p_extended_hash, p_turns, p_first_ts, p_last_ts,
                   ARRAY(SELECT m.seq FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.role FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.content FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.turn_id FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.ts FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.ts_offset FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.name FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.metadata::jsonb FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.digest FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.token_count FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.format_version FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.token_encoding FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.key_id FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.sealed FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.ts_nanos FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   p_write_ids) AS a;
        IF version IS NULL OR NOT v_sealed THEN
            RETURN;  -- refused (nothing written), or plaintext: nothing more to check
        END IF;
        -- a statement of its own: Citus runs it on the session's shard, not as a subquery
        SELECT s.user_id INTO v_user FROM sessions AS s WHERE s.session_id = p_session_id;
    END IF;
    -- The keys exist and are the session's own or its user's; else, as a destroyed key
    -- (the writer forgets its keys and seals again).  Checked here, not in a function of
    -- its own: a call begun before a downgrade must not find it dropped.
    IF v_sealed AND EXISTS (
        SELECT FROM unnest(p_rows) AS m
         WHERE NOT EXISTS (SELECT FROM data_keys AS d
                            WHERE d.key_id = m.key_id
                              AND d.owner IN ('s:' || p_session_id, 'u:' || v_user))) THEN
        RAISE EXCEPTION 'a data key this write was sealed under was destroyed, or is not '
                        'the session''s (fk_messages_key_id_data_keys)'
            USING ERRCODE = 'foreign_key_violation',
                  CONSTRAINT = 'fk_messages_key_id_data_keys';
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows public.ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_delete_session_v1(text, boolean); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_deleted boolean;
BEGIN
    DELETE FROM sessions
     WHERE session_id = p_session_id AND (NOT p_expired_only OR expires_at <= now());
    v_deleted := FOUND;
    IF v_deleted AND EXISTS (SELECT FROM data_keys WHERE owner = 's:' || p_session_id) THEN
        DELETE FROM data_keys WHERE owner = 's:' || p_session_id;
    END IF;
    RETURN v_deleted;
END
$$;


ALTER FUNCTION public.ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_delete_unused_retired_keys_v1(); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_delete_unused_retired_keys_v1() RETURNS SETOF bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_retired bigint[];
    v_used bigint[];
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    v_retired := ARRAY(SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL
                        ORDER BY key_id FOR UPDATE);
    IF cardinality(v_retired) = 0 THEN
        RETURN;
    END IF;
    -- a new statement, a new snapshot: every row committed before the lock
    v_used := ARRAY(
        SELECT key_id FROM messages WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM summaries WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_states WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_state_history WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM user_profiles WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM graph_channel_values WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM graph_writes WHERE key_id = ANY(v_retired));
    RETURN QUERY
        DELETE FROM data_keys
         WHERE key_id = ANY(v_retired) AND key_id <> ALL(v_used)
        RETURNING key_id;
END
$$;


ALTER FUNCTION public.ctxstore_delete_unused_retired_keys_v1() OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_erase_user_sessions_v1(text); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_erase_user_sessions_v1(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_row record;
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    session_ids := '{}';
    messages := 0;
    FOR v_row IN UPDATE sessions SET user_id = user_id WHERE user_id = p_user_id
                 RETURNING session_id, message_count LOOP
        session_ids := session_ids || v_row.session_id;
        messages := messages + v_row.message_count;
    END LOOP;
    session_ids := ARRAY(SELECT unnest(session_ids) ORDER BY 1);
    SELECT count(*) INTO summaries FROM summaries AS t WHERE t.session_id = ANY(session_ids);
    SELECT count(*) INTO states FROM consultation_states AS t
     WHERE t.session_id = ANY(session_ids);
    SELECT count(*) INTO state_changes FROM consultation_state_history AS t
     WHERE t.session_id = ANY(session_ids);
    IF cardinality(session_ids) > 0 THEN
        DELETE FROM sessions AS t WHERE t.session_id = ANY(session_ids);
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_erase_user_sessions_v1(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_erase_user_sessions_v2(text); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_keys bigint[];
    v_holding text[] := '{}';
    v_row record;
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    -- Writers naming the user hold this lock shared from their start: the erasure waits
    -- for those in flight and holds off new ones, before any row lock (no deadlock).
    PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore user ' || p_user_id, 0));
    v_keys := ARRAY(SELECT key_id FROM data_keys WHERE owner = 'u:' || p_user_id);
    IF cardinality(v_keys) > 0 THEN
        v_holding := ARRAY(
            SELECT t.session_id FROM messages AS t WHERE t.key_id = ANY(v_keys)
            UNION SELECT t.session_id FROM summaries AS t WHERE t.key_id = ANY(v_keys)
            UNION SELECT t.session_id FROM consultation_states AS t
                   WHERE t.key_id = ANY(v_keys)
            UNION SELECT t.session_id FROM consultation_state_history AS t
                   WHERE t.key_id = ANY(v_keys));
    END IF;
    session_ids := '{}';
    messages := 0;
    FOR v_row IN UPDATE sessions SET user_id = user_id
                  WHERE user_id = p_user_id OR session_id = ANY(v_holding)
                 RETURNING session_id, message_count LOOP
        session_ids := session_ids || v_row.session_id;
        messages := messages + v_row.message_count;
    END LOOP;
    session_ids := ARRAY(SELECT unnest(session_ids) ORDER BY 1);
    SELECT count(*) INTO summaries FROM summaries AS t WHERE t.session_id = ANY(session_ids);
    SELECT count(*) INTO states FROM consultation_states AS t
     WHERE t.session_id = ANY(session_ids);
    SELECT count(*) INTO state_changes FROM consultation_state_history AS t
     WHERE t.session_id = ANY(session_ids);
    IF cardinality(session_ids) > 0 THEN
        DELETE FROM sessions AS t WHERE t.session_id = ANY(session_ids);
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_insert_messages_v1(text, integer, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                          metadata, digest, token_count, format_version, token_encoding,
                          key_id, sealed)
    SELECT s.session_id, p_start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata, m.digest, m.token_count, m.format_version,
           m.token_encoding, m.key_id, m.sealed
      FROM sessions AS s,
           unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS m(seq, role, content, turn_id, ts, ts_offset, name,
                       metadata, digest, token_count, format_version, token_encoding,
                       key_id, sealed)
     WHERE s.session_id = p_session_id;
    IF p_key_id[1] IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_insert_messages_v2(text, integer, integer[], text[], text[], text[], text[], integer[], text[], jsonb[], bytea[], integer[], smallint[], text[], bigint[], bytea[], smallint[]); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                          metadata, digest, token_count, format_version, token_encoding,
                          key_id, sealed, ts_nanos)
    SELECT s.session_id, p_start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata, m.digest, m.token_count, m.format_version,
           m.token_encoding, m.key_id, m.sealed, m.ts_nanos
      FROM sessions AS s,
           unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed, p_ts_nanos) AS m(seq, role, content, turn_id, ts, ts_offset, name,
                       metadata, digest, token_count, format_version, token_encoding,
                       key_id, sealed, ts_nanos)
     WHERE s.session_id = p_session_id;
    IF p_key_id[1] IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_insert_summary_v1(text, integer, text, integer, integer, smallint, bigint, bytea); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_count integer;
    v_latest integer;
BEGIN
    SELECT s.message_count INTO v_count FROM sessions AS s
     WHERE s.session_id = p_session_id AND (s.expires_at IS NULL OR s.expires_at > now())
       FOR NO KEY UPDATE;
    IF NOT FOUND OR v_count <= p_covers_until THEN
        RETURN;
    END IF;
    SELECT coalesce(max(m.summary_version), 0) INTO v_latest
      FROM summaries AS m WHERE m.session_id = p_session_id;
    IF p_expected IS NOT NULL AND v_latest <> p_expected THEN
        RETURN;
    END IF;
    INSERT INTO summaries AS n (session_id, summary_version, text, covers_until,
                                token_count, format_version, key_id, sealed)
    VALUES (p_session_id, v_latest + 1, p_text, p_covers_until, p_token_count,
            p_format_version, p_key_id, p_sealed)
    RETURNING n.summary_version, n.text, n.covers_until, n.token_count, n.format_version,
              n.created_at, n.key_id, n.sealed
         INTO summary_version, text, covers_until, token_count, format_version, created_at,
              key_id, sealed;
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'summaries');
END
$$;


ALTER FUNCTION public.ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_purge_batch_v1(integer, interval); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) RETURNS SETOF integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_ids text[];
    v_owners text[] := '{}';
    v_row record;
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    IF p_age IS NULL THEN
        -- expires_hour (indexed) is never later than expires_at: no expired session missed
        v_ids := ARRAY(SELECT session_id FROM sessions
                        WHERE expires_hour <= now() AND expires_at <= now()
                        ORDER BY expires_hour LIMIT p_batch_size);
    ELSE
        v_ids := ARRAY(SELECT session_id FROM sessions WHERE updated_at < now() - p_age
                        LIMIT p_batch_size);
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;
    FOR v_row IN DELETE FROM sessions
                  WHERE session_id = ANY(v_ids)
                    AND (expires_at <= now() OR updated_at < now() - p_age)
                 RETURNING session_id, message_count LOOP
        v_owners := v_owners || ('s:' || v_row.session_id);
        RETURN NEXT v_row.message_count;
    END LOOP;
    IF EXISTS (SELECT FROM data_keys WHERE owner = ANY(v_owners)) THEN
        DELETE FROM data_keys WHERE owner = ANY(v_owners);
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_require_keys_v1(bigint[], text); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT FROM unnest(p_key_ids) AS k(key_id)
                WHERE k.key_id IS NOT NULL
                  AND NOT EXISTS (SELECT FROM data_keys AS d WHERE d.key_id = k.key_id)) THEN
        -- the constraint named in the message too: Citus relays a worker's error without
        -- its constraint field
        RAISE EXCEPTION 'a data key this write was sealed under was destroyed (%)',
                        'fk_' || p_table || '_key_id_data_keys'
            USING ERRCODE = 'foreign_key_violation',
                  CONSTRAINT = 'fk_' || p_table || '_key_id_data_keys';
    END IF;
END
$$;


ALTER FUNCTION public.ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_sessions_to_reencrypt_v1(text, integer); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) RETURNS TABLE(session_id text, user_id text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_ids text[];
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    v_ids := ARRAY(
        SELECT s.session_id FROM sessions AS s
         WHERE s.session_id > p_after
           AND (EXISTS (SELECT FROM messages AS t WHERE t.session_id = s.session_id
                          AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL)))
             OR EXISTS (SELECT FROM summaries AS t WHERE t.session_id = s.session_id
                          AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL)))
             OR EXISTS (SELECT FROM consultation_states AS t
                         WHERE t.session_id = s.session_id AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL)))
             OR EXISTS (SELECT FROM consultation_state_history AS t
                         WHERE t.session_id = s.session_id AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL))))
         ORDER BY s.session_id LIMIT p_batch_size);
    RETURN QUERY
        UPDATE sessions AS s SET user_id = s.user_id WHERE s.session_id = ANY(v_ids)
        RETURNING s.session_id, s.user_id;
END
$$;


ALTER FUNCTION public.ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_write_profile_v1(text, bigint, smallint, text, text, text[], jsonb, smallint, bigint, bytea); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
BEGIN
    LOOP
        IF p_expected IS DISTINCT FROM 0 THEN
            UPDATE user_profiles AS p
               SET version = p.version + 1,
                   (age, gender, exercise_habit, known_limitations, document,
                    format_version, key_id, sealed)
                 = (p_age, p_gender, p_exercise_habit, p_known_limitations, p_document,
                    p_format_version, p_key_id, p_sealed),
                   updated_at = now()
             WHERE p.user_id = p_user_id AND (p_expected IS NULL OR p.version = p_expected)
            RETURNING p.version INTO v_version;
            EXIT WHEN FOUND OR p_expected IS NOT NULL;
        END IF;
        INSERT INTO user_profiles AS p (user_id, version, age, gender, exercise_habit,
            known_limitations, document, format_version, key_id, sealed)
        VALUES (p_user_id, 1, p_age, p_gender, p_exercise_habit, p_known_limitations,
                p_document, p_format_version, p_key_id, p_sealed)
        ON CONFLICT (user_id) DO NOTHING
        RETURNING p.version INTO v_version;
        EXIT WHEN FOUND OR p_expected = 0;
        -- created meanwhile by another writer: update it
    END LOOP;
    IF v_version IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'user_profiles');
    END IF;
    RETURN v_version;
END
$$;


ALTER FUNCTION public.ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_write_state_v1(text, bigint, text, text, text[], text[], text[], smallint, text, jsonb, smallint, bigint, bytea); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_write_state_v1(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
           SET version = c.version + 1, (stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed) = (p_stage, CASE WHEN p_key_id IS NULL THEN p_chief_complaint END, CASE WHEN p_key_id IS NULL THEN p_body_parts ELSE '{}' END, CASE WHEN p_key_id IS NULL THEN p_symptoms ELSE '{}' END, CASE WHEN p_key_id IS NULL THEN p_red_flags ELSE '{}' END, p_pain_level, CASE WHEN p_key_id IS NULL THEN p_duration END, coalesce(cardinality(p_red_flags), 0), coalesce(cardinality(p_symptoms), 0), coalesce(cardinality(p_body_parts), 0), p_chief_complaint IS NOT NULL, p_duration IS NOT NULL, p_document, p_format_version, p_key_id, p_sealed), updated_at = now()
         WHERE c.session_id = p_session_id AND (p_expected IS NULL OR c.version = p_expected)
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL AND (p_expected IS NULL OR p_expected = 0) THEN
        INSERT INTO consultation_states AS c (session_id, version, stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed)
        VALUES (p_session_id, 1, p_stage, CASE WHEN p_key_id IS NULL THEN p_chief_complaint END, CASE WHEN p_key_id IS NULL THEN p_body_parts ELSE '{}' END, CASE WHEN p_key_id IS NULL THEN p_symptoms ELSE '{}' END, CASE WHEN p_key_id IS NULL THEN p_red_flags ELSE '{}' END, p_pain_level, CASE WHEN p_key_id IS NULL THEN p_duration END, coalesce(cardinality(p_red_flags), 0), coalesce(cardinality(p_symptoms), 0), coalesce(cardinality(p_body_parts), 0), p_chief_complaint IS NOT NULL, p_duration IS NOT NULL, p_document, p_format_version, p_key_id, p_sealed)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO consultation_state_history (session_id, version, stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed, created_at)
    VALUES (p_session_id, version, p_stage, CASE WHEN p_key_id IS NULL THEN p_chief_complaint END, CASE WHEN p_key_id IS NULL THEN p_body_parts ELSE '{}' END, CASE WHEN p_key_id IS NULL THEN p_symptoms ELSE '{}' END, CASE WHEN p_key_id IS NULL THEN p_red_flags ELSE '{}' END, p_pain_level, CASE WHEN p_key_id IS NULL THEN p_duration END, coalesce(cardinality(p_red_flags), 0), coalesce(cardinality(p_symptoms), 0), coalesce(cardinality(p_body_parts), 0), p_chief_complaint IS NOT NULL, p_duration IS NOT NULL, p_document, p_format_version, p_key_id, p_sealed, updated_at);
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'consultation_states');
END
$$;


ALTER FUNCTION public.ctxstore_write_state_v1(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_write_state_v2(text, bigint, text, text, text[], text[], text[], smallint, text, integer, integer, integer, boolean, boolean, jsonb, smallint, bigint, bytea); Type: FUNCTION; Schema: public; Owner: prerelease_fixture_owner
--

CREATE FUNCTION public.ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
           SET version = c.version + 1, (stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed) = (p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags, p_pain_level, p_duration, p_red_flag_count, p_symptom_count, p_body_part_count, p_has_chief_complaint, p_has_symptom_duration, p_document, p_format_version, p_key_id, p_sealed), updated_at = now()
         WHERE c.session_id = p_session_id AND (p_expected IS NULL OR c.version = p_expected)
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL AND (p_expected IS NULL OR p_expected = 0) THEN
        INSERT INTO consultation_states AS c (session_id, version, stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed)
        VALUES (p_session_id, 1, p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags, p_pain_level, p_duration, p_red_flag_count, p_symptom_count, p_body_part_count, p_has_chief_complaint, p_has_symptom_duration, p_document, p_format_version, p_key_id, p_sealed)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO consultation_state_history (session_id, version, stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed, created_at)
    VALUES (p_session_id, version, p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags, p_pain_level, p_duration, p_red_flag_count, p_symptom_count, p_body_part_count, p_has_chief_complaint, p_has_symptom_duration, p_document, p_format_version, p_key_id, p_sealed, updated_at);
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'consultation_states');
END
$$;


ALTER FUNCTION public.ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) OWNER TO prerelease_fixture_owner;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);


ALTER TABLE public.alembic_version OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_body_part_frequencies; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_body_part_frequencies WITH (security_barrier='true') AS
 SELECT f.value AS body_part,
    f.consultations
   FROM public.analytics_frequencies_v3('body_part'::text, NULL::timestamp with time zone, NULL::timestamp with time zone) f(value, consultations);


ALTER TABLE public.analytics_body_part_frequencies OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_complaint_frequencies; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_complaint_frequencies WITH (security_barrier='true') AS
 SELECT f.value AS chief_complaint,
    f.consultations
   FROM public.analytics_frequencies_v3('chief_complaint'::text, NULL::timestamp with time zone, NULL::timestamp with time zone) f(value, consultations);


ALTER TABLE public.analytics_complaint_frequencies OWNER TO prerelease_fixture_owner;

--
-- Name: consultation_states; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.consultation_states (
    session_id text NOT NULL,
    version bigint NOT NULL,
    stage text NOT NULL,
    chief_complaint text,
    body_parts text[] DEFAULT '{}'::text[] NOT NULL,
    symptoms text[] DEFAULT '{}'::text[] NOT NULL,
    red_flags text[] DEFAULT '{}'::text[] NOT NULL,
    pain_level smallint,
    duration text,
    document jsonb NOT NULL,
    format_version smallint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    red_flag_count integer DEFAULT 0 NOT NULL,
    symptom_count integer DEFAULT 0 NOT NULL,
    body_part_count integer DEFAULT 0 NOT NULL,
    has_chief_complaint boolean DEFAULT false NOT NULL,
    has_symptom_duration boolean DEFAULT false NOT NULL,
    CONSTRAINT ck_consultation_states_sealed_state_has_no_free_text CHECK (((key_id IS NULL) OR ((chief_complaint IS NULL) AND (duration IS NULL) AND (body_parts = '{}'::text[]) AND (symptoms = '{}'::text[]) AND (red_flags = '{}'::text[])))),
    CONSTRAINT ck_consultation_states_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_consultation_states_version_positive CHECK ((version >= 1))
);


ALTER TABLE public.consultation_states OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_pseudonym_key; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.ctxstore_pseudonym_key (
    singleton boolean DEFAULT true NOT NULL,
    inner_pad bytea NOT NULL,
    outer_pad bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_ctxstore_pseudonym_key_one_row CHECK (singleton),
    CONSTRAINT ck_ctxstore_pseudonym_key_pads_64_bytes CHECK (((octet_length(inner_pad) = 64) AND (octet_length(outer_pad) = 64)))
);


ALTER TABLE public.ctxstore_pseudonym_key OWNER TO prerelease_fixture_owner;

--
-- Name: sessions; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.sessions (
    session_id text NOT NULL,
    user_id text,
    version bigint DEFAULT 0 NOT NULL,
    message_count integer DEFAULT 0 NOT NULL,
    content_hash bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    turn_count integer DEFAULT 0 NOT NULL,
    first_activity_at timestamp with time zone DEFAULT now() NOT NULL,
    last_activity_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_hour timestamp with time zone GENERATED ALWAYS AS (date_bin('01:00:00'::interval, expires_at, '2000-01-01 00:00:00+00'::timestamp with time zone)) STORED,
    CONSTRAINT ck_sessions_message_count_non_negative CHECK ((message_count >= 0)),
    CONSTRAINT ck_sessions_session_id_length CHECK (((char_length(session_id) >= 1) AND (char_length(session_id) <= 255)))
);


ALTER TABLE public.sessions OWNER TO prerelease_fixture_owner;

--
-- Name: summaries; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.summaries (
    session_id text NOT NULL,
    summary_version integer NOT NULL,
    text text NOT NULL,
    covers_until integer NOT NULL,
    token_count integer,
    format_version smallint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    CONSTRAINT ck_summaries_covers_until_valid CHECK ((covers_until >= '-1'::integer)),
    CONSTRAINT ck_summaries_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_summaries_summary_version_positive CHECK ((summary_version >= 1))
);


ALTER TABLE public.summaries OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_consultation_details; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_consultation_details WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(s.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    c.stage,
    (COALESCE(c.red_flag_count, 0) > 0) AS has_red_flags,
    COALESCE(c.red_flag_count, 0) AS red_flag_count,
    COALESCE(c.symptom_count, 0) AS symptom_count,
    COALESCE(c.body_part_count, 0) AS body_part_count,
    COALESCE(c.has_chief_complaint, false) AS has_chief_complaint,
    COALESCE(c.has_symptom_duration, false) AS has_symptom_duration,
    c.pain_level,
    s.message_count,
    s.turn_count,
    s.first_activity_at AS first_activity,
    EXTRACT(epoch FROM (s.last_activity_at - s.first_activity_at)) AS duration_seconds,
    COALESCE(( SELECT max(su.summary_version) AS max
           FROM public.summaries su
          WHERE (su.session_id = s.session_id)), 0) AS summary_version,
    COALESCE(c.version, (0)::bigint) AS state_version
   FROM ((public.sessions s
     CROSS JOIN public.ctxstore_pseudonym_key k)
     LEFT JOIN public.consultation_states c ON ((c.session_id = s.session_id)));


ALTER TABLE public.analytics_consultation_details OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_consultations; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_consultations WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(s.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    c.stage,
    (COALESCE(c.red_flag_count, 0) > 0) AS has_red_flags,
    COALESCE(c.red_flag_count, 0) AS red_flag_count,
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
           FROM public.summaries su
          WHERE (su.session_id = s.session_id)), 0) AS summary_version,
    COALESCE(c.version, (0)::bigint) AS state_version
   FROM ((public.sessions s
     CROSS JOIN public.ctxstore_pseudonym_key k)
     LEFT JOIN public.consultation_states c ON ((c.session_id = s.session_id)));


ALTER TABLE public.analytics_consultations OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_red_flag_frequencies; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_red_flag_frequencies WITH (security_barrier='true') AS
 SELECT f.value AS red_flag,
    f.consultations
   FROM public.analytics_frequencies_v3('red_flag'::text, NULL::timestamp with time zone, NULL::timestamp with time zone) f(value, consultations);


ALTER TABLE public.analytics_red_flag_frequencies OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_analytics_settings; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.ctxstore_analytics_settings (
    singleton boolean DEFAULT true NOT NULL,
    min_group_size integer NOT NULL,
    CONSTRAINT ck_ctxstore_analytics_settings_min_group_size_at_least_two CHECK ((min_group_size >= 2)),
    CONSTRAINT ck_ctxstore_analytics_settings_one_row CHECK (singleton)
);


ALTER TABLE public.ctxstore_analytics_settings OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_red_flags_daily; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_red_flags_daily WITH (security_barrier='true') AS
 SELECT date_trunc('day'::text, s.first_activity_at, 'UTC'::text) AS day,
    count(*) AS consultations,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN count(*) FILTER (WHERE (c.red_flag_count > 0))
            ELSE NULL::bigint
        END AS with_red_flags,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN round(((count(*) FILTER (WHERE (c.red_flag_count > 0)))::numeric / (count(*))::numeric), 4)
            ELSE NULL::numeric
        END AS rate
   FROM ((public.sessions s
     LEFT JOIN public.consultation_states c ON ((c.session_id = s.session_id)))
     CROSS JOIN public.ctxstore_analytics_settings st)
  GROUP BY (date_trunc('day'::text, s.first_activity_at, 'UTC'::text)), st.min_group_size;


ALTER TABLE public.analytics_red_flags_daily OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_red_flags_weekly; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_red_flags_weekly WITH (security_barrier='true') AS
 SELECT date_trunc('week'::text, s.first_activity_at, 'UTC'::text) AS week,
    count(*) AS consultations,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN count(*) FILTER (WHERE (c.red_flag_count > 0))
            ELSE NULL::bigint
        END AS with_red_flags,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN round(((count(*) FILTER (WHERE (c.red_flag_count > 0)))::numeric / (count(*))::numeric), 4)
            ELSE NULL::numeric
        END AS rate
   FROM ((public.sessions s
     LEFT JOIN public.consultation_states c ON ((c.session_id = s.session_id)))
     CROSS JOIN public.ctxstore_analytics_settings st)
  GROUP BY (date_trunc('week'::text, s.first_activity_at, 'UTC'::text)), st.min_group_size;


ALTER TABLE public.analytics_red_flags_weekly OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_refreshed_days; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.analytics_refreshed_days (
    day date NOT NULL,
    sessions integer NOT NULL,
    fingerprint numeric NOT NULL,
    min_group_size integer NOT NULL,
    refreshed_at timestamp with time zone DEFAULT now() NOT NULL
);


ALTER TABLE public.analytics_refreshed_days OWNER TO prerelease_fixture_owner;

--
-- Name: consultation_state_history; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.consultation_state_history (
    session_id text NOT NULL,
    version bigint NOT NULL,
    stage text NOT NULL,
    chief_complaint text,
    body_parts text[] DEFAULT '{}'::text[] NOT NULL,
    symptoms text[] DEFAULT '{}'::text[] NOT NULL,
    red_flags text[] DEFAULT '{}'::text[] NOT NULL,
    pain_level smallint,
    duration text,
    document jsonb NOT NULL,
    format_version smallint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    red_flag_count integer DEFAULT 0 NOT NULL,
    symptom_count integer DEFAULT 0 NOT NULL,
    body_part_count integer DEFAULT 0 NOT NULL,
    has_chief_complaint boolean DEFAULT false NOT NULL,
    has_symptom_duration boolean DEFAULT false NOT NULL,
    CONSTRAINT ck_consultation_state_history_sealed_state_has_no_free_text CHECK (((key_id IS NULL) OR ((chief_complaint IS NULL) AND (duration IS NULL) AND (body_parts = '{}'::text[]) AND (symptoms = '{}'::text[]) AND (red_flags = '{}'::text[])))),
    CONSTRAINT ck_consultation_state_history_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL)))
);


ALTER TABLE public.consultation_state_history OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_stage_changes; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_stage_changes WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(steps.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    steps.version,
    steps.from_stage,
    steps.to_stage
   FROM (( SELECT h.session_id,
            h.version,
            lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version) AS from_stage,
            h.stage AS to_stage
           FROM public.consultation_state_history h) steps
     CROSS JOIN public.ctxstore_pseudonym_key k)
  WHERE (steps.from_stage IS DISTINCT FROM steps.to_stage);


ALTER TABLE public.analytics_stage_changes OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_stage_funnel; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_stage_funnel WITH (security_barrier='true') AS
 SELECT r.stage,
    count(*) AS reached,
    count(*) FILTER (WHERE (c.stage = r.stage)) AS ended_here
   FROM (( SELECT DISTINCT consultation_state_history.session_id,
            consultation_state_history.stage
           FROM public.consultation_state_history) r
     JOIN public.consultation_states c ON ((c.session_id = r.session_id)))
  GROUP BY r.stage;


ALTER TABLE public.analytics_stage_funnel OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_stage_history; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_stage_history WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(h.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    h.version,
    h.stage,
    (h.version = c.version) AS is_current,
    date_trunc('day'::text, s.first_activity_at, 'UTC'::text) AS first_activity
   FROM (((public.consultation_state_history h
     JOIN public.sessions s ON ((s.session_id = h.session_id)))
     LEFT JOIN public.consultation_states c ON ((c.session_id = h.session_id)))
     CROSS JOIN public.ctxstore_pseudonym_key k);


ALTER TABLE public.analytics_stage_history OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_stage_reached; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_stage_reached WITH (security_barrier='true') AS
 SELECT DISTINCT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(h.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    h.stage
   FROM (public.consultation_state_history h
     CROSS JOIN public.ctxstore_pseudonym_key k);


ALTER TABLE public.analytics_stage_reached OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_stage_transitions; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_stage_transitions WITH (security_barrier='true') AS
 SELECT steps.from_stage,
    steps.to_stage,
    count(*) AS transitions
   FROM ( SELECT lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version) AS from_stage,
            h.stage AS to_stage
           FROM public.consultation_state_history h) steps
  WHERE (steps.from_stage IS DISTINCT FROM steps.to_stage)
  GROUP BY steps.from_stage, steps.to_stage;


ALTER TABLE public.analytics_stage_transitions OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_suppression; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_suppression WITH (security_barrier='true') AS
 SELECT ctxstore_analytics_settings.min_group_size
   FROM public.ctxstore_analytics_settings;


ALTER TABLE public.analytics_suppression OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_symptom_duration_frequencies; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_symptom_duration_frequencies WITH (security_barrier='true') AS
 SELECT f.value AS symptom_duration,
    f.consultations
   FROM public.analytics_frequencies_v3('symptom_duration'::text, NULL::timestamp with time zone, NULL::timestamp with time zone) f(value, consultations);


ALTER TABLE public.analytics_symptom_duration_frequencies OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_symptom_frequencies; Type: VIEW; Schema: public; Owner: prerelease_fixture_owner
--

CREATE VIEW public.analytics_symptom_frequencies WITH (security_barrier='true') AS
 SELECT f.value AS symptom,
    f.consultations
   FROM public.analytics_frequencies_v3('symptom'::text, NULL::timestamp with time zone, NULL::timestamp with time zone) f(value, consultations);


ALTER TABLE public.analytics_symptom_frequencies OWNER TO prerelease_fixture_owner;

--
-- Name: analytics_value_cells; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.analytics_value_cells (
    kind text NOT NULL,
    day date NOT NULL,
    value text NOT NULL,
    consultations integer NOT NULL,
    CONSTRAINT ck_analytics_value_cells_consultations_positive CHECK ((consultations > 0))
);


ALTER TABLE public.analytics_value_cells OWNER TO prerelease_fixture_owner;

--
-- Name: applied_profile_writes; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.applied_profile_writes (
    user_id text NOT NULL,
    write_id uuid NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


ALTER TABLE public.applied_profile_writes OWNER TO prerelease_fixture_owner;

--
-- Name: applied_session_writes; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.applied_session_writes (
    session_id text NOT NULL,
    write_id uuid NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


ALTER TABLE public.applied_session_writes OWNER TO prerelease_fixture_owner;

--
-- Name: ctxstore_roles; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.ctxstore_roles (
    kind text NOT NULL,
    role_name text NOT NULL,
    CONSTRAINT ck_ctxstore_roles_kind_known CHECK ((kind = ANY (ARRAY['owner'::text, 'app'::text, 'analytics'::text])))
);


ALTER TABLE public.ctxstore_roles OWNER TO prerelease_fixture_owner;

--
-- Name: data_keys; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.data_keys (
    key_id bigint NOT NULL,
    owner text NOT NULL,
    master_key_id text NOT NULL,
    wrapped bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    retired_at timestamp with time zone
);


ALTER TABLE public.data_keys OWNER TO prerelease_fixture_owner;

--
-- Name: data_keys_key_id_seq; Type: SEQUENCE; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE public.data_keys ALTER COLUMN key_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.data_keys_key_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: graph_channel_values; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.graph_channel_values (
    session_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    channel text NOT NULL,
    version text NOT NULL,
    value_type text NOT NULL,
    value bytea,
    key_id bigint
);


ALTER TABLE public.graph_channel_values OWNER TO prerelease_fixture_owner;

--
-- Name: graph_checkpoints; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.graph_checkpoints (
    session_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    parent_checkpoint_id text,
    checkpoint_type text NOT NULL,
    checkpoint bytea NOT NULL,
    metadata jsonb NOT NULL,
    messages_count integer,
    messages_archive text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_graph_checkpoints_messages CHECK (((messages_archive IS NULL) OR (messages_count IS NOT NULL)))
);


ALTER TABLE public.graph_checkpoints OWNER TO prerelease_fixture_owner;

--
-- Name: graph_writes; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.graph_writes (
    session_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    task_id text NOT NULL,
    idx integer NOT NULL,
    channel text NOT NULL,
    value_type text NOT NULL,
    value bytea NOT NULL,
    task_path text NOT NULL,
    key_id bigint
);


ALTER TABLE public.graph_writes OWNER TO prerelease_fixture_owner;

--
-- Name: messages; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.messages (
    session_id text NOT NULL,
    seq integer NOT NULL,
    role text NOT NULL,
    content text NOT NULL,
    turn_id text,
    ts timestamp with time zone,
    ts_offset integer,
    name text,
    metadata jsonb,
    digest bytea NOT NULL,
    token_count integer,
    format_version smallint NOT NULL,
    token_encoding text,
    key_id bigint,
    sealed bytea,
    ts_nanos smallint,
    CONSTRAINT ck_messages_metadata_object CHECK (((metadata IS NULL) OR (jsonb_typeof(metadata) = 'object'::text))),
    CONSTRAINT ck_messages_role_known CHECK (((format_version <> 2) OR (role = ANY (ARRAY['user'::text, 'assistant'::text, 'system'::text, 'tool'::text])))),
    CONSTRAINT ck_messages_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_messages_seq_non_negative CHECK ((seq >= 0)),
    CONSTRAINT ck_messages_ts_nanos_below_a_microsecond CHECK ((ts_nanos IS NULL) OR (ts_nanos BETWEEN 1 AND 999 AND ts IS NOT NULL))
);


ALTER TABLE public.messages OWNER TO prerelease_fixture_owner;

--
-- Name: summary_jobs; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.summary_jobs (
    session_id text NOT NULL,
    until_seq integer NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    run_after timestamp with time zone DEFAULT now() NOT NULL,
    lease_token uuid,
    lease_until timestamp with time zone,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    CONSTRAINT ck_summary_jobs_lease CHECK (((state = 'running'::text) = (lease_token IS NOT NULL))),
    CONSTRAINT ck_summary_jobs_state CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'dead'::text])))
);


ALTER TABLE public.summary_jobs OWNER TO prerelease_fixture_owner;

--
-- Name: user_profiles; Type: TABLE; Schema: public; Owner: prerelease_fixture_owner
--

CREATE TABLE public.user_profiles (
    user_id text NOT NULL,
    version bigint NOT NULL,
    age smallint,
    gender text,
    exercise_habit text,
    known_limitations text[] DEFAULT '{}'::text[] NOT NULL,
    document jsonb NOT NULL,
    format_version smallint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    CONSTRAINT ck_user_profiles_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_user_profiles_user_id_length CHECK (((char_length(user_id) >= 1) AND (char_length(user_id) <= 255))),
    CONSTRAINT ck_user_profiles_version_positive CHECK ((version >= 1))
);


ALTER TABLE public.user_profiles OWNER TO prerelease_fixture_owner;

--
-- Data for Name: alembic_version; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.alembic_version VALUES ('0026');


--
-- Data for Name: analytics_refreshed_days; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.analytics_refreshed_days VALUES ('2026-11-30', 24, 9371405529064891382, 5, '2026-12-05 12:02:33.530217+00');


--
-- Data for Name: analytics_value_cells; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.analytics_value_cells VALUES ('red_flag', '2026-11-30', 'night pain', 6);
INSERT INTO public.analytics_value_cells VALUES ('symptom', '2026-11-30', 'pain', 8);
INSERT INTO public.analytics_value_cells VALUES ('symptom', '2026-11-30', 'swelling', 16);


--
-- Data for Name: applied_profile_writes; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--



--
-- Data for Name: applied_session_writes; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.applied_session_writes VALUES ('plain-01', '5f0c3e8a-9b2d-4c61-a7e0-f1b2c3d4e5f6', '2026-12-05 12:02:33.252432+00');
INSERT INTO public.applied_session_writes VALUES ('sealed-01', '5f0c3e8a-9b2d-4c61-a7e0-f1b2c3d4e5f6', '2026-12-05 12:02:33.343238+00');


--
-- Data for Name: consultation_state_history; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.consultation_state_history VALUES ('plain-00', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.243589+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-00', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{"night pain"}', 0, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": ["night pain"], "body_parts": ["knee"], "pain_level": "0", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.246245+00', NULL, NULL, 1, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-01', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.253535+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-01', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 1, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "1", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.254717+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-02', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.260334+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-02', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 2, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "2", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.261075+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-03', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.266205+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-03', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{}', 3, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": [], "body_parts": ["knee"], "pain_level": "3", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.266928+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-04', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.271706+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-04', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{"night pain"}', 4, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": ["night pain"], "body_parts": ["knee"], "pain_level": "4", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.27245+00', NULL, NULL, 1, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-05', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.277178+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-05', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 5, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "5", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.277866+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-06', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.281954+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-06', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{}', 6, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": [], "body_parts": ["knee"], "pain_level": "6", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.282628+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-07', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.286938+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-07', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 7, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "7", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.287616+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-08', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.291708+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-08', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{"night pain"}', 8, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": ["night pain"], "body_parts": ["knee"], "pain_level": "8", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.292751+00', NULL, NULL, 1, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-09', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.297002+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-09', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{}', 9, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": [], "body_parts": ["knee"], "pain_level": "9", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.29764+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-10', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.30164+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-10', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 0, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "0", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.302313+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('plain-11', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, '{"stage": "greeting", "trauma": null, "duration": null, "swelling": null, "symptoms": [], "red_flags": [], "body_parts": [], "pain_level": null, "last_question": null, "missing_slots": [], "chief_complaint": null, "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.306451+00', NULL, NULL, 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('plain-11', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 1, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "1", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.30709+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-00', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.336315+00', 1, '\x02f38a9e9d16b5a81f23e5d23c4308aea9e0827cba313a0129b72eace9013bfa80b0f003d511d01f6accb2070b8951b2822354900b6dba27e4c06c78c9f5b68c2f0b5e7608118a0a27ac7764d19f8fc0e02d3f0f6d2f1e32d10eac49535601a2c89864d869fa3d605abbeeb53b46dcf3804f0a4c338d74f94ec4a960c91a898ae6d1ed9adcc185edb7038c7a324b14547398f102661b1f4aaef06e0a3dcff9915d12926bb486ddfe1368c51d5ca0b659e72236f34f0488f8b81615d31abba0b9d1dd5fa0985f31336d96e0a15e6bb3228f0a27c13af1d6222dcf0e6cdade543cd06ec1c766d81e2c66ee2c26e98f7c9a47a1e29f9d5cd7dcaacb73cef3909315246dd6a12cdd449cf72b9b2353f30c04c898389f0f543dcb684e5977413758b214e47b20ce0d8b1425a1686527dd8249d82dbbd3ec2faaf6768eddb4ab6439ef0e412e94f4a04191d1a95197bec5c7b3cacb7976b06b955e2a936f0155a22a2933e6789af3b17ee4447d3ee39df50add1865a68352fac9f498ff2648370f9b208b100569dbe877f5594db23e57ece6759903143014a56f423faafc848f5624e8807f5aefba731c6857977548c6f366212e70bc4988690798987207040a8cf175234bec6501eb631a63f32917930d5ef41a25c58f5f64cfc7ab70e2dd2da347affbca6d93a1442cb8b2f2536471f06e3ef55af1c8c1b6be014ab2bfe905e4eb0e3340dbef005aa3e5dd0bc04d4c26c9c5213b2450a160cdde3b12c04009', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-00', 2, 'assessing', NULL, '{}', '{}', '{}', 0, NULL, 'null', 3, '2026-12-05 12:02:33.337957+00', 1, '\x0205e74cd930f08270beb3253485f20abe1b7bdd89b82a9516dcbbf24fc157cd66063d1497b72a3ca25edebfac5f33f2ce5a58af22561658d6d87e5305e626b847e0dd2575bc5501a9564efc10f4c1732a6ab06ccf5e9724d76336d52c183b58ad8a3abc8e43a73209babe85fd449adc9cddb9a94d808df86ca5250a0d806b56afc9e58bf4841cf418013dec9913b8053f65918e00f4e8607ed8c6d8771504f197e45de023a438fe861ae9bc03369c1b5e37667887ce5d8fc706ade1cb3094651852910d789adfc35e924f669d559ff49e2c642755f88ae645ba133125020d403b8fe3453c9d01aa98b0918d450d98285cf074ce61ea4efe2934d833dc0d5ef26db0bc0bfee5bdf1c68d55f8d22f4592b59fa6548de340786ea86861c2aa1f1f5efa41343a3abd48afc627e2060b7d11a33d27ec0efeeccf4e8756d8da332a8ef55b5a3802e56c39fa427c28623e71eea49f80a8c336ab4672f0df5cb6c0167cda4a62504c06ded2de15091fe8289e9ea05d29a62cf7389cc1f479d28a3c5f84485f96a37d47ee4339b0e599e14d44498a61cb7440da0526ab3309d85fee24561cbab0be8cd8ca9237be9a0d83200969ea0b77a86c1a62ebbd07ca10b911c2371b5753acdeef093190871532e064ffb2a94b8ce88519d7942c2af472cbd88578015ff48560e5e4a254232c3beea62ff4eb47d501c44e3fa2150ecc41e511860af0b40c91a2f5818b7be481c4414165199d36161fbf8e8f515683ca61a4', 1, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-01', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.34458+00', 2, '\x026f7a6f3d7acb251d9fc88c87285dfd591cff7df089ecf2855ab8b745c4c685058f1bd80eab97f108e4f18ca9c61027ae96040e5dde924e20b42ac3d9ea760efd9342bd370f0880b61c87bd84f6f7eb73ed935d0bd14c85e93a5717e450fd009eca1ca7b1553e8629dc6940649bbbdb0ca43c38045da7d08069549e55480770458b22e546731fa2e8cbeff2ca06840dac81ca235ee3d901186b19046f53616bc985069c4b6227859d150985034c7d64a6ce03c0b27ab434d7fa55578b92a75aa2663a2cd8c8f6cabbdbb301043e489b6201ca05a38aef0cce32a9205e750b50d912d310024b45ceb53cfcb44a902c8b9813097cc526fcf14cd72fe18178aed86f722aab2c568d0a82e458fd32762d176af0f86b085e4fc0c320509249cd674873292281fe37cd818bb7efe5f0a4f2bcd08e1a2c4f3b16419beb0d6c77c8a5da4c7e0001a68180e9d489de7698610d2fded3a178a7464229df79642b9c03bdfe90773ff4a7e91dec9156ccfeb157fe34ec2f78862e2d78e588bd0bbff08afaa5443d6e6f9388dcfe87f0965d53c9025f0a537f38eb7300edcae892c2f792710bc460841501e943f1ae42aab3ce38958813d27bcf3733186c0cfce2968373efd871ef5cd0a613fd185592c3e02c8861509a56b9b7bed4fb22568040135f0fcb11aca252e39d0e8c01a198ddb06be3a1c97752596f6663cd6230070d12639a0ae7b215f75bd02d066713e7da50e9a2be9255b1615af6db683a14e51fa310', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-01', 2, 'assessing', NULL, '{}', '{}', '{}', 1, NULL, 'null', 3, '2026-12-05 12:02:33.345523+00', 2, '\x02b04833bda2659f25db76e19044f5b5266389dec417705b6ab0c0265f082ff5951cea63e3805dcc2b58ef98f255748b58f84fb6f13f4ed9338733e352c77907e8af418b4036fe70e1f3d84ff2f12defa488b3e75ff59e9358346e71f7c94abb21495ec70b595349505dfdad60db1451fa1349cecceca9414d3f8e72885c78564cb93b55161e28505e8eb1560038c95099f70b4525883470f0b6006502c07a3d22f955c8192a450184544c47ac4d939efd58e791d3107ec2cb3e3c81ff9db78f1550b9dacab6e2c59b4194486bffdedb66dd5f051950ef05afff30d2d59722753adea341de5de99bd8068bea793351cf847617c3b3b8e86f6585d1d4458d58bb4e61ae4b53f021112290cf3ca4087c702312437a2a722f75a6d5c1cee77cec832f2b2443453fd78cef0ed840480a85b8d841cca7e5bf005f429bf90ce9dc5c6feeb0ce833fb37680938a1757fb72e20488d68252d1591e50fb6a0be45db0b2522981c0f48f5b61f725306eaab468b2c317507820913769e248f700078362fa1db148e5be25fe954da46c47ea7cc40191f4a20d7d0bdf162576840aa717ca89bc76881732a6a22c7a12d625d19584773dfb662f0eb75c3a4656c1efddb14035a5078bc2bcee335d6a28e27aa43cc326cd0a7f22edfa8401b71c2764b0a649e42048766835ddf213e0c11bf88bd4ffaede99be4eb9c06b98e1ef9e5fd6844ee6dddc6eb0d6a7e9f61a4b954e1b34b4dcb7485b3ee5ba5cc85e6dd342860b', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-02', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.350719+00', 3, '\x0232a8455a76f13e4e6bc0604847b7ca5578285fa64892b28263b60a5f90eaccb8d2ce0c19c42ba6be45213906dc532b867d42e54c9f9e259e07a9d7127ec2a84932360af0af35dcc599d2dca90fe0b58e8488beb15b93a1165c167e97d8d16f5793a85e49ea9d2bd80fb46b2fcfc24c27ef87deefd5be86cbdbbdeb01b7228cf89570b54c6cbf9b1074f9ebf35497d94a8b173573f73f86e823b1fc4764013bc2f565b08f5d7e9d8dd81ed3226d93f9434b66595f5ef1e22dfa5e6873a48a10e3169741a2218c75d6e375be91df56daf47da9a7ce2145b3436b56a51e4c74b17bf31665e68c4c7c1638a06077c3d09d1771ec5c5e47d234e708d544ced8610f2a30aed48fd7dc263ff05fdacf4a673cace3410adf61901590667c9695d9cec299b060ef9fbcbaa81317a518c3cad1751c9646f25f4bc68abb02c57d1f3124db2f63da1d216d64833d2d9035a9929487673bff47014c4a2c141e21901417d3254362d461959f287f762621f92981f98c04f66b688b4f8a7e8cbf7dea262266bc5de039a11e7e976ecd3d97b80fb829dfd5f63607ce20b8f7d42cce9eba55c47f81032a644a73728bcc8c77c967bfac2253f1358ad87ddb6cc63d245502ba6e67ab0191fa5bf99f8b021634459ca600e7c42d97c5f5bab983c705324d3d546cafd36f5d782e041689afccb430f1c98119ed3620347f62f423aaa71b99c7aff443f6d89ebe8fe664e896459bf07bf127bc96f5eabcf0bb3f3aa0f06728a5', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-02', 2, 'assessing', NULL, '{}', '{}', '{}', 2, NULL, 'null', 3, '2026-12-05 12:02:33.35165+00', 3, '\x025b72b0ba1b62fa765eb6656d7c0d053843fce57527838d2bb59b057672735e78d20c46993e0d78f5cdb90b5ecbd8fa28cb863f6ac32c197d76e1dfa5ac41e0e2be69876c23cbf14159ea612362e87a500c8c7f67db0e1740e040a80b1be61665fc642cce6a0577b73c183417702061e7dde32a766989745d672c74a1bccae562f57f890a68a9758df07b5758feb314124be7fee5d645cdde3759a6929d0f50e680b9507c1beb24eed9099680fcaa557b5df7502cc3352243211999541a380c3e452d85fb37851a38ad32f87e0be27fac8ccc41ec0b3cf0e7031e44919bc1ae1660cbd1ac6c1469a6d4cc5d0f7676e36229a62c3193e4fdf9fb9d38c8a4aac61ba7f303dd34192bbfcea20638e378601d26325f353d21bf2326253704641b180bc534c2b50c1321e7aed919f467fb74bdde3abe00c2632191cdd8072f3898f3485c5015027a9635f693e654e886e293677aa57da5b949ebf54fe5e9eb2f9457c47cec58a70d5264c3758209df037cf6a2b8b09cbdbd79e5b77c867e7baeb2b02c8b7ab4a73d106a6711a14e91a2d54986ca66f80eea39672c5936a19d86c78f68e41829df20dc47d3b53f80b135ec47ba169169698b2c1b2ae1f3a534cf69ab61ba50b29a460c31ee1608a146c8ab9830172e5638f83aec2470945f39af73d3f321b723499cf770d09d2440afd055eb83eab89362cc5651258cc5ed3100decb12063543d852c0942741f32973623fc931d471e8bea33e5b471a008371', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-03', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.356953+00', 4, '\x02f2b426949a536440ac1cc6046d972aeedc328df637a8032655a51e8c09a7610758b7a813833b123faf6c2af84cd2fa7e985aa7e795078e22b6dcf864be797370b218030fa4de94a5f2fe45a6040b941e22f49ef0a522d610b0a9b1dec4b0272ece8b992b4b71c816104d4621ef2bccf5a6fcfa0da8c260e889118128f249c619bdd420afcef789e48b4c523c9b99239c52606bb0037b2e0b15b6cdc7d112d444a272c20f9275045f9cbe0d817170478d7cd6e8ecb90f30134a6740e7763526fc4f70b08e97fbbe6b95865301a7ff0f5e9babd25fe3c7ee539a12cdb700e99fe5e87b351602a6899703b2934fd3a861bc5e697c26c0916f0058c91d55000dfc97124e3e03d94cffc9472452469d39c02d546e3c9e4a624b70d5bd9b559a208a31a0bf9eb41e24e8498bac204503f0f3edf541ac0306830baf2923585b4119acd44c910a0e685f11c112f2e6eebc5e03d3cadf32fb9d60c9b912319e0f89f8a829fdd67cb463db1657410f92444e65a410442dcc7baa3a3985c6e112576cdfd120301a5d8ddc0781b2d669e73d218b698dc75118dbbbd32a69b312e0c373ea66fa0d10e323b2e1b3d72f4694bb37c266323955ae2e79affb622bdb90eb80d11c21b534ebc947c2d48d8f8eec80d53186270fbb9b7c4c03cd3dc13fe4b7d1fa5b5ace0450acca710dffea58de58e946804a636b4b7591cc81f14f4742136b81a86146fd912e9b7185ff53516d8d6a267a8b75ccd5e50677d1d096a41fda', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-03', 2, 'assessing', NULL, '{}', '{}', '{}', 3, NULL, 'null', 3, '2026-12-05 12:02:33.357742+00', 4, '\x02771392c999513c84079d65bd83dbfc20e2425df9bfcb3a35f6ce8ce09b3da53e0d3f9426c2ac86774dbb8268abf71ef25cfe4f87567a35d6cfcfec93c5512f69a146e5333db3f97bb2bbfcb8d000f587888d81e7a803c9c1d109428d92581eda76096d4ccb7151494790abf69ff073d4b6da42da7b7333937abb8771a4b5cd339dbd46d60a2ab04cd12e50fe18a414cdd54ab3d106e97b2013579a333b0b999fa4bac499bde0f944f987eed6eb974d18223050fbb550160b2c90456dbb20e00c33b968e5cc0dce224a3f324be023d5af902bcf620de166e1cc91fceae8e22780c4a4a6300f863f9928c003a8f20094abf47dccc3c79d2dc1e0cb252c35c30bf847f14ffd0b307f15f7dce7912347e4783eafc2b9df6ab5306820e73e9b108e7256f730d71a34a981e9dbdf8b3667d9df0be34b8850de761a815a2d9ed58b5f34bc45497e401be68d3495f3a9b43d0310f5f576a8fa2f60d0cea7a7357bdbc8edd6699962c66923b80032f169b18ba502278d041639c9730d0c59c06ee5c785850daa0308fecf17e935682168d2dd26566096e944248cf0efc7a6f1147fb243a560cfc794ebac7e0506ac543d39c21c4c897ec65d79a4b304a6a6d2a8e98868346062b00afa5b085f8fc28b78c88db38d034a0f232b78260282c8ae5557e33415f171e95e3a1073550dc911489eb56f7c09528ddcde64a5081442552d2e3ca45527bdd84884008036eb9d2aced2b3411ec92fd4d7d9e879586d91259f', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-04', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.362639+00', 5, '\x0256869bcb23d87fe1a71fd7a3338dc22db5d42390d9a97d9508ff81faa024e12ccc52639aad31ba100ecdccce9a0bf7e4af67f417986d4768712a350e3e9d1d7493d1e49484fe1ddbe64209f77a98c4a601ad4a9d946d1bced591024a86460d16e5a919d7727e979a8fca22bd0029db160bf145f1df7fbb4bdd28af3f32c90b767dc289d7f66d703710464902f046bafaf86a2452c1aae27be78e0da5c1818914e23031fe1d1b8d9d08b166d1059e02cee89f6e882045547ec149146d03d7fd08b38c72d4daf0cc5a2930f7c5526ecddc6bac7febe411a0c8f6576592ba3b0d7a9865ba35174ef1ccdd8fd42335854748a46729f3825b2f30be96ce7385db982cc3658806e2582f7ddb2a287ea68d952895705338e5b3d1b64435471ea7085a63de36175c47fe31210cdbdf9bacd89650bdc4c2ea62f156e774f29b56bd9e8b3b2b5d4f919a92e2b00d8196effdc6e412c3e4da00114c3c6beb45b6ea50bae3e035b3314ffa9d585c0cd4fa091ad370dd716c7f02c624ca76263331933a19c1ed6640ad5520095df226ab5e1413d82d6eb10391e12a6e1abbdcfbfd0a87f64496b3f4c8ed2210099ff010c2739efaad9e8c07314efce262c29cbdda55dfeb52e6f41c3932a3fc84de600f5517de4173cec10e396fc369bd754c4010d2e9147c5834326e69fbaa6625c89c0d97495d6648a2da9dae7abd1946ab12e5df6f67e5ca5e552e2e19286af11e0bffd1e547109f05ae00203a9e4f54ceaf7ac8', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-04', 2, 'assessing', NULL, '{}', '{}', '{}', 4, NULL, 'null', 3, '2026-12-05 12:02:33.363544+00', 5, '\x02b693beb72fbab3e1763856ccf85cb78ffe7e3bf36bd702873b21d728421eb1426a606555429429106c49c66f99c19e653c8dfa19cd4859bb959d517790f3dc111d406bf15ff0d356d9592db023a6d0ed09f27a3342a11629d266a3806476617638de00b1253efbeb4569ca6597d878c2c42dbef89aa51ca3c3efc02bca0e7c9561918ec6140ceb2f42f8901b9c01bd33292733c51250035993fc1d374a63f252d19d0b9f913dff76869846241be163901fd69cc466057953baa94640be478a0d12134390d6c4d64852191d0ae2ef35c125ca895281843653ea08575fad4a4f909c70d9841fd55ebed36636dbadb4d1b1523be56a1312ec07ee77ee9346df528cf660f5248e006ee7d5a5b50c2826ca12bc494d11415ce09ba48713bbc6bb8734d2ed1a893c973bf7264dfe8493dbae0f7ec258fd54d007d2ca8d40bb0cbb9435f19d9e9dcd5d2ef0c2444be4d86fc630afa200291c37a219547bcd2d08eb0324ae7bfa0ce187eaade699fce32e81650d1314fe04b7ffe4ea652ae21e7f4247a581989a51e58c367e3d0e5aebc552d46a1b640fa878d930bf05234eb143edd74b2e3f1b4738c8fb82eafca5bb5f3956476d7d741537852df5f77df1243622e0ab53b4b04f924b88456fe70015efd857bde1c02ba5654e5d6bd2bf4255d5ff83d9f9374fb676dfb9f1b8b5927e37cd005dffed1d57046c07dee3e8e662ea15ae554817bf112c7da84634b0c141eb3a55d0bfb5cb0ca7dbfbaa51882046', 1, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-05', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.369035+00', 6, '\x0231c385f36d8bc212c265598b689a3dc9b35e8dffae0e3c9093979d0c510616e2a92862af40fa15d7d6ada7759370509e90e2134150c9e6e43ddcf5d0e662967c10f9208ddd2fd7103a273b1c7fd9c035e4b62369f83c8985037532afc4351069109a19855d174cb039fbd06e3b941ad712dd2b64c6fd02add6da82d9d5df124ab9dc69e04c001d44b9d7e607666f52b03f6c90aef9112aea75c24546c73aa5e4e9e63069c82b77ac513daa286112d558748d40c55b60461e06704bb4ce513bce03e93fc07a97513271a44358ef1203085c3d0f1236b618305268c0b21296eb955195b0a58d3f009aad08aaff7d08b145c82f161a76b5ed63f774be1cd9469ce7823fbb3e3db771864cea703ea8d8615ede4a89230387fc892c25e07dc15c9c6093095a7c031485c256509b2c054e9c4dedf3e41e2ab9d9c9521bb632e35294b62dbd34561e81b2b03549c7a50ad2665ca66b473f5af0ad86048a5608bba3fa0f8a51f482203402924338f517a77fdf5dc126391dbe305dae494f9019b9389d0adefcaccd92373b9b5dd30e5874b647755785f7d01b29e9f2e0b35fe0b17f1ad232bd6d12efcc7332babb18e7bd092d4b28a212bbb09a9736a87260f37e18245c4a3f675579765b05e34757412b73e3e2f835387cfb8cc5f21b9e3be9364b235a2e04e8a32fb5d6aac2a6098acf88b597317bd00c982680186c23e9fadec8c98a4f1e2779d8c52ba28b2e2049722878fa656de8ca78f6da3ac642c718', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-05', 2, 'assessing', NULL, '{}', '{}', '{}', 5, NULL, 'null', 3, '2026-12-05 12:02:33.369895+00', 6, '\x0274f922fe85eda0828897302e122436b20bfd2c4858cad406ccb06ecccc80833e5d320ee5b8434d7d2afe3827bddb40b875c655a5eac6183dd38b3693ffe031983e24aac23eec8e9c2e978436f224e4aea06aff94a611077e372ba38240d7365cdfb82ace4a93c959b0ccbe6484842aa3b3fa6bdd354a7729ca36119f53912d0d3e3e1a857eba338e14623908c6d034be4cf854e34fc25f46c4f48adddfeb937140e93d7c45095f8d031079f837d125a2f0a34267f73890b44e8d65373f3d37da5e6e513f5b7b56675dfa2a80fd4d3e1708af2b9d99ec35bc41126aa0dc42634fab79c3cebf1e17d5e36a0a0dec99321528bfe0f09e44efec25f617164663963b921eab651c170effb9794707aabecb6247dcf4ec305ddb3d8f334db53f025669ffd2002ec02305fc7b308a015fc67dfb8f9b71dfa95bfaa28f0bab43f154142f15e7f2dd7f9fcc050e06d41212e5ff95b12ec295ed9f2f157b4a647d128617dbc4d5575b0f48ca26f5ab77bf9e336d2f557ae1b6f41c43f598ff9dbc429e4b85aa465228d6e6e5b26e0910b1908e30072c06b2a9a8568e73035036a0b48be7d780e638f2ffc3c218f1ddc71a77405f85f3d581a070fa0de8cc7ccedc1e62c41b7b65ed8a8d7cc9271b8d37b821f624300067c553505cc0c668c2bd93357016fbb103d07a5fb452bbdbce6a159c848fb9e7b3602f79f5cccfb8e210c2b6bd2938e122ea91b8e4356b9a4a2e30abfc66c5e8b0c11c9c9e17d0dcce5021', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-06', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.374504+00', 7, '\x025574c3c5863c137fda2efd9687b20fe18f2e0749e79b372ee2d1f382ae1e2a9e0f7f4360437fa5864842a112a1f78835fef263329c2767536fc85eefb6ca17f5d4beb006edb9f1103670feb027a963a7eb074484f65d776cec996113db766f15af0ffc925bfe73ab4c86139e62b6fd7874c8f7612d530a42b191b7d29be9d07bffa7b2ae1edc067afbe20d11a90ae84b7278f92faebdb14423bd3ecdad5ce093b5954f0c2e703cbd6b13b0e0b77fc84eb356032166cb7be1fd1377f7c4f7d9700e595b9bfec9bd409f56023b0ac78297e1ac0da88c68e5ae45fb630ad985a4a0698a8925d2e32ec554e24dc977ffca2a6aa1721352b8532520b65a0073d0670748d6ec22bdd7f800195a695626753b953d8980b0158840c088fb032cdc24c049d0e42875f51964a63ec74b5645cdbe2d85001b56fa17938366eb2e873163f31d8a3a98d16b966261609be476c620431aa0a0e76dabff7abd9d7d7a1e0c05629e7582d4377377460c5c379a2f11de59dfcbcb812da304c629d3beddd9554e761dbcac508c01ad4c0abfbb03ffa817a08690f9e6a761060aa6254674f5f9d3bc533828bdae844f375cc751ec6e8b8f564b27a3996e9e1a7108c5c8745ed20e5211a6b2add0582996ce01be453d2198085983397ba7d4224b741fd864752be57aa97e04327cd1f1277971d63d67a43f7333f390de85fcb10d149d4e7e26d94c6bd9f264d1daa9ffd69adaaa0af113a40564d5c186f4f14821c3904f2786', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-06', 2, 'assessing', NULL, '{}', '{}', '{}', 6, NULL, 'null', 3, '2026-12-05 12:02:33.375224+00', 7, '\x02ded25a8ea86f8f1bec04865fb55feb6b11df663edaea9306f488ed4e09eb19e7dde241d58fc4518279040b1c141fa9480b6af548c15c0dff54506e37c3b6ab40cf154332c30ef879f523f261a6a65b7ade3500889564b6a8f62e104428a7fcac6657a2965c10d57335d991d2fe8dfc97efe65c569ae275ca0d8f96440dc02fcf4f03206d957b3111839d46c8598a42b2d1c23c8371022c84f9a69e104a657a601583223dcc1eeb1c36fd2d8bedbd8b8bcad4f2c23504e49615af0bb887df5d7ce6950d4cd8c4775cdd3b62efe5d96a5f828e154f338cee2e66b92ba4018298db247329a78bb37994657122df003560fb457a7a31937e36f2919788635dd12009bf37ddacef7806269e06f9dae504710816de17e9770b94f74b3183296f61b7027fe0a7945b63bcc17c71b159e54d6669ba434767baa5958fc46233a31b37c9dd6664528d248a303b3163b78fdb8941cfe45738920c0af7518c835101fdc0cf6086b6bf695efbf8cb97331e3edae167470d6c596078d08ef6b90648538e9b69922fdf3b83e8f9833e147511ad4c6c08a6b0901c06ccaf6412075196bfdf9e6de5328d27b7c28fbf73b4bd0145c72ab3656e47f3330d75296e4286fd8450475ee9b63f98d22daec33ce38965dc9219e19f66441dace7b0ce568b200be618540c5a56cdc6133dfedfebedaa4735c186f54aa0beab50fcadd12065c637138b20bb053ceb6b1be586fb600c90c7fe682a2d72451d00d5f5cbf2ad6e14a8e1', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-07', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.379845+00', 8, '\x028d04a6f860a9fb8c689e2bcee9033d7c864d5f7cda8853af7aee11f9911550244dc4d1be707983693749d9b81f0824456baaeb519cf2d3ef45c1af36d727b9e0b2bce34d879b9960966d9c65aacaf32a536447261b9eba70863d7508d5dcb7b691c8bebc5e22a607ae4e7c5d8f2039a7b47280308312aaba02492715a8c6db1e4d9b80cf1e93bbdb7ef5bd8f4322d2040e6a6432b8f9e57d7918d03ab11143eaac48792b2cadffab8b148d7621b30a9bcf89cb6caf907e065dd0f97b5d53571678172dc45c14dcc3f9ec14ec6ce059dac518673f9db96ae3b3603a1c97c0f8a1b7926c2f0cbd6e201f01a128c4acf0454afc1667ae1c741534f9a3095dc6099179ab601a4689df9659e8477df7836f70ce831085d91c3d0a7cf1e2b27b086a213beddd41c7667eb94ba5d67d7a52530cd60ad80537bf2d546af5543b3bc6d79bd8d5516ccdf9b0b3ef3fb605a9b73041df28c3b1aba9d10e3c3617e4f19b3a86da2e8cfb7f95e2cd9f4bf1a386d625434bd534144f6511fdf81477821beaf0d216ef02cccf78a8976f27c0f1be649a27c6dc574c31c8014dc2e0051d3ff15105d4544a110da9d6ed7e3b1c900e9201565c861c872519128220043ea83b76ba52fc513d33f5158cfb782f7eca88d7e6e605c165d5843c9389c09257094dd21d00136d21c6f223e912c8f3cc132e3b307cfacc91ad32293ffc7aa9c31eb5e2840fb5f0171ba3080e82769f62e1df7bea4d0edd4c154e34e7ae4aa22b00', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-07', 2, 'assessing', NULL, '{}', '{}', '{}', 7, NULL, 'null', 3, '2026-12-05 12:02:33.380676+00', 8, '\x02bc3503781ddc01f3949c6674ae49fe9d9b2c29ed67e2e005229ba61d8beb3c365d1f41201875797d0883135eda335a292222011de05a1a0e9a8f5d01e63acee86b280eefdec5345e765fe75c6d51403f43cba09691e0901d38e27b83262443e8f9b3c2bd7bb0e4dee04498188899c2edc5192747522555babfb20bc213c8b433917b89c3228ec5c107709e64371f1a91b995962d6db09bb990ee9df013c4b7fd7b0bcf5f999bb388778f84fbfac50c0e5ba5cf75aed5771dec38995c5e80cedc4a920fbdfe22654d9acccb5fc25fcbecceebf7f4c27039f285c58c94d017901964fa2a504e81d140512ecba475f46115cc5b0ba74d269a121c6d4f3ac122703e3da5755e6ca027b5e6f9cae561f16241f41b9c3490b02cdaf1b72580d4384939838f110bbc1a89860d4b26de331d3af31e798885c19832ffe906ecdec6fbf6ef74ce46ca4bcea9f872c622a80a1d9f74b2c101298d018d7f414cdbfa5c6f53b11e8be37e5884717768fb70a8f61501e31f9ff490d9b54c1532193835903503426af33ee9e51ca94125b6b4e41b3f5cb938a6b3f19ef6e60a56e5d3dd5398813d26186e0e35948c4da8b518cfe2fd31320860f43592508a32d4c5db9e031184a424b1524141e5602c902b5c8b8c281d6a302a53d12bfbd8b4702a8bd06f7ee875f926ab0fcfca585e81e3ec92ae32ac705a021f1d2df1f053d7a8a855465a00a3e374d790165a3e77bec5a03f378a0aef14b0be32862cddde2fc726de', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-08', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.385235+00', 9, '\x02f57a37683c00e0f59f5a8f7516a944c5883465aba6fcf6aa4cd128cef531b0e99ab1a91df85d4a828e3359f002b038e4509b891a37f12b657be806628984e1878f5a476addbc9f547f0a27f8beb1c1ead5b5c46fc3659f276b5a6fc8252dc046dffa7c5c221e20cc7c768a79a1f2cd74b30386a7f6129f9675177f77cf7070aed43b669ada5bc0c99ae3fbf7ffc9f1dca6a395527593e9429c68267b04272b13c32046fa6b2eb7f47a3d2f76c65f03738f31959785e850cdb413c1a0c0cc7d8d63cc6555a0fd26a8eba376fec8800b73283d05579ee8c15c8f493697719b2e16b59385debb5d86e519be379c3e0b921c59bbe30ca2dbf6529a4bf8bcd515cee25e07fa3258e999920cf8672b099ce169636bd9bf5191f9c27a4bd1b08eded09b6f14f7e31c46983bcecf24c628007d195fd1ab5537fe513654e0ad307200ed1a7a15eddbb2181324ff81b858880a4e2d8ab5de5b48948351445bb5365ee70b1d76c9198812251727a6ab018bdc7d7c1046fade31118443b131d44c74a621a760a2ea544318ac84f010816d1501b5a4bf78134b76c69fe1970f3cce48fdc860ab319d38f19cd2a418b5645b721c02c30bf2e6e448efd08bc8a7b17ebd25fc8acffcf640d434789f51e019bb169914c28d036b10781ad6c3a1ce74710c2b41b46441778d58e5a15db430154222b2e43ad61938dc93393e19d11588fcb12f6f028c689de84f487c5a5a5ef43e8afe049939c0788703bc9c07fca89311c9', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-08', 2, 'assessing', NULL, '{}', '{}', '{}', 8, NULL, 'null', 3, '2026-12-05 12:02:33.386137+00', 9, '\x020dc9110e73a35e003fcf4754ab9d8c2c60a32ee236b68c1492dd5e7b1f110fa8cee6146eca5f32f3b8944c6c118c7890bedd2d3a3e0bf3bb6cddb379318c37e5a2418865e1cb9f429616103075c60e778f3edde76c85908be3b8e7fec4f8f262eafa1e38b9b84dad87513ab23fe261a95c808a947c8f3e47e7038ccaaed401e7f63c147828b7b5ef37f568ea14b65b09b4d07ec01b1202584d5dac45ef164946ffcc05f815ce8ed10e3b7ac5d510af8ef05ac5d57fc544e00a7e9c5f9cae516d32e1628576940e40ebaaede6ec4ba0d06b6f6ba6520b32337c885af9834dd4c497d9eb4cbf47738ce8f9a6bc08374fc9cafcb4ca28479fa30ec0fb528fd8fcb4299242ca6c697df7c0631e1bae1d8992827a160401abf7ffc8facba01d179597645d67f19ccad0c5043ee8277ebd2848d609b659671a4441eddf8e1177be5445fa03d14076955cd1764910d10355e1ef3b8d4eadab36ef2aae4c6333b8bba5093b6d7c8716cd868fe15f28f7d4fff42f2cfc208e5fe203f8c0b96ccc7dafcc2b7be9d5a4c62e8ce04267b636ef6e6cbc5d371856e8b5cd0e9ef5e273a3a987b9ddb7a4abee134990b45ba02e726cf89c50ea72b25fa7972088283377e9e0aaa3cacf91d9b4e9ba36928c864eea1cd39a6961765ba519553aad5310ad48a9a2681dab743f830e111da8927e73b7df8e945a28d54942020ec86f3794c1ef6e3110dbb03a26f3894bda297c3b60de10aa70ebbdb335e3073847a0da6148', 1, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-09', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.390724+00', 10, '\x02d1d61f5689ac8b892a4e49b51fc8ab2ee093f7835b79f516f5d965f015b83fcfb2fd07f0b0035556e5ed2a52dc6ffd0e28efcc65391be3c6b56bd13a88e90b28b85019e73c0e6a91631afc1526cbe34c16d72d482eaac4565d3f31ef9fcc4c11df8d9394300f4cc12bcd2015093d119df03d9d4d6a3a6f0113f04f3acce99328b689c50dc1e273aeec76ce96125eee1defd224cd6d5c5568873ff3b3bd70cf2019f3bef0be02a661b0b3922edb90f2a8aa62111f861ee4c089aa9749612b8eb133caee594931d5f5b3332d31d3650eaccc3975e72b98824ea0897163445cabf4c069020d59424ebb713374e244144481c7282ac2dfd7eebcd62452caf6d4ef94e720da5a66f89c7894a7137bc1e156c993c9c0ffe21d603145682621ed2775ae818a3d47d76abb439e0b97832527421055ca8efc9b3e0bfe7e1536d3852b225e7315a606e0ac34b3d3526256aed54ef7227451e150778a2e880715ffb6ae392b2c43c6c79cc1329a0c23548f6669eab87ec9b0e3fe5bca65aa2dd985b1bd234b0fb7661590ed3d8edd73e2e62381e228560b4dbb8081696c1228393155b0dcea942759005076d73d88bd0ca27123023caaa974098abe294c29b69a1b1c4a4425418b7cb6ecaa9888e1274f1308f6a905d34fe026df3cc8663f3b062cd4739102ba6ca23a0404febcd96fb71739d7ddf4ebe46ee8a2a911ba02f4ecf66b7baedc5a2c02bf14812d6d0dbb3614c86940a79b0e6d10145f98f3efcb337c', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-09', 2, 'assessing', NULL, '{}', '{}', '{}', 9, NULL, 'null', 3, '2026-12-05 12:02:33.391584+00', 10, '\x029e469b8be7e278912a78239e5c39a2a3321cabd3321eea27c67745c9d0aa1ac3a6af491e5860f115f4aa4235a7a9de821b40f977937434f6c7997f4d4a6b57638160e827375b683fab076d879c73514a6a1aa2a6359729d8fd31182772fd0376e1e15cf2173ebf7fad73f78b405441fbf296bacc60dc31e159e8d66342e509ffd04905538b3d868a0cbb73ad9af82d9b7ed7919052eb33d1e8c3b4e971cdba272c2b4a646323e9d288a85dee5cd2f014a076d7d094c16076b54a78bba66158a292ab1d2eaf144aa026478404d2aaf06fbec321ea52350aa291cada5fff1b481f5efec162e23ae3638e0ecb7184e46e974a9737c3a51d67e916927b65c47c78164e25a1fe3bedefba64bc4415c3e62afd1e3d18abded05c7733d1c79a7f795a893ca12a7b6c8b92afe9f8933b2c58b8bf189e2617e9ae06a4543e6b939ffade65a4e61a8a509983f18e1170ba20da6efb763ff6699ae17fbde76c16c64beae905265cbeee8fcba3eff351035b82429f9d295344b2fb4b0530c5ae2a033b3133125427a913b8f0c6b6c1540d66d42484e7163f5e9352107db0e346d3edc7cbdc95506ff0cc62d553991caf2d62e0eb1f8c795044419edfff83a658dc3dd2074e8fb2e4d94d5809a59b84d01a9f1c1ba2b350a3db80cb33e2c0feb9c4748e00f806310e8cd6ee996ebb930339b621743ecfcf23f0e6992622838e62ff4e5eec55a36e1e37d74c0a9a3723d37352618968f0ab387d125e4b7ca362e6372e', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-10', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.396346+00', 11, '\x0284d3355e33f7dffa3d75c06779e8790e180ed93fcfbe0f4a9976b61e6157df0aaffd368511004f9d393d531905136824f06c17684fb6767c2db8da8846e9d2c6aa878da76daa5654252eef0f20e145f8f41753646b3c3f55b803bef29c4cf21e78ff63ae174967344e53393b96f225302836ab05734c145a75f7026f8be845f732797e84ca1c47f01fef1e83a3e3454bfd048d6048f8612d64c6fd757cd011d8e7add378ee09660bfe04d7953cf72d1a065e5ce84e9f1dc30d74c4631ae148ddcff922dff6266eae23e3cc23bb5e583738200588bd40954186a651a117cbf85c2da5ecf224113f16d2b18740ac8be279ff84a4031bc7203860fb63c9c8ecf2cbc0de44c58c186c41836c166e4bc8420d9c83b963514a349da0f0f86f2a2885002e161563ac3e69073e550f73c76049a14607dab700714947cd8c2d54301a06ae620f3b634d90e08ffbcbef11915e41ed04e2c06b277ea53fc4e4648e736d66462ab405d686abcb85b516e277e302c9ba887e5166f8fe5a4c9aa4456510c17034e336e4085bfd6f91bb497e7ee93ee3598bd056766e9dc6cf1811ba48a5b246e13bc8797bf3f697b6f210f89794c308194b617ca8fb28554b94be62fef2b00ea8c2d421dcf31674f07b8ff44267ba13be3b9ba84656bbfe67f6dbfb821bfbe84bfa41de7639013137466208233675df57e1a84fbb75e03c4c7a5ef65d3e35ee9da1e30c2a87e34e4cb2786b00fab78f2233277791a61056dc56dc5fcf', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-10', 2, 'assessing', NULL, '{}', '{}', '{}', 0, NULL, 'null', 3, '2026-12-05 12:02:33.397179+00', 11, '\x025bf1e644e14fda3b25646eb7035de6f17b9020a239c0c789c8c3a900efdae5bae94ca1903db0a393dbf7d2ca7f1b10a5c3748ecb651e888f5e04c08202154541cc066e33acccc28531536dd3e5b05d4ae47c2e2dd49e484bda90f2bed50333394bf66c39cb3513fb927f5550f852ec0ecc82e9e2b980ec00efb59e5793a0618c86de09b426384480526651b97002dfdf26c39780dcd85d45449ee2dd4c74f5ec224f837f0361c4432997254914da889e0dae009cefd24c470952439265f002361022bbc36cc7a6e0436a8986b5df171ad3488379bdc3d748528d25277b019308f2fc7d382a9c78c7d3a9ce5810a3b48b107a9e6b29b51e3903699d4ea7de2affd622ab06b98754e7dfc01d8c8adbd978f6a5bc335d4f6966b01c5547e18998de3017ea3c6dd5ca811d9df993297ad9a93ca72fccf36c12f6156ba5fd416c3572111e9337d5917a9b04cc776b29e1a8ece9d17f39dd3f3254dec5380e008d054715a642bc412d0d35e451ce39347aa95d7dd2c6d31214031e7791e0871d2568eac0d26c0449180eda1922cb5870f22292c137079ba103ba3ce3105fcd21768a09e7cd2bd697f92bdd7ddcaeee41163c60938f1df18f603020ae0b6142fb294eb5eaa7043d5eb1cec2984e061af832072396e1624ba316c2c36fd1d7d5aa5ba459071028ab141ad071a148f7ca939759f38e9168e5189b00836619dd980e87b28edece2a5bd84a3033960f51c36751241c7df5bd6c54e4063b5d70806a', 0, 1, 1, true, true);
INSERT INTO public.consultation_state_history VALUES ('sealed-11', 1, 'greeting', NULL, '{}', '{}', '{}', NULL, NULL, 'null', 3, '2026-12-05 12:02:33.401855+00', 12, '\x0217b99672e157cda057516dcbf197101441db9c5e059d29a2f802485346867294a9f93178a85c7286ae5f9e74ce48fdb56b45d618b8e499313d87e326cde0e1e76f8cc67f013047084d9318d3ecb4bf00acf9503108b282e38d903c80a71a5f3179e796007b7b7bfab1a4f26d9a11d5df63a8a103f3dbe85d4e67e1a48ff9e483439ebe51ee9c0952f568cee507703e1767f28318a10bf30a8149eed845a54728d982d92df8b9920cec38c313115aaec39a7e093ec0b5d21712706051be87dd5509a9e44210a62521a1b1856ab57e408c82d8f066960850f21ffb58662dbf2413d2cfeb7233186747223d8432900c425baf7245c4c37755aea6dd97be564a82cac7149f826ad17e6348012df945f190c55148fd5ab921cd7b7f8b56f0de79e6b25fbf57704081201890884d5eac78f05579f32c04d8e6eb24d41a19f072e946803ef36315c9415f8e4e5d540b6249ae752c8f8787150de1160941f4a14c5009f35f9db16aebef23b370643b714dd311da72e5debaba68ba5eeaed2faed0b7756633a4c2dc676331122f7dd514ee6c359c439d590bb22a6400a9a904dd96e9866011405daafc33dce8b255e113f0af22c919d33b454c97eeb5328e1bd14099d8faae66c38ab96821215abfea6fe02068f483efc4deec6638250dfa20b47806b67ca72b84a9aabc9ba12c96cf8ab0b930d8e0210ec4361dd497b2a566238f3577179efaca02b9cefa2be7d79be31648d15a7ea0857c8175614168d30629', 0, 0, 0, false, false);
INSERT INTO public.consultation_state_history VALUES ('sealed-11', 2, 'assessing', NULL, '{}', '{}', '{}', 1, NULL, 'null', 3, '2026-12-05 12:02:33.402637+00', 12, '\x0286b7906a42a544087a912407a133fd63602619b89baee293852d9c562c5076898de60f0c5508254a2bd878b10cf48d0273e037c1eb90b9896e4fec6f06df6a4ecc179f7ebb14e0c3586a8162e357e327f54b8131cf0de494bf21705b17300191bdc3cf060d531fdcdcad2f2853684a5e75877e24f3621f864a2cde86a92ce621f5a2b6029f6a705eb8ce61220c4f5f504fbbe41174805cbf14aa09a10169350f9dcb63745eca5c4de9c1b2c08839cbb91a870abdf2314dec0f09500da5419d0cd2e6d7ea0df5a369c38bf64b66dca6216808d4acfe545ed97856dc433c375f214639ff17c60562b51f66f3f78ccb17b69d3cd1d777417e27435e78538b59c8421c8f1fdff2ef3115045c63976c05ec1a81b5e2674c93e170638083cf2d88ea3b0bfca691d16c2802ed8d697a2a54df9bcef75a18ee74e1c856355cc105366b463b1c5a81592b49ac1b5d2a3ad2919064690a7bd4d9ac2a78d37084449c499b88cdc6572cf9c21dade63caf6ec98f8c5751627ff5295278edb82580e36e1534e4417936a318816f5cf7396f666e14a768a0c498b4db480dbc7a77c29c704355664e263823ab5e6b8bf2a98cfbd91535cbe958c2b08f4e8cdc7b630015dc2977b952d4acfe345ec18df9b2bca670fb9b27f4729dccc07f488a200d29561e42f0c8fef2375ce8fef70e0c180ad48e5c170748fbe070c4b430a26f9457e565db08618a2a296823aabbb9520b506992bc4f00e3be5e34a4957d979b4daf8e', 0, 1, 1, true, true);


--
-- Data for Name: consultation_states; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.consultation_states VALUES ('plain-00', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{"night pain"}', 0, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": ["night pain"], "body_parts": ["knee"], "pain_level": "0", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.246245+00', NULL, NULL, 1, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-01', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 1, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "1", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.254717+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-02', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 2, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "2", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.261075+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-03', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{}', 3, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": [], "body_parts": ["knee"], "pain_level": "3", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.266928+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-04', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{"night pain"}', 4, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": ["night pain"], "body_parts": ["knee"], "pain_level": "4", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.27245+00', NULL, NULL, 1, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-05', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 5, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "5", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.277866+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-06', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{}', 6, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": [], "body_parts": ["knee"], "pain_level": "6", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.282628+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-07', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 7, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "7", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.287616+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-08', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{"night pain"}', 8, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": ["night pain"], "body_parts": ["knee"], "pain_level": "8", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.292751+00', NULL, NULL, 1, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-09', 2, 'assessing', '膝盖下坠感', '{knee}', '{pain}', '{}', 9, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["pain"], "red_flags": [], "body_parts": ["knee"], "pain_level": "9", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.29764+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-10', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 0, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "0", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.302313+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('plain-11', 2, 'assessing', '膝盖下坠感', '{knee}', '{swelling}', '{}', 1, '2 weeks', '{"stage": "assessing", "trauma": null, "duration": "2 weeks", "swelling": null, "symptoms": ["swelling"], "red_flags": [], "body_parts": ["knee"], "pain_level": "1", "last_question": null, "missing_slots": [], "chief_complaint": "膝盖下坠感", "pending_answer_for": [], "aggravating_factors": []}', 3, '2026-12-05 12:02:33.30709+00', NULL, NULL, 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-00', 2, 'assessing', NULL, '{}', '{}', '{}', 0, NULL, 'null', 3, '2026-12-05 12:02:33.337957+00', 1, '\x0205e74cd930f08270beb3253485f20abe1b7bdd89b82a9516dcbbf24fc157cd66063d1497b72a3ca25edebfac5f33f2ce5a58af22561658d6d87e5305e626b847e0dd2575bc5501a9564efc10f4c1732a6ab06ccf5e9724d76336d52c183b58ad8a3abc8e43a73209babe85fd449adc9cddb9a94d808df86ca5250a0d806b56afc9e58bf4841cf418013dec9913b8053f65918e00f4e8607ed8c6d8771504f197e45de023a438fe861ae9bc03369c1b5e37667887ce5d8fc706ade1cb3094651852910d789adfc35e924f669d559ff49e2c642755f88ae645ba133125020d403b8fe3453c9d01aa98b0918d450d98285cf074ce61ea4efe2934d833dc0d5ef26db0bc0bfee5bdf1c68d55f8d22f4592b59fa6548de340786ea86861c2aa1f1f5efa41343a3abd48afc627e2060b7d11a33d27ec0efeeccf4e8756d8da332a8ef55b5a3802e56c39fa427c28623e71eea49f80a8c336ab4672f0df5cb6c0167cda4a62504c06ded2de15091fe8289e9ea05d29a62cf7389cc1f479d28a3c5f84485f96a37d47ee4339b0e599e14d44498a61cb7440da0526ab3309d85fee24561cbab0be8cd8ca9237be9a0d83200969ea0b77a86c1a62ebbd07ca10b911c2371b5753acdeef093190871532e064ffb2a94b8ce88519d7942c2af472cbd88578015ff48560e5e4a254232c3beea62ff4eb47d501c44e3fa2150ecc41e511860af0b40c91a2f5818b7be481c4414165199d36161fbf8e8f515683ca61a4', 1, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-01', 2, 'assessing', NULL, '{}', '{}', '{}', 1, NULL, 'null', 3, '2026-12-05 12:02:33.345523+00', 2, '\x02b04833bda2659f25db76e19044f5b5266389dec417705b6ab0c0265f082ff5951cea63e3805dcc2b58ef98f255748b58f84fb6f13f4ed9338733e352c77907e8af418b4036fe70e1f3d84ff2f12defa488b3e75ff59e9358346e71f7c94abb21495ec70b595349505dfdad60db1451fa1349cecceca9414d3f8e72885c78564cb93b55161e28505e8eb1560038c95099f70b4525883470f0b6006502c07a3d22f955c8192a450184544c47ac4d939efd58e791d3107ec2cb3e3c81ff9db78f1550b9dacab6e2c59b4194486bffdedb66dd5f051950ef05afff30d2d59722753adea341de5de99bd8068bea793351cf847617c3b3b8e86f6585d1d4458d58bb4e61ae4b53f021112290cf3ca4087c702312437a2a722f75a6d5c1cee77cec832f2b2443453fd78cef0ed840480a85b8d841cca7e5bf005f429bf90ce9dc5c6feeb0ce833fb37680938a1757fb72e20488d68252d1591e50fb6a0be45db0b2522981c0f48f5b61f725306eaab468b2c317507820913769e248f700078362fa1db148e5be25fe954da46c47ea7cc40191f4a20d7d0bdf162576840aa717ca89bc76881732a6a22c7a12d625d19584773dfb662f0eb75c3a4656c1efddb14035a5078bc2bcee335d6a28e27aa43cc326cd0a7f22edfa8401b71c2764b0a649e42048766835ddf213e0c11bf88bd4ffaede99be4eb9c06b98e1ef9e5fd6844ee6dddc6eb0d6a7e9f61a4b954e1b34b4dcb7485b3ee5ba5cc85e6dd342860b', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-02', 2, 'assessing', NULL, '{}', '{}', '{}', 2, NULL, 'null', 3, '2026-12-05 12:02:33.35165+00', 3, '\x025b72b0ba1b62fa765eb6656d7c0d053843fce57527838d2bb59b057672735e78d20c46993e0d78f5cdb90b5ecbd8fa28cb863f6ac32c197d76e1dfa5ac41e0e2be69876c23cbf14159ea612362e87a500c8c7f67db0e1740e040a80b1be61665fc642cce6a0577b73c183417702061e7dde32a766989745d672c74a1bccae562f57f890a68a9758df07b5758feb314124be7fee5d645cdde3759a6929d0f50e680b9507c1beb24eed9099680fcaa557b5df7502cc3352243211999541a380c3e452d85fb37851a38ad32f87e0be27fac8ccc41ec0b3cf0e7031e44919bc1ae1660cbd1ac6c1469a6d4cc5d0f7676e36229a62c3193e4fdf9fb9d38c8a4aac61ba7f303dd34192bbfcea20638e378601d26325f353d21bf2326253704641b180bc534c2b50c1321e7aed919f467fb74bdde3abe00c2632191cdd8072f3898f3485c5015027a9635f693e654e886e293677aa57da5b949ebf54fe5e9eb2f9457c47cec58a70d5264c3758209df037cf6a2b8b09cbdbd79e5b77c867e7baeb2b02c8b7ab4a73d106a6711a14e91a2d54986ca66f80eea39672c5936a19d86c78f68e41829df20dc47d3b53f80b135ec47ba169169698b2c1b2ae1f3a534cf69ab61ba50b29a460c31ee1608a146c8ab9830172e5638f83aec2470945f39af73d3f321b723499cf770d09d2440afd055eb83eab89362cc5651258cc5ed3100decb12063543d852c0942741f32973623fc931d471e8bea33e5b471a008371', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-03', 2, 'assessing', NULL, '{}', '{}', '{}', 3, NULL, 'null', 3, '2026-12-05 12:02:33.357742+00', 4, '\x02771392c999513c84079d65bd83dbfc20e2425df9bfcb3a35f6ce8ce09b3da53e0d3f9426c2ac86774dbb8268abf71ef25cfe4f87567a35d6cfcfec93c5512f69a146e5333db3f97bb2bbfcb8d000f587888d81e7a803c9c1d109428d92581eda76096d4ccb7151494790abf69ff073d4b6da42da7b7333937abb8771a4b5cd339dbd46d60a2ab04cd12e50fe18a414cdd54ab3d106e97b2013579a333b0b999fa4bac499bde0f944f987eed6eb974d18223050fbb550160b2c90456dbb20e00c33b968e5cc0dce224a3f324be023d5af902bcf620de166e1cc91fceae8e22780c4a4a6300f863f9928c003a8f20094abf47dccc3c79d2dc1e0cb252c35c30bf847f14ffd0b307f15f7dce7912347e4783eafc2b9df6ab5306820e73e9b108e7256f730d71a34a981e9dbdf8b3667d9df0be34b8850de761a815a2d9ed58b5f34bc45497e401be68d3495f3a9b43d0310f5f576a8fa2f60d0cea7a7357bdbc8edd6699962c66923b80032f169b18ba502278d041639c9730d0c59c06ee5c785850daa0308fecf17e935682168d2dd26566096e944248cf0efc7a6f1147fb243a560cfc794ebac7e0506ac543d39c21c4c897ec65d79a4b304a6a6d2a8e98868346062b00afa5b085f8fc28b78c88db38d034a0f232b78260282c8ae5557e33415f171e95e3a1073550dc911489eb56f7c09528ddcde64a5081442552d2e3ca45527bdd84884008036eb9d2aced2b3411ec92fd4d7d9e879586d91259f', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-04', 2, 'assessing', NULL, '{}', '{}', '{}', 4, NULL, 'null', 3, '2026-12-05 12:02:33.363544+00', 5, '\x02b693beb72fbab3e1763856ccf85cb78ffe7e3bf36bd702873b21d728421eb1426a606555429429106c49c66f99c19e653c8dfa19cd4859bb959d517790f3dc111d406bf15ff0d356d9592db023a6d0ed09f27a3342a11629d266a3806476617638de00b1253efbeb4569ca6597d878c2c42dbef89aa51ca3c3efc02bca0e7c9561918ec6140ceb2f42f8901b9c01bd33292733c51250035993fc1d374a63f252d19d0b9f913dff76869846241be163901fd69cc466057953baa94640be478a0d12134390d6c4d64852191d0ae2ef35c125ca895281843653ea08575fad4a4f909c70d9841fd55ebed36636dbadb4d1b1523be56a1312ec07ee77ee9346df528cf660f5248e006ee7d5a5b50c2826ca12bc494d11415ce09ba48713bbc6bb8734d2ed1a893c973bf7264dfe8493dbae0f7ec258fd54d007d2ca8d40bb0cbb9435f19d9e9dcd5d2ef0c2444be4d86fc630afa200291c37a219547bcd2d08eb0324ae7bfa0ce187eaade699fce32e81650d1314fe04b7ffe4ea652ae21e7f4247a581989a51e58c367e3d0e5aebc552d46a1b640fa878d930bf05234eb143edd74b2e3f1b4738c8fb82eafca5bb5f3956476d7d741537852df5f77df1243622e0ab53b4b04f924b88456fe70015efd857bde1c02ba5654e5d6bd2bf4255d5ff83d9f9374fb676dfb9f1b8b5927e37cd005dffed1d57046c07dee3e8e662ea15ae554817bf112c7da84634b0c141eb3a55d0bfb5cb0ca7dbfbaa51882046', 1, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-05', 2, 'assessing', NULL, '{}', '{}', '{}', 5, NULL, 'null', 3, '2026-12-05 12:02:33.369895+00', 6, '\x0274f922fe85eda0828897302e122436b20bfd2c4858cad406ccb06ecccc80833e5d320ee5b8434d7d2afe3827bddb40b875c655a5eac6183dd38b3693ffe031983e24aac23eec8e9c2e978436f224e4aea06aff94a611077e372ba38240d7365cdfb82ace4a93c959b0ccbe6484842aa3b3fa6bdd354a7729ca36119f53912d0d3e3e1a857eba338e14623908c6d034be4cf854e34fc25f46c4f48adddfeb937140e93d7c45095f8d031079f837d125a2f0a34267f73890b44e8d65373f3d37da5e6e513f5b7b56675dfa2a80fd4d3e1708af2b9d99ec35bc41126aa0dc42634fab79c3cebf1e17d5e36a0a0dec99321528bfe0f09e44efec25f617164663963b921eab651c170effb9794707aabecb6247dcf4ec305ddb3d8f334db53f025669ffd2002ec02305fc7b308a015fc67dfb8f9b71dfa95bfaa28f0bab43f154142f15e7f2dd7f9fcc050e06d41212e5ff95b12ec295ed9f2f157b4a647d128617dbc4d5575b0f48ca26f5ab77bf9e336d2f557ae1b6f41c43f598ff9dbc429e4b85aa465228d6e6e5b26e0910b1908e30072c06b2a9a8568e73035036a0b48be7d780e638f2ffc3c218f1ddc71a77405f85f3d581a070fa0de8cc7ccedc1e62c41b7b65ed8a8d7cc9271b8d37b821f624300067c553505cc0c668c2bd93357016fbb103d07a5fb452bbdbce6a159c848fb9e7b3602f79f5cccfb8e210c2b6bd2938e122ea91b8e4356b9a4a2e30abfc66c5e8b0c11c9c9e17d0dcce5021', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-06', 2, 'assessing', NULL, '{}', '{}', '{}', 6, NULL, 'null', 3, '2026-12-05 12:02:33.375224+00', 7, '\x02ded25a8ea86f8f1bec04865fb55feb6b11df663edaea9306f488ed4e09eb19e7dde241d58fc4518279040b1c141fa9480b6af548c15c0dff54506e37c3b6ab40cf154332c30ef879f523f261a6a65b7ade3500889564b6a8f62e104428a7fcac6657a2965c10d57335d991d2fe8dfc97efe65c569ae275ca0d8f96440dc02fcf4f03206d957b3111839d46c8598a42b2d1c23c8371022c84f9a69e104a657a601583223dcc1eeb1c36fd2d8bedbd8b8bcad4f2c23504e49615af0bb887df5d7ce6950d4cd8c4775cdd3b62efe5d96a5f828e154f338cee2e66b92ba4018298db247329a78bb37994657122df003560fb457a7a31937e36f2919788635dd12009bf37ddacef7806269e06f9dae504710816de17e9770b94f74b3183296f61b7027fe0a7945b63bcc17c71b159e54d6669ba434767baa5958fc46233a31b37c9dd6664528d248a303b3163b78fdb8941cfe45738920c0af7518c835101fdc0cf6086b6bf695efbf8cb97331e3edae167470d6c596078d08ef6b90648538e9b69922fdf3b83e8f9833e147511ad4c6c08a6b0901c06ccaf6412075196bfdf9e6de5328d27b7c28fbf73b4bd0145c72ab3656e47f3330d75296e4286fd8450475ee9b63f98d22daec33ce38965dc9219e19f66441dace7b0ce568b200be618540c5a56cdc6133dfedfebedaa4735c186f54aa0beab50fcadd12065c637138b20bb053ceb6b1be586fb600c90c7fe682a2d72451d00d5f5cbf2ad6e14a8e1', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-07', 2, 'assessing', NULL, '{}', '{}', '{}', 7, NULL, 'null', 3, '2026-12-05 12:02:33.380676+00', 8, '\x02bc3503781ddc01f3949c6674ae49fe9d9b2c29ed67e2e005229ba61d8beb3c365d1f41201875797d0883135eda335a292222011de05a1a0e9a8f5d01e63acee86b280eefdec5345e765fe75c6d51403f43cba09691e0901d38e27b83262443e8f9b3c2bd7bb0e4dee04498188899c2edc5192747522555babfb20bc213c8b433917b89c3228ec5c107709e64371f1a91b995962d6db09bb990ee9df013c4b7fd7b0bcf5f999bb388778f84fbfac50c0e5ba5cf75aed5771dec38995c5e80cedc4a920fbdfe22654d9acccb5fc25fcbecceebf7f4c27039f285c58c94d017901964fa2a504e81d140512ecba475f46115cc5b0ba74d269a121c6d4f3ac122703e3da5755e6ca027b5e6f9cae561f16241f41b9c3490b02cdaf1b72580d4384939838f110bbc1a89860d4b26de331d3af31e798885c19832ffe906ecdec6fbf6ef74ce46ca4bcea9f872c622a80a1d9f74b2c101298d018d7f414cdbfa5c6f53b11e8be37e5884717768fb70a8f61501e31f9ff490d9b54c1532193835903503426af33ee9e51ca94125b6b4e41b3f5cb938a6b3f19ef6e60a56e5d3dd5398813d26186e0e35948c4da8b518cfe2fd31320860f43592508a32d4c5db9e031184a424b1524141e5602c902b5c8b8c281d6a302a53d12bfbd8b4702a8bd06f7ee875f926ab0fcfca585e81e3ec92ae32ac705a021f1d2df1f053d7a8a855465a00a3e374d790165a3e77bec5a03f378a0aef14b0be32862cddde2fc726de', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-08', 2, 'assessing', NULL, '{}', '{}', '{}', 8, NULL, 'null', 3, '2026-12-05 12:02:33.386137+00', 9, '\x020dc9110e73a35e003fcf4754ab9d8c2c60a32ee236b68c1492dd5e7b1f110fa8cee6146eca5f32f3b8944c6c118c7890bedd2d3a3e0bf3bb6cddb379318c37e5a2418865e1cb9f429616103075c60e778f3edde76c85908be3b8e7fec4f8f262eafa1e38b9b84dad87513ab23fe261a95c808a947c8f3e47e7038ccaaed401e7f63c147828b7b5ef37f568ea14b65b09b4d07ec01b1202584d5dac45ef164946ffcc05f815ce8ed10e3b7ac5d510af8ef05ac5d57fc544e00a7e9c5f9cae516d32e1628576940e40ebaaede6ec4ba0d06b6f6ba6520b32337c885af9834dd4c497d9eb4cbf47738ce8f9a6bc08374fc9cafcb4ca28479fa30ec0fb528fd8fcb4299242ca6c697df7c0631e1bae1d8992827a160401abf7ffc8facba01d179597645d67f19ccad0c5043ee8277ebd2848d609b659671a4441eddf8e1177be5445fa03d14076955cd1764910d10355e1ef3b8d4eadab36ef2aae4c6333b8bba5093b6d7c8716cd868fe15f28f7d4fff42f2cfc208e5fe203f8c0b96ccc7dafcc2b7be9d5a4c62e8ce04267b636ef6e6cbc5d371856e8b5cd0e9ef5e273a3a987b9ddb7a4abee134990b45ba02e726cf89c50ea72b25fa7972088283377e9e0aaa3cacf91d9b4e9ba36928c864eea1cd39a6961765ba519553aad5310ad48a9a2681dab743f830e111da8927e73b7df8e945a28d54942020ec86f3794c1ef6e3110dbb03a26f3894bda297c3b60de10aa70ebbdb335e3073847a0da6148', 1, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-09', 2, 'assessing', NULL, '{}', '{}', '{}', 9, NULL, 'null', 3, '2026-12-05 12:02:33.391584+00', 10, '\x029e469b8be7e278912a78239e5c39a2a3321cabd3321eea27c67745c9d0aa1ac3a6af491e5860f115f4aa4235a7a9de821b40f977937434f6c7997f4d4a6b57638160e827375b683fab076d879c73514a6a1aa2a6359729d8fd31182772fd0376e1e15cf2173ebf7fad73f78b405441fbf296bacc60dc31e159e8d66342e509ffd04905538b3d868a0cbb73ad9af82d9b7ed7919052eb33d1e8c3b4e971cdba272c2b4a646323e9d288a85dee5cd2f014a076d7d094c16076b54a78bba66158a292ab1d2eaf144aa026478404d2aaf06fbec321ea52350aa291cada5fff1b481f5efec162e23ae3638e0ecb7184e46e974a9737c3a51d67e916927b65c47c78164e25a1fe3bedefba64bc4415c3e62afd1e3d18abded05c7733d1c79a7f795a893ca12a7b6c8b92afe9f8933b2c58b8bf189e2617e9ae06a4543e6b939ffade65a4e61a8a509983f18e1170ba20da6efb763ff6699ae17fbde76c16c64beae905265cbeee8fcba3eff351035b82429f9d295344b2fb4b0530c5ae2a033b3133125427a913b8f0c6b6c1540d66d42484e7163f5e9352107db0e346d3edc7cbdc95506ff0cc62d553991caf2d62e0eb1f8c795044419edfff83a658dc3dd2074e8fb2e4d94d5809a59b84d01a9f1c1ba2b350a3db80cb33e2c0feb9c4748e00f806310e8cd6ee996ebb930339b621743ecfcf23f0e6992622838e62ff4e5eec55a36e1e37d74c0a9a3723d37352618968f0ab387d125e4b7ca362e6372e', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-10', 2, 'assessing', NULL, '{}', '{}', '{}', 0, NULL, 'null', 3, '2026-12-05 12:02:33.397179+00', 11, '\x025bf1e644e14fda3b25646eb7035de6f17b9020a239c0c789c8c3a900efdae5bae94ca1903db0a393dbf7d2ca7f1b10a5c3748ecb651e888f5e04c08202154541cc066e33acccc28531536dd3e5b05d4ae47c2e2dd49e484bda90f2bed50333394bf66c39cb3513fb927f5550f852ec0ecc82e9e2b980ec00efb59e5793a0618c86de09b426384480526651b97002dfdf26c39780dcd85d45449ee2dd4c74f5ec224f837f0361c4432997254914da889e0dae009cefd24c470952439265f002361022bbc36cc7a6e0436a8986b5df171ad3488379bdc3d748528d25277b019308f2fc7d382a9c78c7d3a9ce5810a3b48b107a9e6b29b51e3903699d4ea7de2affd622ab06b98754e7dfc01d8c8adbd978f6a5bc335d4f6966b01c5547e18998de3017ea3c6dd5ca811d9df993297ad9a93ca72fccf36c12f6156ba5fd416c3572111e9337d5917a9b04cc776b29e1a8ece9d17f39dd3f3254dec5380e008d054715a642bc412d0d35e451ce39347aa95d7dd2c6d31214031e7791e0871d2568eac0d26c0449180eda1922cb5870f22292c137079ba103ba3ce3105fcd21768a09e7cd2bd697f92bdd7ddcaeee41163c60938f1df18f603020ae0b6142fb294eb5eaa7043d5eb1cec2984e061af832072396e1624ba316c2c36fd1d7d5aa5ba459071028ab141ad071a148f7ca939759f38e9168e5189b00836619dd980e87b28edece2a5bd84a3033960f51c36751241c7df5bd6c54e4063b5d70806a', 0, 1, 1, true, true);
INSERT INTO public.consultation_states VALUES ('sealed-11', 2, 'assessing', NULL, '{}', '{}', '{}', 1, NULL, 'null', 3, '2026-12-05 12:02:33.402637+00', 12, '\x0286b7906a42a544087a912407a133fd63602619b89baee293852d9c562c5076898de60f0c5508254a2bd878b10cf48d0273e037c1eb90b9896e4fec6f06df6a4ecc179f7ebb14e0c3586a8162e357e327f54b8131cf0de494bf21705b17300191bdc3cf060d531fdcdcad2f2853684a5e75877e24f3621f864a2cde86a92ce621f5a2b6029f6a705eb8ce61220c4f5f504fbbe41174805cbf14aa09a10169350f9dcb63745eca5c4de9c1b2c08839cbb91a870abdf2314dec0f09500da5419d0cd2e6d7ea0df5a369c38bf64b66dca6216808d4acfe545ed97856dc433c375f214639ff17c60562b51f66f3f78ccb17b69d3cd1d777417e27435e78538b59c8421c8f1fdff2ef3115045c63976c05ec1a81b5e2674c93e170638083cf2d88ea3b0bfca691d16c2802ed8d697a2a54df9bcef75a18ee74e1c856355cc105366b463b1c5a81592b49ac1b5d2a3ad2919064690a7bd4d9ac2a78d37084449c499b88cdc6572cf9c21dade63caf6ec98f8c5751627ff5295278edb82580e36e1534e4417936a318816f5cf7396f666e14a768a0c498b4db480dbc7a77c29c704355664e263823ab5e6b8bf2a98cfbd91535cbe958c2b08f4e8cdc7b630015dc2977b952d4acfe345ec18df9b2bca670fb9b27f4729dccc07f488a200d29561e42f0c8fef2375ce8fef70e0c180ad48e5c170748fbe070c4b430a26f9457e565db08618a2a296823aabbb9520b506992bc4f00e3be5e34a4957d979b4daf8e', 0, 1, 1, true, true);


--
-- Data for Name: ctxstore_analytics_settings; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.ctxstore_analytics_settings VALUES (true, 5);


--
-- Data for Name: ctxstore_pseudonym_key; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.ctxstore_pseudonym_key VALUES (true, '\x794d42fefd1123b4072485f060d85c2ee45cc69f2db2db78b8180dce34a77cb53636363636363636363636363636363636363636363636363636363636363636', '\x13272894977b49de6d4eef9a0ab236448e36acf547d8b112d27267a45ecd16df5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c', '2026-12-05 12:02:32.860275+00');


--
-- Data for Name: ctxstore_roles; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.ctxstore_roles VALUES ('owner', 'prerelease_fixture_owner');
INSERT INTO public.ctxstore_roles VALUES ('app', 'prerelease_fixture_app');
INSERT INTO public.ctxstore_roles VALUES ('analytics', 'prerelease_fixture_analytics');


--
-- Data for Name: data_keys; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (1, 'u:user-00', 'prerelease', '\x825a7055b22988c3d273495fe77913313a75fc81502da04974d76a6565ef056601b69e4bbc1a817cdbab80e394191ee487a3c59b710d7dd3a2cbdeae', '2026-12-05 12:02:33.324544+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (2, 'u:user-01', 'prerelease', '\x9721b8211d2e30cdfe651ea858863a392b2a22fdcbb4122c02c02b8348d7d2ff496f5b223a52c31dd2d6088853fa1b97de68f5c02b12e8062ef6967c', '2026-12-05 12:02:33.34063+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (3, 'u:user-02', 'prerelease', '\xbd5f8b8fa2d1f9c3a5cae02286d55c46b5d85cbe5fd549b0b1b3c5ff0d56f1afaa7b427a023bc0a9bba0fc78857ed3a60b2ea6a72fe0402901954295', '2026-12-05 12:02:33.347171+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (4, 'u:user-03', 'prerelease', '\x9b56b8481a53575a1e565dfce1fc1841c9c92f2a3fa9913654d7db406c2e09afd286053f0ab64d35217a975010aca9f12456898b439ad1d3d85cf4c9', '2026-12-05 12:02:33.353307+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (5, 'u:user-04', 'prerelease', '\xce23793f30dd2a810480fca7aa48a37102666d00f2d3808c29fb3f26d34ce60955816b72c61630b97e0ee25ce92cd779667ef6093e75abd91367a29d', '2026-12-05 12:02:33.359268+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (6, 'u:user-05', 'prerelease', '\x955cf9a5ebcb067b58914a68e6b5c92b1fd91548c117780cb620a7f4a8fd2e66c8cdf0db297a65685e947a51ba61fc84ae87b72664a516da594bba74', '2026-12-05 12:02:33.365134+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (7, 'u:user-06', 'prerelease', '\x7f5dfde99c0411c88c119d7bf6211297acb600aad69f784950f1b7dd482ba05894cc92406fd0326ef19902170b33f138d5b990d40ecdb49d96284f92', '2026-12-05 12:02:33.371485+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (8, 'u:user-07', 'prerelease', '\xee131cd7907ea1bfdd954fcc9044808dba99f8f263f8a55a4cc109a5ed521edfa211dac633c914c34d7b7d5facd8fccb9ea593469f4ff22c9b6c3ef0', '2026-12-05 12:02:33.376734+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (9, 'u:user-08', 'prerelease', '\xc88c3fd760d4a80197bab479d3ebdec022a8c0a04dffec271a0eb5ee16354f505c2a57782411bf9dd9a9583d6e61af769f47acac5a5d18475a7e2124', '2026-12-05 12:02:33.382069+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (10, 'u:user-09', 'prerelease', '\xf9a9cfb37d234589c6c47c0a78c47e76b6e5c38b5b5d77db55f36b5af994a7c89863c755b054b92d0c2925e2c370856bfae5c5dddcfd010441be0402', '2026-12-05 12:02:33.387593+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (11, 'u:user-10', 'prerelease', '\xc891f6f92a6d92c525cbfc323e6d375e2f9f3b81c4d19e34de1b8277db0ea4360417217cdfdd5fdede8ee7d66d10bf77564a96fd57969ee021040b1d', '2026-12-05 12:02:33.393045+00', NULL);
INSERT INTO public.data_keys OVERRIDING SYSTEM VALUE VALUES (12, 'u:user-11', 'prerelease', '\x631bdd2f4d8ad88c4fea1f71e6f6ee8a7f0bde64794145cc73308beeff24deea0e60c435d4486f52ef8dd32d9679fc0d9aa0de9db1746a2621dbfac8', '2026-12-05 12:02:33.398583+00', NULL);


--
-- Data for Name: graph_channel_values; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.graph_channel_values VALUES ('plain-00', '', 'notes', '1', 'msgpack', '\xa6e8869de79b96', NULL);


--
-- Data for Name: graph_checkpoints; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.graph_checkpoints VALUES ('plain-00', '', '1f1f0a3c-1187-619a-bffe-b6f6634d3f93', NULL, 'msgpack', '\x88a17602a26964d92431663166306133632d313138372d363139612d626666652d623666363633346433663933a27473d920323032362d31322d30355431323a30323a33332e3531333634392b30303a3030ae6368616e6e656c5f76616c75657380b06368616e6e656c5f76657273696f6e7381a56e6f74657301ad76657273696f6e735f7365656e80ad70656e64696e675f73656e647390b0757064617465645f6368616e6e656c73c0', '{"step": -1, "source": "input"}', NULL, NULL, '2026-12-05 12:02:33.5222+00');


--
-- Data for Name: graph_writes; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--



--
-- Data for Name: messages; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.messages VALUES ('plain-00', 0, 'user', '我膝盖有下坠感，第0天', 't0', '2026-11-30 01:15:02.123456+00', 28800, NULL, NULL, '\x570d978bfbb6564620ea16d4367fa026d217dbbdf0f2abe9f14a0a406e38970b', 52, 2, 'cl100k_base+go-times', NULL, NULL, 789);
INSERT INTO public.messages VALUES ('plain-00', 1, 'assistant', '是否伴随疼痛或肿胀？', 't0', '2026-11-30 01:03:00+00', 0, '助手', NULL, '\xca69ea15aabdb7f4ec8b78114fdfb89aa3a37d55b99cc3c968c22723e80b76ef', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-01', 0, 'user', '我膝盖有下坠感，第1天', 't1', '2026-11-30 01:40:00+00', 0, NULL, '{"channel": "app"}', '\x4147b2af89c40b725e5e64027fe6baa9a6a832e58261dea12df52628d6aea25b', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-01', 1, 'assistant', '是否伴随疼痛或肿胀？', 't1', '2026-11-30 01:44:00+00', 0, '助手', NULL, '\x15f513bbd2ee9271e4c3ccabe0d6e4258fa5b3dee709fdc4560779e7671c80f7', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-02', 0, 'user', '我膝盖有下坠感，第2天', 't2', '2026-11-30 02:20:00+00', 0, NULL, NULL, '\x2ee246132e74dfd28584ff9c4860aa3268ad6e6e824ad54c957519b8cfd7b42f', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-02', 1, 'assistant', '是否伴随疼痛或肿胀？', 't2', '2026-11-30 02:25:00+00', 0, '助手', NULL, '\x2136148707600bc5350b10cd45932c8f8159afeeb8a61932f9891e53d8dfbb7f', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-03', 0, 'user', '我膝盖有下坠感，第3天', 't3', '2026-11-30 03:00:00+00', 0, NULL, '{"channel": "app"}', '\x4f24f2fc2ebbf2a32596c3ef2ffe355d55b4b12e63eaaef1128a47496f95fb14', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-03', 1, 'assistant', '是否伴随疼痛或肿胀？', 't3', '2026-11-30 03:06:00+00', 0, '助手', NULL, '\x184e01862cba18dc18b0124fbf628874a02d1533226e248be1fb2438b6f8358d', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-04', 0, 'user', '我膝盖有下坠感，第4天', 't4', '2026-11-30 03:40:00+00', 0, NULL, NULL, '\x3b63cdadb5d66842ffa1a7300a371da3980b9e1938f58f5f6c9ea17c6305917f', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-04', 1, 'assistant', '是否伴随疼痛或肿胀？', 't4', '2026-11-30 03:47:00+00', 0, '助手', NULL, '\xc8a83b7b84ca4b54250cf3e54f75b3990eae11388e2ac1b5d4808974e8051f5c', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-05', 0, 'user', '我膝盖有下坠感，第5天', 't5', '2026-11-30 04:20:00+00', 0, NULL, '{"channel": "app"}', '\xddfc13e23425f7c25b3b8eb95f56f1e96b3832da5b6a88f9b7baf1953dae0827', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-05', 1, 'assistant', '是否伴随疼痛或肿胀？', 't5', '2026-11-30 04:28:00+00', 0, '助手', NULL, '\xaf4dd8ddb7fc6ed203ac755275de07c4d38d8a6a190be32e48535307a1899498', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-06', 0, 'user', '我膝盖有下坠感，第6天', 't6', '2026-11-30 05:00:00+00', 0, NULL, NULL, '\x8039b34281697abcbb65317960b9ce474793600c8ead25a66436448f84aa836b', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-06', 1, 'assistant', '是否伴随疼痛或肿胀？', 't6', '2026-11-30 05:09:00+00', 0, '助手', NULL, '\xe98169de8b1e003b347112a92672d4cd0dd2b7428206fcf1ce832fc1a152bc46', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-07', 0, 'user', '我膝盖有下坠感，第7天', 't7', '2026-11-30 05:40:00+00', 0, NULL, '{"channel": "app"}', '\x0325d3dad005fcb5458b896276723e319a31fe7dd59e06246923c265dcc668f6', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-07', 1, 'assistant', '是否伴随疼痛或肿胀？', 't7', '2026-11-30 05:50:00+00', 0, '助手', NULL, '\xec6bb640e54afd9776f63d7d8ed29f447a47bc701ed95d4da39e2f012c734356', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-08', 0, 'user', '我膝盖有下坠感，第8天', 't8', '2026-11-30 06:20:00+00', 0, NULL, NULL, '\x3562652f064d26d732f248a486a5275e9e9eea922eb91704c231e1909af61f87', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-08', 1, 'assistant', '是否伴随疼痛或肿胀？', 't8', '2026-11-30 06:31:00+00', 0, '助手', NULL, '\x762fa4523f7a10a55364112de314ff4331868102f4b9b20191cc14eccea39c86', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-09', 0, 'user', '我膝盖有下坠感，第9天', 't9', '2026-11-30 07:00:00+00', 0, NULL, '{"channel": "app"}', '\x7936fdb34a3904c3086636e3cfb43c0390f4fe6628ec51886c319adaf068d5a2', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-09', 1, 'assistant', '是否伴随疼痛或肿胀？', 't9', '2026-11-30 07:12:00+00', 0, '助手', NULL, '\x3c08e88113ed288926ce8e502399e1839b01dda222723d64fde83e69775612b6', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-10', 0, 'user', '我膝盖有下坠感，第10天', 't10', '2026-11-30 07:40:00+00', 0, NULL, NULL, '\x6325c59b3732f929a95f7d22571835d74ec572b1da23cb650e974b3f71d3fb42', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-10', 1, 'assistant', '是否伴随疼痛或肿胀？', 't10', '2026-11-30 07:53:00+00', 0, '助手', NULL, '\xafbedf64c551796d1e31b3ff00da884c9ec5637ba4dbea53c721eeb3bbf046a0', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-11', 0, 'user', '我膝盖有下坠感，第11天', 't11', '2026-11-30 08:20:00+00', 0, NULL, '{"channel": "app"}', '\x954749195a95e2621638341a6486981cabdbea038b51da85288a6c29023e669c', 45, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('plain-11', 1, 'assistant', '是否伴随疼痛或肿胀？', 't11', '2026-11-30 08:34:00+00', 0, '助手', NULL, '\x41866ce7a9f3b41d809b96d5e504b824d5f1cdb06edd572f62bf169ef308e463', 47, 2, 'cl100k_base+go-times', NULL, NULL, NULL);
INSERT INTO public.messages VALUES ('sealed-00', 0, 'user', '', 't0', '2026-11-30 01:15:02.123456+00', 28800, NULL, NULL, '\xf5ea497cb3689206289513d33f1665951a6690206af1095528b72058db663621', 52, 2, 'cl100k_base+go-times', 1, '\x020e3afd682fe7f4f843775a7164f122d3100228c7bd2dcae020249f5997e263cdc8e575215f1ea4eae7dcf59d8b2e0ffc4fb8d87064ee34e87ac0c5a648ff4bd9a8c57a6c8b1007a1bacba238a78d5d6ae035c09abbaee37fe2a9273f6649c76cc3ff5611299ee3f71c8bfa80d04649246238ed02f0bc7f26bd8967a6dab26f4118dfb78a0d0841681ca513f68688a0dd23581d077bb2352a853b53fb', 789);
INSERT INTO public.messages VALUES ('sealed-00', 1, 'assistant', '', 't0', '2026-11-30 01:03:00+00', 0, NULL, NULL, '\x64f7fe0672ab5bafca5af107a2dd7107cd10e3ed92a4bfdf80c8ac40f15bcc22', 47, 2, 'cl100k_base+go-times', 1, '\x02cdf9d23ffde51859291b369184ce916bb550f34a41f0bffb1c28f3e7dd9cb0fc048cfda5685916d91385b75fa45055514a3b170550b1f1499154f23d6a532c15b17205b4d20dfdb3898778bc64f4fad86ec069bcecddc37b2e278f48a41750c739595460eb4923c76094e8f7461747627a5491ce4cf49e9ccc8fa0feb42697aeb807d49eec18f33696a4cebf453320013f9cd50e3db85dc94cc73eb6', NULL);
INSERT INTO public.messages VALUES ('sealed-01', 0, 'user', '', 't1', '2026-11-30 01:40:00+00', 0, NULL, NULL, '\x019e38fbf2298079bde0c1cd48e36c45cee2087e9978f7533b19e79eef60786f', 45, 2, 'cl100k_base+go-times', 2, '\x023487243ae9c47e18f3913b53ad818680a1eba61c2255be9cb4537f6d7e9742039856fa0509592c1b9e90ee0e9d7af3d5aa2c3e88d0693bbd71af696523fa81cb4d038207a99701428d01fc3120226266e14b97944d41a3c87d62b24be6e6e5de285ddc83c1f458408cc5deaf0f762b88e8edf11e2ded222dc9cbfc5604985654ca13b3ccf1e10cba42b1b87e06b2e4669b5bf4f54b9b399e6caa6feb', NULL);
INSERT INTO public.messages VALUES ('sealed-01', 1, 'assistant', '', 't1', '2026-11-30 01:44:00+00', 0, NULL, NULL, '\xb364dc150012338ba1fb9e2519f76e0d4daa9c52b29f40f41c60de777c1fd1bb', 47, 2, 'cl100k_base+go-times', 2, '\x02f11c674901ab166f2bca7fc2424b9def39c2b5e365260f3b9ae1883f5f24a43a938054d14c68fdfa51630b0ca0a2adfdca83d656d96edbdb6b456f44a78e6060fcbb9e8d3e989b7075a7772f465a1ce5664249e12f9523ad1b068844516362bc0a510f01b1c45956fe27ab7b2b5e6640ef5739e9c24779e9942fb2966c8c06faa2f0983077d12e20ce519e5d65953044621a64b10dc4c189c25f5b17', NULL);
INSERT INTO public.messages VALUES ('sealed-02', 0, 'user', '', 't2', '2026-11-30 02:20:00+00', 0, NULL, NULL, '\x7a94130a921b6ae8554ff011370d5b4751debbdf641a29fd565f7b884a833e7c', 45, 2, 'cl100k_base+go-times', 3, '\x024a4071883c3d0bafabd4b033ae724a5fe55ded5cbc27b0eb484d14f119e0e22824f1f7e40189aa78c44aa65a95c5f1e7465a8a2ee13c2c01d130241bb58109902be322977d41fb02b06dc857220acdf831a725a72ac9f34b939a0330dde5ed7f799d5f6e9611832f937411b3e6103a22ebaf0e9a7397e56057bbd743ec986388b4f67d7e53c5c83edfce6084f7592f047cce27e1935fc80a1aea1928', NULL);
INSERT INTO public.messages VALUES ('sealed-02', 1, 'assistant', '', 't2', '2026-11-30 02:25:00+00', 0, NULL, NULL, '\x9278db51269ab13ed58fa43d51e225f6f0716090331dbdba1070b294f96c5aed', 47, 2, 'cl100k_base+go-times', 3, '\x026313b57dabb1affff2a9bf305aaa550b59b9c0bb15369f155a0d1adff9fc9636ff3fdf326d6246042dcdad7f012f0f4816cc14ed88716e329ec68ff34799bc727dceff90c608bda6a425c48492b6e0f6b50ca0b74122dc60826b0bef9e8330b9fc0bc32ce10c5834ab19360ee79750accfdb89b391affb81662e6a919f2c2e59fcbe6e98e9bcc0f8a8f67d59575c0c58213421f5a16112dac4fe99f0', NULL);
INSERT INTO public.messages VALUES ('sealed-03', 0, 'user', '', 't3', '2026-11-30 03:00:00+00', 0, NULL, NULL, '\x5d00252b25799c5f601ea0eed8d3b172edea950c7049f12d3c1c7f15ea0eaa47', 45, 2, 'cl100k_base+go-times', 4, '\x026b0ef15c7bb1e5b52bcc1f471633a18e6d7201c1ee2d0bf02f27267e46d2dad3353c62a3c68676f4200e9d19cbc1944c1a9cc0bed609e1e2e2ac9ca76eed88ae5d1b75f921d58f289f7dbf0b7b55cf9e34b88bd5524496d08b4c952c225adce55443ca80c6e08e97bb741700897d23bbcefdd38c7fa212c715294bca2b955351d966d0d23236c85e7e9b154fdc5fd490551857abee8510533afa8f63', NULL);
INSERT INTO public.messages VALUES ('sealed-03', 1, 'assistant', '', 't3', '2026-11-30 03:06:00+00', 0, NULL, NULL, '\x30bf8e72c0aa24d097feefb4a9dfeff24f2ea12384b3188b8b623f1565c34e0a', 47, 2, 'cl100k_base+go-times', 4, '\x02a3ad53b6eb68f71be4165039dbc7b752fff8f48381cc7a1f2377bf3af9afa0d8cced97e2dae9315c11924b4b47d3e12267d0e3c4f6d0bc66822ec362e9c4fdeec86efd3c904b43871d32a2d30e521c6d4ef5c5de49705bbea09506096ed75fb826a89778b0a7e9884340cd8b14793a28a1a2985bb9a6abad83184fa589466058adf17c943a8b520af14868de3854a98e1864ee0c02b438599fed41bb', NULL);
INSERT INTO public.messages VALUES ('sealed-04', 0, 'user', '', 't4', '2026-11-30 03:40:00+00', 0, NULL, NULL, '\xba7a1d780315c63bb21758d6fff74d87945c035cc3eca95f1dab14ed247799b1', 45, 2, 'cl100k_base+go-times', 5, '\x024b4cd4aded821a6d800a794900f0c76d9236d7be376b6635456900a905525095b4aa42d2da5e39e4efc667e8ec3d26c91c1f1948db6b51c28b859fced34dde9cb4fb87e6b6019e11fc70e62674d9a2a9f53f61f20fe65ab5650589b5b6109df755c3ca9c6fa91ab3f4c8742924295e536681faf14709341a8b1e160c0e7d045201b3c33971f95d7c3b6bd75dcc27f88c66549d98bfa25cbfd7ebcd5d', NULL);
INSERT INTO public.messages VALUES ('sealed-04', 1, 'assistant', '', 't4', '2026-11-30 03:47:00+00', 0, NULL, NULL, '\xb21ec4046432eb08825f45f9b09306a8abe2485c27a1f5680bd6b66b20d132de', 47, 2, 'cl100k_base+go-times', 5, '\x028cdf8cfad6bc33fd18dd5b827f47e647f45ae91f6ec0ee5e506364fb8d94f1fc3296f1f547af51c6a37a9508af72be61e8095c67450013d9ce5cad33b598b36bdacc8be7715394919e60b96dd3e45bf1f8866f570939184893aa55e838755f35875dac80166f41ead36e3ef1d03162a80615b47c4190498b2409060003e7924816c739d148d049e975caf432423fc3dee49c09b43746773dd6ce0511', NULL);
INSERT INTO public.messages VALUES ('sealed-05', 0, 'user', '', 't5', '2026-11-30 04:20:00+00', 0, NULL, NULL, '\x6296928ec94b2d3b88c71c7fbbbfc5630d958ab3c29dee69169a44547cf27c2d', 45, 2, 'cl100k_base+go-times', 6, '\x02d41326c20da3c30aa3a8d48af3071c27362147283aa0011aa67de648e634e028568087d707aef0fcc7ec0f8e5b67c6cc7c6133d00b2c338b3a27d021dc67bbda28cfb77681e3338687f16aeba3ab1221db36c998462b5b8ddce14ac47e56657e595b9293262274824550f827aeff4b338e61ee3ada516f0f5546616f6a0a5792952f8a992cbdda2dd9dc9a24fea794b641d7612f1bd6fba227affe6d', NULL);
INSERT INTO public.messages VALUES ('sealed-05', 1, 'assistant', '', 't5', '2026-11-30 04:28:00+00', 0, NULL, NULL, '\x5aed035d251a3ab70db8423f154c58f5a5885484a99ef5c663b0141dfcf8a7ea', 47, 2, 'cl100k_base+go-times', 6, '\x0281842a1a464a6fda52d11c309520bd527ab99d99ea841dd7fa9a353615f76a422de973fae54d6754fd1391c3f12477797a5c058e6b376368092f58ca2faa13b5a10a608fb8af3d18c82ff6acf6fc857b146b2bc0af4239903d67ea1494892cf62ca08b2297554bea2a60aa448fdcbdd45de8718728cd7c7da0a08d194b40a90217c6a8ef93c5999dc00b690279751cdfbac966e2b6b3c938589e0c91', NULL);
INSERT INTO public.messages VALUES ('sealed-06', 0, 'user', '', 't6', '2026-11-30 05:00:00+00', 0, NULL, NULL, '\xe28ca103c63e8814730f167bd1403403cd9f6af71db84cef25dc7e4b578dca1d', 45, 2, 'cl100k_base+go-times', 7, '\x0241acfed8597d5c44ac79451e6c2d53ddc936e25ff1a952aa524384096bbe4655bf4ef27e2e6ddfc385493a007362a2bd5fc7b1be0fc6c0fe750a0dbb79db40cc1658212464174c48d547e8ccb75d14a62e6064d870486f26d8a4a4dbc9345bc4c8c79afdd747400837bd59494f4ebd555669abee7269966c8f2bc3b36cfff8cb5d6b4f26531417d8bc269eb343ce02c76313877a4983aaee43c8106e', NULL);
INSERT INTO public.messages VALUES ('sealed-06', 1, 'assistant', '', 't6', '2026-11-30 05:09:00+00', 0, NULL, NULL, '\xe38c3333d3d573d2933fe8ce6d7afc3b1bc7de205d790ba0b1b818b4aecc2648', 47, 2, 'cl100k_base+go-times', 7, '\x020a84537fd82b1e8d07db9757232600523493fc4c551ab59aedff6799b0c4f3b2f5576bb945733837ab927cf4ed6fa6f966f6b315b4e0d62a21febdad9aa99aea8f94abd58be365e396c4ae7beeff7ffcbeb73f5a3662e571ace9400d55eb7863195438593820d1b7b4bd47638e0d10f3102ed5142ed0732c364a71181f4edfc0a657dd7691d9fe422683f216c736c772b6f6799e34a24750e2b29b4a', NULL);
INSERT INTO public.messages VALUES ('sealed-07', 0, 'user', '', 't7', '2026-11-30 05:40:00+00', 0, NULL, NULL, '\x1c06752731a094f2d25a9b3ee9521985fbb4972d585b19854a9bc61e63fdf5cf', 45, 2, 'cl100k_base+go-times', 8, '\x02540428d80aaac89c1001467df7795c0e7b11e025cb37d9264287bee9e892574d54bc9b39aa1f97c9a8bec0bfed57d965ba014011bfec2cc865e54c56090749d367873834e4d0c516feed56c5734b1efbd664e0e7f8ea86768bb0a583b0780b3fc7519fdad38b866a03036fa26180963c21b60a65dbf7d30ab6ae4c79508b5e21b0e335a4b36a7463665d0b50ae61de0148dc3c35e89e946b878610da', NULL);
INSERT INTO public.messages VALUES ('sealed-07', 1, 'assistant', '', 't7', '2026-11-30 05:50:00+00', 0, NULL, NULL, '\x4934a71ec246fe5af23bdd6d36b05b817b3a32ec3291deafe1a3224c494bfaeb', 47, 2, 'cl100k_base+go-times', 8, '\x02e9128aa28f8d56b96b05a0f42d111f80d9610e82f02beebced9bf428bfbf3bc6088f9b2d1f90d886c6851f7cf9f297ba1140986a3a8994641485c8938b668c79445efb562503a4d68e0ac8356dc7b3a6b15baa71b72a0a60729d5d4a3d8a106a18823184d8b18ed5dfecbfd2a66f06c09426eb50c0a2aed211825192458d864dc2b58b63df4177975ab766349e380592cf08219e57d5550ea5e79172', NULL);
INSERT INTO public.messages VALUES ('sealed-08', 0, 'user', '', 't8', '2026-11-30 06:20:00+00', 0, NULL, NULL, '\xbbb28fbd768b957ae945abe4f7736d6de7a72f57c17697bf5f7d47cec1533bcb', 45, 2, 'cl100k_base+go-times', 9, '\x02154a8105988d568119d6fb9c1a43caf10b7b6ff94c4d7659b40e9eed8b49f817dfbffdb291ab823f2253dd862040e7b5a5b957c7b81479da9cdfcd605b4b9b09453cb4874a71431e78df33c5675efe240a97a25e9c7072227388d3565eaf325ef1621575f99ea72af4ce78ae170a6d287ecf82cb2cbcd748639ee06646c85c0a32e4050ab26b92c2f9a335bb992bcd7a5bc4d0fd58cfae2b08dcc60d', NULL);
INSERT INTO public.messages VALUES ('sealed-08', 1, 'assistant', '', 't8', '2026-11-30 06:31:00+00', 0, NULL, NULL, '\x04b57b53dd25a5fdaf1905ae1f11282bdbb07388f8aec68d7bbafada5eef7560', 47, 2, 'cl100k_base+go-times', 9, '\x022101fd24dda1dcc51be5273dccc2dce3af1f0c45fa01d224c52deb38c4a6054ea34d21cb88f588b6f67591bc62240b81726b852c3088c47e506105937516f940c4f106ecbea70092fa3ac1047a8b0dd619bf668ef1d847570cff3bea420e1beef2a00865909870aa4ef8b73abee2f5667b54c6528fe11d58c85cb43cc6d4277b89c1516d29945abd3fe17d6606659a93567355cf22bdf92bcc62b8f8', NULL);
INSERT INTO public.messages VALUES ('sealed-09', 0, 'user', '', 't9', '2026-11-30 07:00:00+00', 0, NULL, NULL, '\xbeba92dc4b520e8ac021de1f2792188d163702718c8130bd9e1f0b90cbaa14fc', 45, 2, 'cl100k_base+go-times', 10, '\x021c41316ed840083ced2a1eb40881e7ca5ed2f8a5deff4b3f58a017d1e4760db0843dec6bf5ec0550b3da0386a4228ce6b99f428ae45a3df5174f4e487a692a9db01a249e07dc498995596d2708f744c0e40243d30a281418f131cda3bed964d7952702ea157ddf7bed7c1ceace90922318b6589d13d948baa511693bb97fe207220e9faa8d473fb18e8859627ab7400a1d9eab990dce0016bef292ba', NULL);
INSERT INTO public.messages VALUES ('sealed-09', 1, 'assistant', '', 't9', '2026-11-30 07:12:00+00', 0, NULL, NULL, '\xbb0fe3ef87cefda6d6edb1771334172194834ecc9706a2649c8ac8c96f1ef58f', 47, 2, 'cl100k_base+go-times', 10, '\x02fe73f5da6643b0496b8510e7beb7ce7a94efe514bd82b8de3050883d7aed8ac1d8459a7aa7e459b50ba74a741a97bde9d176c9224bba1fd28904cb4248079473bec2304fb66460feb1e4fd9dcc7652ab89e28ddc65439ab8022262508a1a31fbcfdc6ab405444e33bbec0d511a62c5580383f3263bec88a74546d9612f6fa7eaf348a6c70623a1710c1ae0af737ddc8495b4536feff8615ec1a92164', NULL);
INSERT INTO public.messages VALUES ('sealed-10', 0, 'user', '', 't10', '2026-11-30 07:40:00+00', 0, NULL, NULL, '\x8857d41145f691a36fbe380e8485fa48737ef42680a93753e360f4ef980bee7a', 45, 2, 'cl100k_base+go-times', 11, '\x02c2ddd87bbd1c864124aba1a93dd74d5ddfdf1eb3520f51aa04d907ca57ec15b3eca30a546ded4f7747758ba70487631162b71b52f5516f012ea15411baa17e0ad709f13d3d1dd773ce871296346529f91a53646dd3df1b9b753f3705b87191dcf71d0e6d66b775c9902aed8d67ff82d1bac598014c95575b66c5e791d848e8d93dd1b9aa6d9b632f2b63e19492789c6a4ba642152fe914d260ff6df8', NULL);
INSERT INTO public.messages VALUES ('sealed-10', 1, 'assistant', '', 't10', '2026-11-30 07:53:00+00', 0, NULL, NULL, '\x542153c83fc984d7c74f59a2a19be0003202aab41a7b89bfa5334e5f068d6af7', 47, 2, 'cl100k_base+go-times', 11, '\x021dcc2eef1497412820f97013fd85d5d5380a7351cb7c79941a352365080a5f0aee145bfa324cb924009bdf3b37e4236345dd9e5617875628a5ae48bd9f1ae0ebd9556796ccf64b952c09ccc5b1ab96438408aa27ee9f7dc4c918702dcac70e134940a0c0cac11ae9b835d1326ef8b55041b3adadd7e5d2d0dec6a8ad62f5796cffca98582e368a4e928efa34c8ea592b0c9c0e692952a783c9a41315', NULL);
INSERT INTO public.messages VALUES ('sealed-11', 0, 'user', '', 't11', '2026-11-30 08:20:00+00', 0, NULL, NULL, '\xda9d7cae81cb9afa036f6efc928f8e3ec679c482c120daa9ab8ac2428aa11e31', 45, 2, 'cl100k_base+go-times', 12, '\x02a3970b61a110d9c6105efe47786cfa91a938a0d25483694cee85ae2179e950ed26dbb617b28c0c5fdb3aeb64dd6d58993cabc7a692b613fca39737c38b524473c19d566097144a9ed0c2351aea878f5b6f870045994f2049794305c5af88455da971844633234d402511aebfd6c1692dc1772c0f8280fcd60c814e0884786d46ab13ad7c63504027e6162c78e22fbe4b28ce8090ec08ab0604069ab5', NULL);
INSERT INTO public.messages VALUES ('sealed-11', 1, 'assistant', '', 't11', '2026-11-30 08:34:00+00', 0, NULL, NULL, '\xb7c1ca4b355dccd2124b0fe0f7962147902cf42b7ec49a6303b09e7059cc5902', 47, 2, 'cl100k_base+go-times', 12, '\x0219ddc590c970b911f1898715bb75b5aa0bdf18b41aa4bdd9635b466c567c967923e77ceb40ec2305b0a49bb4dd1d1abde1b752e6256eb1eeb428c97e720cc04954db5a53d5c7f436ede582a2563ac14371c3d34f8be686dbf39110caf3840f89ac67d16b21a1417406a25e106375aa450c10f6726063d4fb3b3d944708ec3245bcbb51568b09c6821c4941acffaf53618e1976e6359840dc2854c67e', NULL);


--
-- Data for Name: sessions; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.sessions VALUES ('plain-00', 'user-00', 2, 2, '\x80d7eb57b5fb7e31e931b02bb619bbf8a49c15408d433bcc186e3ac6aac3e53f', '2026-12-05 12:02:33.127164+00', '2026-12-05 12:02:33.241369+00', NULL, 1, '2026-11-30 01:15:02.123456+00', '2026-11-30 01:03:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-01', 'user-01', 2, 2, '\x84c7ff91e4403a960147ad2bd231ee0b8e795eb15d335c30dc3964c6eecd9459', '2026-12-05 12:02:33.250013+00', '2026-12-05 12:02:33.252432+00', NULL, 1, '2026-11-30 01:40:00+00', '2026-11-30 01:44:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-02', 'user-02', 2, 2, '\x2bf0dfa425d130df3fdf189d6b4089741adea3f1705566f3ab04163432d8322a', '2026-12-05 12:02:33.257341+00', '2026-12-05 12:02:33.259499+00', NULL, 1, '2026-11-30 02:20:00+00', '2026-11-30 02:25:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-03', 'user-03', 2, 2, '\x9987f3e96b5fc7ee57a8376e37127743791089df34db2f954c02ee121567ea51', '2026-12-05 12:02:33.26312+00', '2026-12-05 12:02:33.26535+00', NULL, 1, '2026-11-30 03:00:00+00', '2026-11-30 03:06:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-04', 'user-04', 2, 2, '\x4248d2047070a6a0a3a088a63926d7d596ae6b526e893e478e80a51f6b41a257', '2026-12-05 12:02:33.268864+00', '2026-12-05 12:02:33.270915+00', NULL, 1, '2026-11-30 03:40:00+00', '2026-11-30 03:47:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-05', 'user-05', 2, 2, '\xafe1a232f8e86cd316531f26eb8e864884a9e27406392c9386f4a9b5f7af8529', '2026-12-05 12:02:33.274191+00', '2026-12-05 12:02:33.276375+00', NULL, 1, '2026-11-30 04:20:00+00', '2026-11-30 04:28:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-06', 'user-06', 2, 2, '\x870221a38c96c9abf75dbd38b4d218f8f9c275aa68c7ec856582db9fc6b6b7a0', '2026-12-05 12:02:33.279589+00', '2026-12-05 12:02:33.281354+00', NULL, 1, '2026-11-30 05:00:00+00', '2026-11-30 05:09:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-07', 'user-07', 2, 2, '\x1726f8252534a4a4d332665b7e1b82c2e9f7bdd79490bcd3d0ec4b644cee0013', '2026-12-05 12:02:33.284387+00', '2026-12-05 12:02:33.286324+00', NULL, 1, '2026-11-30 05:40:00+00', '2026-11-30 05:50:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-08', 'user-08', 2, 2, '\xbc6d617d400a1c4a80146ff5d44d59524bfa284e79c76d7448f17c69d1bd7421', '2026-12-05 12:02:33.289314+00', '2026-12-05 12:02:33.291116+00', NULL, 1, '2026-11-30 06:20:00+00', '2026-11-30 06:31:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-09', 'user-09', 2, 2, '\x801f01044462d1b2f5167ff872fe3bf672b6502c02a7b2398e2a7ae4e580fc8c', '2026-12-05 12:02:33.294408+00', '2026-12-05 12:02:33.296414+00', NULL, 1, '2026-11-30 07:00:00+00', '2026-11-30 07:12:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-10', 'user-10', 2, 2, '\x45d86812ba2e2dda9a0931429e19724662ad314d84a0a804bd5462b31733aedc', '2026-12-05 12:02:33.299181+00', '2026-12-05 12:02:33.30105+00', NULL, 1, '2026-11-30 07:40:00+00', '2026-11-30 07:53:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('plain-11', 'user-11', 2, 2, '\x29ef3812ce79f1822a4ea2c73e0800c14caebc1de60a8821c1b439cb0ee55acf', '2026-12-05 12:02:33.304029+00', '2026-12-05 12:02:33.305843+00', NULL, 1, '2026-11-30 08:20:00+00', '2026-11-30 08:34:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-00', 'user-00', 2, 2, '\x0000000000000001c90d7da1d62d664e3da6f594374594a04b2d1323f013b2a279b99c04a48ad6a5', '2026-12-05 12:02:33.325773+00', '2026-12-05 12:02:33.33407+00', NULL, 1, '2026-11-30 01:15:02.123456+00', '2026-11-30 01:03:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-01', 'user-01', 2, 2, '\x00000000000000023c64d84148da0efa98b510a9f2ed0a626c2f960ef901450747a2bf5aad7a4e34', '2026-12-05 12:02:33.341073+00', '2026-12-05 12:02:33.343238+00', NULL, 1, '2026-11-30 01:40:00+00', '2026-11-30 01:44:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-02', 'user-02', 2, 2, '\x00000000000000033cd5f55eff07bfb4bf7c3e7cbdffb6da9f8b296936082e561b7ecb727724aa06', '2026-12-05 12:02:33.347589+00', '2026-12-05 12:02:33.349723+00', NULL, 1, '2026-11-30 02:20:00+00', '2026-11-30 02:25:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-03', 'user-03', 2, 2, '\x0000000000000004c5c9f31e87be1c8255cda76c98a983c855450af315a24587d12fb183f0617519', '2026-12-05 12:02:33.353688+00', '2026-12-05 12:02:33.355927+00', NULL, 1, '2026-11-30 03:00:00+00', '2026-11-30 03:06:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-04', 'user-04', 2, 2, '\x00000000000000052d941057b34aac0c6c171ce4f43a22e6c9c9fa091ac0a9a775c93cc204294866', '2026-12-05 12:02:33.359663+00', '2026-12-05 12:02:33.361716+00', NULL, 1, '2026-11-30 03:40:00+00', '2026-11-30 03:47:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-05', 'user-05', 2, 2, '\x00000000000000069941cb1bcbe4b6d1a6026904055a3c7b3a5c0dd472b42309f2971fff15885456', '2026-12-05 12:02:33.365626+00', '2026-12-05 12:02:33.367817+00', NULL, 1, '2026-11-30 04:20:00+00', '2026-11-30 04:28:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-06', 'user-06', 2, 2, '\x0000000000000007c42a251a96a0b62357814353ed9bd4bee03076f9cd4155488dc48d44ba47ed51', '2026-12-05 12:02:33.371882+00', '2026-12-05 12:02:33.373773+00', NULL, 1, '2026-11-30 05:00:00+00', '2026-11-30 05:09:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-07', 'user-07', 2, 2, '\x0000000000000008cc95f24b967124a547ce5f0fd011d04dd84939d9baad4fd36966a76e51f22bd5', '2026-12-05 12:02:33.377098+00', '2026-12-05 12:02:33.379024+00', NULL, 1, '2026-11-30 05:40:00+00', '2026-11-30 05:50:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-08', 'user-08', 2, 2, '\x0000000000000009ada39ef4a8794959038ff5098fb61764c82e0c4c56d37c61a86091504078797f', '2026-12-05 12:02:33.382432+00', '2026-12-05 12:02:33.384466+00', NULL, 1, '2026-11-30 06:20:00+00', '2026-11-30 06:31:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-09', 'user-09', 2, 2, '\x000000000000000aa912d5af2847c96b33ff974a39898842fd7974b8ec1ff41f7262d1b58385c85d', '2026-12-05 12:02:33.388064+00', '2026-12-05 12:02:33.389965+00', NULL, 1, '2026-11-30 07:00:00+00', '2026-11-30 07:12:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-10', 'user-10', 2, 2, '\x000000000000000b3b1030c1a36b7d6274a90f54a6032c308b9d068b96e3c3b95c296f2718f975b0', '2026-12-05 12:02:33.393419+00', '2026-12-05 12:02:33.395433+00', NULL, 1, '2026-11-30 07:40:00+00', '2026-11-30 07:53:00+00', DEFAULT);
INSERT INTO public.sessions VALUES ('sealed-11', 'user-11', 2, 2, '\x000000000000000cad0a09cd62f55fc664bfbf609593e08275d7820d055749af3ed89b23476ca8fb', '2026-12-05 12:02:33.398969+00', '2026-12-05 12:02:33.401058+00', NULL, 1, '2026-11-30 08:20:00+00', '2026-11-30 08:34:00+00', DEFAULT);


--
-- Data for Name: summaries; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.summaries VALUES ('plain-00', 1, '患者膝盖不适，第0次咨询', 1, NULL, 1, '2026-12-05 12:02:33.247084+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-01', 1, '患者膝盖不适，第1次咨询', 1, NULL, 1, '2026-12-05 12:02:33.255779+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-02', 1, '患者膝盖不适，第2次咨询', 1, NULL, 1, '2026-12-05 12:02:33.261682+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-03', 1, '患者膝盖不适，第3次咨询', 1, NULL, 1, '2026-12-05 12:02:33.267518+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-04', 1, '患者膝盖不适，第4次咨询', 1, NULL, 1, '2026-12-05 12:02:33.272976+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-05', 1, '患者膝盖不适，第5次咨询', 1, NULL, 1, '2026-12-05 12:02:33.278404+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-06', 1, '患者膝盖不适，第6次咨询', 1, NULL, 1, '2026-12-05 12:02:33.283193+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-07', 1, '患者膝盖不适，第7次咨询', 1, NULL, 1, '2026-12-05 12:02:33.28821+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-08', 1, '患者膝盖不适，第8次咨询', 1, NULL, 1, '2026-12-05 12:02:33.293308+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-09', 1, '患者膝盖不适，第9次咨询', 1, NULL, 1, '2026-12-05 12:02:33.298145+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-10', 1, '患者膝盖不适，第10次咨询', 1, NULL, 1, '2026-12-05 12:02:33.302859+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('plain-11', 1, '患者膝盖不适，第11次咨询', 1, NULL, 1, '2026-12-05 12:02:33.307693+00', NULL, NULL);
INSERT INTO public.summaries VALUES ('sealed-00', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.339223+00', 1, '\x02255684cc7b984a2ce6ed561250f17c9adada36b09e0d7853fbf783a6bc53dca944876b7b473d7527b825c08151ba3b59766004de84a7e8e0ea729412af019093f15ebf046e271e093e35b10b3336c6b8a97a23e6248701b3c3d0fb61');
INSERT INTO public.summaries VALUES ('sealed-01', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.346386+00', 2, '\x0218bb35a5ceaddf41e14c7d89ed76077cb50e930ee4fdb6d6630e095907e830874dbe6ab859d8846da92e7d3b0dc7c285c0a06dff5d85601ef402c17e8da001d81de626c36c254dbb4b40184f563b1636399d2d73b132d57ce34d415f');
INSERT INTO public.summaries VALUES ('sealed-02', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.352517+00', 3, '\x0251bd2eec43088b3025dc04ad52f7b33a6af873344d65144f4593c2c1bf3d7c7675eab7b6595dedd517d544107e508ba9d4f770ec77d1a9f1c8ba93d3541f415d36fc9a7a7b29ea9408b4b5a612b4ebb9abf14b9914c67147d16ca96d');
INSERT INTO public.summaries VALUES ('sealed-03', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.358464+00', 4, '\x023f0aca4fd0cd1878cf7e1d72c62f60ba1817b1004d9cb7997dbd9a6a9a47d85a4ae5234bee517da63fbefee21e5014c77dd6173f7b646af0989e8ccc6ae5616f967852c6168ac837df2fb249a61fbe614f70ec7bf49fdf723c6816b1');
INSERT INTO public.summaries VALUES ('sealed-04', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.364339+00', 5, '\x02d08699d6779fa132aabe0fd5c786080e3f1f4ec2f92106dfc4d25367e2a9c27f10f58bbb8b91760e304d9ccb7e8631330ba4deb45db5ace11035a8dc530c9aefd0fdbe4e952cf2067302e3ada934b08d4fe44f83a2dca3c35e4c23d8');
INSERT INTO public.summaries VALUES ('sealed-05', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.370666+00', 6, '\x02dd96f481ea3bbe30bd32ed5e56532f86c2fb47307a20219e8dd5c7b518d8ccaa7bacf90ba379f0f65784f4d704b59037adf6cc30801fd4db5646d92d485b966f8074c1e0dcbfebbb228028a1f3d09b8186e373b7815568cf0c5a79d2');
INSERT INTO public.summaries VALUES ('sealed-06', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.376017+00', 7, '\x0222b15f147946b40049afd14a1b96401ea03d425ccfc23aff39eb96e31144c114a24916a7c3ae95e36f6eeb41e795eaed56c131c8486cbc3506fbac3eccce7a3d6b56debacafed34a697d4e68a61aae25609df45ac413c4cfa09ef039');
INSERT INTO public.summaries VALUES ('sealed-07', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.381346+00', 8, '\x02a0727c9fbd16114c598702ef91252cff297ea9468c1fd8d75c3ba1e2a854cec4f9d691f302974ffb47bf034fedabc4b5d739c262eb16387af2c475c902e3ad073cfebd2b3717f3ab281fc3da8a9332ff00f4e0cde06f2a4f2af46c4b');
INSERT INTO public.summaries VALUES ('sealed-08', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.386777+00', 9, '\x021d1bbfa041daea806bed2e8472f2f729ce2883cc14ef54c4fd1f11cfba6224ba8c6d66f10c5b9c2ce990211c8dd9161342ea4a1255d1d0195a70663c99f5ffd2cc0aa60e39be2ac8ec8747e0ab1d8361bd12b851620b979d80c92847');
INSERT INTO public.summaries VALUES ('sealed-09', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.392341+00', 10, '\x02615d018be018359fc93a2b1e078ece4a93a1345926bf3168c88be3aeb5f0525ff35d465972394232d6391cceef5dd0d17eea5efadbe168e999cbc8cba4ef9dbac6c98bb5744907fd33aa0dfe271fcf839ea01ef40327d293bf73018e');
INSERT INTO public.summaries VALUES ('sealed-10', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.397865+00', 11, '\x0268b4389a86a20f20feb4e304e320cb730b4c7a17003f7d215654677dd1e39f4e8a80344d54abbb3f3d3acea6775ea749abb78081282a6838e22d6c33a564fcee1bff8e14c72306fb3cb51024ba92fbe252eb570b8eb807edd2e7c2ac');
INSERT INTO public.summaries VALUES ('sealed-11', 1, '', 1, NULL, 1, '2026-12-05 12:02:33.403309+00', 12, '\x02cb04e6696eef65716af84d482150de3aeacd51ad81293d4c5612566bc0c5ad0eec13c49d8e9d2d568ce46b56ae2dfc93fdd3afa632e3d92f727e52361f698ab79147a9c3b29961c30ac0b00601891005a465708f0c1055ea93d9bb63');


--
-- Data for Name: summary_jobs; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.summary_jobs VALUES ('plain-02', 1, 'queued', 0, '2026-12-05 12:02:33.511914+00', NULL, NULL, '2026-12-05 12:02:33.511914+00', NULL);


--
-- Data for Name: user_profiles; Type: TABLE DATA; Schema: public; Owner: prerelease_fixture_owner
--

INSERT INTO public.user_profiles VALUES ('user-00', 1, 30, 'female', NULL, '{膝伤}', '{"age": 30, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.248665+00', '2026-12-05 12:02:33.248665+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-01', 1, 31, 'female', NULL, '{膝伤}', '{"age": 31, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.256696+00', '2026-12-05 12:02:33.256696+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-02', 1, 32, 'female', NULL, '{膝伤}', '{"age": 32, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.262476+00', '2026-12-05 12:02:33.262476+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-03', 1, 33, 'female', NULL, '{膝伤}', '{"age": 33, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.268277+00', '2026-12-05 12:02:33.268277+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-04', 1, 34, 'female', NULL, '{膝伤}', '{"age": 34, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.273615+00', '2026-12-05 12:02:33.273615+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-05', 1, 35, 'female', NULL, '{膝伤}', '{"age": 35, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.279045+00', '2026-12-05 12:02:33.279045+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-06', 1, 36, 'female', NULL, '{膝伤}', '{"age": 36, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.283788+00', '2026-12-05 12:02:33.283788+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-07', 1, 37, 'female', NULL, '{膝伤}', '{"age": 37, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.288783+00', '2026-12-05 12:02:33.288783+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-08', 1, 38, 'female', NULL, '{膝伤}', '{"age": 38, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.29387+00', '2026-12-05 12:02:33.29387+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-09', 1, 39, 'female', NULL, '{膝伤}', '{"age": 39, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.29868+00', '2026-12-05 12:02:33.29868+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-10', 1, 40, 'female', NULL, '{膝伤}', '{"age": 40, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.303435+00', '2026-12-05 12:02:33.303435+00', NULL, NULL);
INSERT INTO public.user_profiles VALUES ('user-11', 1, 41, 'female', NULL, '{膝伤}', '{"age": 41, "gender": "female", "exercise_habit": null, "known_limitations": ["膝伤"]}', 1, '2026-12-05 12:02:33.308392+00', '2026-12-05 12:02:33.308392+00', NULL, NULL);


--
-- Name: data_keys_key_id_seq; Type: SEQUENCE SET; Schema: public; Owner: prerelease_fixture_owner
--

SELECT pg_catalog.setval('public.data_keys_key_id_seq', 12, true);


--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);


--
-- Name: analytics_refreshed_days pk_analytics_refreshed_days; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.analytics_refreshed_days
    ADD CONSTRAINT pk_analytics_refreshed_days PRIMARY KEY (day);


--
-- Name: analytics_value_cells pk_analytics_value_cells; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.analytics_value_cells
    ADD CONSTRAINT pk_analytics_value_cells PRIMARY KEY (kind, day, value);


--
-- Name: applied_profile_writes pk_applied_profile_writes; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.applied_profile_writes
    ADD CONSTRAINT pk_applied_profile_writes PRIMARY KEY (user_id, write_id);


--
-- Name: applied_session_writes pk_applied_session_writes; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.applied_session_writes
    ADD CONSTRAINT pk_applied_session_writes PRIMARY KEY (session_id, write_id);


--
-- Name: consultation_state_history pk_consultation_state_history; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.consultation_state_history
    ADD CONSTRAINT pk_consultation_state_history PRIMARY KEY (session_id, version);


--
-- Name: consultation_states pk_consultation_states; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.consultation_states
    ADD CONSTRAINT pk_consultation_states PRIMARY KEY (session_id);


--
-- Name: ctxstore_analytics_settings pk_ctxstore_analytics_settings; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.ctxstore_analytics_settings
    ADD CONSTRAINT pk_ctxstore_analytics_settings PRIMARY KEY (singleton);


--
-- Name: ctxstore_pseudonym_key pk_ctxstore_pseudonym_key; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.ctxstore_pseudonym_key
    ADD CONSTRAINT pk_ctxstore_pseudonym_key PRIMARY KEY (singleton);


--
-- Name: ctxstore_roles pk_ctxstore_roles; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.ctxstore_roles
    ADD CONSTRAINT pk_ctxstore_roles PRIMARY KEY (kind);


--
-- Name: data_keys pk_data_keys; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.data_keys
    ADD CONSTRAINT pk_data_keys PRIMARY KEY (key_id);


--
-- Name: graph_channel_values pk_graph_channel_values; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_channel_values
    ADD CONSTRAINT pk_graph_channel_values PRIMARY KEY (session_id, checkpoint_ns, channel, version);


--
-- Name: graph_checkpoints pk_graph_checkpoints; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_checkpoints
    ADD CONSTRAINT pk_graph_checkpoints PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id);


--
-- Name: graph_writes pk_graph_writes; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_writes
    ADD CONSTRAINT pk_graph_writes PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id, task_id, idx);


--
-- Name: messages pk_messages; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT pk_messages PRIMARY KEY (session_id, seq);


--
-- Name: sessions pk_sessions; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT pk_sessions PRIMARY KEY (session_id);


--
-- Name: summaries pk_summaries; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.summaries
    ADD CONSTRAINT pk_summaries PRIMARY KEY (session_id, summary_version);


--
-- Name: summary_jobs pk_summary_jobs; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.summary_jobs
    ADD CONSTRAINT pk_summary_jobs PRIMARY KEY (session_id);


--
-- Name: user_profiles pk_user_profiles; Type: CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.user_profiles
    ADD CONSTRAINT pk_user_profiles PRIMARY KEY (user_id);


--
-- Name: ix_applied_profile_writes_applied_at; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_applied_profile_writes_applied_at ON public.applied_profile_writes USING btree (applied_at);


--
-- Name: ix_applied_session_writes_applied_at; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_applied_session_writes_applied_at ON public.applied_session_writes USING btree (applied_at);


--
-- Name: ix_consultation_state_history_key_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_consultation_state_history_key_id ON public.consultation_state_history USING btree (key_id) WHERE (key_id IS NOT NULL);


--
-- Name: ix_consultation_states_key_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_consultation_states_key_id ON public.consultation_states USING btree (key_id) WHERE (key_id IS NOT NULL);


--
-- Name: ix_data_keys_current_owner; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE UNIQUE INDEX ix_data_keys_current_owner ON public.data_keys USING btree (owner) WHERE (retired_at IS NULL);


--
-- Name: ix_data_keys_owner; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_data_keys_owner ON public.data_keys USING btree (owner);


--
-- Name: ix_graph_checkpoints_run_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_graph_checkpoints_run_id ON public.graph_checkpoints USING btree (((metadata ->> 'run_id'::text)));


--
-- Name: ix_messages_key_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_messages_key_id ON public.messages USING btree (key_id) WHERE (key_id IS NOT NULL);


--
-- Name: ix_sessions_expires_hour; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_sessions_expires_hour ON public.sessions USING btree (expires_hour) WHERE (expires_hour IS NOT NULL);


--
-- Name: ix_sessions_first_activity_at; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_sessions_first_activity_at ON public.sessions USING btree (first_activity_at);


--
-- Name: ix_sessions_user_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_sessions_user_id ON public.sessions USING btree (user_id);


--
-- Name: ix_summaries_key_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_summaries_key_id ON public.summaries USING btree (key_id) WHERE (key_id IS NOT NULL);


--
-- Name: ix_summary_jobs_due; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_summary_jobs_due ON public.summary_jobs USING btree (run_after) WHERE (state <> 'dead'::text);


--
-- Name: ix_user_profiles_key_id; Type: INDEX; Schema: public; Owner: prerelease_fixture_owner
--

CREATE INDEX ix_user_profiles_key_id ON public.user_profiles USING btree (key_id) WHERE (key_id IS NOT NULL);


--
-- Name: consultation_state_history fk_consultation_state_history_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.consultation_state_history
    ADD CONSTRAINT fk_consultation_state_history_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: consultation_state_history fk_consultation_state_history_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.consultation_state_history
    ADD CONSTRAINT fk_consultation_state_history_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: consultation_states fk_consultation_states_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.consultation_states
    ADD CONSTRAINT fk_consultation_states_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: consultation_states fk_consultation_states_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.consultation_states
    ADD CONSTRAINT fk_consultation_states_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: graph_channel_values fk_graph_channel_values_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_channel_values
    ADD CONSTRAINT fk_graph_channel_values_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: graph_channel_values fk_graph_channel_values_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_channel_values
    ADD CONSTRAINT fk_graph_channel_values_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: graph_checkpoints fk_graph_checkpoints_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_checkpoints
    ADD CONSTRAINT fk_graph_checkpoints_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: graph_writes fk_graph_writes_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_writes
    ADD CONSTRAINT fk_graph_writes_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: graph_writes fk_graph_writes_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.graph_writes
    ADD CONSTRAINT fk_graph_writes_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: messages fk_messages_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT fk_messages_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: messages fk_messages_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT fk_messages_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: summaries fk_summaries_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.summaries
    ADD CONSTRAINT fk_summaries_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: summaries fk_summaries_session_id_sessions; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.summaries
    ADD CONSTRAINT fk_summaries_session_id_sessions FOREIGN KEY (session_id) REFERENCES public.sessions(session_id) ON DELETE CASCADE;


--
-- Name: user_profiles fk_user_profiles_key_id_data_keys; Type: FK CONSTRAINT; Schema: public; Owner: prerelease_fixture_owner
--

ALTER TABLE ONLY public.user_profiles
    ADD CONSTRAINT fk_user_profiles_key_id_data_keys FOREIGN KEY (key_id) REFERENCES public.data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: SCHEMA public; Type: ACL; Schema: -; Owner: pg_database_owner
--

GRANT ALL ON SCHEMA public TO prerelease_fixture_owner;
GRANT USAGE ON SCHEMA public TO prerelease_fixture_app;
GRANT USAGE ON SCHEMA public TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_durations_v1(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_durations_v1(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_durations_v2(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_durations_v2(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_durations_v3(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_frequencies_v1(kind text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_frequencies_v1(kind text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone) TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_funnel_v1(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_funnel_v1(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_min_group_size_v1(); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_min_group_size_v1() FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_min_group_size_v1() TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_overview_v1(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_overview_v1(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_overview_v2(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_overview_v2(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_overview_v3(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_red_flags_v1(bucket text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_red_flags_v1(bucket text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_red_flags_v2(bucket text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_red_flags_v2(bucket text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_transitions_v1(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_transitions_v1(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) TO prerelease_fixture_analytics;


--
-- Name: FUNCTION analytics_value_frequencies(kind text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_value_frequencies(kind text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION analytics_value_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.analytics_value_frequencies_v2(kind text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION ctxstore_append_if_unchanged_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_if_unchanged_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_if_unchanged_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_if_unchanged_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_if_unchanged_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_if_unchanged_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v1(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v5(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v5(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v5(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows public.ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows public.ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows public.ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_delete_unused_retired_keys_v1(); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_delete_unused_retired_keys_v1() FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_delete_unused_retired_keys_v1() TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_erase_user_sessions_v1(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_erase_user_sessions_v1(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_erase_user_sessions_v1(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_require_keys_v1(p_key_ids bigint[], p_table text); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_write_state_v1(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_write_state_v1(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_write_state_v1(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) TO prerelease_fixture_app;


--
-- Name: FUNCTION ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone); Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

REVOKE ALL ON FUNCTION public.ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) TO prerelease_fixture_app;


--
-- Name: TABLE alembic_version; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.alembic_version TO prerelease_fixture_app;


--
-- Name: TABLE analytics_body_part_frequencies; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_body_part_frequencies TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_complaint_frequencies; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_complaint_frequencies TO prerelease_fixture_analytics;


--
-- Name: TABLE consultation_states; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.consultation_states TO prerelease_fixture_app;


--
-- Name: TABLE sessions; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.sessions TO prerelease_fixture_app;


--
-- Name: TABLE summaries; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.summaries TO prerelease_fixture_app;


--
-- Name: TABLE analytics_consultations; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_consultations TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_red_flag_frequencies; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_red_flag_frequencies TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_red_flags_daily; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_red_flags_daily TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_red_flags_weekly; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_red_flags_weekly TO prerelease_fixture_analytics;


--
-- Name: TABLE consultation_state_history; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.consultation_state_history TO prerelease_fixture_app;


--
-- Name: TABLE analytics_stage_changes; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_stage_changes TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_stage_funnel; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_stage_funnel TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_stage_history; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_stage_history TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_stage_reached; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_stage_reached TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_stage_transitions; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_stage_transitions TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_suppression; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_suppression TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_symptom_duration_frequencies; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_symptom_duration_frequencies TO prerelease_fixture_analytics;


--
-- Name: TABLE analytics_symptom_frequencies; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT ON TABLE public.analytics_symptom_frequencies TO prerelease_fixture_analytics;


--
-- Name: TABLE applied_profile_writes; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE ON TABLE public.applied_profile_writes TO prerelease_fixture_app;


--
-- Name: TABLE applied_session_writes; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE ON TABLE public.applied_session_writes TO prerelease_fixture_app;


--
-- Name: TABLE data_keys; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.data_keys TO prerelease_fixture_app;


--
-- Name: TABLE graph_channel_values; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.graph_channel_values TO prerelease_fixture_app;


--
-- Name: TABLE graph_checkpoints; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.graph_checkpoints TO prerelease_fixture_app;


--
-- Name: TABLE graph_writes; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.graph_writes TO prerelease_fixture_app;


--
-- Name: TABLE messages; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.messages TO prerelease_fixture_app;


--
-- Name: TABLE summary_jobs; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.summary_jobs TO prerelease_fixture_app;


--
-- Name: TABLE user_profiles; Type: ACL; Schema: public; Owner: prerelease_fixture_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.user_profiles TO prerelease_fixture_app;


--
-- PostgreSQL database dump complete
--

\unrestrict eVcTTjy4pMCiZ1ixaSJxA2mJnGDxxMRr0JAbCTA2ZYV3CWObV8prlKsd1QZpAxT

