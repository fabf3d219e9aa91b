-- Revision 1007: retention periods by kind of data (issue 51).
--
-- How long each kind of data is kept, set by the owner (`ctxstore retention set`) with
-- who and when; `ctxstore purge-expired`, run as the app role, reads them and removes
-- what is older, but what a legal hold covers:
--   messages       a session whose last write is older goes, whole (its messages,
--                  summaries, state and state history)
--   summaries      summary versions written before, but each session's latest
--   state_history  state changes recorded before (the current state stays)
--   profiles       a profile not written since, whose user wrote no session since
-- A kind with no row is kept until its session expires or its user is erased.

CREATE TABLE ctxstore_retention_periods (
    data_class text NOT NULL,
    keep_for interval NOT NULL,
    set_by text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pk_ctxstore_retention_periods PRIMARY KEY (data_class),
    CONSTRAINT ck_ctxstore_retention_periods_data_class_known CHECK ((data_class = ANY (ARRAY['messages'::text, 'summaries'::text, 'state_history'::text, 'profiles'::text]))),
    CONSTRAINT ck_ctxstore_retention_periods_keep_for_a_day_or_more CHECK ((keep_for >= '1 day'::interval))
);

ALTER TABLE ctxstore_retention_periods OWNER TO :"owner_role";

GRANT SELECT ON TABLE ctxstore_retention_periods TO :"app_role";
