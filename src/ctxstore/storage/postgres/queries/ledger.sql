-- name: record_contract --
-- One contract added to its session's ledger (revision 1008): its new pieces stored, its entry numbered and linked to the chain's last; (entry_seq, recorded_at, digest, new_pieces).  Called as a value, so Citus runs it on the session's worker.
SELECT ctxstore_record_contract_v1(:session_id, :user_id, :turn_id, :model, :token_encoding,
                                   :token_count, :session_version, :summary_version,
                                   :state_version, :profile_version, :frame, :commas,
                                   :digests, :contents, :key_ids, :sealed, :body);

-- name: attach_response --
-- The caller's response id bound to the turn's last entry, once: (the entry, the id it holds), both NULL when the turn has no entry.  Called as a value, so Citus runs it on the session's worker.
SELECT ctxstore_attach_response_v1(:session_id, :turn_id, :response_id);

-- name: contract_entry --
-- The turn's last entry (or entry :entry_seq of the session, when given), with its chain's user and its response.
SELECT e.entry_seq, e.turn_id, e.recorded_at, e.model, e.token_encoding, e.token_count,
       e.session_version, e.summary_version, e.state_version, e.profile_version, e.frame,
       e.digest, r.response_id, c.user_id, c.erased_at
  FROM contract_entries AS e
  JOIN contract_chains AS c ON c.session_id = e.session_id
  LEFT JOIN contract_responses AS r
    ON r.session_id = e.session_id AND r.entry_seq = e.entry_seq
 WHERE e.session_id = :session_id
   AND (e.entry_seq = :entry_seq OR (:entry_seq::integer IS NULL AND e.turn_id = :turn_id))
 ORDER BY e.entry_seq DESC
 LIMIT 1;

-- name: contract_pieces --
-- The pieces a frame names.
SELECT piece_no, digest, content, key_id, sealed
  FROM contract_pieces
 WHERE session_id = :session_id AND piece_no = ANY(:piece_nos);

-- name: contract_entries --
-- Every entry of the session's ledger, oldest first, with its response.
SELECT e.entry_seq, e.turn_id, e.recorded_at, e.model, e.token_encoding, e.token_count,
       e.session_version, e.summary_version, e.state_version, e.profile_version, e.digest,
       r.response_id
  FROM contract_entries AS e
  LEFT JOIN contract_responses AS r
    ON r.session_id = e.session_id AND r.entry_seq = e.entry_seq
 WHERE e.session_id = :session_id
 ORDER BY e.entry_seq;

-- name: ledger_chains --
-- Verification: the next chains after :after (all, or the one :session_id), in session order.
SELECT session_id, entries, first_entry, last_digest, erased_at
  FROM contract_chains
 WHERE session_id > :after AND (session_id = :session_id OR :session_id::text IS NULL)
 ORDER BY session_id
 LIMIT :batch_size;

-- name: ledger_chain_entries --
-- Verification: every entry of the chains :session_ids, in chain order: its time in microseconds, its provenance serialized as storage/ledger.py's Provenance.encoded (each text its UTF-8 length and bytes, or four 0xff bytes for none; the numbers, 8 bytes each; -1: no profile).
SELECT session_id, entry_seq, (extract(epoch FROM recorded_at) * 1000000)::bigint AS micros,
       coalesce(int4send(octet_length(convert_to(session_id, 'UTF8')))
                || convert_to(session_id, 'UTF8'), '\xffffffff'::bytea)
       || coalesce(int4send(octet_length(convert_to(turn_id, 'UTF8')))
                   || convert_to(turn_id, 'UTF8'), '\xffffffff'::bytea)
       || coalesce(int4send(octet_length(convert_to(model, 'UTF8')))
                   || convert_to(model, 'UTF8'), '\xffffffff'::bytea)
       || coalesce(int4send(octet_length(convert_to(token_encoding, 'UTF8')))
                   || convert_to(token_encoding, 'UTF8'), '\xffffffff'::bytea)
       || int8send(token_count::bigint) || int8send(session_version)
       || int8send(summary_version::bigint) || int8send(state_version)
       || int8send(coalesce(profile_version, -1)) AS provenance,
       frame, body, prev, digest
  FROM contract_entries
 WHERE session_id = ANY(:session_ids)
 ORDER BY session_id, entry_seq;

-- name: ledger_chain_pieces --
-- Verification: each chain's pieces, one row a chain: their numbers and their 32-byte digests end to end, in one order (one aggregation reads its rows once, in one order, for all its aggregates: no sort needed); how many are sealed and plain; the plain ones whose text no longer gives their digest, hashed where they are (their texts are not sent; a sealed one's tag checks it when it is read).
SELECT session_id,
       array_agg(piece_no) AS numbers,
       string_agg(substring(digest || '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea
                            FROM 1 FOR 32), ''::bytea) AS digests,
       count(sealed) AS sealed,
       count(*) - count(sealed) AS plain,
       array_agg(piece_no) FILTER (
           WHERE octet_length(digest) <> 32
              OR pg_catalog.sha256(pg_catalog.convert_to(content, 'UTF8')) <> digest) AS altered
  FROM contract_pieces
 WHERE session_id = ANY(:session_ids)
 GROUP BY session_id;

-- name: ledger_responses --
-- Verification: the responses attached in the chains :session_ids.
SELECT session_id, entry_seq, response_id, digest
  FROM contract_responses
 WHERE session_id = ANY(:session_ids);

-- name: ledger_entry_count --
-- Verification's progress bar: the entries to verify.
SELECT count(*) FROM contract_entries WHERE session_id = :session_id OR :session_id::text IS NULL;

-- name: user_chains --
-- After an erasure, the ledger's chains it erases: the user's, and those of the sessions erased with them.
SELECT session_id FROM contract_chains
 WHERE user_id = :user_id OR session_id = ANY(:session_ids)
 ORDER BY session_id;

-- name: erase_chain --
-- One chain's part in an erasure (revision 1008): its pieces deleted, the chain marked; false when there is no such chain.
SELECT ctxstore_erase_ledger_v1(:session_id, :user_id);

-- name: chains_to_purge --
-- Retention (revision 1009): the next chains after :after whose oldest entry kept was recorded over :keep_for ago.
SELECT c.session_id FROM contract_chains AS c
 WHERE c.session_id > :after
   AND EXISTS (SELECT FROM contract_entries AS e
                WHERE e.session_id = c.session_id AND e.entry_seq = c.first_entry
                  AND e.recorded_at < now() - :keep_for::interval)
 ORDER BY c.session_id
 LIMIT :batch_size;

-- name: purge_chain --
-- Retention (revision 1009): one chain's entries recorded over :keep_for ago purged (or counted, :dry_run), or kept under a hold: (entries, held).
SELECT ctxstore_purge_ledger_v1(:session_id, :keep_for, :dry_run);
