package ctxstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

func text(s string) *string { return &s }

func TestVersionedWritesAndTypedErrors(t *testing.T) {
	client := live(t)
	ctx := context.Background()
	id := sessionID(t)
	defer func() { _ = client.Delete(ctx, id) }()

	_, err := client.Read(ctx, id)
	if !errors.Is(err, ctxstore.ErrNotFound) || !errors.Is(err, ctxstore.ErrSessionNotFound) {
		t.Fatalf("Read of a missing session: %v", err)
	}
	turn := []ctxstore.Message{{Role: "user", Content: "我膝盖有下坠感", TurnID: text("turn_0001")}}
	version, err := client.Append(ctx, id, turn, ctxstore.IfAbsent(), ctxstore.ForUser("u-go"))
	if err != nil || version != 1 {
		t.Fatalf("Append IfAbsent: %d, %v", version, err)
	}
	_, err = client.Append(ctx, id, turn, ctxstore.IfVersion(7))
	var problem *ctxstore.Problem
	if !errors.Is(err, ctxstore.ErrConflict) || !errors.As(err, &problem) {
		t.Fatalf("a stale append: %v", err)
	}
	if problem.Status != 412 || problem.CurrentVersion == nil || *problem.CurrentVersion != 1 {
		t.Fatalf("the conflict: %+v", problem)
	}
	if version, err = client.Append(ctx, id, []ctxstore.Message{{Role: "assistant", Content: "多久了？"}}, ctxstore.IfVersion(1)); err != nil || version != 2 {
		t.Fatalf("Append IfVersion(1): %d, %v", version, err)
	}
	read, err := client.Read(ctx, id)
	if err != nil || read.Version != 2 || len(read.Messages) != 2 || read.Messages[1].Content != "多久了？" {
		t.Fatalf("Read: %+v, %v", read, err)
	}
	window, err := client.Window(ctx, id, 200)
	if err != nil || window.TokenCount == nil || len(window.Messages) == 0 {
		t.Fatalf("Window: %+v, %v", window, err)
	}

	state := map[string]interface{}{"stage": "collecting_details", "symptoms": []string{"knee"}}
	if v, err := client.PutState(ctx, id, state); err != nil || v != 1 {
		t.Fatalf("PutState: %d, %v", v, err)
	}
	var stored map[string]interface{}
	if v, err := client.State(ctx, id, &stored); err != nil || v != 1 || stored["stage"] != "collecting_details" {
		t.Fatalf("State: %d, %v, %v", v, stored, err)
	}
	summary, err := client.PutSummary(ctx, id, "knee pain", 1)
	if err != nil || summary.SummaryVersion != 1 {
		t.Fatalf("PutSummary: %+v, %v", summary, err)
	}
	if _, err := client.PutProfile(ctx, "u-go", map[string]interface{}{"age": 46}); err != nil {
		t.Fatalf("PutProfile: %v", err)
	}
	contract, err := client.Context(ctx, id, ctxstore.ContextRequest{TurnID: "turn_0002", UserMessage: "还疼", TokenBudget: 4000})
	if err != nil {
		t.Fatalf("Context: %v", err)
	}
	if !strings.HasPrefix(contract.Meta.ContextVersion, "1.") || contract.Context.ConversationSummary == nil || contract.Context.UserProfile["age"] != 46.0 {
		t.Fatalf("the contract: %s", contract.Raw)
	}
	_, err = client.Context(ctx, id, ctxstore.ContextRequest{TurnID: "t", UserMessage: strings.Repeat("痛", 500), TokenBudget: 1})
	if !errors.Is(err, ctxstore.ErrContractBudget) {
		t.Fatalf("a budget too small: %v", err)
	}
	bad, _ := ctxstore.NewClient(os.Getenv("CTXSTORE_URL"), "ctx_not-a-token")
	if _, err := bad.Read(ctx, id); !errors.Is(err, ctxstore.ErrUnauthorized) {
		t.Fatalf("an unknown token: %v", err)
	}
}

