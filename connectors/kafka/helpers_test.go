package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/kafka"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// broker starts an in-process dev broker with the given topics
// ("name:partitions").
func broker(t *testing.T, topics ...string) *kafka.Broker {
	t.Helper()
	cfg := kafka.BrokerConfig{}
	for _, s := range topics {
		ts, err := kafka.ParseTopicSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Topics = append(cfg.Topics, ts)
	}
	b, err := kafka.StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// rec is a record to produce: partition, optional key, value.
type rec struct {
	p     int32
	key   string
	value string
}

// produce writes records, in order, to the given partitions.
func produce(t *testing.T, addr, topic string, recs ...rec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		rs[i] = &kgo.Record{Partition: r.p, Value: []byte(r.value)}
		if r.key != "" {
			rs[i].Key = []byte(r.key)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consumeAll reads every record of a topic (all partitions, to the end).
func consumeAll(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if n == 0 {
			return out
		}
	}
}

// syncBuffer is a concurrency-safe writer for a job's printed rows.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// result is what a job run gave.
type result struct {
	rows  []string // sorted
	stats []*engine.Stats
	err   error
}

func (r result) total(key string) int64 {
	var n int64
	for _, s := range r.stats {
		if s != nil {
			n += s.Total(key)
		}
	}
	return n
}

// running is a job running in the background.
type running struct {
	t      *testing.T
	out    *syncBuffer
	mem    *memory.CheckedAllocator
	cancel context.CancelFunc
	done   chan struct{}
	stats  []*engine.Stats
	err    error
	// sources are the job's Kafka sources.
	sources []*kafka.Source
}

// start plans and starts SQL embedded with the given batch size.
func start(t *testing.T, script string, batch int, timeout time.Duration) (*running, error) {
	return startAt(t, script, batch, 1, timeout)
}

// startAt plans and starts SQL embedded with the given batch size at the
// given parallelism, and notes the job's Kafka sources.
func startAt(t *testing.T, script string, batch, parallelism int, timeout time.Duration) (*running, error) {
	t.Helper()
	reg := builtin.Registry()
	plan, err := sql.Compile(script, reg)
	if err != nil {
		return nil, err
	}
	r := &running{t: t, out: &syncBuffer{}, mem: memory.NewCheckedAllocator(memory.NewGoAllocator()), done: make(chan struct{})}
	rt := connectors.Runtime{BatchSize: batch, Linger: 5 * time.Millisecond, Mem: r.mem, Stdout: r.out, Stderr: r.out}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	j, err := planner.BuildParallel(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt}, parallelism)
	if err != nil {
		return nil, err
	}
	var walk func(n *engine.Node)
	walk = func(n *engine.Node) {
		if src, ok := n.Source.(*kafka.Source); ok {
			r.sources = append(r.sources, src)
		}
		for _, in := range n.Inputs {
			walk(in)
		}
	}
	for _, p := range j.Pipelines {
		walk(p.Root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.stats, r.err = j.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r, nil
}

// waitRows waits until n rows were printed (or the job ended); then it
// gives wrong extra rows a moment to show up.
func (r *running) waitRows(n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for len(r.out.lines()) < n && time.Now().Before(deadline) {
		select {
		case <-r.done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond)
}

// stop stops the job (if it still runs) and returns its result.
func (r *running) stop() result {
	r.cancel()
	<-r.done
	return r.result()
}

// wait waits for the job to end by itself.
func (r *running) wait() result {
	<-r.done
	return r.result()
}

func (r *running) result() result {
	err := r.err
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if err == nil && r.mem.CurrentAlloc() != 0 {
		r.t.Errorf("memory leak: %d bytes still allocated after the run", r.mem.CurrentAlloc())
	}
	rows := r.out.lines()
	sort.Strings(rows)
	return result{rows: rows, stats: r.stats, err: err}
}

// job runs SQL embedded with the given batch size. With until > 0 it is
// stopped once that many rows were printed (or after timeout); a bounded
// job ends by itself. The allocator must be back to zero.
func job(t *testing.T, script string, batch, until int, timeout time.Duration) result {
	t.Helper()
	r, err := start(t, script, batch, timeout)
	if err != nil {
		return result{err: err}
	}
	if until > 0 {
		r.waitRows(until, timeout)
		return r.stop()
	}
	return r.wait()
}

// table is a CREATE TABLE of a kafka source with extra options.
func table(name, cols, addr, topic string, opts ...string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE " + name + " (" + cols + ") WITH ('connector' = 'kafka', 'brokers' = '" + addr + "', 'topic' = '" + topic + "'")
	for i := 0; i+1 < len(opts); i += 2 {
		b.WriteString(", '" + opts[i] + "' = '" + opts[i+1] + "'")
	}
	b.WriteString(");\n")
	return b.String()
}

func reading(sensor string, ts int64, v int) string {
	return `{"sensor_id":"` + sensor + `","ts":` + strconv.FormatInt(ts, 10) + `,"v":` + strconv.Itoa(v) + `}`
}
