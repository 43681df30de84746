package kafka_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/kafka"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

var txSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// txRow is the record value the sink writes for row id.
func txRow(id int) string { return fmt.Sprintf(`{"id":%d,"name":"r%d"}`, id, id) }

// txRows are the values of rows [from, to).
func txRows(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, txRow(i))
	}
	return out
}

// txBatch holds rows [from, to), keyed by name.
func txBatch(mem memory.Allocator, from, to int) *vector.Batch {
	b := array.NewRecordBuilder(mem, txSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("r%d", i))
	}
	return vector.New(b.NewRecordBatch())
}

// newTxSink opens the kafka sink of table out on topic with
// delivery_guarantee = 'exactly_once' and extra options; warnings go to the
// returned buffer.
func newTxSink(t *testing.T, addr, topic string, opts ...string) (engine.TwoPhaseSink, *syncBuffer) {
	t.Helper()
	raw := map[string]string{"connector": "kafka", "brokers": addr, "topic": topic, "key_column": "name", "delivery_guarantee": "exactly_once"}
	for i := 0; i+1 < len(opts); i += 2 {
		raw[opts[i]] = opts[i+1]
	}
	o, err := kafka.Connector{}.Spec().Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	warn := &syncBuffer{}
	s, err := kafka.Connector{}.NewSink(&connectors.Table{Name: "out", Schema: txSchema, Options: o, Runtime: connectors.Runtime{Stderr: warn}})
	if err != nil {
		t.Fatal(err)
	}
	tp, ok := s.(engine.TwoPhaseSink)
	if !ok {
		t.Fatalf("exactly_once sink is a %T, not an engine.TwoPhaseSink", s)
	}
	if err := tp.StartTransactions(); err != nil {
		t.Fatal(err)
	}
	return tp, warn
}

// write hands rows [from, to) to the sink.
func write(t *testing.T, s engine.Sink, mem memory.Allocator, from, to int) {
	t.Helper()
	if err := s.Write(txBatch(mem, from, to)); err != nil {
		t.Fatal(err)
	}
}

// snapshotTo writes the sink's state as checkpoint id of store; with
// complete the manifest is committed, otherwise the checkpoint stays
// incomplete (a crash before it completed).
func snapshotTo(t *testing.T, store *checkpoint.Store, s engine.TwoPhaseSink, id uint64, complete bool) {
	t.Helper()
	w, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	snap := &engine.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: memory.DefaultAllocator,
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return w.Part("sink_out", 0, slots) }}
	if err := s.SnapshotState(snap); err != nil {
		t.Fatal(err)
	}
	if complete {
		if err := w.Commit(checkpoint.Meta{Job: "test"}); err != nil {
			t.Fatal(err)
		}
	}
}

// restoreFrom restores the sink from complete checkpoint id.
func restoreFrom(t *testing.T, store *checkpoint.Store, s engine.TwoPhaseSink, id uint64) error {
	t.Helper()
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	part, err := cp.ReadPart("sink_out", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer part.Release()
	return s.RestoreState(&engine.Restore{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: 1, Parts: []*checkpoint.Part{part}})
}

// consumeValues reads a topic to its end (a read_committed consumer stops
// at the last stable offset) and returns the values, sorted.
func consumeValues(t *testing.T, addr, topic string, committed bool) []string {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 {
			sort.Strings(out)
			return out
		}
	}
}

// consumeAtLeast reads the topic from the start (as consumeValues) until
// it sees at least n records or 10 s passed: on a loaded machine one
// partition's records may come a quiet interval after another's.
func consumeAtLeast(t *testing.T, addr, topic string, committed bool, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := consumeValues(t, addr, topic, committed)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
	}
}

// waitValues waits until a read_uncommitted consumer sees n records.
func waitValues(t *testing.T, addr, topic string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := consumeValues(t, addr, topic, false)
		if len(got) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records in %s, want %d", len(got), topic, n)
		}
	}
}

