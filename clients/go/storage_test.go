package ctxstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

// live is a client of the ctxstore serve the Python test suite starts (tests/interop).
func live(t testing.TB, opts ...ctxstore.Option) *ctxstore.Client {
	t.Helper()
	base, token := os.Getenv("CTXSTORE_URL"), os.Getenv("CTXSTORE_TOKEN")
	if base == "" || token == "" {
		t.Skip("CTXSTORE_URL and CTXSTORE_TOKEN name no live ctxstore serve (tests/interop/test_go_client.py starts one)")
	}
	client, err := ctxstore.NewClient(base, token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func sessionID(t testing.TB) string {
	return fmt.Sprintf("go-client-%s-%d", t.Name(), time.Now().UnixNano())
}

// The message structs Go services write (tests/interop/go/sessions.go has them all).

type ServiceMsg struct { // the original service's
	Role    string
	Content string
	Name    string
}

type UntaggedMsg struct {
	Role      string
	Content   string
	TurnID    string
	Timestamp time.Time
	Metadata  map[string]interface{}
}

type SnakeMsg struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	TurnID     string            `json:"turn_id"`
	Timestamp  time.Time         `json:"timestamp"`
	TokenCount int               `json:"token_count"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

type CamelPointerMsg struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	TurnID    *string    `json:"turnId"`
	Timestamp *time.Time `json:"timestamp"`
	Name      *string    `json:"name"`
}

type Role string

type TitledRoleMsg struct {
	Role       Role
	Content    string
	ToolCallID string
}

func at(text string) time.Time {
	parsed, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		panic(err)
	}
	return parsed
}

func roundTrip[M any](t *testing.T, client *ctxstore.Client, messages []M, opts ...ctxstore.StorageOption) {
	t.Helper()
	ctx := context.Background()
	storage := ctxstore.NewStorage[M](client, opts...)
	id := sessionID(t)
	defer func() { _ = storage.Delete(ctx, id) }()
	if err := storage.Save(ctx, id, messages); err != nil {
		t.Fatalf("Save: %v", err)
	}
	// The Storage that saved answers a Load from what it holds (the service says 304); a
	// Storage that remembers nothing reads the list the service sends.
	fresh := ctxstore.NewStorage[M](client, append(opts, ctxstore.WithSessionCache(0))...)
	for _, reader := range []*ctxstore.Storage[M]{storage, fresh} {
		loaded, err := reader.Load(ctx, id)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		want, _ := json.Marshal(messages)
		got, _ := json.Marshal(loaded)
		if string(want) != string(got) {
			t.Fatalf("the bytes differ:\nsaved  %s\nloaded %s", want, got)
		}
		if !reflect.DeepEqual(messages, loaded) {
			t.Fatalf("the values differ:\nsaved  %#v\nloaded %#v", messages, loaded)
		}
	}
}

func TestEveryStructRoundTripsExactly(t *testing.T) {
	client := live(t)
	shanghai := time.FixedZone("", 8*3600)
	t.Run("service", func(t *testing.T) {
		roundTrip(t, client, []ServiceMsg{{"user", "我膝盖有下坠感", ""}, {"assistant", "多久了？", "doctor"}})
	})
	t.Run("untagged", func(t *testing.T) {
		roundTrip(t, client, []UntaggedMsg{
			{"user", "x", "turn_0001", at("2026-01-02T03:04:05.123456789Z"), map[string]interface{}{"k": "v", "n": 1.5}},
			{"assistant", "y", "turn_0001", time.Time{}, nil}, // Go's zero time
			{"user", "z", "turn_0002", at("9999-12-31T23:59:59.999999999Z"), nil},
			{"user", "w", "turn_0003", time.Date(2026, 5, 6, 7, 8, 9, 1, shanghai), nil},
		})
	})
	t.Run("snake with extra field", func(t *testing.T) {
		roundTrip(t, client, []SnakeMsg{
			{"user", "x", "t1", at("2026-01-02T03:04:05.1Z"), 12, map[string]string{"lang": "zh"}},
			{"assistant", "y", "t1", at("2026-01-02T03:04:06Z"), 0, nil},
		})
	})
	t.Run("camel pointers", func(t *testing.T) {
		turn, name, when := "turn_9", "bot", at("2026-11-29T08:15:02.123+08:00")
		roundTrip(t, client, []CamelPointerMsg{
			{"user", "x", &turn, &when, &name},
			{"assistant", "y", nil, nil, nil},
		})
	})
	t.Run("titled roles", func(t *testing.T) {
		roundTrip(t, client, []TitledRoleMsg{{"User", "x", ""}, {"Tool", "{}", "call_1"}},
			ctxstore.WithRoleCase(ctxstore.TitleRoles))
	})
}

func TestLoadOfAMissingSessionIsEmptyAndDeleteIsIdempotent(t *testing.T) {
	client := live(t)
	ctx := context.Background()
	storage := ctxstore.NewStorage[ServiceMsg](client)
	id := sessionID(t)
	loaded, err := storage.Load(ctx, id)
	if err != nil || loaded == nil || len(loaded) != 0 {
		t.Fatalf("Load of a missing session: %#v, %v", loaded, err)
	}
	for i := 0; i < 2; i++ {
		if err := storage.Delete(ctx, id); err != nil {
			t.Fatalf("Delete %d: %v", i, err)
		}
	}
	if err := storage.Save(ctx, id, nil); err != nil { // json.Marshal(nil slice) is null
		t.Fatalf("Save(nil): %v", err)
	}
	if loaded, err = storage.Load(ctx, id); err != nil || len(loaded) != 0 {
		t.Fatalf("after Save(nil): %#v, %v", loaded, err)
	}
	_ = storage.Delete(ctx, id)
}

func TestAStructWithoutRoleIsRefused(t *testing.T) {
	type NoRole struct{ Content string }
	err := ctxstore.NewStorage[NoRole](live(t)).Save(context.Background(), "x", []NoRole{{"x"}})
	if err == nil {
		t.Fatal("a struct without a role field was accepted")
	}
}
