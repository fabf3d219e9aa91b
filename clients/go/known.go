package ctxstore

import (
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// known is what a Storage last saw of one session: its version and its messages as Load
// gives them. The messages are a private copy, never handed out and never changed: a
// write makes a new entry.
type known[M any] struct {
	version  int64 // 0: the session does not exist
	messages []M
	// extendable: saving messages stores exactly what is stored (false when a Load found
	// messages M can't give back as they are: a field M lacks, say).
	extendable bool
	size       int64 // about what it holds, in bytes
	// grown: a later entry took messages' spare capacity for its own messages (the first
	// to extend this one does; any other copies, so no two entries write the same slots).
	grown int32
}

// extends reports whether list starts with every message k holds.
func (k *known[M]) extends(list []M) bool {
	if !k.extendable || len(list) < len(k.messages) {
		return false
	}
	for i := range k.messages {
		if !sameMessage(&list[i], &k.messages[i]) {
			return false
		}
	}
	return true
}

// sameMessage reports whether a and b marshal to the same bytes. Equal values do: the
// quick answer for the messages a Load gave. Others are marshalled and compared (a time
// from time.Now carries a monotonic reading that equal times read back don't).
func sameMessage[M any](a, b *M) bool {
	if equalValues(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()) {
		return true
	}
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}

// equalValues reports whether a and b (addressable) marshal alike, field by field where
// they are structs: strings and numbers equal, times at the same instant and offset,
// anything else deeply equal.
func equalValues(a, b reflect.Value) bool {
	if a.Kind() != reflect.Struct {
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
	for i, kind := range fieldKinds(a.Type()) {
		x, y := a.Field(i), b.Field(i)
		var same bool
		switch kind {
		case stringField:
			same = x.String() == y.String()
		case intField:
			same = x.Int() == y.Int()
		case boolField:
			same = x.Bool() == y.Bool()
		case timeField: // the same instant at the same offset writes the same text
			t, u := x.Addr().Interface().(*time.Time), y.Addr().Interface().(*time.Time)
			_, offsetT := t.Zone()
			_, offsetU := u.Zone()
			same = t.Equal(*u) && offsetT == offsetU
		case otherField:
			same = equalJSON(x.Interface(), y.Interface())
		case ignoredField:
			same = true
		default:
			same = false // embedded and unexported: the bytes decide
		}
		if !same {
			return false
		}
	}
	return true
}

type fieldKind int

const (
	embeddedField fieldKind = iota
	ignoredField            // unexported: JSON doesn't write it
	stringField
	intField
	boolField
	timeField
	otherField
)

var fieldKindsOf sync.Map // reflect.Type -> []fieldKind

// fieldKinds is how equalValues compares each field of struct t.
func fieldKinds(t reflect.Type) []fieldKind {
	if found, ok := fieldKindsOf.Load(t); ok {
		return found.([]fieldKind)
	}
	kinds := make([]fieldKind, t.NumField())
	for i := range kinds {
		field := t.Field(i)
		switch {
		case !field.IsExported() && field.Anonymous:
			kinds[i] = embeddedField
		case !field.IsExported():
			kinds[i] = ignoredField
		case field.Type == timeType:
			kinds[i] = timeField
		case field.Type.Kind() == reflect.String:
			kinds[i] = stringField
		case field.Type.Kind() >= reflect.Int && field.Type.Kind() <= reflect.Int64:
			kinds[i] = intField
		case field.Type.Kind() == reflect.Bool:
			kinds[i] = boolField
		default:
			kinds[i] = otherField
		}
	}
	fieldKindsOf.Store(t, kinds)
	return kinds
}

// equalJSON is reflect.DeepEqual, without reflection for what JSON decodes to (metadata
// maps, their lists and values): the maps of a long consultation are compared each turn.
func equalJSON(a, b interface{}) bool {
	switch x := a.(type) {
	case string, float64, bool, nil, json.Number:
		return a == b // comparable: b of another type is simply not equal
	case map[string]interface{}:
		y, ok := b.(map[string]interface{})
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for key, value := range x {
			other, found := y[key]
			if !found || !equalJSON(value, other) {
				return false
			}
		}
		return true
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// copyJSON copies what JSON decodes to without reflection (nil for anything else).
func copyJSON(v interface{}) (interface{}, bool) {
	switch x := v.(type) {
	case string, float64, bool, nil, json.Number:
		return v, true
	case map[string]interface{}:
		out := make(map[string]interface{}, len(x))
		for key, value := range x {
			copied, ok := copyJSON(value)
			if !ok {
				return nil, false
			}
			out[key] = copied
		}
		return out, true
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, value := range x {
			copied, ok := copyJSON(value)
			if !ok {
				return nil, false
			}
			out[i] = copied
		}
		return out, true
	}
	return nil, false
}

// extended is k with a turn's messages after its own, at version.
func (k *known[M]) extended(version int64, turn *prepared[M]) *known[M] {
	messages := k.messages
	if !atomic.CompareAndSwapInt32(&k.grown, 0, 1) {
		n := len(messages)
		messages = messages[:n:n] // taken: append copies
	}
	// Beyond k's length only: k's own messages stay as they are.
	return &known[M]{
		version:    version,
		messages:   append(messages, turn.values...),
		extendable: k.extendable && turn.faithful,
		size:       k.size + turn.size,
	}
}

// list is a copy of k's messages for a caller to keep and change.
func (k *known[M]) list() ([]M, error) {
	out := make([]M, len(k.messages))
	copy(out, k.messages) // strings, numbers and times need no more
	references := referenceFields(reflect.TypeOf((*M)(nil)).Elem())
	for i := range out {
		if references == nil {
			if err := copyInto(&out[i], &k.messages[i]); err != nil {
				return nil, err
			}
			continue
		}
		message := reflect.ValueOf(&out[i]).Elem()
		for _, field := range references {
			value := message.Field(field)
			if value.IsNil() {
				continue
			}
			if copied, ok := copyJSON(value.Interface()); ok && value.Kind() == reflect.Map {
				value.Set(reflect.ValueOf(copied))
				continue
			}
			copied, ok := deepCopy(value)
			if !ok {
				return nil, fmt.Errorf("ctxstore: can't copy field %d of %T", field, out[i])
			}
			value.Set(copied)
		}
	}
	return out, nil
}

// referenceFields are the fields of struct t a copy must not share: maps, slices,
// pointers and interfaces, all exported. Nil where a plain copy isn't enough elsewhere
// (t isn't such a struct): copyInto copies a whole message.
func referenceFields(t reflect.Type) []int {
	if t.Kind() != reflect.Struct {
		return nil
	}
	references := []int{}
	for i := 0; i < t.NumField(); i++ {
		field := t.Field(i)
		switch field.Type.Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
			if !field.IsExported() {
				return nil
			}
			references = append(references, i)
		case reflect.Struct, reflect.Array, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			if field.Type != timeType {
				return nil
			}
		}
	}
	return references
}

// copyInto makes *to a deep copy of *from: nothing that can change is shared. A value
// reflection can't copy whole (an unexported map, a channel) goes through JSON.
func copyInto[M any](to, from *M) error {
	if copied, ok := deepCopy(reflect.ValueOf(from).Elem()); ok {
		reflect.ValueOf(to).Elem().Set(copied)
		return nil
	}
	data, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(data, to)
	}
	return err
}

var timeType = reflect.TypeOf(time.Time{})

// deepCopy is a copy of v sharing only what can't change (strings, a time's zone); false
// where v holds something it can't copy.
func deepCopy(v reflect.Value) (reflect.Value, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return v, true
		}
		inner, ok := deepCopy(v.Elem())
		if !ok {
			return v, false
		}
		if v.Kind() == reflect.Pointer {
			out := reflect.New(inner.Type())
			out.Elem().Set(inner)
			return out, true
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(inner)
		return out, true
	case reflect.Map:
		return copyMap(v)
	case reflect.Slice, reflect.Array:
		return copyElements(v)
	case reflect.Struct:
		return copyStruct(v)
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return v, false
	}
	return v, true // a boolean, a number, a string
}

func copyMap(v reflect.Value) (reflect.Value, bool) {
	if v.IsNil() {
		return v, true
	}
	out := reflect.MakeMapWithSize(v.Type(), v.Len())
	for entries := v.MapRange(); entries.Next(); {
		value, ok := deepCopy(entries.Value())
		if !ok {
			return v, false
		}
		out.SetMapIndex(entries.Key(), value)
	}
	return out, true
}

func copyElements(v reflect.Value) (reflect.Value, bool) {
	var out reflect.Value
	if v.Kind() == reflect.Slice {
		if v.IsNil() {
			return v, true
		}
		out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	} else {
		out = reflect.New(v.Type()).Elem()
	}
	for i := 0; i < v.Len(); i++ {
		element, ok := deepCopy(v.Index(i))
		if !ok {
			return v, false
		}
		out.Index(i).Set(element)
	}
	return out, true
}

func copyStruct(v reflect.Value) (reflect.Value, bool) {
	t := v.Type()
	if t == timeType {
		return v, true
	}
	out := reflect.New(t).Elem()
	out.Set(v)
	for i := 0; i < t.NumField(); i++ {
		field := v.Field(i)
		switch field.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
			continue // copied with the struct
		}
		if field.Type() == timeType {
			continue
		}
		if !t.Field(i).IsExported() {
			return v, false
		}
		copied, ok := deepCopy(field)
		if !ok {
			return v, false
		}
		out.Field(i).Set(copied)
	}
	return out, true
}

// sessionCache holds the known entries of the sessions a Storage used last, within a
// budget of bytes (least recently used first out). Safe for concurrent use; nil keeps
// nothing.
type sessionCache[M any] struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // of *cached[M], most recent first
	entries map[string]*list.Element
}

type cached[M any] struct {
	session string
	entry   *known[M]
}

func newSessionCache[M any](budget int64) *sessionCache[M] {
	if budget <= 0 {
		return nil // no cache: every Save whole, every Load read whole
	}
	return &sessionCache[M]{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *sessionCache[M]) get(session string) *known[M] {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	element, ok := c.entries[session]
	if !ok {
		return nil
	}
	c.order.MoveToFront(element)
	return element.Value.(*cached[M]).entry
}

// put records entry for session (nil forgets it); one larger than the budget is not kept.
func (c *sessionCache[M]) put(session string, entry *known[M]) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if element, ok := c.entries[session]; ok {
		c.used -= element.Value.(*cached[M]).entry.size
		c.order.Remove(element)
		delete(c.entries, session)
	}
	if entry == nil || entry.size > c.budget {
		return
	}
	c.entries[session] = c.order.PushFront(&cached[M]{session, entry})
	c.used += entry.size
	for c.used > c.budget {
		oldest := c.order.Back()
		gone := oldest.Value.(*cached[M])
		c.used -= gone.entry.size
		c.order.Remove(oldest)
		delete(c.entries, gone.session)
	}
}