// sameRows fails unless got holds exactly want (any order), each once.
func sameRows(t *testing.T, what string, got []string, want ...[]string) {
	t.Helper()
	var w []string
	for _, l := range want {
		w = append(w, l...)
	}
	sort.Strings(w)
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Fatalf("%s: %d records\n%s\nwant %d\n%s", what, len(got), strings.Join(got, "\n"), len(w), strings.Join(w, "\n"))
	}
}

// setTransactionVersion finalizes the cluster's transaction.version:
// franz-go's transactions use KIP-890 (EndTxn v5, an epoch bump per
// commit) at 2, kfake's default, and the older protocol at 1.
func setTransactionVersion(t *testing.T, addr string, level int16) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	fu.Feature = "transaction.version"
	fu.MaxVersionLevel = level
	fu.UpgradeType = 2 // safe downgrade
	req.FeatureUpdates = append(req.FeatureUpdates, fu)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatal(err)
		}
	}
}

// eachTransactionVersion runs f against a broker with KIP-890
// transactions (transaction.version 2) and one without (1).
func eachTransactionVersion(t *testing.T, f func(t *testing.T, addr string)) {
	for _, level := range []int16{2, 1} {
		t.Run(fmt.Sprintf("transaction.version=%d", level), func(t *testing.T) {
			b := broker(t, "out:3", "out2:2")
			if level != 2 {
				setTransactionVersion(t, b.Addr(), level)
			}
			f(t, b.Addr())
		})
	}
}

// Rows written in a transaction are in the log at once but invisible to a
// read_committed consumer until the checkpoint that lists them commits;
// each checkpoint's rows become visible together.
func TestTxSinkInvisibleUntilCommit(t *testing.T) {
	eachTransactionVersion(t, func(t *testing.T, addr string) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := newTxSink(t, addr, "out")
		defer s.Close()
		write(t, s, mem, 0, 5)
		write(t, s, mem, 5, 12)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, s, 1, true)
		write(t, s, mem, 12, 20)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, s, 2, true)
		sameRows(t, "read_uncommitted before commit", consumeAtLeast(t, addr, "out", false, 20), txRows(0, 20))
		sameRows(t, "read_committed before commit", consumeValues(t, addr, "out", true))
		if err := s.Commit(1); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "read_committed after commit 1", consumeAtLeast(t, addr, "out", true, 12), txRows(0, 12))
		if err := s.Commit(2); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(2); err != nil { // idempotent
			t.Fatal(err)
		}
		sameRows(t, "read_committed after commit 2", consumeAtLeast(t, addr, "out", true, 20), txRows(0, 20))
		st := s.(engine.StatsReporter).Stats()
		if st["rows_written"] != 20 || st["rows_committed"] != 20 || st["transactions_committed"] != 2 {
			t.Errorf("stats %v", st)
		}
		if mem.CurrentAlloc() != 0 {
			t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
		}
	})
}

// A crash: sink A completes checkpoint 1 (manifest and commit), then
// pre-commits a transaction for checkpoint 2, whose manifest is never
// written, and leaves a third transaction open, and dies without Commit,
// Abort or Close. Sink B restores checkpoint 1: a read_committed consumer
// sees exactly checkpoint 1's rows, once, never the abandoned ones; B
// reuses the abandoned transactional ids and commits more.
func TestTxSinkCrashRestore(t *testing.T) {
	eachTransactionVersion(t, func(t *testing.T, addr string) {
		mem := memory.NewGoAllocator()
		dir := t.TempDir()
		store, err := checkpoint.NewStore(dir, checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := newTxSink(t, addr, "out")
		t.Cleanup(func() { a.Close() }) // only after the test: a dead process closes nothing
		write(t, a, mem, 0, 10)
		if err := a.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, a, 1, true)
		if err := a.Commit(1); err != nil {
			t.Fatal(err)
		}
		write(t, a, mem, 100, 110)
		if err := a.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, a, 2, false)
		write(t, a, mem, 200, 210) // open, never pre-committed
		waitValues(t, addr, "out", 30)

		store, err = checkpoint.NewStore(dir, checkpoint.Options{}) // a new process
		if err != nil {
			t.Fatal(err)
		}
		b, warn := newTxSink(t, addr, "out")
		defer b.Close()
		if err := restoreFrom(t, store, b, 1); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "read_committed after restore", consumeAtLeast(t, addr, "out", true, 10), txRows(0, 10))
		write(t, b, mem, 10, 20)
		if err := b.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, b, 2, true) // replaces A's incomplete checkpoint 2
		if err := b.Commit(2); err != nil {
			t.Fatal(err)
		}
		write(t, b, mem, 20, 25)
		if err := b.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, b, 3, true)
		if err := b.Commit(3); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "read_committed after B's commits", consumeAtLeast(t, addr, "out", true, 25), txRows(0, 25))
		// A's checkpoint 1; A's abandoned pre-committed and open ones,
		// aborted, then B's checkpoints 2 and 3; the probe's stop, never
		// used. None is open.
		sameRows(t, "transactions", listTransactions(t, addr), []string{"clink-out-0-1", "clink-out-0-2", "clink-out-0-3", "clink-out-0-4"})
		if w := warn.lines(); len(w) > 0 {
			t.Errorf("warnings: %s", w)
		}
	})
}

