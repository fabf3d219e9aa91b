package ctxstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

// recorder notes each request's method and the status of its answer ("GET 304").
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen = append(r.seen, fmt.Sprintf("%s %d", req.Method, resp.StatusCode))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := strings.Join(r.seen, ", ")
	r.seen = nil
	return out
}

func recorded(t *testing.T) (*ctxstore.Client, *recorder) {
	seen := &recorder{}
	return live(t, ctxstore.WithHTTPClient(&http.Client{Transport: seen})), seen
}

func turnOf(i int) []UntaggedMsg {
	when := time.Date(2026, 12, 5, 18, 31, 10, 123456789+i, time.FixedZone("", 8*3600))
	turn := fmt.Sprintf("turn-%04d", i)
	return []UntaggedMsg{
		{"user", fmt.Sprintf("医生您好，我右膝盖疼了%d天", i), turn, when, nil},
		{"assistant", "疼痛是在膝盖前方还是内侧？", turn, when.Add(2 * time.Second), map[string]interface{}{"model": "m", "n": 3}},
	}
}

func TestATurnSendsOnlyWhatIsNew(t *testing.T) {
	client, seen := recorded(t)
	ctx := context.Background()
	storage := ctxstore.NewStorage[UntaggedMsg](client)
	id := sessionID(t)
	defer func() { _ = storage.Delete(ctx, id) }()

	messages, err := storage.Load(ctx, id)
	if err != nil || len(messages) != 0 {
		t.Fatalf("Load: %v, %v", messages, err)
	}
	for i := 0; i < 3; i++ {
		messages = append(messages, turnOf(i)...)
		if err := storage.Save(ctx, id, messages); err != nil {
			t.Fatal(err)
		}
		if messages, err = storage.Load(ctx, id); err != nil || len(messages) != 2*(i+1) {
			t.Fatalf("Load: %d messages, %v", len(messages), err)
		}
	}
	// The first Load finds nothing; each Save appends its turn (the first creates the
	// session), each Load after it is answered 304.
	want := "GET 404, POST 201, GET 304, POST 200, GET 304, POST 200, GET 304"
	if got := seen.take(); got != want {
		t.Fatalf("requests:\n got %s\nwant %s", got, want)
	}

	// A list that rewrites a message the session holds is sent whole, and so is any
	// list after another writer got in first.
	messages[1].Content = "改过的回答"
	if err := storage.Save(ctx, id, messages); err != nil {
		t.Fatal(err)
	}
	other := ctxstore.NewStorage[UntaggedMsg](live(t))
	if err := other.Save(ctx, id, messages[:2]); err != nil {
		t.Fatal(err)
	}
	if err := storage.Save(ctx, id, append(messages, turnOf(9)...)); err != nil {
		t.Fatal(err)
	}
	if got := seen.take(); got != "PUT 200, POST 412, PUT 200" {
		t.Fatalf("requests: %s", got)
	}
	loaded, err := other.Load(ctx, id)
	if err != nil || len(loaded) != 8 || loaded[1].Content != "改过的回答" {
		t.Fatalf("the last Save did not win: %d messages, %v", len(loaded), err)
	}
}

func TestWithConflictsASaveAfterAnotherWriterIsRefused(t *testing.T) {
	ctx := context.Background()
	mine := ctxstore.NewStorage[UntaggedMsg](live(t), ctxstore.WithConflicts())
	theirs := ctxstore.NewStorage[UntaggedMsg](live(t))
	id := sessionID(t)
	defer func() { _ = theirs.Delete(ctx, id) }()

	if err := mine.Save(ctx, id, turnOf(0)); err != nil {
		t.Fatal(err)
	}
	if err := theirs.Save(ctx, id, turnOf(1)); err != nil {
		t.Fatal(err)
	}
	for name, list := range map[string][]UntaggedMsg{
		"extending": append(turnOf(0), turnOf(2)...),
		"rewriting": turnOf(3),
	} {
		if err := mine.Save(ctx, id, list); !errors.Is(err, ctxstore.ErrConflict) {
			t.Fatalf("%s: %v, want ErrConflict", name, err)
		}
	}
	stored, err := theirs.Load(ctx, id)
	if err != nil || stored[0].TurnID != turnOf(1)[0].TurnID {
		t.Fatalf("their Save was overwritten: %v, %v", stored, err)
	}
	// Loaded again, the session is known: the Save goes through.
	if _, err := mine.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := mine.Save(ctx, id, append(stored, turnOf(4)...)); err != nil {
		t.Fatal(err)
	}
	// A session this Storage never saw is written only if it does not exist.
	stranger := ctxstore.NewStorage[UntaggedMsg](live(t), ctxstore.WithConflicts())
	if err := stranger.Save(ctx, id, turnOf(5)); !errors.Is(err, ctxstore.ErrConflict) {
		t.Fatalf("a Save over a session never seen: %v, want ErrConflict", err)
	}
}

// Two writers on one session, with random histories: every Load (answered 304 or read
// whole, by either writer or by a Storage that remembers nothing) gives what the last
// acknowledged Save gave, byte for byte.
func TestTwoWritersLoadWhatTheLastSaveGave(t *testing.T) {
	ctx := context.Background()
	client, seen := recorded(t)
	writers := []*ctxstore.Storage[UntaggedMsg]{
		ctxstore.NewStorage[UntaggedMsg](client),
		ctxstore.NewStorage[UntaggedMsg](client),
		ctxstore.NewStorage[UntaggedMsg](client, ctxstore.WithSessionCache(4<<10)), // often evicted
	}
	fresh := ctxstore.NewStorage[UntaggedMsg](client, ctxstore.WithSessionCache(0))
	for seed := int64(1); seed <= 6; seed++ {
		random := rand.New(rand.NewSource(seed))
		id := fmt.Sprintf("%s-%d", sessionID(t), seed)
		var last []UntaggedMsg // what the last acknowledged Save gave
		for step := 0; step < 40; step++ {
			writer := writers[random.Intn(len(writers))]
			list, err := writer.Load(ctx, id)
			if err != nil {
				t.Fatalf("seed %d step %d: Load: %v", seed, step, err)
			}
			same(t, list, last, seed, step)
			op := random.Intn(10)
			list = changed(random, op, list, step)
			if op == 9 {
				if err := writer.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				last = nil
				if random.Intn(2) == 0 {
					continue
				}
			}
			if err := writers[random.Intn(len(writers))].Save(ctx, id, list); err != nil {
				t.Fatalf("seed %d step %d: Save: %v", seed, step, err)
			}
			last = list
			whole, err := fresh.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			same(t, whole, last, seed, step)
		}
		_ = fresh.Delete(ctx, id)
	}
	// Both paths were taken: appends and whole lists, 304s and whole reads.
	paths := map[string]int{}
	for _, request := range strings.Split(seen.take(), ", ") {
		paths[request]++
	}
	t.Logf("requests: %v", paths)
	for _, path := range []string{"POST 200", "PUT 200", "GET 304", "GET 200"} {
		if paths[path] == 0 {
			t.Fatalf("no %s among %v", path, paths)
		}
	}
}

// changed is list after a random edit: extend (most often), rewrite, truncate, empty.
func changed(random *rand.Rand, op int, list []UntaggedMsg, step int) []UntaggedMsg {
	out := append([]UntaggedMsg(nil), list...)
	switch {
	case op < 6 || len(out) == 0:
		for i := random.Intn(3); i >= 0; i-- {
			out = append(out, message(random, step))
		}
	case op == 6:
		out[random.Intn(len(out))] = message(random, step)
	case op == 7:
		out = out[:random.Intn(len(out))]
	case op == 8:
		out = []UntaggedMsg{}
	}
	return out
}

func message(random *rand.Rand, step int) UntaggedMsg {
	m := UntaggedMsg{Role: []string{"user", "assistant"}[random.Intn(2)], Content: fmt.Sprintf("第%d步 <%d> & 膝盖", step, random.Int())}
	switch random.Intn(4) {
	case 0: // Go's zero time, no turn id, nil metadata
	case 1:
		m.Timestamp = time.Date(2026, 12, 5, 18, 31, 10, random.Intn(1e9), time.FixedZone("", 8*3600))
		m.TurnID = fmt.Sprintf("turn-%d", step)
	case 2:
		m.Timestamp = time.Date(2026, 1, 2, 3, 4, 5, random.Intn(1000)*1000, time.UTC)
		m.Metadata = map[string]interface{}{"b": 1.5, "a": []interface{}{"x", 2.0}, "long key": map[string]interface{}{"z": true, "y": nil}}
	default:
		m.Timestamp = time.Date(2026, 7, 1, 0, 0, 0, 0, time.FixedZone("", -5*3600-1800))
		m.TurnID = "t"
	}
	return m
}

func same(t *testing.T, got, want []UntaggedMsg, seed int64, step int) {
	t.Helper()
	if want == nil {
		want = []UntaggedMsg{}
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("seed %d step %d: the bytes differ:\n got %s\nwant %s", seed, step, g, w)
	}
}

// A struct that lacks fields the stored messages have can't give them back: its Save
// is sent whole, and stores what overwriting the list with it stores.
func TestASaveOfMessagesLoadedWithoutTheirFieldsIsSentWhole(t *testing.T) {
	ctx := context.Background()
	client, seen := recorded(t)
	full := ctxstore.NewStorage[UntaggedMsg](client)
	id := sessionID(t)
	defer func() { _ = full.Delete(ctx, id) }()
	if err := full.Save(ctx, id, turnOf(0)); err != nil {
		t.Fatal(err)
	}
	narrow := ctxstore.NewStorage[ServiceMsg](client)
	list, err := narrow.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := narrow.Save(ctx, id, append(list, ServiceMsg{"user", "还有", ""})); err != nil {
		t.Fatal(err)
	}
	if got := seen.take(); got != "PUT 201, GET 200, PUT 200" {
		t.Fatalf("requests: %s", got)
	}
	stored, err := ctxstore.NewStorage[UntaggedMsg](client).Load(ctx, id)
	if err != nil || len(stored) != 3 || stored[0].TurnID != "" || !stored[0].Timestamp.IsZero() {
		t.Fatalf("not what overwriting gives: %+v, %v", stored, err)
	}
}

// What Load returns is the caller's to change: changing it changes no later Load.
func TestALoadedListIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	client, seen := recorded(t)
	storage := ctxstore.NewStorage[UntaggedMsg](client)
	id := sessionID(t)
	defer func() { _ = storage.Delete(ctx, id) }()
	if err := storage.Save(ctx, id, turnOf(0)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		list, err := storage.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		same(t, list, turnOf(0), 0, i)
		list[1].Metadata["model"] = "changed in place"
		list[1].Metadata["added"] = true
		list[0].Content = "changed"
	}
	if got := seen.take(); got != "PUT 201, GET 304, GET 304" {
		t.Fatalf("requests: %s", got)
	}
}

// The same for a struct of pointers: what they point to is the caller's too.
func TestALoadedListOfPointersIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	storage := ctxstore.NewStorage[CamelPointerMsg](live(t))
	id := sessionID(t)
	defer func() { _ = storage.Delete(ctx, id) }()
	turn, when := "turn_1", at("2026-12-05T18:31:10.123456789+08:00")
	if err := storage.Save(ctx, id, []CamelPointerMsg{{"user", "x", &turn, &when, nil}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		list, err := storage.Load(ctx, id)
		if err != nil || *list[0].TurnID != "turn_1" || !list[0].Timestamp.Equal(when) {
			t.Fatalf("Load %d: %+v, %v", i, list, err)
		}
		*list[0].TurnID = "changed"
		*list[0].Timestamp = time.Time{}
	}
}
