package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	_ "time/tzdata" // Asia/Shanghai's 1900 offset (+08:05:43) without the system's zoneinfo
)

// spec is one message, whatever struct carries it.
type spec struct {
	Role       string // user, assistant, system, tool
	Content    string
	TurnID     string
	Time       time.Time
	Name       string
	Meta       map[string]string
	TokenCount int
	ToolCallID string
}

// The seven (and one) message structs Go services write: the original service's, untagged
// ones (Go's field names), json:"snake_case" and json:"camelCase" tags, pointers, a string
// map of metadata, a role type with capitalised values, fields ctxstore doesn't have.

type ServiceMsg struct { // the original service: docs/legacy-formats.md, format 0
	Role    string
	Content string
	Name    string
}

type UntaggedMsg struct {
	Role      string
	Content   string
	Name      string
	TurnID    string
	Timestamp time.Time
	Metadata  map[string]interface{}
}

type UntaggedStringMetaMsg struct {
	Role       string
	Content    string
	TurnID     string
	Timestamp  time.Time
	TokenCount int
	Metadata   map[string]string
}

type SnakeMsg struct {
	Role      string            `json:"role"`
	Content   string            `json:"content"`
	TurnID    string            `json:"turn_id"`
	Timestamp time.Time         `json:"timestamp"`
	Name      string            `json:"name,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

type CamelMsg struct {
	Role      string                 `json:"role"`
	Content   string                 `json:"content"`
	TurnID    string                 `json:"turnId"`
	Timestamp time.Time              `json:"timestamp"`
	Name      string                 `json:"name"`
	Metadata  map[string]interface{} `json:"metadata"`
}

type PointerMsg struct {
	Role      string            `json:"role"`
	Content   string            `json:"content"`
	TurnID    *string           `json:"turn_id"`
	Timestamp *time.Time        `json:"timestamp"`
	Name      *string           `json:"name"`
	Metadata  map[string]string `json:"metadata"`
}

type Role string

type TitledRoleMsg struct {
	Role       Role // "User", "Assistant", ...
	Content    string
	Name       string
	ToolCallID string
}

type CamelStringMetaMsg struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	TurnID     string            `json:"turnId"`
	Timestamp  time.Time         `json:"timestamp"`
	TokenCount int               `json:"tokenCount"`
	Metadata   map[string]string `json:"metadata"`
}

// view is what ctxstore should load for a message: its fields by ctxstore's names.
type view map[string]interface{}

type variant struct {
	name   string
	build  func([]spec) interface{}
	decode func([]byte) (interface{}, error)
	view   func(spec) view
	times  bool // the struct has a timestamp
}

func makeVariant[T any](name string, times bool, from func(spec) T, see func(spec) view) variant {
	return variant{
		name:  name,
		times: times,
		build: func(specs []spec) interface{} {
			if specs == nil {
				var none []T // Save(ctx, id, nil): json.Marshal writes null
				return none
			}
			out := make([]T, len(specs))
			for i, s := range specs {
				out[i] = from(s)
			}
			return out
		},
		decode: func(raw []byte) (interface{}, error) {
			var out []T
			err := json.Unmarshal(raw, &out)
			return out, err
		},
		view: see,
	}
}

func goTime(t time.Time) string {
	data, err := t.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return strings.Trim(string(data), `"`)
}

func stringMap(m map[string]string) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func nilIfEmpty(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}

func withTitle(role string) Role { return Role(strings.ToUpper(role[:1]) + role[1:]) }