// listTransactions lists the cluster's transactional ids; an open
// transaction is an error.
func listTransactions(t *testing.T, addr string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ts := range resp.TransactionStates {
		ids = append(ids, ts.TransactionalID)
	}
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = ids
	dresp, err := dreq.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ts := range dresp.TransactionStates {
		if ts.State == "Ongoing" {
			t.Errorf("transaction %s is open", ts.TransactionalID)
		}
		out = append(out, ts.TransactionalID)
	}
	sort.Strings(out)
	return out
}

// A crash after checkpoint 1's manifest but before its Commit: the restore
// commits the listed transaction. A second restore from the same
// checkpoint (after a crash during the first run after it) finds it
// committed already and writes nothing twice.
func TestTxSinkCrashBeforeCommit(t *testing.T) {
	eachTransactionVersion(t, func(t *testing.T, addr string) {
		mem := memory.NewGoAllocator()
		dir := t.TempDir()
		store, err := checkpoint.NewStore(dir, checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := newTxSink(t, addr, "out")
		t.Cleanup(func() { a.Close() })
		write(t, a, mem, 0, 10)
		if err := a.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, a, 1, true) // no Commit: the crash
		sameRows(t, "read_committed after the crash", consumeValues(t, addr, "out", true))

		for run := 0; run < 2; run++ {
			b, warn := newTxSink(t, addr, "out")
			if err := restoreFrom(t, store, b, 1); err != nil {
				t.Fatal(err)
			}
			sameRows(t, fmt.Sprintf("read_committed after restore %d", run+1), consumeAtLeast(t, addr, "out", true, 10), txRows(0, 10))
			write(t, b, mem, 10, 15) // lingers: the next restore aborts it
			if err := b.PreCommit(); err != nil {
				t.Fatal(err)
			}
			if w := warn.lines(); len(w) > 0 {
				t.Errorf("warnings: %s", w)
			}
			t.Cleanup(func() { b.Close() })
		}
		c, _ := newTxSink(t, addr, "out")
		defer c.Close()
		if err := restoreFrom(t, store, c, 1); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "read_committed after restore 3", consumeAtLeast(t, addr, "out", true, 10), txRows(0, 10))
	})
}

// A restore from a checkpoint whose transactions its run had committed
// already (the crash came later): nothing is written twice, and the
// transactions of the checkpoint before it, committed and no longer listed,
// are left alone.
func TestTxSinkRestoreAfterCommit(t *testing.T) {
	eachTransactionVersion(t, func(t *testing.T, addr string) {
		mem := memory.NewGoAllocator()
		dir := t.TempDir()
		store, err := checkpoint.NewStore(dir, checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := newTxSink(t, addr, "out")
		t.Cleanup(func() { a.Close() })
		for id := 1; id <= 2; id++ {
			write(t, a, mem, 10*(id-1), 10*id)
			if err := a.PreCommit(); err != nil {
				t.Fatal(err)
			}
			snapshotTo(t, store, a, uint64(id), true)
			if err := a.Commit(uint64(id)); err != nil {
				t.Fatal(err)
			}
		}
		b, warn := newTxSink(t, addr, "out")
		defer b.Close()
		if err := restoreFrom(t, store, b, 2); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "read_committed after restore", consumeAtLeast(t, addr, "out", true, 20), txRows(0, 20))
		if w := warn.lines(); len(w) > 0 {
			t.Errorf("warnings: %s", w)
		}
	})
}

