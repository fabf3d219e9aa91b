package ctxstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// SessionListing is one of a user's sessions as a listing shows it: never its messages.
type SessionListing struct {
	SessionID string `json:"session_id"`
	// CreatedAt is when the session was first written: a listing is newest first by it
	// (then by session id).
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when a message was last written to it (a summary or a state doesn't
	// move it).
	UpdatedAt    time.Time `json:"updated_at"`
	MessageCount int       `json:"message_count"`
	// Stage is the consultation state's stage (nil: no state saved).
	Stage *string `json:"stage"`
	// SummaryVersion is the latest summary's version (0: none).
	SummaryVersion int64 `json:"summary_version"`
	// SummaryText is the latest summary's text, given only WithSummaries (nil: not asked
	// for, or no summary).
	SummaryText *string `json:"summary_text"`
}

// SessionPage is one page of a user's sessions, newest first. Expired sessions are not
// listed.
type SessionPage struct {
	Items []SessionListing `json:"items"` // empty, not nil, for an empty page
	// NextCursor asks for the page after this one (ListOptions.Cursor); "" on the last.
	NextCursor string `json:"next_cursor"`
}

// ListOptions chooses the sessions a listing gives and the size of its pages. The zero
// value lists every session of the user, in pages of the service's default size.
type ListOptions struct {
	// Limit is the most sessions a page holds (0: the service's default).
	Limit int
	// Cursor is a page's NextCursor: the listing goes on after that page ("": from the
	// newest session). Pass it with the filters of that page (else an error matching
	// ErrInvalidInput).
	Cursor string
	// Stage keeps the sessions at this stage only ("": any stage).
	Stage string
	// UpdatedSince keeps the sessions with a message written at or after then (zero:
	// none left out), as a backend that syncs asks for what changed. It is sent to the
	// microsecond, the service's precision, rounded down: a session updated at the very
	// time is never left out.
	UpdatedSince time.Time
	// WithSummaries asks for each session's latest summary text (SummaryText).
	WithSummaries bool
}

func (o ListOptions) query() url.Values {
	query := url.Values{"with_summaries": {strconv.FormatBool(o.WithSummaries)}}
	if o.Limit != 0 {
		query.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		query.Set("cursor", o.Cursor)
	}
	if o.Stage != "" {
		query.Set("stage", o.Stage)
	}
	if !o.UpdatedSince.IsZero() {
		since := o.UpdatedSince.UTC().Truncate(time.Microsecond)
		query.Set("updated_since", since.Format("2006-01-02T15:04:05.000000Z07:00"))
	}
	return query
}

// ListSessions returns one page of the user's sessions, newest first: the first page
// with a zero Cursor, the next with the page's NextCursor, until it is "". A store that
// can't list (a Redis-backed service) answers an error matching ErrNotSupported. Sessions
// lets a loop read them one at a time instead.
func (c *Client) ListSessions(ctx context.Context, userID string, opts ListOptions) (SessionPage, error) {
	got, err := c.do(ctx, call{method: "GET", path: userPath(userID, "sessions"), query: opts.query(), ok: []int{200}})
	if err != nil {
		return SessionPage{}, err
	}
	var page SessionPage
	if err := json.Unmarshal(got.body, &page); err != nil {
		return SessionPage{}, fmt.Errorf("ctxstore: reading a page of sessions: %w", err)
	}
	if page.Items == nil {
		page.Items = []SessionListing{}
	}
	return page, nil
}

// Sessions reads the user's sessions one at a time, newest first, asking for the next
// page (opts.Limit sessions) when the last one is read; opts as for ListSessions. Nothing
// is sent until the first Next.
//
//	sessions := client.Sessions(userID, ctxstore.ListOptions{})
//	for sessions.Next(ctx) {
//		listing := sessions.Session()
//		...
//	}
//	if err := sessions.Err(); err != nil {
//		...
//	}
func (c *Client) Sessions(userID string, opts ListOptions) *SessionIterator {
	return &SessionIterator{client: c, userID: userID, opts: opts}
}

// SessionIterator reads a user's sessions page after page, as bufio.Scanner reads lines:
// Next moves to the next session, Session returns it, and Err says why Next returned
// false (nil: every session was read). It is not safe for concurrent use.
type SessionIterator struct {
	client  *Client
	userID  string
	opts    ListOptions // opts.Cursor: the next page's cursor
	page    []SessionListing
	current int  // the index in page of the session Session returns
	done    bool // the last page was read
	err     error
}

// Next moves to the next session, asking for the next page (within ctx) when the page
// read is done. It returns false when every session was read or a request failed: Err
// tells which. Once it returned false, it always does.
func (it *SessionIterator) Next(ctx context.Context) bool {
	if it.err != nil {
		return false
	}
	if it.current+1 < len(it.page) {
		it.current++
		return true
	}
	for !it.done {
		sent := it.opts.Cursor
		page, err := it.client.ListSessions(ctx, it.userID, it.opts)
		if err != nil {
			it.fail(err)
			return false
		}
		if page.NextCursor != "" && page.NextCursor == sent {
			it.fail(fmt.Errorf("ctxstore: listing user %q's sessions: the service answered the cursor it was sent (%q)", it.userID, sent))
			return false
		}
		it.page, it.current = page.Items, 0
		it.opts.Cursor = page.NextCursor
		it.done = page.NextCursor == ""
		if len(it.page) > 0 {
			return true
		}
		// An empty page that is not the last (its filters left none): on to the next.
	}
	it.page, it.current = nil, 0
	return false
}

func (it *SessionIterator) fail(err error) {
	it.err = err
	it.page, it.current = nil, 0
}

// Session is the session the last Next moved to (the zero SessionListing when Next
// returned false or was not called).
func (it *SessionIterator) Session() SessionListing {
	if it.current < len(it.page) {
		return it.page[it.current]
	}
	return SessionListing{}
}

// Err is the error that stopped the iteration (a *Problem, a *TransportError or the
// context's error); nil when every session was read or Next was not called yet.
func (it *SessionIterator) Err() error { return it.err }
