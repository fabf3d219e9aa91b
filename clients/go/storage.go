package ctxstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// Storage is the Go service's ContextStorage on ctxstore, for its own message struct M:
// swap NewRedisStorage(...) for NewStorage[chat.Message](client) and nothing else
// changes.
//
// M's fields are read as encoding/json reads them (untagged, snake_case or camelCase tags,
// time.Time or *time.Time, map[string]string or map[string]any metadata): a field whose
// name is role, content, turn id, timestamp, name or metadata, in any case and with or
// without underscores, is that ctxstore field; any other field (TokenCount, ToolCallID)
// travels in the message's metadata under its JSON key and comes back as the field.
// Timestamps keep the text Go wrote, to the nanosecond.
//
// A turn costs what is new, not the whole list. Storage remembers, for the sessions it
// used last, the version and the messages it last loaded or saved. A Save whose list
// starts with exactly those messages (the same bytes as M marshals them) appends the rest
// at that version; a Load of a session it remembers asks whether the version moved and,
// when it did not (304), decodes what it holds. Anything else, and a Save that finds
// another writer got in first, sends the whole list: the outcome is always what
// overwriting the whole list gives (the last Save wins). WithConflicts returns
// ErrConflict instead. Storage is safe for concurrent use.
type Storage[M any] struct {
	client    *Client
	roles     RoleCase
	cache     *sessionCache
	conflicts bool
}

// RoleCase is how a struct writes its role values: ctxstore keeps them lower-case.
type RoleCase int

const (
	LowerRoles RoleCase = iota // "user" (the default)
	TitleRoles                 // "User"
	UpperRoles                 // "USER"
)

// StorageOption configures a Storage.
type StorageOption func(*storageOptions)

type storageOptions struct {
	roles      RoleCase
	cacheBytes int64
	conflicts  bool
}

// DefaultSessionCache is how many bytes a Storage keeps of the sessions it used last:
// about twice the JSON of their messages (a 1,000-message consultation of CJK turns is
// about 0.4 MB).
const DefaultSessionCache = 64 << 20

// WithRoleCase gives Load's role values this case.
func WithRoleCase(roles RoleCase) StorageOption {
	return func(o *storageOptions) { o.roles = roles }
}

// WithSessionCache bounds what Storage remembers of the sessions it used last to about
// bytes (least recently used first out); 0 remembers nothing, so that every Save sends
// the whole list and every Load reads it whole.
func WithSessionCache(bytes int64) StorageOption {
	return func(o *storageOptions) { o.cacheBytes = bytes }
}

// WithConflicts makes a Save return an error matching ErrConflict, and store nothing,
// when the session is not what this Storage last loaded or saved (another writer got in
// between, or it never saw the session and the session exists): the version check the
// seed's pitfalls recommend. Load the session again, then decide.
func WithConflicts() StorageOption {
	return func(o *storageOptions) { o.conflicts = true }
}

// NewStorage is the ContextStorage of M on client.
func NewStorage[M any](client *Client, opts ...StorageOption) *Storage[M] {
	o := storageOptions{cacheBytes: DefaultSessionCache}
	for _, opt := range opts {
		opt(&o)
	}
	return &Storage[M]{client: client, roles: o.roles, cache: newSessionCache(o.cacheBytes), conflicts: o.conflicts}
}

// Save makes messages the session's whole list, as the Redis storage's Save did.
func (s *Storage[M]) Save(ctx context.Context, sessionID string, messages []M) error {
	layout, err := layoutOf[M]()
	if err != nil {
		return err
	}
	marshalled := make([][]byte, len(messages))
	for i := range messages {
		// A pointer, as json.Marshal(messages) reaches each element (a MarshalJSON with
		// a pointer receiver is called).
		if marshalled[i], err = json.Marshal(&messages[i]); err != nil {
			return fmt.Errorf("ctxstore: encoding the messages: %w", err)
		}
	}
	entry := s.cache.get(sessionID)
	if entry != nil && entry.extends(marshalled) && (entry.version > 0 || len(marshalled) > 0) {
		done, err := s.extend(ctx, sessionID, layout, entry, marshalled)
		if done || err != nil {
			return err
		}
	}
	return s.replace(ctx, sessionID, layout, entry, marshalled)
}

// extend appends what marshalled adds to entry's messages, at entry's version. Not done
// (and no error): another writer got in first, the whole list is to be sent.
func (s *Storage[M]) extend(ctx context.Context, sessionID string, layout *layout, entry *known, marshalled [][]byte) (bool, error) {
	added := marshalled[len(entry.marshal):]
	wire, documents, err := s.wire(layout, added, len(entry.marshal))
	if err != nil {
		return false, err
	}
	version, err := s.client.appendRaw(ctx, sessionID, wire, []WriteOption{expecting(entry)})
	switch {
	case err == nil:
		s.cache.put(sessionID, entry.extended(version, added, documents))
		return true, nil
	case errors.Is(err, ErrConflict) && !s.conflicts:
		return false, nil
	}
	s.cache.put(sessionID, nil)
	return false, err
}

