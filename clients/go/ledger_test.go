package ctxstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

func TestRecordedContractsReadBackByteForByte(t *testing.T) {
	client := live(t)
	ctx := context.Background()
	id := sessionID(t)
	defer func() { _ = client.Delete(ctx, id) }()

	turns := []struct{ id, said string }{
		{"turn_0001", "我膝盖有下坠感，上下楼梯时更明显"},
		{"turn_0002", "大概三个星期了"},
		{"turn/0003 ?#%", "那我现在应该怎么锻炼？"},
	}
	var answers [][]byte
	for _, turn := range turns {
		said := []ctxstore.Message{{Role: "user", Content: turn.said, TurnID: text(turn.id)}}
		if _, err := client.Append(ctx, id, said, ctxstore.ForUser("u-go-ledger")); err != nil {
			t.Fatalf("Append: %v", err)
		}
		contract, err := client.Context(ctx, id, ctxstore.ContextRequest{
			TurnID: turn.id, UserMessage: turn.said, TokenBudget: 4000, Model: "gpt-4o", Record: true,
			RetrievedKnowledge: []ctxstore.Knowledge{{Title: "膝关节", Content: "股四头肌等长收缩", Source: "指南", RelevanceScore: 0.8}},
		})
		if err != nil {
			t.Fatalf("Context with Record: %v", err)
		}
		answers = append(answers, contract.Raw)
		reply := []ctxstore.Message{{Role: "assistant", Content: "回答 " + turn.id, TurnID: text(turn.id)}}
		if _, err := client.Append(ctx, id, reply); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}

	entries, err := client.Contracts(ctx, id)
	if err != nil || len(entries) != len(turns) {
		t.Fatalf("Contracts: %+v, %v", entries, err)
	}
	for i, turn := range turns {
		recorded, err := client.Contract(ctx, id, turn.id)
		if err != nil {
			t.Fatalf("Contract(%q): %v", turn.id, err)
		}
		if !bytes.Equal(recorded.Raw, answers[i]) {
			t.Fatalf("turn %q: read back\n%s\nnot the context call's\n%s", turn.id, recorded.Raw, answers[i])
		}
		if !strings.Contains(string(recorded.Raw), turn.said) {
			t.Fatalf("turn %q: the contract lacks the message: %s", turn.id, recorded.Raw)
		}
		entry := entries[i]
		if entry.EntrySeq != i+1 || entry.TurnID != turn.id || recorded.EntrySeq != entry.EntrySeq ||
			recorded.Digest != entry.Digest || len(entry.Digest) != 64 ||
			recorded.TokenCount != entry.TokenCount || entry.TokenCount <= 0 ||
			!recorded.RecordedAt.Equal(entry.RecordedAt) || entry.Model == nil || *entry.Model != "gpt-4o" ||
			entry.TokenEncoding != "o200k_base" || entry.ResponseID != nil {
			t.Fatalf("entry %d: %+v, read back as %+v", i+1, entry, recorded)
		}
		at, err := client.ContractAt(ctx, id, turn.id, entry.EntrySeq)
		if err != nil || !bytes.Equal(at.Raw, answers[i]) {
			t.Fatalf("ContractAt(%q, %d): %v", turn.id, entry.EntrySeq, err)
		}
	}
	if _, err := client.ContractAt(ctx, id, turns[1].id, 1); !errors.Is(err, ctxstore.ErrNotFound) {
		t.Fatalf("ContractAt of another turn's entry: %v", err)
	}

	seq, err := client.AttachResponse(ctx, id, turns[1].id, "chatcmpl-二")
	if err != nil || seq != 2 {
		t.Fatalf("AttachResponse: %d, %v", seq, err)
	}
	if seq, err = client.AttachResponse(ctx, id, turns[1].id, "chatcmpl-二"); err != nil || seq != 2 {
		t.Fatalf("AttachResponse again: %d, %v", seq, err)
	}
	if _, err = client.AttachResponse(ctx, id, turns[1].id, "chatcmpl-other"); !errors.Is(err, ctxstore.ErrConflict) {
		t.Fatalf("AttachResponse of another id: %v", err)
	}
	if _, err = client.AttachResponse(ctx, id, "turn_9999", "r"); !errors.Is(err, ctxstore.ErrNotFound) {
		t.Fatalf("AttachResponse to a turn without a contract: %v", err)
	}
	if _, err = client.Contract(ctx, id, "turn_9999"); !errors.Is(err, ctxstore.ErrNotFound) {
		t.Fatalf("Contract of a turn without one: %v", err)
	}
	if entries, err = client.Contracts(ctx, id); err != nil || entries[1].ResponseID == nil || *entries[1].ResponseID != "chatcmpl-二" {
		t.Fatalf("Contracts after the attach: %+v, %v", entries, err)
	}
	if empty, err := client.Contracts(ctx, id+"-none"); err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("Contracts of a session without a ledger: %#v, %v", empty, err)
	}
}

func TestTheLedgerCallsSendAndReadWhatTheServiceDocuments(t *testing.T) {
	raw := `{"session_id":"s 1","turn_id":"t/1","user_message":"膝盖"}`
	var (
		mu   sync.Mutex
		sent []string
	)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent = append(sent, fmt.Sprintf("%s %s?%s %s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST":
			io.WriteString(w, raw)
		case r.Method == "PUT":
			io.WriteString(w, `{"entry_seq":3,"response_id":"r"}`)
		case strings.HasSuffix(r.URL.Path, "/contracts"):
			io.WriteString(w, `{"session_id":"s 1","entries":[]}`)
		default:
			w.Header().Set("Ctxstore-Entry-Seq", "3")
			w.Header().Set("Ctxstore-Entry-Digest", strings.Repeat("ab", 32))
			w.Header().Set("Ctxstore-Recorded-At", "2026-12-06T11:24:46.123456Z")
			w.Header().Set("Ctxstore-Token-Count", "812")
			io.WriteString(w, raw)
		}
	}))
	defer server.Close()
	client, err := ctxstore.NewClient(server.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.Context(ctx, "s 1", ctxstore.ContextRequest{TurnID: "t/1", UserMessage: "膝盖", Record: true}); err != nil {
		t.Fatalf("Context: %v", err)
	}
	recorded, err := client.ContractAt(ctx, "s 1", "t/1", 3)
	if err != nil {
		t.Fatalf("ContractAt: %v", err)
	}
	want := time.Date(2026, 12, 6, 11, 24, 46, 123456000, time.UTC)
	if string(recorded.Raw) != raw || recorded.EntrySeq != 3 || recorded.TokenCount != 812 ||
		recorded.Digest != strings.Repeat("ab", 32) || !recorded.RecordedAt.Equal(want) {
		t.Fatalf("the recorded contract: %+v", recorded)
	}
	if seq, err := client.AttachResponse(ctx, "s 1", "t/1", "r"); err != nil || seq != 3 {
		t.Fatalf("AttachResponse: %d, %v", seq, err)
	}
	if entries, err := client.Contracts(ctx, "s 1"); err != nil || entries == nil || len(entries) != 0 {
		t.Fatalf("Contracts: %#v, %v", entries, err)
	}
	wantSent := []string{
		`POST /v1/sessions/s%201/context? {"turn_id":"t/1","user_message":"膝盖","record":true}`,
		`GET /v1/sessions/s%201/contracts/t%2F1?entry=3 `,
		`PUT /v1/sessions/s%201/contracts/t%2F1/response? {"response_id":"r"}`,
		`GET /v1/sessions/s%201/contracts? `,
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(sent, "\n") != strings.Join(wantSent, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(sent, "\n"), strings.Join(wantSent, "\n"))
	}
}
