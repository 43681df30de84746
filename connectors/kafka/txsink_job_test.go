package kafka_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// checkpointedJob plans script with checkpoints in dir, restoring the
// latest complete one, if any.
func checkpointedJob(t *testing.T, script, dir string, mem memory.Allocator) *planner.Job {
	t.Helper()
	reg := builtin.Registry()
	plan, err := sql.Compile(script, reg)
	if err != nil {
		t.Fatal(err)
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	rt := connectors.Runtime{BatchSize: 7, Linger: 5 * time.Millisecond, Mem: mem, Stdout: &syncBuffer{}, Stderr: &syncBuffer{}}
	j, err := planner.Build(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Checkpoint = &engine.CheckpointConfig{Store: store, Interval: 20 * time.Millisecond, Job: "test", Mem: mem}
	if id, ok, err := store.Latest(); err != nil {
		t.Fatal(err)
	} else if ok {
		if j.Checkpoint.Restore, err = store.Open(id); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// A job from an unbounded topic into an exactly_once sink, stopped after a
// few checkpoints and started again from the latest: a read_committed
// consumer of its output sees every input row exactly once.
func TestTxSinkJobRestart(t *testing.T) {
	b := broker(t, "in:2", "out:3")
	var input []rec
	var want []string
	for i := 0; i < 300; i++ {
		v := reading(string(rune('a'+i%7)), int64(i), i)
		input = append(input, rec{int32(i % 2), "", v})
		want = append(want, v)
	}
	// The input trickles in while the first run is stopped after its third
	// checkpoint: it stops with rows in flight.
	produced := make(chan error, 1)
	go func() { produced <- trickle(b.Addr(), "in", input, 2*time.Millisecond) }()
	script := table("r", cols, b.Addr(), "in") +
		table("out", cols, b.Addr(), "out", "delivery_guarantee", "exactly_once", "key_column", "sensor_id") +
		"INSERT INTO out SELECT * FROM r"
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())

	j := checkpointedJob(t, script, dir, mem)
	if g := j.Guarantee(); g != "EXACTLY_ONCE" {
		t.Errorf("guarantee %s", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var completed atomic.Int64
	j.Checkpoint.OnComplete = func(id uint64) {
		if completed.Add(1) == 3 {
			cancel()
		}
	}
	if _, err := j.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if completed.Load() < 3 {
		t.Fatalf("%d checkpoints completed", completed.Load())
	}
	first := consumeValues(t, b.Addr(), "out", true)
	if len(first) == 0 || len(first) == len(input) {
		t.Fatalf("the first run committed %d rows", len(first))
	}
	t.Logf("first run: %d rows committed, %d written", len(first), len(consumeValues(t, b.Addr(), "out", false)))

	j = checkpointedJob(t, script, dir, mem)
	if j.Checkpoint.Restore == nil {
		t.Fatal("no checkpoint to restore")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := j.Run(ctx); done <- err }()
	deadline := time.Now().Add(20 * time.Second)
	var got []string
	for time.Now().Before(deadline) {
		if got = consumeValues(t, b.Addr(), "out", true); len(got) >= len(want) {
			break
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	sameRows(t, "read_committed output", got, want)
	if mem.CurrentAlloc() != 0 {
		t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
	}
}

// trickle produces records one at a time, pausing between them.
func trickle(addr, topic string, recs []rec, pause time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, r := range recs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Partition: r.p, Value: []byte(r.value)}).FirstErr()
		cancel()
		if err != nil {
			return err
		}
		time.Sleep(pause)
	}
	return nil
}
