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

// A user's consultations, newest first, one at a time: the iterator asks for the next
// page when it needs one. Err says why the loop ended (nil: every session was read).
func ExampleClient_Sessions() {
	client, err := ctxstore.NewClient("http://ctxstore:8080", os.Getenv("CTXSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	sessions := client.Sessions("user-7", ctxstore.ListOptions{
		Limit:        50,                              // a page
		UpdatedSince: time.Now().Add(-24 * time.Hour), // what changed since yesterday
	})
	for sessions.Next(ctx) {
		s := sessions.Session()
		log.Printf("%s: %d messages, last updated %s", s.SessionID, s.MessageCount, s.UpdatedAt.Format(time.RFC3339))
	}
	if err := sessions.Err(); err != nil {
		if errors.Is(err, ctxstore.ErrNotSupported) {
			log.Fatal("this ctxstore keeps its sessions in Redis: it can't list a user's")
		}
		log.Fatal(err)
	}
}

// One page at a time, as a "your past consultations" screen shows them: the page's
// NextCursor asks for the next ("" on the last).
func ExampleClient_ListSessions() {
	client, _ := ctxstore.NewClient("http://ctxstore:8080", os.Getenv("CTXSTORE_TOKEN"))
	ctx := context.Background()
	opts := ctxstore.ListOptions{Limit: 20, WithSummaries: true}
	for {
		page, err := client.ListSessions(ctx, "user-7", opts)
		if err != nil {
			log.Fatal(err)
		}
		for _, s := range page.Items {
			if s.SummaryText != nil {
				log.Printf("%s (%s): %s", s.SessionID, s.CreatedAt.Format("2006-01-02"), *s.SummaryText)
			}
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
}