// dropFirstAnswer forwards every request to the live server, but the first POST's answer
// is lost: the connection closes after the server has stored the turn.
func dropFirstAnswer(t *testing.T) (*httptest.Server, *int32) {
	target, _ := url.Parse(os.Getenv("CTXSTORE_URL"))
	proxy := httputil.NewSingleHostReverseProxy(target)
	var posts int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && atomic.AddInt32(&posts, 1) == 1 {
			recorder := httptest.NewRecorder()
			proxy.ServeHTTP(recorder, r) // stored...
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // ...and the answer lost
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	return server, &posts
}

func TestAnAppendWhoseAnswerIsLostIsStoredOnce(t *testing.T) {
	direct := live(t)
	ctx := context.Background()
	proxy, posts := dropFirstAnswer(t)
	client, err := ctxstore.NewClient(proxy.URL, os.Getenv("CTXSTORE_TOKEN"), ctxstore.WithRetries(3, 10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	id := sessionID(t)
	defer func() { _ = direct.Delete(ctx, id) }()
	version, err := client.Append(ctx, id, []ctxstore.Message{{Role: "user", Content: "once"}})
	if err != nil || version != 1 {
		t.Fatalf("Append through a lost answer: %d, %v", version, err)
	}
	if atomic.LoadInt32(posts) != 2 {
		t.Fatalf("%d POSTs: the client did not retry", *posts)
	}
	read, err := direct.Read(ctx, id)
	if err != nil || len(read.Messages) != 1 {
		t.Fatalf("stored %+v, %v", read, err)
	}
}

func TestA503IsRetriedAfterItsRetryAfter(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt32(&calls, 1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(503)
			io.WriteString(w, `{"type":"https://ctxstore.dev/problems/storage-unavailable","title":"Storage unavailable","status":503,"detail":"retry later"}`)
			return
		}
		w.WriteHeader(204)
	}))
	defer server.Close()
	client, _ := ctxstore.NewClient(server.URL, "t", ctxstore.WithRetries(2, 10*time.Millisecond, 20*time.Millisecond))
	started := time.Now()
	if err := client.Delete(context.Background(), "s"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if waited := time.Since(started); waited < time.Second || calls != 2 {
		t.Fatalf("%d calls after %v: Retry-After 1 not honoured", calls, waited)
	}
	// With no retries left the problem itself comes back, typed.
	calls = 0
	once, _ := ctxstore.NewClient(server.URL, "t", ctxstore.WithRetries(0, time.Millisecond, time.Millisecond))
	if err := once.Delete(context.Background(), "s"); !errors.Is(err, ctxstore.ErrStorageUnavailable) {
		t.Fatalf("no retries: %v", err)
	}
}

func TestEachCallSendsOneRequestIDAndItsErrorsNameIt(t *testing.T) {
	var mu sync.Mutex
	var received []string // each attempt's X-Request-ID
	headers := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), received...)
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Header.Get("X-Request-ID"))
		first := len(received)%2 == 1
		mu.Unlock()
		if first {
			w.WriteHeader(503) // retried: the retry sends the same id
			return
		}
		if r.Method == "DELETE" {
			// A proxy's answer, no X-Request-ID: the error names the id that was sent.
			w.WriteHeader(404)
			return
		}
		w.Header().Set("X-Request-ID", r.Header.Get("X-Request-ID"))
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(404)
		io.WriteString(w, `{"type":"https://ctxstore.dev/problems/session-not-found","title":"Session not found","status":404,"detail":"no such session"}`)
	}))
	defer server.Close()
	client, _ := ctxstore.NewClient(server.URL, "t", ctxstore.WithRetries(1, time.Millisecond, time.Millisecond))
	var problem *ctxstore.Problem
	_, err := client.Read(context.Background(), "s")
	if !errors.As(err, &problem) || !errors.Is(err, ctxstore.ErrSessionNotFound) {
		t.Fatalf("Read: %v", err)
	}
	_, err = client.Read(context.Background(), "s")
	var second *ctxstore.Problem
	if !errors.As(err, &second) {
		t.Fatalf("Read again: %v", err)
	}
	err = client.Delete(context.Background(), "s")
	seen := headers()
	if !errors.As(err, &problem) || problem.RequestID != seen[5] {
		t.Fatalf("Delete through a proxy's 404: %v (sent %q)", err, seen[4:])
	}
	if len(seen) != 6 || seen[0] != seen[1] || seen[2] != seen[3] || seen[4] != seen[5] {
		t.Fatalf("the ids sent, two attempts a call: %q", seen)
	}
	if seen[0] == seen[2] || seen[2] == seen[4] || len(seen[0]) != 32 || strings.Trim(seen[0], "0123456789abcdef") != "" {
		t.Fatalf("each call its own 128-bit hex id: %q", seen)
	}
	if second.RequestID != seen[2] || !strings.HasSuffix(second.Error(), "(request id "+seen[2]+")") {
		t.Fatalf("the problem names its request: %+v, %q", second, second.Error())
	}

	// No answer at all: the transport error names the id its attempts were sent with.
	mu.Lock()
	received = nil
	mu.Unlock()
	closing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Header.Get("X-Request-ID"))
		mu.Unlock()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer closing.Close()
	client, _ = ctxstore.NewClient(closing.URL, "t", ctxstore.WithRetries(1, time.Millisecond, time.Millisecond))
	_, err = client.Read(context.Background(), "s")
	var transport *ctxstore.TransportError
	ids := headers()
	if !errors.As(err, &transport) || len(ids) != 2 || ids[0] != ids[1] || transport.RequestID != ids[0] {
		t.Fatalf("no answer: %v (sent %q)", err, ids)
	}
	if !strings.Contains(err.Error(), "(request id "+ids[0]+")") {
		t.Fatalf("the transport error's text: %q", err.Error())
	}
}

func TestTheContextBoundsTheWholeCall(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(503)
	}))
	defer server.Close()
	client, _ := ctxstore.NewClient(server.URL, "t")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	err := client.Delete(ctx, "s")
	if err == nil || time.Since(started) > 2*time.Second {
		t.Fatalf("a 30 s Retry-After under a 300 ms deadline: %v after %v", err, time.Since(started))
	}
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hanging.Close()
	client, _ = ctxstore.NewClient(hanging.URL, "t")
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := client.Read(ctx, "s"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a server that never answers: %v", err)
	}
}

func TestNewClientRefusesWhatCannotWork(t *testing.T) {
	for _, base := range []string{"", "ctxstore:8080", "ftp://x"} {
		if _, err := ctxstore.NewClient(base, "t"); err == nil {
			t.Errorf("base URL %q accepted", base)
		}
	}
	if _, err := ctxstore.NewClient("http://x", " "); err == nil {
		t.Error("a blank token accepted")
	}
}