var variants = []variant{
	makeVariant("service", false,
		func(s spec) ServiceMsg { return ServiceMsg{s.Role, s.Content, s.Name} },
		func(s spec) view {
			return view{"role": s.Role, "content": s.Content, "turn_id": nil, "timestamp": nil,
				"name": s.Name, "metadata": map[string]interface{}{}}
		}),
	makeVariant("untagged", true,
		func(s spec) UntaggedMsg {
			var meta map[string]interface{}
			if s.Meta != nil {
				meta = stringMap(s.Meta)
				meta["tokens"] = float64(s.TokenCount) // a number, and nested values
				meta["tags"] = []interface{}{"a", "b"}
			}
			return UntaggedMsg{s.Role, s.Content, s.Name, s.TurnID, s.Time, meta}
		},
		func(s spec) view {
			meta := map[string]interface{}{}
			if s.Meta != nil {
				meta = stringMap(s.Meta)
				meta["tokens"] = float64(s.TokenCount)
				meta["tags"] = []interface{}{"a", "b"}
			}
			return view{"role": s.Role, "content": s.Content, "turn_id": s.TurnID,
				"timestamp": goTime(s.Time), "name": s.Name, "metadata": meta}
		}),
	makeVariant("untagged_string_metadata", true,
		func(s spec) UntaggedStringMetaMsg {
			return UntaggedStringMetaMsg{s.Role, s.Content, s.TurnID, s.Time, s.TokenCount, s.Meta}
		},
		func(s spec) view {
			meta := stringMap(s.Meta)
			meta["TokenCount"] = float64(s.TokenCount)
			return view{"role": s.Role, "content": s.Content, "turn_id": s.TurnID,
				"timestamp": goTime(s.Time), "name": nil, "metadata": meta}
		}),
	makeVariant("snake_case", true,
		func(s spec) SnakeMsg { return SnakeMsg{s.Role, s.Content, s.TurnID, s.Time, s.Name, s.Meta} },
		func(s spec) view {
			return view{"role": s.Role, "content": s.Content, "turn_id": s.TurnID,
				"timestamp": goTime(s.Time), "name": nilIfEmpty(s.Name), "metadata": stringMap(s.Meta)}
		}),
	makeVariant("camelCase", true,
		func(s spec) CamelMsg {
			var meta map[string]interface{}
			if s.Meta != nil {
				meta = stringMap(s.Meta)
			}
			return CamelMsg{s.Role, s.Content, s.TurnID, s.Time, s.Name, meta}
		},
		func(s spec) view {
			return view{"role": s.Role, "content": s.Content, "turn_id": s.TurnID,
				"timestamp": goTime(s.Time), "name": s.Name, "metadata": stringMap(s.Meta)}
		}),
	makeVariant("pointers", true,
		func(s spec) PointerMsg {
			m := PointerMsg{Role: s.Role, Content: s.Content, Metadata: s.Meta}
			if s.TurnID != "" { // nil pointers marshal as null
				turn, stamp, name := s.TurnID, s.Time, s.Name
				m.TurnID, m.Timestamp, m.Name = &turn, &stamp, &name
			}
			return m
		},
		func(s spec) view {
			v := view{"role": s.Role, "content": s.Content, "turn_id": nil, "timestamp": nil,
				"name": nil, "metadata": stringMap(s.Meta)}
			if s.TurnID != "" {
				v["turn_id"], v["timestamp"], v["name"] = s.TurnID, goTime(s.Time), s.Name
			}
			return v
		}),
	makeVariant("titled_roles", false,
		func(s spec) TitledRoleMsg { return TitledRoleMsg{withTitle(s.Role), s.Content, s.Name, s.ToolCallID} },
		func(s spec) view {
			return view{"role": s.Role, "content": s.Content, "turn_id": nil, "timestamp": nil,
				"name": s.Name, "metadata": map[string]interface{}{"ToolCallID": s.ToolCallID}}
		}),
	makeVariant("camelCase_string_metadata", true,
		func(s spec) CamelStringMetaMsg {
			return CamelStringMetaMsg{s.Role, s.Content, s.TurnID, s.Time, s.TokenCount, s.Meta}
		},
		func(s spec) view {
			meta := stringMap(s.Meta)
			meta["tokenCount"] = float64(s.TokenCount)
			return view{"role": s.Role, "content": s.Content, "turn_id": s.TurnID,
				"timestamp": goTime(s.Time), "name": nil, "metadata": meta}
		}),
}

// -- the sessions ---------------------------------------------------------------------------

var roles = []string{"user", "assistant", "system", "tool"}