// replace sends the whole list (at entry's version, with WithConflicts).
func (s *Storage[M]) replace(ctx context.Context, sessionID string, layout *layout, entry *known, marshalled [][]byte) error {
	wire, documents, err := s.wire(layout, marshalled, 0)
	if err != nil {
		return err
	}
	var opts []WriteOption
	if s.conflicts {
		opts = append(opts, expecting(entry))
	}
	version, err := s.client.replaceRaw(ctx, sessionID, wire, opts)
	if err != nil {
		s.cache.put(sessionID, nil)
		return err
	}
	s.cache.put(sessionID, newKnown(version, marshalled, documents))
	return nil
}

// expecting is the precondition that the session is still what entry saw (nil: nothing).
func expecting(entry *known) WriteOption {
	if entry == nil || entry.version == 0 {
		return IfAbsent()
	}
	return IfVersion(entry.version)
}

// wire is ctxstore's message for each of marshalled (the first at position first), and
// the document a Load of it decodes.
func (s *Storage[M]) wire(layout *layout, marshalled [][]byte, first int) ([]map[string]json.RawMessage, [][]byte, error) {
	wire, err := s.toStore(layout, marshalled, first)
	if err != nil {
		return nil, nil, err
	}
	documents := make([][]byte, len(wire))
	for i := range wire {
		if documents[i], err = s.document(layout, wire[i]); err != nil {
			return nil, nil, fmt.Errorf("ctxstore: message %d: %w", first+i, err)
		}
	}
	return wire, documents, nil
}

// toStore is ctxstore's message for each of marshalled (the first at position first).
func (s *Storage[M]) toStore(layout *layout, marshalled [][]byte, first int) ([]map[string]json.RawMessage, error) {
	wire := make([]map[string]json.RawMessage, len(marshalled))
	for i, data := range marshalled {
		var document map[string]json.RawMessage
		if err := json.Unmarshal(data, &document); err != nil {
			return nil, fmt.Errorf("ctxstore: %T is not a JSON object: %w", *new(M), err)
		}
		var err error
		if wire[i], err = layout.toStore(document); err != nil {
			return nil, fmt.Errorf("ctxstore: message %d: %w", first+i, err)
		}
	}
	return wire, nil
}

// document is what Load decodes M from, for a message as ctxstore holds it.
func (s *Storage[M]) document(layout *layout, stored map[string]json.RawMessage) ([]byte, error) {
	document, err := layout.fromStore(stored, s.roles)
	if err != nil {
		return nil, err
	}
	return json.Marshal(document)
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
		s.cache.put(sessionID, newKnown(0, nil, nil))
		return []M{}, nil
	}
	if err != nil {
		return nil, err
	}
	if got.status == http.StatusNotModified {
		return decode[M](entry)
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
	out, err := decode[M](&known{document: documents})
	if err != nil {
		return nil, fmt.Errorf("ctxstore: the stored messages don't fit %T: %w", *new(M), err)
	}
	marshalled, extendable := s.givenBack(layout, out, body.Messages)
	entry := newKnown(got.version(), marshalled, documents)
	entry.extendable = extendable
	s.cache.put(sessionID, entry)
	return out, nil
}

// givenBack is M's bytes of each loaded message, and whether saving them stores each
// message as it is stored (a message whose field M lacks would lose it: false).
func (s *Storage[M]) givenBack(layout *layout, out []M, stored []map[string]json.RawMessage) ([][]byte, bool) {
	marshalled := make([][]byte, len(out))
	for i := range out {
		data, err := json.Marshal(&out[i])
		if err != nil {
			return nil, false
		}
		marshalled[i] = data
	}
	wire, err := s.toStore(layout, marshalled, 0)
	if err != nil {
		return nil, false
	}
	for i := range wire {
		saved, ok := canonicalOf(wire[i])
		found, same := canonicalOf(stored[i])
		if !ok || !same || saved != found {
			return nil, false
		}
	}
	return marshalled, true
}

// Delete removes the session; deleting one that does not exist is not an error.
func (s *Storage[M]) Delete(ctx context.Context, sessionID string) error {
	err := s.client.Delete(ctx, sessionID)
	s.cache.put(sessionID, nil)
	return err
}

// -- the struct's layout -------------------------------------------------------------------

// The ctxstore message fields, by their name without underscores, lower-case.
var fieldOfKey = map[string]string{
	"role": "role", "content": "content", "turnid": "turn_id", "timestamp": "timestamp",
	"name": "name", "metadata": "metadata",
}

