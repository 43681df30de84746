package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Broker starts the dev broker (clink kafka serve) as a process of its own
// with topics ("name:partitions") and returns its address; it is stopped
// at cleanup.
func Broker(t *testing.T, bin string, topics ...string) string {
	t.Helper()
	args := []string{"kafka", "serve", "--port", "0"}
	for _, tp := range topics {
		args = append(args, "--topic", tp)
	}
	cmd := exec.Command(bin, args...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		if !ok {
			t.Fatalf("clink kafka serve printed no address: %s", stderr.String())
		}
		return addr
	case <-time.After(30 * time.Second):
		t.Fatalf("clink kafka serve did not start: %s", stderr.String())
	}
	return ""
}

// Stream produces recs to topic in order, at about rate records a second.
func Stream(addr, topic string, recs []Record, rate int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var firstErr error
	done := func(_ *kgo.Record, err error) {
		mu.Lock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	start := time.Now()
	for n, r := range recs {
		cl.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value, Partition: r.Partition}, done)
		if rate > 0 && n%100 == 99 {
			if d := time.Duration(n+1) * time.Second / time.Duration(rate); time.Since(start) < d {
				time.Sleep(d - time.Since(start))
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("producing to %s: %w", topic, firstErr)
	}
	return nil
}

// ReadCommitted reads every committed record of topic (isolation
// read_committed) until the topic is quiet, as lines.
func ReadCommitted(t *testing.T, addr, topic string) []byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out bytes.Buffer
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			out.Write(r.Value)
			out.WriteByte('\n')
			n++
		})
		if n == 0 {
			return out.Bytes()
		}
	}
}