func zone(name string, hours, minutes int) *time.Location {
	return time.FixedZone(name, hours*3600+minutes*60)
}

// sessionSpecs are the sessions every variant writes, by name; nil is Save(ctx, id, nil).
func sessionSpecs() []struct {
	name  string
	specs []spec
} {
	// nanoseconds, as json.Marshal(time.Now()) writes on Linux
	base := time.Date(2026, 11, 29, 8, 15, 2, 123456789, zone("CST", 8, 0))
	plain := func(n int, content func(int) string, at func(int) time.Time) []spec {
		out := make([]spec, n)
		for i := range out {
			out[i] = spec{
				Role: roles[i%2], Content: content(i), TurnID: fmt.Sprintf("turn_%04d", i/2+1),
				Time: at(i), Name: []string{"", "bot"}[i%2],
				Meta:       map[string]string{"trace": fmt.Sprintf("t-%d", i), "quote": `"q" \ </x>`},
				TokenCount: 10 + i, ToolCallID: fmt.Sprintf("call_%d", i),
			}
		}
		return out
	}
	steady := func(i int) time.Time {
		return base.Add(time.Duration(i)*1500*time.Millisecond + time.Duration(i))
	}
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	offsets := []*time.Location{
		zone("", -12, 0), zone("", -9, -30), zone("", -3, -30), time.UTC, zone("", 5, 45),
		zone("", 8, 45), zone("", 12, 45), zone("", 14, 0), shanghai,
		zone("", 23, 59), zone("", -23, -59), // beyond what PostgreSQL takes as an offset
	}
	edges := []time.Time{
		{},                                // Go's zero time: 0001-01-01T00:00:00Z
		time.Time{}.In(zone("CST", 8, 0)), // the zero time in Beijing: 0001-01-01T08:00:00+08:00
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(9999, 12, 31, 18, 59, 59, 999999000, zone("EST", -5, 0)),
		time.Date(1900, 1, 1, 0, 0, 0, 0, shanghai), // LMT +08:05:43: Go writes +08:05
		time.Date(2026, 3, 29, 1, 30, 0, 0, zone("", 0, 0)),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), // Go's last instant
		time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, zone("CST", 8, 0)).Add(8 * time.Hour),
	}
	big := strings.Repeat("膝盖下坠感 knee 😀 ", 100*1024/len("膝盖下坠感 knee 😀 ")+1)
	return []struct {
		name  string
		specs []spec
	}{
		{"nil", nil},
		{"empty", []spec{}},
		{"chinese", plain(30, func(i int) string {
			return []string{"我膝盖有下坠感", "是否伴随疼痛或肿胀？😀", "<b>走路</b> & \"跑步\"",
				"line\u2028separator\u2029paragraph", "tab\tnewline\n\\ backslash"}[i%5]
		}, steady)},
		{"large", plain(3, func(i int) string { return big + strings.Repeat("x", i) }, steady)},
		{"offsets", plain(len(offsets), func(i int) string { return fmt.Sprintf("offset %d", i) },
			func(i int) time.Time { return base.In(offsets[i]) })},
		{"edges", plain(len(edges), func(i int) string { return fmt.Sprintf("edge %d", i) },
			func(i int) time.Time { return edges[i] })},
		{"roles", func() []spec {
			out := plain(8, func(i int) string { return fmt.Sprintf("{\"call\": %d}", i) }, steady)
			for i := range out {
				out[i].Role = roles[i%4]
			}
			out[1].TurnID, out[1].Name, out[1].Meta = "", "", nil // empty values as Go writes them
			return out
		}()},
	}
}

// rejected are sessions ctxstore must refuse, saying why: times it can't hold unchanged.
func rejected() []struct {
	name, problem string
	specs         []spec
} {
	one := func(t time.Time) []spec {
		return []spec{{Role: "user", Content: "x", TurnID: "t", Time: t, Meta: map[string]string{}}}
	}
	return []struct {
		name, problem string
		specs         []spec
	}{
		{"zero-time-west", "year 0", one(time.Time{}.In(zone("EST", -5, 0)))},
	}
}

