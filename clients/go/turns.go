package ctxstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Save makes messages the session's whole list, as the Redis storage's Save did.
func (s *Storage[M]) Save(ctx context.Context, sessionID string, messages []M) error {
	layout, err := layoutOf[M]()
	if err != nil {
		return err
	}
	entry := s.cache.get(sessionID)
	if entry != nil && entry.extends(messages) && (entry.version > 0 || len(messages) > 0) {
		done, err := s.extend(ctx, sessionID, layout, entry, messages[len(entry.messages):])
		if done || err != nil {
			return err
		}
	}
	return s.replace(ctx, sessionID, layout, entry, messages)
}

// extend appends added after entry's messages, at entry's version. Not done (and no
// error): another writer got in first, the whole list is to be sent.
func (s *Storage[M]) extend(ctx context.Context, sessionID string, layout *layout, entry *known[M], added []M) (bool, error) {
	turn, err := s.prepare(layout, added, len(entry.messages))
	if err != nil {
		return false, err
	}
	version, err := s.client.appendRaw(ctx, sessionID, turn.wire, []WriteOption{expecting(entry)})
	switch {
	case err == nil:
		s.cache.put(sessionID, entry.extended(version, turn))
		return true, nil
	case errors.Is(err, ErrConflict) && !s.conflicts:
		return false, nil
	}
	s.cache.put(sessionID, nil)
	return false, err
}

// replace sends the whole list (at entry's version, with WithConflicts).
func (s *Storage[M]) replace(ctx context.Context, sessionID string, layout *layout, entry *known[M], messages []M) error {
	turn, err := s.prepare(layout, messages, 0)
	if err != nil {
		return err
	}
	var opts []WriteOption
	if s.conflicts {
		opts = append(opts, expecting(entry))
	}
	version, err := s.client.replaceRaw(ctx, sessionID, turn.wire, opts)
	if err != nil {
		s.cache.put(sessionID, nil)
		return err
	}
	fresh := &known[M]{version: version, extendable: true}
	s.cache.put(sessionID, fresh.extended(version, turn))
	return nil
}

// expecting is the precondition that the session is still what entry saw (nil: nothing).
func expecting[M any](entry *known[M]) WriteOption {
	if entry == nil || entry.version == 0 {
		return IfAbsent()
	}
	return IfVersion(entry.version)
}

// prepared is a write's messages as ctxstore's wire sends them and as Load gives them
// back, and whether saving what Load gives back stores them as they are.
type prepared[M any] struct {
	wire     []map[string]json.RawMessage
	values   []M
	faithful bool
	size     int64
}

// prepare reads messages (the first at position first) for a write.
func (s *Storage[M]) prepare(layout *layout, messages []M, first int) (*prepared[M], error) {
	turn := &prepared[M]{wire: make([]map[string]json.RawMessage, len(messages))}
	documents := make([][]byte, len(messages))
	for i := range messages {
		// A pointer, as json.Marshal(messages) reaches each element (a MarshalJSON with
		// a pointer receiver is called).
		data, err := json.Marshal(&messages[i])
		if err != nil {
			return nil, fmt.Errorf("ctxstore: encoding the messages: %w", err)
		}
		turn.size += 2 * int64(len(data))
		if turn.wire[i], err = layout.wire(data); err != nil {
			return nil, fmt.Errorf("ctxstore: message %d: %w", first+i, err)
		}
		if documents[i], err = s.document(layout, turn.wire[i]); err != nil {
			return nil, fmt.Errorf("ctxstore: message %d: %w", first+i, err)
		}
	}
	var err error
	if turn.values, err = decodeAll[M](documents); err != nil {
		return nil, fmt.Errorf("ctxstore: the messages don't read back into %T: %w", *new(M), err)
	}
	turn.faithful = faithful(layout, turn.values, turn.wire)
	return turn, nil
}

// document is what Load decodes M from, for a message as ctxstore holds it.
func (s *Storage[M]) document(layout *layout, stored map[string]json.RawMessage) ([]byte, error) {
	document, err := layout.fromStore(stored, s.roles)
	if err != nil {
		return nil, err
	}
	return json.Marshal(document)
}

// wire is ctxstore's message for one message as M marshals it.
func (l *layout) wire(data []byte) (map[string]json.RawMessage, error) {
	var document map[string]json.RawMessage
	if err := json.Unmarshal(data, &document); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return l.toStore(document)
}

// faithful reports whether saving values stores each message as stored holds it (a
// message whose field M lacks would lose it: false).
func faithful[M any](layout *layout, values []M, stored []map[string]json.RawMessage) bool {
	for i := range values {
		data, err := json.Marshal(&values[i])
		if err != nil {
			return false
		}
		wire, err := layout.wire(data)
		if err != nil {
			return false
		}
		saved, ok := canonicalOf(wire)
		found, same := canonicalOf(stored[i])
		if !ok || !same || saved != found {
			return false
		}
	}
	return true
}

// decodeAll is the list documents hold, decoded as Load decodes it.
func decodeAll[M any](documents [][]byte) ([]M, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, document := range documents {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(document)
	}
	buf.WriteByte(']')
	out := make([]M, 0, len(documents))
	err := json.Unmarshal(buf.Bytes(), &out)
	return out, err
}

// Load returns the session's messages; an empty, non-nil slice when it does not exist.
func (s *Storage[M]) Load(ctx context.Context, sessionID string) ([]M, error) {
	layout, err := layoutOf[M]()
	if err != nil {
		return nil, err
	}
	entry := s.cache.get(sessionID)
	header := http.Header{}
	if entry != nil && entry.version > 0 {
		header.Set("If-None-Match", `"`+strconv.FormatInt(entry.version, 10)+`"`)
	}
	got, err := s.client.do(ctx, call{method: "GET", path: sessionPath(sessionID, "messages"), header: header, ok: []int{200, 304}})
	if errors.Is(err, ErrNotFound) {
		s.cache.put(sessionID, &known[M]{extendable: true})
		return []M{}, nil
	}
	if err != nil {
		return nil, err
	}
	if got.status == http.StatusNotModified {
		return entry.list()
	}
	return s.loaded(sessionID, layout, got)
}

// loaded is the list a 200 holds, remembered for the next turn.
func (s *Storage[M]) loaded(sessionID string, layout *layout, got *reply) ([]M, error) {
	var body struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		return nil, fmt.Errorf("ctxstore: reading messages: %w", err)
	}
	documents := make([][]byte, len(body.Messages))
	for i, stored := range body.Messages {
		var err error
		if documents[i], err = s.document(layout, stored); err != nil {
			return nil, fmt.Errorf("ctxstore: message %d: %w", i, err)
		}
	}
	out, err := decodeAll[M](documents)
	if err != nil {
		return nil, fmt.Errorf("ctxstore: the stored messages don't fit %T: %w", *new(M), err)
	}
	entry := &known[M]{version: got.version(), extendable: faithful(layout, out, body.Messages), size: 2 * int64(len(got.body))}
	if entry.messages, err = (&known[M]{messages: out}).list(); err != nil {
		entry = nil // can't keep a copy: the next Load reads the list whole
	}
	s.cache.put(sessionID, entry)
	return out, nil
}

// Delete removes the session; deleting one that does not exist is not an error.
func (s *Storage[M]) Delete(ctx context.Context, sessionID string) error {
	err := s.client.Delete(ctx, sessionID)
	s.cache.put(sessionID, nil)
	return err
}
