package ctxstore

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ProblemType is one RFC 9457 problem type of the service, usable with errors.Is:
//
//	if errors.Is(err, ctxstore.ErrConflict) { ... }
type ProblemType struct {
	Slug string
}

func (t *ProblemType) Error() string { return "ctxstore: " + t.Slug }

// The problem types the service answers with (docs/http.md, section 4).
var (
	ErrInvalidInput       = &ProblemType{"invalid-input"}
	ErrInvalidSessionID   = &ProblemType{"invalid-session-id"}
	ErrInvalidMessage     = &ProblemType{"invalid-message"}
	ErrContractBudget     = &ProblemType{"contract-budget"}
	ErrContractVersion    = &ProblemType{"contract-version"}
	ErrInputTooLarge      = &ProblemType{"input-too-large"}
	ErrMessageTooLarge    = &ProblemType{"message-too-large"}
	ErrTooManyMessages    = &ProblemType{"too-many-messages"}
	ErrSessionNotFound    = &ProblemType{"session-not-found"}
	ErrConflict           = &ProblemType{"conflict"}
	ErrSessionOwner       = &ProblemType{"session-owner"}
	ErrDataKeyDestroyed   = &ProblemType{"data-key-destroyed"}
	ErrStorageUnavailable = &ProblemType{"storage-unavailable"}
	ErrStorageTimeout     = &ProblemType{"storage-timeout"}
	ErrSchemaMissing      = &ProblemType{"schema-missing"}
	ErrMigration          = &ProblemType{"migration-error"}
	ErrDatabaseNotFound   = &ProblemType{"database-not-found"}
	ErrStorage            = &ProblemType{"storage-error"}
	ErrData               = &ProblemType{"data-error"}
	ErrCorruptData        = &ProblemType{"corrupt-data"}
	ErrUnsupportedFormat  = &ProblemType{"unsupported-format"}
	ErrConfiguration      = &ProblemType{"configuration-error"}
	ErrEncryptionKey      = &ProblemType{"encryption-key"}
	ErrTokenizer          = &ProblemType{"tokenizer-unavailable"}
	ErrInternal           = &ProblemType{"internal-error"}
	ErrMalformed          = &ProblemType{"malformed-request"}
	ErrUnauthorized       = &ProblemType{"unauthorized"}
	ErrForbidden          = &ProblemType{"forbidden"}
	ErrNotFound           = &ProblemType{"not-found"}
	ErrMethodNotAllowed   = &ProblemType{"method-not-allowed"}
	ErrBodyTooLarge       = &ProblemType{"body-too-large"}
	ErrUnsupportedMedia   = &ProblemType{"unsupported-media-type"}
	ErrTargetTooLong      = &ProblemType{"target-too-long"}
	ErrHeadTooLarge       = &ProblemType{"head-too-large"}
	ErrRequestTimeout     = &ProblemType{"request-timeout"}
	ErrIdempotencyReused  = &ProblemType{"idempotency-key-reused"}
	ErrIdempotencyBusy    = &ProblemType{"idempotency-key-busy"}
	// ErrNotSupported: the service's store can't do this operation (a Redis-backed
	// store lists no user's sessions); nothing was read or written. Any 501 matches it.
	ErrNotSupported = &ProblemType{"not-supported"}
	// ErrLegalHold: what the call would delete (a session) is under a legal hold the
	// owner placed; nothing was deleted, and no retry helps until the owner lifts it.
	ErrLegalHold = &ProblemType{"legal-hold"}
)

const typeBase = "https://ctxstore.dev/problems/"

// Problem is an error answer of the service (RFC 9457).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// CurrentVersion is the stored version a conflict found (nil: none given).
	CurrentVersion *int64 `json:"current_version,omitempty"`
	// Errors lists the fields that broke the schema (invalid-input).
	Errors []FieldError `json:"errors,omitempty"`
	// RequestID is the X-Request-ID of the answer (else the one sent): the server's log
	// lines of the request carry it.
	RequestID string `json:"-"`
}

// FieldError is one field of a request that broke the schema.
type FieldError struct {
	Location string `json:"location"`
	Message  string `json:"message"`
}

// Slug is the problem type's last segment ("conflict", "session-not-found", ...).
func (p *Problem) Slug() string { return strings.TrimPrefix(p.Type, typeBase) }

func (p *Problem) Error() string {
	text := fmt.Sprintf("ctxstore: %d %s: %s", p.Status, p.Slug(), p.Detail)
	if p.RequestID != "" {
		text += " (request id " + p.RequestID + ")"
	}
	return text
}

// Is matches the problem's type: errors.Is(err, ctxstore.ErrConflict). A 404 of a session
// that does not exist also matches ErrNotFound, and every 501 matches ErrNotSupported.
func (p *Problem) Is(target error) bool {
	kind, ok := target.(*ProblemType)
	if !ok {
		return false
	}
	slug := p.Slug()
	return kind.Slug == slug || (kind == ErrNotFound && slug == ErrSessionNotFound.Slug) ||
		(kind == ErrNotSupported && p.Status == 501)
}

// TransportError is a request that got no answer (refused, reset, timed out); retried
// before it is returned.
type TransportError struct {
	Err error
	// RequestID is the X-Request-ID the request was sent with (each attempt of one call
	// sends the same): a server that saw it logged it.
	RequestID string
}

func (e *TransportError) Error() string {
	if e.RequestID == "" {
		return "ctxstore: no answer: " + e.Err.Error()
	}
	return "ctxstore: no answer (request id " + e.RequestID + "): " + e.Err.Error()
}
func (e *TransportError) Unwrap() error { return e.Err }

// problemOf is the answer's problem; sent is the request id the request carried.
func problemOf(got *reply, sent string) error {
	requestID := got.header.Get("X-Request-ID")
	if requestID == "" {
		requestID = sent // a proxy's answer, say: the id the server may have logged
	}
	problem := &Problem{Status: got.status}
	if err := json.Unmarshal(got.body, problem); err != nil || problem.Type == "" {
		// Not the service's problem (a proxy's page, say): its status and a little text.
		text := strings.TrimSpace(string(got.body))
		if len(text) > 200 {
			text = text[:200]
		}
		return &Problem{Type: typeBase + slugOfStatus(got.status), Status: got.status, Detail: text, RequestID: requestID}
	}
	problem.Status = got.status
	problem.RequestID = requestID
	return problem
}

func slugOfStatus(status int) string {
	switch {
	case status == 401:
		return ErrUnauthorized.Slug
	case status == 403:
		return ErrForbidden.Slug
	case status == 404:
		return ErrNotFound.Slug
	case status == 408:
		return ErrRequestTimeout.Slug
	case status == 409 || status == 412:
		return ErrConflict.Slug
	case status == 413:
		return ErrBodyTooLarge.Slug
	case status == 500:
		return ErrInternal.Slug
	case status == 501:
		return ErrNotSupported.Slug
	case status > 500:
		return ErrStorageUnavailable.Slug
	}
	return ErrMalformed.Slug
}