// The transaction the crashed run left open after the restored checkpoint
// holds a read_committed consumer at its first offset (the last stable
// offset), also for records of other producers after it; the restore
// aborts it and the consumer moves on.
func TestTxSinkLingeringDoesNotBlock(t *testing.T) {
	b := broker(t, "out:1")
	addr := b.Addr()
	mem := memory.NewGoAllocator()
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newTxSink(t, addr, "out")
	t.Cleanup(func() { a.Close() })
	write(t, a, mem, 0, 10)
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, a, 1, true)
	if err := a.Commit(1); err != nil {
		t.Fatal(err)
	}
	write(t, a, mem, 100, 110) // open when the run dies
	waitValues(t, addr, "out", 20)
	produce(t, addr, "out", rec{0, "", "after"})
	sameRows(t, "read_committed with the lingering transaction", consumeAtLeast(t, addr, "out", true, 10), txRows(0, 10))

	s, _ := newTxSink(t, addr, "out")
	defer s.Close()
	if err := restoreFrom(t, store, s, 1); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "read_committed after restore", consumeAtLeast(t, addr, "out", true, 11), txRows(0, 10), []string{"after"})
}

// A listed transaction the coordinator no longer has at its epoch (here
// someone initialized its id again after the commit) counts as committed,
// with a warning; one the brokers aborted at its timeout is lost: an
// error where the coordinator can tell (KIP-890: INVALID_TXN_STATE), a
// warning where it cannot (PRODUCER_FENCED).
func TestTxSinkFencedAndTimedOut(t *testing.T) {
	eachTransactionVersion(t, func(t *testing.T, addr string) {
		mem := memory.NewGoAllocator()
		store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := newTxSink(t, addr, "out")
		t.Cleanup(func() { a.Close() })
		write(t, a, mem, 0, 10)
		if err := a.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, a, 1, true)
		if err := a.Commit(1); err != nil {
			t.Fatal(err)
		}
		bumpEpoch(t, addr, "clink-out-0-1")
		b, warn := newTxSink(t, addr, "out")
		defer b.Close()
		if err := restoreFrom(t, store, b, 1); err != nil {
			t.Fatal(err)
		}
		if w := warn.lines(); len(w) != 1 || !strings.Contains(w[0], "transaction clink-out-0-1 of checkpoint 1 was ended before (PRODUCER_FENCED") {
			t.Errorf("warnings: %q", w)
		}
		sameRows(t, "read_committed", consumeAtLeast(t, addr, "out", true, 10), txRows(0, 10))

		c, _ := newTxSink(t, addr, "out2", "transaction_timeout_ms", "300", "transactional_id_prefix", "job2")
		defer c.Close()
		write(t, c, mem, 0, 10)
		if err := c.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, c, 2, true)
		time.Sleep(time.Second) // the brokers abort it
		d, warn := newTxSink(t, addr, "out2", "transaction_timeout_ms", "300", "transactional_id_prefix", "job2")
		defer d.Close()
		err = restoreFrom(t, store, d, 2)
		if v2 := strings.HasSuffix(t.Name(), "=2"); v2 {
			if err == nil || !strings.Contains(err.Error(), "kafka sink 'out': restoring checkpoint 2: transaction job2-0-1 of checkpoint 2 was aborted, its rows are lost (did it outlive transaction_timeout_ms = 300?): INVALID_TXN_STATE") {
				t.Errorf("error %v", err)
			}
		} else if w := warn.lines(); err != nil || len(w) != 1 || !strings.Contains(w[0], "PRODUCER_FENCED") {
			t.Errorf("error %v, warnings %q", err, w)
		}
		sameRows(t, "read_committed out2", consumeValues(t, addr, "out2", true))
	})
}

