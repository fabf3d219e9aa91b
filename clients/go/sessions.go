package ctxstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Message is a message as ctxstore stores it.
type Message struct {
	Role      string                 `json:"role"` // user, assistant, system or tool
	Content   string                 `json:"content"`
	TurnID    *string                `json:"turn_id,omitempty"`
	Timestamp *time.Time             `json:"timestamp,omitempty"`
	Name      *string                `json:"name,omitempty"`
	Metadata  map[string]interface{} `json:"metadata,omitempty"`
}

// Messages is a session's messages (or the newest that fit a budget) at a version.
type Messages struct {
	SessionID     string    `json:"session_id"`
	Version       int64     `json:"version"`
	TotalMessages int       `json:"total_messages"`
	FirstPosition int       `json:"first_position"`
	TokenCount    *int      `json:"token_count"`
	Messages      []Message `json:"messages"`
}

// Summary is a session's summary at its summary version.
type Summary struct {
	Text           string `json:"text"`
	CoversUntil    int    `json:"covers_until"`
	TokenCount     *int   `json:"token_count"`
	SummaryVersion int64  `json:"summary_version"`
}

// WriteOption is a precondition or detail of a write.
type WriteOption func(*write)

type write struct {
	ifVersion int64
	ifAbsent  bool
	userID    *string
}

// IfVersion writes only if the stored version is v (else an error matching ErrConflict,
// whose Problem.CurrentVersion is the version found).
func IfVersion(v int64) WriteOption { return func(w *write) { w.ifVersion = v } }

// IfAbsent writes only if the resource does not exist yet.
func IfAbsent() WriteOption { return func(w *write) { w.ifAbsent = true } }

// ForUser names the user the session belongs to (messages writes only).
func ForUser(userID string) WriteOption { return func(w *write) { w.userID = &userID } }

func conditions(opts []WriteOption) (http.Header, *string, error) {
	var w write
	for _, opt := range opts {
		opt(&w)
	}
	header := http.Header{}
	switch {
	case w.ifVersion > 0 && w.ifAbsent:
		return nil, nil, fmt.Errorf("ctxstore: IfVersion and IfAbsent together")
	case w.ifVersion > 0:
		header.Set("If-Match", `"`+strconv.FormatInt(w.ifVersion, 10)+`"`)
	case w.ifAbsent:
		header.Set("If-None-Match", "*")
	}
	return header, w.userID, nil
}

type written struct {
	Version int64 `json:"version"`
}

type messagesBody struct {
	Messages interface{} `json:"messages"`
	UserID   *string     `json:"user_id,omitempty"`
}

// Read returns the session's messages; an error matching ErrNotFound when it does not
// exist.
func (c *Client) Read(ctx context.Context, sessionID string) (*Messages, error) {
	return c.readMessages(ctx, sessionID, nil)
}

// Window returns the newest messages whose tokens fit tokenBudget.
func (c *Client) Window(ctx context.Context, sessionID string, tokenBudget int) (*Messages, error) {
	return c.readMessages(ctx, sessionID, url.Values{"token_budget": {strconv.Itoa(tokenBudget)}})
}

func (c *Client) readMessages(ctx context.Context, sessionID string, query url.Values) (*Messages, error) {
	got, err := c.do(ctx, call{method: "GET", path: sessionPath(sessionID, "messages"), query: query, ok: []int{200}})
	if err != nil {
		return nil, err
	}
	var out Messages
	if err := json.Unmarshal(got.body, &out); err != nil {
		return nil, fmt.Errorf("ctxstore: reading messages: %w", err)
	}
	return &out, nil
}

// Append adds messages after the stored ones (creating the session) and returns the new
// version. It carries an Idempotency-Key: retried after a lost answer, it stores the
// messages once.
func (c *Client) Append(ctx context.Context, sessionID string, messages []Message, opts ...WriteOption) (int64, error) {
	return c.appendRaw(ctx, sessionID, messages, opts)
}

func (c *Client) appendRaw(ctx context.Context, sessionID string, messages interface{}, opts []WriteOption) (int64, error) {
	header, userID, err := conditions(opts)
	if err != nil {
		return 0, err
	}
	header.Set("Idempotency-Key", newKey()) // one per call: each retry sends the same
	got, err := c.do(ctx, call{
		method: "POST", path: sessionPath(sessionID, "messages"), header: header,
		body: messagesBody{messages, userID}, ok: []int{200, 201},
	})
	if err != nil {
		return 0, err
	}
	return got.version(), nil
}

// Replace makes messages the session's whole list (creating the session) and returns the
// new version.
func (c *Client) Replace(ctx context.Context, sessionID string, messages []Message, opts ...WriteOption) (int64, error) {
	return c.replaceRaw(ctx, sessionID, messages, opts)
}

func (c *Client) replaceRaw(ctx context.Context, sessionID string, messages interface{}, opts []WriteOption) (int64, error) {
	header, userID, err := conditions(opts)
	if err != nil {
		return 0, err
	}
	got, err := c.do(ctx, call{
		method: "PUT", path: sessionPath(sessionID, "messages"), header: header,
		body: messagesBody{messages, userID}, ok: []int{200, 201},
	})
	if err != nil {
		return 0, err
	}
	return got.version(), nil
}

// Delete removes the session: messages, summaries and state (not the user's profile).
// Deleting a session that does not exist is not an error.
func (c *Client) Delete(ctx context.Context, sessionID string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: sessionPath(sessionID, "messages"), ok: []int{204}})
	return err
}

