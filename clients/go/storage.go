package ctxstore

import (
	"encoding/json"
	"fmt"
	"reflect"
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
// starts with exactly those messages (equal values, or the same bytes as M marshals them)
// appends the rest at that version; a Load of a session it remembers asks whether the
// version moved and, when it did not (304), returns a copy of what it holds. Anything else, and a Save that finds
// another writer got in first, sends the whole list: the outcome is always what
// overwriting the whole list gives (the last Save wins). WithConflicts returns
// ErrConflict instead. Storage is safe for concurrent use.
type Storage[M any] struct {
	client    *Client
	roles     RoleCase
	cache     *sessionCache[M]
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

// DefaultSessionCache is about how many bytes a Storage keeps of the sessions it used
// last, counted as twice the JSON of their messages (a 1,000-message consultation of CJK
// turns: about 0.4 MB).
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
	return &Storage[M]{client: client, roles: o.roles, cache: newSessionCache[M](o.cacheBytes), conflicts: o.conflicts}
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