// -- what a stored message is, whatever the JSON that spells it ---------------------------

// canonical is a ctxstore message as its stored row holds it: a null field and an empty
// metadata object are absent, a time is its instant and offset (however its fraction is
// written), metadata is its JSON with keys sorted.
type canonical struct {
	role, content, turnID, name, timestamp, metadata string
	hasTurnID, hasName, hasTimestamp                 bool
}

// canonicalOf reads one message as ctxstore's wire spells it (a Save's or a Load's).
func canonicalOf(message map[string]json.RawMessage) (canonical, bool) {
	var c canonical
	text := func(key string, to *string, present *bool) bool {
		raw, ok := message[key]
		if !ok || isNull(raw) {
			return true
		}
		if present != nil {
			*present = true
		}
		return json.Unmarshal(raw, to) == nil
	}
	if !text("role", &c.role, nil) || !text("content", &c.content, nil) ||
		!text("turn_id", &c.turnID, &c.hasTurnID) || !text("name", &c.name, &c.hasName) ||
		!text("timestamp", &c.timestamp, &c.hasTimestamp) {
		return c, false
	}
	if c.hasTimestamp {
		moment, err := time.Parse(time.RFC3339Nano, c.timestamp)
		if err != nil {
			return c, false
		}
		_, offset := moment.Zone()
		c.timestamp = moment.UTC().Format(time.RFC3339Nano) + " " + strconv.Itoa(offset)
	}
	metadata, ok := sortedMetadata(message["metadata"])
	c.metadata = metadata
	return c, ok
}

// sortedMetadata is a metadata object's JSON with its keys sorted ("" for none or {}).
func sortedMetadata(raw json.RawMessage) (string, bool) {
	if raw == nil || isNull(raw) {
		return "", true
	}
	var value map[string]interface{}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	if decoder.Decode(&value) != nil {
		return "", false
	}
	if len(value) == 0 {
		return "", true
	}
	sorted, err := json.Marshal(value)
	return string(sorted), err == nil
}
