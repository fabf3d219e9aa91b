package ctxstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

// lister serves GET /v1/users/{user}/sessions from pages: the first without a cursor,
// page i after the cursor "c<i>". It records each request's query.
type lister struct {
	t       *testing.T
	pages   [][]string // each page's session ids
	mu      sync.Mutex
	queries []url.Values
	answer  func(w http.ResponseWriter, r *http.Request, call int) bool // true: answered
}

func (l *lister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.queries = append(l.queries, r.URL.Query())
	call := len(l.queries)
	l.mu.Unlock()
	if r.Method != "GET" || r.URL.EscapedPath() != "/v1/users/u%2042/sessions" {
		l.t.Errorf("%s %s", r.Method, r.URL.EscapedPath())
	}
	if got := r.Header.Get("Authorization"); got != "Bearer tok" {
		l.t.Errorf("Authorization: %q", got)
	}
	if l.answer != nil && l.answer(w, r, call) {
		return
	}
	index := 0
	if cursor := r.URL.Query().Get("cursor"); cursor != "" {
		index, _ = strconv.Atoi(strings.TrimPrefix(cursor, "c"))
	}
	var items []string
	for _, id := range l.pages[index] {
		items = append(items, fmt.Sprintf(`{"session_id":%q,"created_at":"2024-05-01T08:00:00.123456+00:00",`+
			`"updated_at":"2024-05-02T09:30:00.000001Z","message_count":3,"stage":null,"summary_version":0,"summary_text":null}`, id))
	}
	next := "null"
	if index+1 < len(l.pages) {
		next = fmt.Sprintf(`"c%d"`, index+1)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"items":[%s],"next_cursor":%s}`, strings.Join(items, ","), next)
}

func (l *lister) sent() []url.Values {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]url.Values(nil), l.queries...)
}

func listing(t *testing.T, l *lister, opts ...ctxstore.Option) *ctxstore.Client {
	l.t = t
	server := httptest.NewServer(l)
	t.Cleanup(server.Close)
	client, err := ctxstore.NewClient(server.URL, "tok", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func problem(w http.ResponseWriter, status int, slug string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"https://ctxstore.dev/problems/%s","title":"t","status":%d,"detail":"d"}`, slug, status)
}

func TestListSessionsSendsItsOptionsAndReadsAPage(t *testing.T) {
	l := &lister{answer: func(w http.ResponseWriter, r *http.Request, call int) bool {
		io.WriteString(w, `{"items":[{"session_id":"s2","created_at":"2024-05-01T08:00:00.123456+00:00",`+
			`"updated_at":"2024-05-02T09:30:00.000001+02:00","message_count":12,"stage":"assessing",`+
			`"summary_version":3,"summary_text":"knee pain, 3 weeks"},`+
			`{"session_id":"s1","created_at":"2024-04-01T08:00:00Z","updated_at":"2024-04-01T08:00:00Z",`+
			`"message_count":0,"stage":null,"summary_version":0,"summary_text":null}],"next_cursor":"abc+/="}`)
		return true
	}}
	client := listing(t, l)
	since := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
	page, err := client.ListSessions(context.Background(), "u 42", ctxstore.ListOptions{
		Limit: 2, Cursor: "prev+/=", Stage: "assessing", UpdatedSince: since, WithSummaries: true})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	want := url.Values{
		"limit": {"2"}, "cursor": {"prev+/="}, "stage": {"assessing"},
		"updated_since": {"2024-05-01T08:00:00.123456Z"}, "with_summaries": {"true"},
	}
	if got := l.sent(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("the query sent: %v, want %v", got, want)
	}
	if len(page.Items) != 2 || page.NextCursor != "abc+/=" {
		t.Fatalf("the page: %+v", page)
	}
	first, second := page.Items[0], page.Items[1]
	created := time.Date(2024, 5, 1, 8, 0, 0, 123456000, time.UTC)
	updated := time.Date(2024, 5, 2, 7, 30, 0, 1000, time.UTC)
	if first.SessionID != "s2" || !first.CreatedAt.Equal(created) || !first.UpdatedAt.Equal(updated) ||
		first.MessageCount != 12 || first.Stage == nil || *first.Stage != "assessing" ||
		first.SummaryVersion != 3 || first.SummaryText == nil || *first.SummaryText != "knee pain, 3 weeks" {
		t.Fatalf("the first item: %+v", first)
	}
	if second.SessionID != "s1" || second.Stage != nil || second.SummaryText != nil || second.MessageCount != 0 {
		t.Fatalf("the second item: %+v", second)
	}
}

