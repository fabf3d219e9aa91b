// Package ctxstore is the Go client of ctxstore's HTTP service: the session store of an
// LLM consultation assistant, kept in PostgreSQL.
//
// Storage[M] is the Go service's ContextStorage (Save, Load, Delete) for its own message
// struct; Client has the versioned operations (appends at a version, state, summary,
// profile) and the Context Contract. Every request is retry-safe: a 503 (or a lost
// connection) is tried again with backoff, honouring Retry-After, and an append carries
// an Idempotency-Key so that a retried turn is stored once.
//
// Standard library only; Go 1.19 and newer.
package ctxstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mathrand "math/rand"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one ctxstore service with one bearer token. It is safe for concurrent
// use.
type Client struct {
	base           *url.URL
	token          string
	http           *http.Client
	attemptTimeout time.Duration
	retries        int
	firstBackoff   time.Duration
	maxBackoff     time.Duration
}

// Option configures a Client.
type Option func(*Client) error

// WithHTTPClient sends the requests through h (its Transport, proxies, TLS settings).
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) error {
		if h == nil {
			return errors.New("ctxstore: WithHTTPClient(nil)")
		}
		c.http = h
		return nil
	}
}

// WithAttemptTimeout bounds each attempt of a request (default 30 s); the context given
// to a call bounds the whole call, retries included.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("ctxstore: attempt timeout %v is not positive", d)
		}
		c.attemptTimeout = d
		return nil
	}
}

// WithRetries sets how many times a request is tried again after a 503, a 429, a 502, a
// 504 or a broken connection (default 4), and the backoff between tries: first, doubling
// up to max, with jitter (defaults 100 ms and 5 s). A Retry-After longer than the backoff
// is honoured.
func WithRetries(n int, first, max time.Duration) Option {
	return func(c *Client) error {
		if n < 0 || first <= 0 || max < first {
			return fmt.Errorf("ctxstore: WithRetries(%d, %v, %v): need n >= 0 and 0 < first <= max", n, first, max)
		}
		c.retries, c.firstBackoff, c.maxBackoff = n, first, max
		return nil
	}
}

// NewClient is a client of the service at baseURL (e.g. http://ctxstore:8080) with token.
func NewClient(baseURL, token string, opts ...Option) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("ctxstore: base URL %q: want http(s)://host[:port]", baseURL)
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("ctxstore: a token is required (ctxstore serve --new-token NAME:read,write)")
	}
	c := &Client{
		base:           base,
		token:          token,
		http:           &http.Client{},
		attemptTimeout: 30 * time.Second,
		retries:        4,
		firstBackoff:   100 * time.Millisecond,
		maxBackoff:     5 * time.Second,
	}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type call struct {
	method string
	path   string // escaped
	query  url.Values
	body   interface{}
	header http.Header
	ok     []int
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// version is the resource version the reply's ETag carries (0: none).
func (r *reply) version() int64 {
	tag := strings.Trim(r.header.Get("ETag"), `"`)
	v, _ := strconv.ParseInt(tag, 10, 64)
	return v
}

// do sends c, trying again while the answer is one a retry can change. Every request
// this package sends is retry-safe (reads, PUTs, DELETEs and keyed appends).
func (c *Client) do(ctx context.Context, req call) (*reply, error) {
	var payload []byte
	if req.body != nil {
		var err error
		if payload, err = json.Marshal(req.body); err != nil {
			return nil, fmt.Errorf("ctxstore: encoding the request: %w", err)
		}
	}
	// One id for the call, sent by each of its attempts: the server's log ties them to it.
	requestID := newKey()
	for attempt := 0; ; attempt++ {
		got, err := c.once(ctx, req, payload, requestID)
		if err == nil {
			for _, status := range req.ok {
				if got.status == status {
					return got, nil
				}
			}
			err = problemOf(got, requestID)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait, again := c.retryable(got, err)
		if !again || attempt >= c.retries {
			return nil, err
		}
		if backoff := c.backoff(attempt); backoff > wait {
			wait = backoff
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, err // no time left to wait for: the last answer stands
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

func (c *Client) once(ctx context.Context, req call, payload []byte, requestID string) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	target := c.base.String() + req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("ctxstore: %w", err)
	}
	for key, values := range req.header {
		httpReq.Header[key] = values
	}
	httpReq.Header.Set("Authorization", "Bearer "+c.token)
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("X-Request-ID", requestID)
	if payload != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(httpReq)
	if err != nil {
		return nil, &TransportError{Err: err, RequestID: requestID}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &TransportError{Err: err, RequestID: requestID}
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// retryable: how long the server asked to wait, and whether trying again can help.
func (c *Client) retryable(got *reply, err error) (time.Duration, bool) {
	var transport *TransportError
	if errors.As(err, &transport) {
		return 0, true
	}
	if got == nil {
		return 0, false
	}
	switch got.status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		return retryAfter(got.header.Get("Retry-After")), true
	}
	return 0, false
}

func (c *Client) backoff(attempt int) time.Duration {
	wait := float64(c.firstBackoff) * math.Pow(2, float64(attempt))
	if wait > float64(c.maxBackoff) {
		wait = float64(c.maxBackoff)
	}
	// Full jitter over the upper half: clients that failed together don't retry together.
	return time.Duration(wait/2 + mathrand.Float64()*wait/2)
}

func retryAfter(value string) time.Duration {
	if value == "" {
		return 0
	}
	if seconds, err := strconv.Atoi(strings.TrimSpace(value)); err == nil && seconds >= 0 {
		return time.Duration(seconds) * time.Second
	}
	if when, err := http.ParseTime(value); err == nil {
		if wait := time.Until(when); wait > 0 {
			return wait
		}
	}
	return 0
}

// newKey is an Idempotency-Key or an X-Request-ID: 128 random bits, in hex.
func newKey() string {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("ctxstore: no randomness for a key: " + err.Error())
	}
	return hex.EncodeToString(raw[:])
}

func sessionPath(sessionID, resource string) string {
	return "/v1/sessions/" + url.PathEscape(sessionID) + "/" + resource
}

func userPath(userID, resource string) string {
	return "/v1/users/" + url.PathEscape(userID) + "/" + resource
}