type session struct {
	Key     string `json:"key"`
	Variant string `json:"variant"`
	Value   string `json:"value"`
	Expect  []view `json:"expect"`
	Reject  string `json:"reject,omitempty"`
	Times   bool   `json:"times"`
	Nil     bool   `json:"nil"`
}

func sessionKey(v variant, name string) string { return v.name + "-" + name }

func allSessions() ([]session, error) {
	var out []session
	for _, v := range variants {
		for _, s := range sessionSpecs() {
			raw, err := json.Marshal(v.build(s.specs))
			if err != nil {
				return nil, err
			}
			expect := []view{}
			for _, one := range s.specs {
				expect = append(expect, v.view(one))
			}
			out = append(out, session{sessionKey(v, s.name), v.name, string(raw), expect, "", v.times, s.specs == nil})
		}
	}
	untagged := variants[1]
	for _, r := range rejected() {
		raw, err := json.Marshal(untagged.build(r.specs))
		if err != nil {
			return nil, err
		}
		out = append(out, session{"reject-" + r.name, untagged.name, string(raw), nil, r.problem, true, false})
	}
	return out, nil
}

// -- reading back what ctxstore wrote -------------------------------------------------------

type writtenSession struct {
	Key     string `json:"key"`
	Variant string `json:"variant"`
	Value   string `json:"value"`
}

type sessionResult struct {
	Key     string `json:"key"`
	Problem string `json:"problem"`
}

// checkSessions reads each value with its variant's struct and compares it with what the
// same struct reads from Go's own JSON of the session: "" when nothing differs.
func checkSessions(written []writtenSession) ([]sessionResult, error) {
	originals := map[string][]spec{}
	byName := map[string]variant{}
	for _, v := range variants {
		byName[v.name] = v
		for _, s := range sessionSpecs() {
			originals[sessionKey(v, s.name)] = s.specs
		}
	}
	var out []sessionResult
	for _, w := range written {
		v, ok := byName[w.Variant]
		specs, known := originals[w.Key]
		if !ok || !known {
			return nil, fmt.Errorf("unknown session %q of variant %q", w.Key, w.Variant)
		}
		own, err := json.Marshal(v.build(specs))
		if err != nil {
			return nil, err
		}
		want, err := v.decode(own)
		if err != nil {
			return nil, err
		}
		got, err := v.decode([]byte(w.Value))
		problem := ""
		if err != nil {
			problem = "Unmarshal: " + err.Error()
		} else {
			problem = differs(reflect.ValueOf(want), reflect.ValueOf(got), "$")
		}
		out = append(out, sessionResult{w.Key, problem})
	}
	return out, nil
}

var timeType = reflect.TypeOf(time.Time{})

// differs says where two decoded values differ ("" when they don't).  Times are equal
// when they are the same instant in the same UTC offset (a zone's name is not written);
// a nil map or slice equals an empty one (both marshal from and to nothing Go code sees).
func differs(a, b reflect.Value, path string) string {
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: %s vs %s", path, a.Type(), b.Type())
	}
	if a.Type() == timeType {
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		_, oa := ta.Zone()
		_, ob := tb.Zone()
		if !ta.Equal(tb) || oa != ob {
			return fmt.Sprintf("%s: %s vs %s", path, goTime(ta), goTime(tb))
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Ptr, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: %v vs %v", path, a, b)
			}
			return ""
		}
		return differs(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d vs %d elements", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := differs(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d vs %d keys", path, a.Len(), b.Len())
		}
		for _, key := range a.MapKeys() {
			other := b.MapIndex(key)
			if !other.IsValid() {
				return fmt.Sprintf("%s: no key %v", path, key)
			}
			if d := differs(a.MapIndex(key), other, fmt.Sprintf("%s.%v", path, key)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			field := a.Type().Field(i).Name
			if d := differs(a.Field(i), b.Field(i), path+"."+field); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %#v vs %#v", path, a.Interface(), b.Interface())
		}
		return ""
	}
}
