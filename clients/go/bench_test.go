package ctxstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	ctxstore "ctxstore.dev/client"
)

// A 20-message consultation, as the Go service keeps it.
func benchSession() []UntaggedMsg {
	start := time.Date(2026, 11, 29, 8, 15, 2, 123456789, time.FixedZone("", 8*3600))
	out := make([]UntaggedMsg, 20)
	for i := range out {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = UntaggedMsg{role, fmt.Sprintf("我膝盖有下坠感，第%d句", i), fmt.Sprintf("turn_%04d", i/2), start.Add(time.Duration(i) * time.Second), nil}
	}
	return out
}

// BenchmarkStorageSaveLoad: one Save and one Load through the ctxstore client.
func BenchmarkStorageSaveLoad(b *testing.B) {
	storage := ctxstore.NewStorage[UntaggedMsg](live(b))
	benchSaveLoad(b, storage.Save, storage.Load, storage.Delete)
}

// BenchmarkRedisSaveLoad: the same through the seed's redisStorage (json.Marshal, SET;
// GET, json.Unmarshal) on a Redis of $CTXSTORE_BENCH_REDIS_ADDR.
func BenchmarkRedisSaveLoad(b *testing.B) {
	addr := os.Getenv("CTXSTORE_BENCH_REDIS_ADDR")
	if addr == "" {
		b.Skip("CTXSTORE_BENCH_REDIS_ADDR names no Redis (benchmarks/bench_go_client.py sets it)")
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	redis := &resp{conn: conn, reader: bufio.NewReader(conn)}
	save := func(_ context.Context, id string, messages []UntaggedMsg) error {
		data, err := json.Marshal(messages)
		if err != nil {
			return err
		}
		_, err = redis.do("SET", "ctxstore-bench:"+id, string(data))
		return err
	}
	load := func(_ context.Context, id string) ([]UntaggedMsg, error) {
		data, err := redis.do("GET", "ctxstore-bench:"+id)
		var out []UntaggedMsg
		if err == nil {
			err = json.Unmarshal(data, &out)
		}
		return out, err
	}
	remove := func(_ context.Context, id string) error {
		_, err := redis.do("DEL", "ctxstore-bench:"+id)
		return err
	}
	benchSaveLoad(b, save, load, remove)
}

func benchSaveLoad(
	b *testing.B,
	save func(context.Context, string, []UntaggedMsg) error,
	load func(context.Context, string) ([]UntaggedMsg, error),
	remove func(context.Context, string) error,
) {
	ctx := context.Background()
	session := benchSession()
	id := fmt.Sprintf("go-bench-%d", time.Now().UnixNano())
	defer func() { _ = remove(ctx, id) }()
	b.Run("save", func(b *testing.B) {
		// Each Save adds the next turn to what is stored, as a service's turn does.
		for i := 0; i < b.N; i++ {
			if err := save(ctx, fmt.Sprintf("%s-%d", id, i%50), session[:len(session)-(i%2)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err := save(ctx, id, session); err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			loaded, err := load(ctx, id)
			if err != nil || len(loaded) != len(session) {
				b.Fatalf("load: %d messages, %v", len(loaded), err)
			}
		}
	})
	for i := 0; i < 50; i++ {
		_ = remove(ctx, fmt.Sprintf("%s-%d", id, i))
	}
}

// resp is just enough of the Redis protocol for SET, GET and DEL.
type resp struct {
	conn   net.Conn
	reader *bufio.Reader
}

func (r *resp) do(args ...string) ([]byte, error) {
	out := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, arg := range args {
		out += "$" + strconv.Itoa(len(arg)) + "\r\n" + arg + "\r\n"
	}
	if _, err := r.conn.Write([]byte(out)); err != nil {
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
			return nil, fmt.Errorf("redis: no such key")
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(r.reader, data); err != nil {
			return nil, err
		}
		return data[:size], nil
	}
	return nil, fmt.Errorf("redis: %s", line)
}