type layout struct {
	keys        map[string]string // ctxstore field -> M's JSON key
	kinds       map[string]reflect.Kind
	extras      []string // M's other JSON keys
	stringMeta  bool     // metadata is map[string]string
	hasMetadata bool
}

func messageField(key string) string {
	return fieldOfKey[strings.ToLower(strings.ReplaceAll(key, "_", ""))]
}

func layoutOf[M any]() (*layout, error) {
	t := reflect.TypeOf((*M)(nil)).Elem()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("ctxstore: Storage needs a struct message type, not %s", t)
	}
	l := &layout{keys: map[string]string{}, kinds: map[string]reflect.Kind{}}
	if err := l.add(t); err != nil {
		return nil, err
	}
	if _, ok := l.keys["role"]; !ok {
		return nil, fmt.Errorf("ctxstore: %s has no role field", t)
	}
	if _, ok := l.keys["content"]; !ok {
		return nil, fmt.Errorf("ctxstore: %s has no content field", t)
	}
	return l, nil
}

// add reads t's fields as encoding/json does (embedded structs without a tag promoted).
func (l *layout) add(t reflect.Type) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name := strings.Split(tag, ",")[0]
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if err := l.add(inner); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		field := messageField(name)
		if field == "" {
			l.extras = append(l.extras, name)
			continue
		}
		if _, taken := l.keys[field]; taken {
			return fmt.Errorf("ctxstore: %s has two %s fields", t, field)
		}
		l.keys[field] = name
		kind := f.Type.Kind()
		l.kinds[field] = kind
		if field == "metadata" {
			l.hasMetadata = true
			l.stringMeta = kind == reflect.Map && f.Type.Elem().Kind() == reflect.String
		}
	}
	return nil
}

// toStore: one message as M marshals it, as ctxstore's message.
func (l *layout) toStore(document map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	metadata := map[string]json.RawMessage{}
	if raw, ok := document[l.keys["metadata"]]; ok && l.hasMetadata && !isNull(raw) {
		if err := json.Unmarshal(raw, &metadata); err != nil {
			return nil, fmt.Errorf("metadata is not an object: %w", err)
		}
	}
	for key, raw := range document {
		field := messageField(key)
		if field != "" && l.keys[field] == key {
			if field == "metadata" {
				continue
			}
			if field == "role" {
				var role string
				if err := json.Unmarshal(raw, &role); err != nil {
					return nil, fmt.Errorf("role is not a string")
				}
				raw, _ = json.Marshal(strings.ToLower(role))
			}
			if isNull(raw) {
				continue // a nil pointer: the field is absent
			}
			out[field] = raw
			continue
		}
		if previous, clash := metadata[key]; clash && string(previous) != string(raw) {
			return nil, fmt.Errorf("field %q is also a metadata key with another value", key)
		}
		metadata[key] = raw
	}
	if len(metadata) > 0 {
		encoded, err := json.Marshal(metadata)
		if err != nil {
			return nil, err
		}
		out["metadata"] = encoded
	}
	return out, nil
}

// fromStore: one of ctxstore's messages as M unmarshals it.
func (l *layout) fromStore(stored map[string]json.RawMessage, roles RoleCase) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	metadata := map[string]json.RawMessage{}
	if raw, ok := stored["metadata"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &metadata); err != nil {
			return nil, fmt.Errorf("metadata is not an object: %w", err)
		}
	}
	for _, key := range l.extras {
		if raw, ok := metadata[key]; ok {
			out[key] = raw
			delete(metadata, key)
		}
	}
	for field, key := range l.keys {
		raw, ok := stored[field]
		if field == "metadata" || !ok || isNull(raw) {
			continue // absent: M's zero value (nil for a pointer)
		}
		if field == "role" {
			var role string
			if err := json.Unmarshal(raw, &role); err != nil {
				return nil, fmt.Errorf("role is not a string")
			}
			raw, _ = json.Marshal(cased(role, roles))
		}
		out[key] = raw
	}
	if l.hasMetadata && len(metadata) > 0 {
		if l.stringMeta {
			for key, raw := range metadata {
				var text string
				if json.Unmarshal(raw, &text) != nil {
					metadata[key], _ = json.Marshal(string(raw)) // a value that isn't text: its JSON
				}
			}
		}
		encoded, err := json.Marshal(metadata)
		if err != nil {
			return nil, err
		}
		out[l.keys["metadata"]] = encoded
	}
	return out, nil
}

func cased(role string, roles RoleCase) string {
	switch roles {
	case TitleRoles:
		if role == "" {
			return role
		}
		return strings.ToUpper(role[:1]) + role[1:]
	case UpperRoles:
		return strings.ToUpper(role)
	}
	return role
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }
