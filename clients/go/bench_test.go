package ctxstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

// BenchmarkServiceTurn is the Go service's turn, as the service writes it:
//
//	messages, _ := storage.Load(ctx, id)
//	messages = append(messages, question, answer)
//	storage.Save(ctx, id, messages)
//
// on one storage the service keeps, with sessions of 10, 100 and 1,000 stored messages,
// for two storages: ctxstore.NewStorage[UntaggedMsg] over HTTP (the swap) and the seed's
// Redis store (GET + json.Unmarshal, json.Marshal + SET EX 86400).
//
// benchmarks/bench_go_client.py runs it with -benchtime 1x and reads the lines it prints:
// "turn <storage> <stored messages> <round> <nanoseconds>", one a timed turn. Each round
// runs every (storage, length) cell in a new random order, $CTXSTORE_BENCH_GO_TURNS turns
// a cell, each on a session of its own, brought to the length through the same storage
// before any turn is timed (saved whole, then its last turn), so every turn loads
// exactly that many messages and follows a turn, as in a consultation. The swap's
// Storage remembers every one of them (WithSessionCache), as a service sized for its
// sessions does. It needs a live
// ctxstore serve ($CTXSTORE_URL, $CTXSTORE_TOKEN) and a Redis
// ($CTXSTORE_BENCH_REDIS_ADDR); its metrics are the medians over rounds of each round's
// median turn.
func BenchmarkServiceTurn(b *testing.B) {
	addr := os.Getenv("CTXSTORE_BENCH_REDIS_ADDR")
	if addr == "" {
		b.Skip("CTXSTORE_BENCH_REDIS_ADDR names no Redis (benchmarks/bench_go_client.py sets it)")
	}
	client := live(b)
	rounds, turns, warmup := benchEnvInt(b, "CTXSTORE_BENCH_GO_ROUNDS", 15), benchEnvInt(b, "CTXSTORE_BENCH_GO_TURNS", 20), benchEnvInt(b, "CTXSTORE_BENCH_GO_WARMUP", 3)
	lengths := []int{10, 100, 1000}
	if text := os.Getenv("CTXSTORE_BENCH_GO_LENGTHS"); text != "" {
		lengths = nil
		for _, field := range strings.Split(text, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(field))
			if err != nil || n < 2 || n%2 != 0 {
				b.Fatalf("CTXSTORE_BENCH_GO_LENGTHS: %q is not an even number of messages, 2 or more", field)
			}
			lengths = append(lengths, n)
		}
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	// One Storage, as the service keeps, remembering all the sessions the run makes.
	storage := ctxstore.NewStorage[UntaggedMsg](client, ctxstore.WithSessionCache(1<<30))
	stores := []*turnStore{
		{name: "swap", save: storage.Save, load: storage.Load, remove: storage.Delete},
		redisTurnStore(&resp{conn: conn, reader: bufio.NewReader(conn)}),
	}

	ctx := context.Background()
	run := time.Now().UnixNano()
	var cells []*turnCell
	for _, store := range stores {
		for _, length := range lengths {
			cell := &turnCell{store: store, length: length, prefix: fmt.Sprintf("go-turn-%d-%s-%d", run, store.name, length)}
			cell.stored = make([]UntaggedMsg, length)
			for i := range cell.stored {
				cell.stored[i] = benchMessage(i, fmt.Sprintf("turn_%06d", i/2))
			}
			cells = append(cells, cell)
		}
	}

	// Every session a turn will take, saved at its length before any is timed: a turn
	// then follows other turns, not the whole-list Save that made its session.
	for _, cell := range cells {
		if err := cell.check(ctx, cell.prefix+"-check", fmt.Sprintf("turn-%d-check", run)); err != nil {
			b.Fatalf("%s at %d: %v", cell.store.name, cell.length, err)
		}
		for i := 0; i < warmup+rounds*turns; i++ {
			if err := cell.prefill(ctx, cell.session(i)); err != nil {
				b.Fatalf("%s: prefill of %d: %v", cell.store.name, cell.length, err)
			}
		}
		defer cell.removeAll(ctx, warmup+rounds*turns)
	}
	runtime.GC()
	turn := 0
	timed := func(cell *turnCell) time.Duration {
		turn++
		took, err := cell.turn(ctx, cell.session(cell.used), fmt.Sprintf("turn-%d-%d", run, turn))
		cell.used++
		if err != nil {
			b.Fatalf("%s at %d: %v", cell.store.name, cell.length, err)
		}
		return took
	}
	for _, cell := range cells {
		for i := 0; i < warmup; i++ {
			timed(cell)
		}
	}

	order := rand.New(rand.NewSource(run))
	medians := map[*turnCell][]float64{}
	for round := 1; round <= rounds; round++ {
		fmt.Printf("# round %d/%d\n", round, rounds)
		order.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
		for _, cell := range cells {
			samples := make([]float64, turns)
			for i := range samples {
				took := timed(cell)
				samples[i] = float64(took) / 1e6
				fmt.Printf("turn %s %d %d %d\n", cell.store.name, cell.length, round, took.Nanoseconds())
			}
			medians[cell] = append(medians[cell], benchMedian(samples))
		}
	}
	b.ReportMetric(0, "ns/op")
	for _, cell := range cells {
		b.ReportMetric(benchMedian(medians[cell]), fmt.Sprintf("ms/turn-%s-%d", cell.store.name, cell.length))
	}
}

// turnStore is a storage as the service calls it.
type turnStore struct {
	name   string
	save   func(context.Context, string, []UntaggedMsg) error
	load   func(context.Context, string) ([]UntaggedMsg, error)
	remove func(context.Context, string) error
}

// redisTurnStore is the seed's Redis store: one JSON array under a key, a day's expiry.
func redisTurnStore(redis *resp) *turnStore {
	key := func(id string) string { return "ctxstore-bench:" + id }
	return &turnStore{
		name: "redis",
		save: func(_ context.Context, id string, messages []UntaggedMsg) error {
			data, err := json.Marshal(messages)
			if err != nil {
				return err
			}
			_, err = redis.do("SET", key(id), data, "EX", "86400")
			return err
		},
		load: func(_ context.Context, id string) ([]UntaggedMsg, error) {
			data, err := redis.do("GET", key(id))
			if err == errRedisNoKey {
				return []UntaggedMsg{}, nil
			}
			var out []UntaggedMsg
			if err == nil {
				err = json.Unmarshal(data, &out)
			}
			return out, err
		},
		remove: func(_ context.Context, id string) error {
			_, err := redis.do("DEL", key(id))
			return err
		},
	}
}

// turnCell is one storage's sessions of one length.
type turnCell struct {
	store  *turnStore
	length int
	prefix string        // of its sessions' ids
	stored []UntaggedMsg // a session at its length
	used   int           // sessions taken by turns so far
}

// session is the id of the cell's i-th session.
func (c *turnCell) session(i int) string { return fmt.Sprintf("%s-%d", c.prefix, i) }

func (c *turnCell) removeAll(ctx context.Context, n int) {
	for i := 0; i < n; i++ {
		_ = c.store.remove(ctx, c.session(i))
	}
}

// prefill brings session id to the cell's length through the same storage, as turns
// leave it: all but the last turn saved whole, then that turn (Load, append 2, Save).
func (c *turnCell) prefill(ctx context.Context, id string) error {
	if err := c.store.save(ctx, id, c.stored[:c.length-2:c.length-2]); err != nil {
		return err
	}
	messages, err := c.store.load(ctx, id)
	if err != nil {
		return err
	}
	return c.store.save(ctx, id, append(messages, c.stored[c.length-2:c.length]...))
}

// turn is the service's turn on session id, timed.
func (c *turnCell) turn(ctx context.Context, id, turnID string) (time.Duration, error) {
	started := time.Now()
	messages, err := c.store.load(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("Load: %w", err)
	}
	if len(messages) != c.length {
		return 0, fmt.Errorf("Load: %d messages, not %d", len(messages), c.length)
	}
	messages = append(messages, benchMessage(c.length, turnID), benchMessage(c.length+1, turnID))
	if err := c.store.save(ctx, id, messages); err != nil {
		return 0, fmt.Errorf("Save: %w", err)
	}
	return time.Since(started), nil
}

