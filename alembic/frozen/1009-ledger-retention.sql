-- Revision 1009: the ledger of contracts is a retention class of its own (issue 52).
--
-- `ctxstore retention set ledger DAYS` keeps the ledger's entries that long: the purge
-- (ctxstore_purge_ledger_v1, the owner's function the app role's `purge-expired` calls)
-- removes a chain's oldest entries recorded before then, their responses, and the pieces
-- no entry left uses, and records where the chain now begins (`first_entry`): the first
-- entry kept still names its predecessor's digest, so what remains verifies from there.
-- A chain under a legal hold (its user's or its session's) is kept: the purge locks the
-- chain's row before it reads the holds, as placing a hold locks the chains it covers.
-- The previous release reads no `first_entry`: its verify would call a purged head
-- removed; it purges no ledger.

ALTER TABLE contract_chains ADD COLUMN first_entry integer DEFAULT 1 NOT NULL;

ALTER TABLE ctxstore_retention_periods DROP CONSTRAINT ck_ctxstore_retention_periods_data_class_known;

ALTER TABLE ctxstore_retention_periods ADD CONSTRAINT ck_ctxstore_retention_periods_data_class_known CHECK ((data_class = ANY (ARRAY['messages'::text, 'summaries'::text, 'state_history'::text, 'profiles'::text, 'ledger'::text]))) NOT VALID;

-- One chain's entries recorded over p_keep_for ago purged (or, p_dry_run, only counted),
-- or the chain kept under a hold: (entries, held).  `purge-expired` finds the chains and
-- calls this for each: on Citus it runs on the chain's worker (its p_session_id), where
-- the ledger's owner writes its own shards.
CREATE FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_cutoff timestamptz := now() - p_keep_for;
    v_chain record;
    v_last integer;
BEGIN
    -- the row locked first; the holds read by the next statement, on a new snapshot
    UPDATE contract_chains AS c SET first_entry = c.first_entry WHERE c.session_id = p_session_id
    RETURNING c.user_id, c.first_entry INTO v_chain;
    entries := 0;
    held := false;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    held := ctxstore_holds_of_v1(v_chain.user_id, ARRAY[p_session_id]) IS NOT NULL;
    v_last := (SELECT max(e.entry_seq) FROM contract_entries AS e
                WHERE e.session_id = p_session_id AND e.recorded_at < v_cutoff);
    entries := coalesce(v_last - v_chain.first_entry + 1, 0);
    IF held OR p_dry_run OR entries = 0 THEN
        RETURN;
    END IF;
    DELETE FROM contract_responses AS r
     WHERE r.session_id = p_session_id AND r.entry_seq <= v_last;
    DELETE FROM contract_entries AS e WHERE e.session_id = p_session_id AND e.entry_seq <= v_last;
    DELETE FROM contract_pieces AS p
     WHERE p.session_id = p_session_id
       AND p.piece_no <> ALL (ARRAY(
           SELECT DISTINCT abs(f.n) FROM contract_entries AS e, unnest(e.frame) AS f(n)
            WHERE e.session_id = p_session_id));
    UPDATE contract_chains AS c SET first_entry = v_last + 1 WHERE c.session_id = p_session_id;
END
$$;

ALTER FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) OWNER TO :"owner_role";

REVOKE ALL ON FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) TO :"app_role";
