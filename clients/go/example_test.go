package ctxstore_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	ctxstore "ctxstore.dev/client"
)

// The Go service's own message struct and its storage interface, unchanged.
type ChatMessage struct {
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	TurnID    string    `json:"turn_id"`
	Timestamp time.Time `json:"timestamp"`
}

type ContextStorage interface {
	Save(ctx context.Context, sessionID string, messages []ChatMessage) error
	Load(ctx context.Context, sessionID string) ([]ChatMessage, error)
	Delete(ctx context.Context, sessionID string) error
}

// The one line that changes: NewRedisStorage(...) becomes NewStorage[ChatMessage](client).
func ExampleNewStorage() {
	client, err := ctxstore.NewClient("http://ctxstore:8080", os.Getenv("CTXSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	var storage ContextStorage = ctxstore.NewStorage[ChatMessage](client)

	ctx := context.Background()
	history, err := storage.Load(ctx, "session-42") // empty, not nil, for a new session
	if err != nil {
		log.Fatal(err)
	}
	history = append(history, ChatMessage{Role: "user", Content: "我膝盖有下坠感", TurnID: "turn_0001", Timestamp: time.Now()})
	if err := storage.Save(ctx, "session-42", history); err != nil {
		log.Fatal(err)
	}
}

// A turn appended at the version read: a conflict names the version found.
func ExampleClient_Append() {
	client, _ := ctxstore.NewClient("http://ctxstore:8080", os.Getenv("CTXSTORE_TOKEN"))
	ctx := context.Background()
	read, err := client.Read(ctx, "session-42")
	if err != nil {
		log.Fatal(err)
	}
	turn := []ctxstore.Message{{Role: "user", Content: "还疼"}}
	if _, err := client.Append(ctx, "session-42", turn, ctxstore.IfVersion(read.Version)); err != nil {
		var problem *ctxstore.Problem
		if errors.As(err, &problem) && errors.Is(err, ctxstore.ErrConflict) {
			log.Printf("moved on to version %d: read again", *problem.CurrentVersion)
		}
	}
}
