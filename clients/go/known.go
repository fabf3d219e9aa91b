package ctxstore

import (
	"bytes"
	"container/list"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// known is what a Storage last saw of one session: its version and, for each stored
// message, the bytes M marshals it to (a Save whose list starts with them byte for byte
// extends the stored list) and the document Load decodes it from (a 304 needs no body).
// Entries are never changed once made: a write makes a new one.
type known struct {
	version  int64 // 0: the session does not exist
	marshal  [][]byte
	document [][]byte
	size     int64
	// extendable: a Save of marshal stores exactly what is stored (false when a Load
	// found messages M's struct can't give back as they are: a field M lacks, say).
	extendable bool
}

func newKnown(version int64, marshal, document [][]byte) *known {
	k := &known{version: version, marshal: marshal, document: document, size: 64, extendable: true}
	for _, data := range marshal {
		k.size += int64(len(data) + 24)
	}
	for _, data := range document {
		k.size += int64(len(data) + 24)
	}
	return k
}

// extends reports whether marshalled (M's bytes of each message of a Save) starts with
// every message k holds, byte for byte.
func (k *known) extends(marshalled [][]byte) bool {
	if !k.extendable || len(marshalled) < len(k.marshal) {
		return false
	}
	for i, stored := range k.marshal {
		if !bytes.Equal(stored, marshalled[i]) {
			return false
		}
	}
	return true
}

// extended is k with added appended, at version.
func (k *known) extended(version int64, marshal, document [][]byte) *known {
	n := len(k.marshal)
	return newKnown(version, append(k.marshal[:n:n], marshal...), append(k.document[:n:n], document...))
}

// decode is the list Load returns, from the documents alone.
func decode[M any](k *known) ([]M, error) {
	var buf bytes.Buffer
	buf.Grow(int(k.size) / 2)
	buf.WriteByte('[')
	for i, document := range k.document {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(document)
	}
	buf.WriteByte(']')
	out := make([]M, 0, len(k.document))
	err := json.Unmarshal(buf.Bytes(), &out)
	return out, err
}

// sessionCache holds the known entries of the sessions a Storage used last, within a
// budget of bytes (least recently used first out). Safe for concurrent use.
type sessionCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	order   *list.List // of *cached, most recent first
	entries map[string]*list.Element
}

type cached struct {
	session string
	entry   *known
}

func newSessionCache(budget int64) *sessionCache {
	if budget <= 0 {
		return nil // no cache: every Save whole, every Load read whole
	}
	return &sessionCache{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *sessionCache) get(session string) *known {
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
	return element.Value.(*cached).entry
}

// put records entry for session (nil forgets it); one larger than the budget is not kept.
func (c *sessionCache) put(session string, entry *known) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if element, ok := c.entries[session]; ok {
		c.used -= element.Value.(*cached).entry.size
		c.order.Remove(element)
		delete(c.entries, session)
	}
	if entry == nil || entry.size > c.budget {
		return
	}
	c.entries[session] = c.order.PushFront(&cached{session, entry})
	c.used += entry.size
	for c.used > c.budget {
		oldest := c.order.Back()
		gone := oldest.Value.(*cached)
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
	if raw, ok := message["metadata"]; ok && !isNull(raw) {
		var value map[string]interface{}
		decoder := json.NewDecoder(bytes.NewReader(raw))
		decoder.UseNumber()
		if decoder.Decode(&value) != nil {
			return c, false
		}
		if len(value) > 0 {
			sorted, err := json.Marshal(value)
			if err != nil {
				return c, false
			}
			c.metadata = string(sorted)
		}
	}
	return c, true
}