// bumpEpoch initializes a transactional id as a new producer would.
func bumpEpoch(t *testing.T, addr, id string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = 60000
	resp, err := req.RequestWith(context.Background(), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Without checkpoints an exactly_once sink refuses its first row; the
// transaction options need exactly_once.
func TestTxSinkNeedsCheckpoints(t *testing.T) {
	b := broker(t, "in:1", "out:1")
	produce(t, b.Addr(), "in", rec{0, "", reading("a", 1, 1)})
	src := table("r", cols, b.Addr(), "in", "scan_bounded", "latest")
	res := job(t, src+table("out", cols, b.Addr(), "out", "delivery_guarantee", "exactly_once")+"INSERT INTO out SELECT * FROM r", 1024, 0, 30*time.Second)
	if want := "kafka sink 'out': delivery_guarantee 'exactly_once' needs checkpoints (clink run --checkpoint-dir)"; res.err == nil || res.err.Error() != want {
		t.Errorf("error %v, want %s", res.err, want)
	}
	res = job(t, src+table("out", cols, b.Addr(), "out", "sink.delivery-guarantee", "exactly-once")+"INSERT INTO out SELECT * FROM r WHERE v < 0", 1024, 0, 30*time.Second)
	if want := "kafka sink 'out': delivery_guarantee 'exactly_once' needs checkpoints (clink run --checkpoint-dir)"; res.err == nil || res.err.Error() != want {
		t.Errorf("without rows: error %v, want %s", res.err, want)
	}
	res = job(t, src+table("out", cols, b.Addr(), "out", "transactional_id_prefix", "x")+"INSERT INTO out SELECT * FROM r", 1024, 0, 30*time.Second)
	if want := "option 'transactional_id_prefix' needs delivery_guarantee 'exactly_once'"; res.err == nil || !strings.Contains(res.err.Error(), want) {
		t.Errorf("error %v, want %s", res.err, want)
	}
	got := consumeValues(t, b.Addr(), "out", false)
	if len(got) != 0 {
		t.Errorf("records in out: %q", got)
	}
}

// A restore with another transactional_id_prefix aborts what the old
// prefix left open and starts the new prefix's ids from scratch.
func TestTxSinkPrefixChange(t *testing.T) {
	b := broker(t, "out:2")
	addr := b.Addr()
	mem := memory.NewGoAllocator()
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newTxSink(t, addr, "out", "transactional_id_prefix", "old")
	t.Cleanup(func() { a.Close() })
	write(t, a, mem, 0, 10)
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, a, 1, true)
	if err := a.Commit(1); err != nil {
		t.Fatal(err)
	}
	write(t, a, mem, 100, 110) // open when the run dies
	waitValues(t, addr, "out", 20)

	s, _ := newTxSink(t, addr, "out", "sink.transactional-id-prefix", "new")
	defer s.Close()
	if err := restoreFrom(t, store, s, 1); err != nil {
		t.Fatal(err)
	}
	write(t, s, mem, 10, 20)
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, s, 2, true)
	if err := s.Commit(2); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "read_committed", consumeAtLeast(t, addr, "out", true, 20), txRows(0, 20))
	sameRows(t, "transactions", listTransactions(t, addr), []string{"new-0-1", "old-0-1", "old-0-2", "old-0-3"})
}

// A transaction timeout above the brokers' transaction.max.timeout.ms is
// refused naming the option.
func TestTxSinkTimeoutTooLong(t *testing.T) {
	b := broker(t, "out:1")
	s, _ := newTxSink(t, b.Addr(), "out", "properties.transaction.timeout.ms", "3600000")
	defer s.Close()
	err := s.Write(txBatch(memory.DefaultAllocator, 0, 1))
	if want := "kafka sink 'out': transaction_timeout_ms = 3600000 is more than the brokers allow (transaction.max.timeout.ms)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