func TestListSessionsWithNoOptionsAsksForTheFirstPageWithoutSummaries(t *testing.T) {
	l := &lister{pages: [][]string{{}}}
	client := listing(t, l)
	page, err := client.ListSessions(context.Background(), "u 42", ctxstore.ListOptions{})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	if page.Items == nil || len(page.Items) != 0 || page.NextCursor != "" {
		t.Fatalf("an empty last page: %#v", page)
	}
	want := url.Values{"with_summaries": {"false"}}
	if got := l.sent(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("the query sent: %v, want %v", got, want)
	}
}

func TestListSessionsErrorsAreTyped(t *testing.T) {
	for _, c := range []struct {
		status int
		slug   string // "": a bare status, no problem document (a proxy's)
		want   *ctxstore.ProblemType
	}{
		{400, "malformed-request", ctxstore.ErrMalformed},
		{422, "invalid-input", ctxstore.ErrInvalidInput},
		{401, "unauthorized", ctxstore.ErrUnauthorized},
		{403, "forbidden", ctxstore.ErrForbidden},
		{501, "not-supported", ctxstore.ErrNotSupported},
		{501, "", ctxstore.ErrNotSupported},
		{503, "storage-unavailable", ctxstore.ErrStorageUnavailable},
	} {
		c := c
		l := &lister{answer: func(w http.ResponseWriter, r *http.Request, call int) bool {
			if c.slug == "" {
				w.WriteHeader(c.status)
				return true
			}
			problem(w, c.status, c.slug)
			return true
		}}
		client := listing(t, l, ctxstore.WithRetries(1, time.Millisecond, time.Millisecond))
		_, err := client.ListSessions(context.Background(), "u 42", ctxstore.ListOptions{})
		var got *ctxstore.Problem
		if !errors.Is(err, c.want) || !errors.As(err, &got) || got.Status != c.status {
			t.Errorf("%d %q: %v", c.status, c.slug, err)
		}
		retried := c.status == 503
		if calls := len(l.sent()); (calls == 2) != retried {
			t.Errorf("%d %q: %d requests", c.status, c.slug, calls)
		}
	}
	// A 501 of another slug still says the operation is not supported; a 503 does not.
	l := &lister{answer: func(w http.ResponseWriter, r *http.Request, call int) bool {
		problem(w, 501, "not-implemented")
		return true
	}}
	client := listing(t, l)
	if _, err := client.ListSessions(context.Background(), "u 42", ctxstore.ListOptions{}); !errors.Is(err, ctxstore.ErrNotSupported) {
		t.Fatalf("a 501 of another slug: %v", err)
	}
	unavailable := &ctxstore.Problem{Type: "https://ctxstore.dev/problems/storage-unavailable", Status: 503}
	if errors.Is(unavailable, ctxstore.ErrNotSupported) {
		t.Fatal("a 503 matches ErrNotSupported")
	}
}

func readAll(t *testing.T, it *ctxstore.SessionIterator) []string {
	t.Helper()
	var ids []string
	for it.Next(context.Background()) {
		ids = append(ids, it.Session().SessionID)
	}
	return ids
}

func TestSessionsReadsPageAfterPage(t *testing.T) {
	l := &lister{pages: [][]string{{"s7", "s6", "s5"}, {"s4", "s3", "s2"}, {}, {"s1"}}}
	client := listing(t, l)
	it := client.Sessions("u 42", ctxstore.ListOptions{Limit: 3, Stage: "closed"})
	if it.Session().SessionID != "" || it.Err() != nil {
		t.Fatalf("before Next: %+v, %v", it.Session(), it.Err())
	}
	if len(l.sent()) != 0 {
		t.Fatal("Sessions sent a request before Next")
	}
	ids := readAll(t, it)
	if want := []string{"s7", "s6", "s5", "s4", "s3", "s2", "s1"}; !reflect.DeepEqual(ids, want) || it.Err() != nil {
		t.Fatalf("read %q, %v; want %q", ids, it.Err(), want)
	}
	sent := l.sent()
	var cursors []string
	for _, query := range sent {
		cursors = append(cursors, query.Get("cursor"))
		if query.Get("limit") != "3" || query.Get("stage") != "closed" {
			t.Errorf("a page's query lost the options: %v", query)
		}
	}
	// The empty page with a cursor is not the end: the next page is asked for.
	if want := []string{"", "c1", "c2", "c3"}; !reflect.DeepEqual(cursors, want) {
		t.Fatalf("the cursors sent: %q, want %q", cursors, want)
	}
	if it.Next(context.Background()) || it.Err() != nil || it.Session().SessionID != "" || len(l.sent()) != len(sent) {
		t.Fatal("Next after the last session asked again or moved")
	}
}

func TestSessionsOfAUserWithNoneEndsAtOnce(t *testing.T) {
	l := &lister{pages: [][]string{{}}}
	client := listing(t, l)
	it := client.Sessions("u 42", ctxstore.ListOptions{})
	if ids := readAll(t, it); len(ids) != 0 || it.Err() != nil || len(l.sent()) != 1 {
		t.Fatalf("read %q, %v in %d requests", ids, it.Err(), len(l.sent()))
	}
}

func TestSessionsStartsAtTheCursorGiven(t *testing.T) {
	l := &lister{pages: [][]string{{"s3"}, {"s2"}, {"s1"}}}
	client := listing(t, l)
	it := client.Sessions("u 42", ctxstore.ListOptions{Cursor: "c1"})
	if ids := readAll(t, it); !reflect.DeepEqual(ids, []string{"s2", "s1"}) || it.Err() != nil {
		t.Fatalf("read %q, %v", ids, it.Err())
	}
}

func TestSessionsStopsAtAnErrorAndSaysWhich(t *testing.T) {
	l := &lister{pages: [][]string{{"s4", "s3"}, {"s2", "s1"}}}
	l.answer = func(w http.ResponseWriter, r *http.Request, call int) bool {
		if r.URL.Query().Get("cursor") == "c1" {
			problem(w, 422, "invalid-input")
			return true
		}
		return false
	}
	client := listing(t, l)
	it := client.Sessions("u 42", ctxstore.ListOptions{})
	ids := readAll(t, it)
	var got *ctxstore.Problem
	if !reflect.DeepEqual(ids, []string{"s4", "s3"}) || !errors.Is(it.Err(), ctxstore.ErrInvalidInput) || !errors.As(it.Err(), &got) {
		t.Fatalf("read %q, %v", ids, it.Err())
	}
	calls := len(l.sent())
	if it.Next(context.Background()) || it.Session().SessionID != "" || len(l.sent()) != calls || it.Err() == nil {
		t.Fatal("Next after an error asked again, moved or forgot the error")
	}
}

func TestSessionsRetriesAPageAfterA503(t *testing.T) {
	l := &lister{pages: [][]string{{"s2"}, {"s1"}}}
	l.answer = func(w http.ResponseWriter, r *http.Request, call int) bool {
		if call == 2 {
			w.Header().Set("Retry-After", "0")
			problem(w, 503, "storage-unavailable")
			return true
		}
		return false
	}
	client := listing(t, l, ctxstore.WithRetries(2, time.Millisecond, time.Millisecond))
	it := client.Sessions("u 42", ctxstore.ListOptions{})
	if ids := readAll(t, it); !reflect.DeepEqual(ids, []string{"s2", "s1"}) || it.Err() != nil {
		t.Fatalf("read %q, %v", ids, it.Err())
	}
	if sent := l.sent(); len(sent) != 3 || sent[1].Get("cursor") != "c1" || sent[2].Get("cursor") != "c1" {
		t.Fatalf("the requests: %v", sent)
	}
}

func TestSessionsStopsWhenTheContextEnds(t *testing.T) {
	l := &lister{pages: [][]string{{"s2"}, {"s1"}}}
	client := listing(t, l)
	it := client.Sessions("u 42", ctxstore.ListOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	if !it.Next(ctx) || it.Session().SessionID != "s2" {
		t.Fatalf("the first session: %+v, %v", it.Session(), it.Err())
	}
	cancel()
	if it.Next(ctx) || !errors.Is(it.Err(), context.Canceled) {
		t.Fatalf("Next after the context ended: %v", it.Err())
	}

	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hanging.Close()
	client, _ = ctxstore.NewClient(hanging.URL, "tok")
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	it = client.Sessions("u 42", ctxstore.ListOptions{})
	if it.Next(ctx) || !errors.Is(it.Err(), context.DeadlineExceeded) {
		t.Fatalf("a server that never answers: %v", it.Err())
	}
}

func TestSessionsRefusesACursorThatDoesNotMove(t *testing.T) {
	l := &lister{answer: func(w http.ResponseWriter, r *http.Request, call int) bool {
		io.WriteString(w, `{"items":[],"next_cursor":"same"}`)
		return true
	}}
	client := listing(t, l)
	it := client.Sessions("u 42", ctxstore.ListOptions{})
	if it.Next(context.Background()) || it.Err() == nil || len(l.sent()) != 2 {
		t.Fatalf("a cursor answered again: %v after %d requests", it.Err(), len(l.sent()))
	}
	if strings.Contains(it.Err().Error(), "%!") || !strings.Contains(it.Err().Error(), `"same"`) {
		t.Fatalf("the error: %v", it.Err())
	}
}

func TestListSessionsRefusesAnAnswerItCannotRead(t *testing.T) {
	l := &lister{answer: func(w http.ResponseWriter, r *http.Request, call int) bool {
		io.WriteString(w, `{"items":[{"session_id":"s1","created_at":"yesterday"}],"next_cursor":null}`)
		return true
	}}
	client := listing(t, l)
	if _, err := client.ListSessions(context.Background(), "u 42", ctxstore.ListOptions{}); err == nil || !strings.Contains(err.Error(), "page of sessions") {
		t.Fatalf("an unreadable page: %v", err)
	}
}

func TestListingAUsersSessionsLive(t *testing.T) {
	client := live(t)
	ctx := context.Background()
	user := fmt.Sprintf("go-lister-%d", time.Now().UnixNano())
	var ids []string // oldest first
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("%s-%d", sessionID(t), i)
		ids = append(ids, id)
		defer func() { _ = client.Delete(ctx, id) }()
		turn := []ctxstore.Message{{Role: "user", Content: fmt.Sprintf("第%d次", i)}}
		if _, err := client.Append(ctx, id, turn, ctxstore.ForUser(user)); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if _, err := client.PutState(ctx, ids[1], map[string]interface{}{"stage": "assessing"}); err != nil {
		t.Fatalf("PutState: %v", err)
	}
	if _, err := client.PutSummary(ctx, ids[1], "knee pain", 0); err != nil {
		t.Fatalf("PutSummary: %v", err)
	}

	first, err := client.ListSessions(ctx, user, ctxstore.ListOptions{Limit: 2})
	if err != nil || len(first.Items) != 2 || first.NextCursor == "" {
		t.Fatalf("the first page: %+v, %v", first, err)
	}
	if first.Items[0].SessionID != ids[2] || first.Items[1].SessionID != ids[1] {
		t.Fatalf("not newest first: %+v", first.Items)
	}
	middle := first.Items[1]
	if middle.MessageCount != 1 || middle.Stage == nil || *middle.Stage != "assessing" ||
		middle.SummaryVersion != 1 || middle.SummaryText != nil || middle.CreatedAt.IsZero() || middle.UpdatedAt.Before(middle.CreatedAt) {
		t.Fatalf("a listed session: %+v", middle)
	}
	last, err := client.ListSessions(ctx, user, ctxstore.ListOptions{Limit: 2, Cursor: first.NextCursor})
	if err != nil || len(last.Items) != 1 || last.Items[0].SessionID != ids[0] || last.NextCursor != "" {
		t.Fatalf("the last page: %+v, %v", last, err)
	}

	var read []string
	sessions := client.Sessions(user, ctxstore.ListOptions{Limit: 1})
	for sessions.Next(ctx) {
		read = append(read, sessions.Session().SessionID)
	}
	if want := []string{ids[2], ids[1], ids[0]}; sessions.Err() != nil || !reflect.DeepEqual(read, want) {
		t.Fatalf("the iterator read %q, %v; want %q", read, sessions.Err(), want)
	}

	staged, err := client.ListSessions(ctx, user, ctxstore.ListOptions{Stage: "assessing", WithSummaries: true})
	if err != nil || len(staged.Items) != 1 || staged.Items[0].SummaryText == nil || *staged.Items[0].SummaryText != "knee pain" {
		t.Fatalf("by stage, with summaries: %+v, %v", staged, err)
	}
	since := first.Items[0].UpdatedAt // the newest message's time, to the microsecond
	recent, err := client.ListSessions(ctx, user, ctxstore.ListOptions{UpdatedSince: since})
	if err != nil || len(recent.Items) != 1 || recent.Items[0].SessionID != ids[2] {
		t.Fatalf("updated since %v: %+v, %v", since, recent, err)
	}
	none, err := client.ListSessions(ctx, "go-lister-nobody", ctxstore.ListOptions{})
	if err != nil || len(none.Items) != 0 || none.NextCursor != "" {
		t.Fatalf("a user without sessions: %+v, %v", none, err)
	}
	_, err = client.ListSessions(ctx, user, ctxstore.ListOptions{Cursor: "not-a-cursor"})
	if !errors.Is(err, ctxstore.ErrInvalidInput) {
		t.Fatalf("a cursor the service never gave: %v", err)
	}
}