// State decodes the session's consultation state into out and returns its version; an
// error matching ErrNotFound when it has none.
func (c *Client) State(ctx context.Context, sessionID string, out interface{}) (int64, error) {
	return c.document(ctx, sessionPath(sessionID, "state"), out)
}

// PutState replaces the session's consultation state (the session must exist) and
// returns the state's new version.
func (c *Client) PutState(ctx context.Context, sessionID string, state interface{}, opts ...WriteOption) (int64, error) {
	return c.putDocument(ctx, sessionPath(sessionID, "state"), state, opts)
}

// Profile decodes the user's profile into out and returns its version.
func (c *Client) Profile(ctx context.Context, userID string, out interface{}) (int64, error) {
	return c.document(ctx, userPath(userID, "profile"), out)
}

// PutProfile replaces the user's profile and returns its new version.
func (c *Client) PutProfile(ctx context.Context, userID string, profile interface{}, opts ...WriteOption) (int64, error) {
	return c.putDocument(ctx, userPath(userID, "profile"), profile, opts)
}

// Summary returns the session's latest summary; an error matching ErrNotFound when none.
func (c *Client) Summary(ctx context.Context, sessionID string) (*Summary, error) {
	var out Summary
	if _, err := c.document(ctx, sessionPath(sessionID, "summary"), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutSummary stores the session's next summary, covering messages up to position
// coversUntil, and returns it with its summary version.
func (c *Client) PutSummary(ctx context.Context, sessionID, text string, coversUntil int, opts ...WriteOption) (*Summary, error) {
	header, _, err := conditions(opts)
	if err != nil {
		return nil, err
	}
	body := map[string]interface{}{"text": text, "covers_until": coversUntil}
	got, err := c.do(ctx, call{method: "PUT", path: sessionPath(sessionID, "summary"), header: header, body: body, ok: []int{200, 201}})
	if err != nil {
		return nil, err
	}
	var out Summary
	if err := json.Unmarshal(got.body, &out); err != nil {
		return nil, fmt.Errorf("ctxstore: reading the summary: %w", err)
	}
	return &out, nil
}

func (c *Client) document(ctx context.Context, path string, out interface{}) (int64, error) {
	got, err := c.do(ctx, call{method: "GET", path: path, ok: []int{200}})
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(got.body, out); err != nil {
		return 0, fmt.Errorf("ctxstore: reading %s: %w", path, err)
	}
	return got.version(), nil
}

func (c *Client) putDocument(ctx context.Context, path string, document interface{}, opts []WriteOption) (int64, error) {
	header, _, err := conditions(opts)
	if err != nil {
		return 0, err
	}
	got, err := c.do(ctx, call{method: "PUT", path: path, header: header, body: document, ok: []int{200, 201}})
	if err != nil {
		return 0, err
	}
	return got.version(), nil
}

// Knowledge is a retrieved document offered to the Context Contract.
type Knowledge struct {
	Title          string  `json:"title"`
	Content        string  `json:"content"`
	Source         string  `json:"source"`
	RelevanceScore float64 `json:"relevance_score"`
}

// ContextRequest asks for the Context Contract of the next LLM call.
type ContextRequest struct {
	TurnID             string      `json:"turn_id"`
	UserMessage        string      `json:"user_message"`
	TokenBudget        int         `json:"token_budget,omitempty"` // 0: the service's default (8000)
	RetrievedKnowledge []Knowledge `json:"retrieved_knowledge,omitempty"`
	// Model is the model the call is for: the budget is counted in its encoding, and a
	// recorded contract's entry names it ("": the service's encoding, no model).
	Model string `json:"model,omitempty"`
	// Record adds the contract to the session's ledger (Client.Contract gives its bytes
	// back): the token needs the write scope besides read. A call retried after a lost
	// answer may record the turn twice: Contract gives the turn's last.
	Record bool `json:"record,omitempty"`
}

// Contract is the Context Contract (docs/context-contract.md): the parts a Go service
// reads, and the whole document in Raw.
type Contract struct {
	SessionID   string `json:"session_id"`
	TurnID      string `json:"turn_id"`
	UserMessage string `json:"user_message"`
	Context     struct {
		RecentMessages      []Message              `json:"recent_messages"`
		ConversationSummary *string                `json:"conversation_summary"`
		ConsultationState   map[string]interface{} `json:"consultation_state"`
		UserProfile         map[string]interface{} `json:"user_profile"`
	} `json:"context"`
	Meta struct {
		ContextVersion       string `json:"context_version"`
		TokenBudget          int    `json:"token_budget"`
		IncludedMessageCount int    `json:"included_message_count"`
		SummaryVersion       int64  `json:"summary_version"`
	} `json:"meta"`
	Raw json.RawMessage `json:"-"`
}

// Context builds the Context Contract for the next LLM call within the token budget.
func (c *Client) Context(ctx context.Context, sessionID string, req ContextRequest) (*Contract, error) {
	got, err := c.do(ctx, call{method: "POST", path: sessionPath(sessionID, "context"), body: req, ok: []int{200}})
	if err != nil {
		return nil, err
	}
	var out Contract
	if err := json.Unmarshal(got.body, &out); err != nil {
		return nil, fmt.Errorf("ctxstore: reading the contract: %w", err)
	}
	out.Raw = got.body
	return &out, nil
}