// check runs one turn on a new session and reads it back: the bytes Save was given.
func (c *turnCell) check(ctx context.Context, id, turnID string) error {
	defer func() { _ = c.store.remove(ctx, id) }()
	if err := c.prefill(ctx, id); err != nil {
		return err
	}
	if _, err := c.turn(ctx, id, turnID); err != nil {
		return err
	}
	loaded, err := c.store.load(ctx, id)
	if err != nil {
		return err
	}
	want := append(c.stored[:c.length:c.length], benchMessage(c.length, turnID), benchMessage(c.length+1, turnID))
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(loaded)
	if string(wantJSON) != string(gotJSON) {
		return fmt.Errorf("the session read back differs:\nsaved  %.300s\nloaded %.300s", wantJSON, gotJSON)
	}
	return nil
}

const (
	benchQuestion = "您好，我最近上下楼梯时膝盖总有下坠感，需要去医院检查吗？"
	benchAnswer   = "膝盖上下楼梯时出现下坠感或打软，常见于股四头肌力量不足、髌骨软化或半月板、前交叉韧带损伤。" +
		"如果伴有明显肿胀、关节交锁、无法负重或反复扭伤，建议尽快到骨科或运动医学科就诊，必要时做核磁共振检查。" +
		"在此之前可以减少爬楼和深蹲，进行直腿抬高等股四头肌训练，并注意观察症状变化。"
)

var benchStart = time.Date(2026, 11, 29, 8, 15, 2, 123456789, time.FixedZone("", 8*3600))

// benchMessage is a consultation's i-th message: the user's question (even i) or the
// assistant's answer (odd i), at a time with nanoseconds in +08:00.
func benchMessage(i int, turnID string) UntaggedMsg {
	at := benchStart.Add(time.Duration(i) * (3*time.Second + 7*time.Nanosecond))
	if i%2 == 0 {
		return UntaggedMsg{Role: "user", Content: benchQuestion, TurnID: turnID, Timestamp: at}
	}
	return UntaggedMsg{Role: "assistant", Content: benchAnswer, TurnID: turnID, Timestamp: at}
}

func benchEnvInt(b *testing.B, name string, fallback int) int {
	text := os.Getenv(name)
	if text == "" {
		return fallback
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q is not a count", name, text)
	}
	return n
}

func benchMedian(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[middle]
	}
	return (sorted[middle-1] + sorted[middle]) / 2
}

var errRedisNoKey = errors.New("redis: no such key")

// resp is just enough of the Redis protocol for SET, GET and DEL.
type resp struct {
	conn   net.Conn
	reader *bufio.Reader
	out    []byte
}

// do sends a command whose arguments are strings or []byte (a value, written as it is).
func (r *resp) do(args ...interface{}) ([]byte, error) {
	r.out = append(r.out[:0], '*')
	r.out = append(strconv.AppendInt(r.out, int64(len(args)), 10), "\r\n"...)
	for _, arg := range args {
		var data []byte
		switch arg := arg.(type) {
		case string:
			data = []byte(arg)
		case []byte:
			data = arg
		default:
			return nil, fmt.Errorf("redis: argument %T", arg)
		}
		r.out = append(strconv.AppendInt(append(r.out, '$'), int64(len(data)), 10), "\r\n"...)
		r.out = append(append(r.out, data...), "\r\n"...)
	}
	if _, err := r.conn.Write(r.out); err != nil {
		return nil, err
	}
	line, err := r.reader.ReadString('\n')
	if err != nil || len(line) < 3 {
		return nil, fmt.Errorf("redis: %q, %v", line, err)
	}
	switch line[0] {
	case '+', ':':
		return []byte(line[1 : len(line)-2]), nil
	case '$':
		size, _ := strconv.Atoi(line[1 : len(line)-2])
		if size < 0 {
			return nil, errRedisNoKey
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(r.reader, data); err != nil {
			return nil, err
		}
		return data[:size], nil
	}
	return nil, fmt.Errorf("redis: %s", line)
}
