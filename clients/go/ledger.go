package ctxstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// ContractEntry is one entry of a session's ledger of contracts: what a recorded call's
// contract was built from (the versions) and for (the model, the encoding, its tokens),
// without its text. Entries are never changed or removed.
type ContractEntry struct {
	// EntrySeq is the entry's number in the session's ledger (1, 2, ...).
	EntrySeq   int       `json:"entry_seq"`
	TurnID     string    `json:"turn_id"`
	RecordedAt time.Time `json:"recorded_at"`
	// Model is the model the call was for (nil: none given).
	Model         *string `json:"model"`
	TokenEncoding string  `json:"token_encoding"`
	TokenCount    int     `json:"token_count"`
	// SessionVersion, SummaryVersion, StateVersion (0: no state stored) and
	// ProfileVersion (nil: no profile went in) are what the contract was built from.
	SessionVersion int64  `json:"session_version"`
	SummaryVersion int64  `json:"summary_version"`
	StateVersion   int64  `json:"state_version"`
	ProfileVersion *int64 `json:"profile_version"`
	// Digest is the entry's place in the session's chain (SHA-256, hex).
	Digest string `json:"digest"`
	// ResponseID is the response attached to the entry (nil: none yet).
	ResponseID *string `json:"response_id"`
}

// RecordedContract is a contract a recorded call received: Raw is the very bytes the
// Context call answered (Contract.Raw), the rest its entry.
type RecordedContract struct {
	EntrySeq   int
	Digest     string
	RecordedAt time.Time
	TokenCount int
	Raw        json.RawMessage
}

// Contract returns the turn's last recorded contract (ContextRequest.Record), byte for
// byte; an error matching ErrNotFound when the turn has none, ErrDataKeyDestroyed when
// the session's user was erased (the entries remain, not their texts), ErrNotSupported
// when the service's store keeps no ledger.
func (c *Client) Contract(ctx context.Context, sessionID, turnID string) (*RecordedContract, error) {
	return c.contract(ctx, sessionID, turnID, nil)
}

// ContractAt returns entry entrySeq of the session's ledger, which must be one of the
// turn's (else an error matching ErrNotFound): a turn recorded more than once (a retried
// Context call, say) has an entry for each.
func (c *Client) ContractAt(ctx context.Context, sessionID, turnID string, entrySeq int) (*RecordedContract, error) {
	return c.contract(ctx, sessionID, turnID, url.Values{"entry": {strconv.Itoa(entrySeq)}})
}

func (c *Client) contract(ctx context.Context, sessionID, turnID string, query url.Values) (*RecordedContract, error) {
	got, err := c.do(ctx, call{method: "GET", path: contractPath(sessionID, turnID, ""), query: query, ok: []int{200}})
	if err != nil {
		return nil, err
	}
	out := &RecordedContract{Digest: got.header.Get("Ctxstore-Entry-Digest"), Raw: got.body}
	if out.EntrySeq, err = strconv.Atoi(got.header.Get("Ctxstore-Entry-Seq")); err != nil {
		return nil, fmt.Errorf("ctxstore: reading the contract's entry number: %w", err)
	}
	if out.TokenCount, err = strconv.Atoi(got.header.Get("Ctxstore-Token-Count")); err != nil {
		return nil, fmt.Errorf("ctxstore: reading the contract's token count: %w", err)
	}
	if out.RecordedAt, err = time.Parse(time.RFC3339Nano, got.header.Get("Ctxstore-Recorded-At")); err != nil {
		return nil, fmt.Errorf("ctxstore: reading when the contract was recorded: %w", err)
	}
	return out, nil
}

// Contracts returns every entry of the session's ledger, oldest first: an empty, non-nil
// slice when nothing was recorded.
func (c *Client) Contracts(ctx context.Context, sessionID string) ([]ContractEntry, error) {
	got, err := c.do(ctx, call{method: "GET", path: sessionPath(sessionID, "contracts"), ok: []int{200}})
	if err != nil {
		return nil, err
	}
	var body struct {
		Entries []ContractEntry `json:"entries"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		return nil, fmt.Errorf("ctxstore: reading the ledger: %w", err)
	}
	if body.Entries == nil {
		body.Entries = []ContractEntry{}
	}
	return body.Entries, nil
}

// AttachResponse binds responseID (the LLM's response to the call) to the turn's last
// recorded contract and returns that entry's number. Attaching the same id again changes
// nothing (so a retry is safe); another id is an error matching ErrConflict, a turn
// without a recorded contract one matching ErrNotFound.
func (c *Client) AttachResponse(ctx context.Context, sessionID, turnID, responseID string) (int, error) {
	body := map[string]string{"response_id": responseID}
	got, err := c.do(ctx, call{method: "PUT", path: contractPath(sessionID, turnID, "/response"), body: body, ok: []int{200}})
	if err != nil {
		return 0, err
	}
	var out struct {
		EntrySeq int `json:"entry_seq"`
	}
	if err := json.Unmarshal(got.body, &out); err != nil {
		return 0, fmt.Errorf("ctxstore: reading the attached response: %w", err)
	}
	return out.EntrySeq, nil
}

func contractPath(sessionID, turnID, tail string) string {
	return sessionPath(sessionID, "contracts/"+url.PathEscape(turnID)+tail)
}
