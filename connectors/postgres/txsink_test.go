package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/postgres/pgtest"
	"github.com/clink-dev/clink/engine"
)

// txOpen opens the exactly-once sink of Clink table "out" (writing table)
// as subtask of par, with transactions started.
func txOpen(t *testing.T, url, table string, subtask, par int, opts ...string) *TxSink {
	t.Helper()
	s, err := openSinkAt(t, url, "out", errSchema, subtask, par, append([]string{"table", table, "delivery_guarantee", "exactly_once", "transaction_id_prefix", "tx-" + table}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tx, ok := s.(*TxSink)
	if !ok {
		t.Fatalf("exactly_once sink is a %T", s)
	}
	if err := tx.StartTransactions(); err != nil {
		t.Fatal(err)
	}
	return tx
}

// rows are (id, 'r<id>') for ids [from, to).
func rows(from, to int) [][]any {
	var out [][]any
	for i := from; i < to; i++ {
		out = append(out, []any{int64(i), fmt.Sprintf("r%d", i)})
	}
	return out
}

func lines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%d|r%d", i, i))
	}
	return out
}

func txWrite(t *testing.T, s engine.Sink, from, to int) {
	t.Helper()
	if err := s.Write(batch(memory.DefaultAllocator, errSchema, rows(from, to), nil)); err != nil {
		t.Fatal(err)
	}
}

// ckpt is a checkpoint being taken in a test: the sinks' parts go into w.
type ckpt struct {
	id uint64
	w  *checkpoint.Writer
}

func begin(t *testing.T, store *checkpoint.Store, id uint64) *ckpt {
	t.Helper()
	w, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	return &ckpt{id: id, w: w}
}

// barrier pre-commits s and writes its part, as the engine does at a
// barrier.
func (c *ckpt) barrier(t *testing.T, s *TxSink) {
	t.Helper()
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snap := &engine.Snapshot{ID: c.id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: memory.DefaultAllocator,
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) {
			return c.w.Part("sink_out", s.subtask, slots)
		}}
	if err := s.SnapshotState(snap); err != nil {
		t.Fatal(err)
	}
}

// complete writes the manifest: the checkpoint is complete.
func (c *ckpt) complete(t *testing.T) {
	t.Helper()
	if err := c.w.Commit(checkpoint.Meta{Job: "test"}); err != nil {
		t.Fatal(err)
	}
}

// restore restores s (subtask of par) from checkpoint id, with every part
// of the sink, as the engine does.
func restore(t *testing.T, store *checkpoint.Store, id uint64, s *TxSink, par int) error {
	t.Helper()
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	r := &engine.Restore{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: par, Subtask: s.subtask}
	for _, pi := range cp.PartsOf("sink_out") {
		part, err := cp.ReadPart(pi.Operator, pi.Subtask)
		if err != nil {
			t.Fatal(err)
		}
		defer part.Release()
		r.Parts = append(r.Parts, part)
	}
	return s.RestoreState(r)
}

// prepared lists the prepared transactions of the server (any database),
// as "database/gid", sorted.
func prepared(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	return query(t, conn, "SELECT database || '/' || gid FROM pg_prepared_xacts")
}

// prepareByHand leaves a prepared transaction gid in database db that
// inserts row id into table.
func prepareByHand(t *testing.T, srv *pgtest.Server, db, table, gid string, id int) {
	t.Helper()
	srv.Exec(t, db, fmt.Sprintf("BEGIN; INSERT INTO %s VALUES (%d, 'r%d'); PREPARE TRANSACTION '%s'", table, id, id, gid))
}

// The two-phase cycle with crashes: rows are invisible until Commit; a
// crash between PreCommit and Commit of a complete checkpoint leaves the
// transaction prepared, and the restore commits it; a crash after the
// commit, restored from the same checkpoint, commits nothing twice; a
// crash before a checkpoint completed rolls its transaction back.
func TestExactlyOnceCycle(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, "CREATE TABLE w (id bigint PRIMARY KEY, name text)")
	conn := srv.Connect(t, db)
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	table := func() []string { return query(t, conn, "SELECT id, name FROM w") }
	// A transaction an earlier run of this sink left prepared: a fresh
	// start rolls it back. Another prefix's is left alone.
	prepareByHand(t, srv, db, "w", "tx-w:0:7", 1000)
	prepareByHand(t, srv, db, "w", "tx-w2:0:1", 2000)

	// Run 1.
	s := txOpen(t, url, "w", 0, 1, "batch_rows", "40")
	txWrite(t, s, 0, 100) // two COPYs sent into the transaction, 20 rows buffered
	sameLines(t, "before the barrier", table(), nil)
	c1 := begin(t, store, 1)
	c1.barrier(t, s)
	c1.complete(t)
	sameLines(t, "prepared", prepared(t, conn), []string{db + "/tx-w2:0:1", db + "/tx-w:0:1"})
	sameLines(t, "prepared, not committed", table(), nil)
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "committed", table(), lines(0, 100))
	if err := s.Commit(1); err != nil { // again: nothing
		t.Fatal(err)
	}
	txWrite(t, s, 100, 150)
	c2 := begin(t, store, 2)
	c2.barrier(t, s)
	c2.complete(t)
	txWrite(t, s, 150, 170) // in the open transaction: lost with the crash
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	// Crash: checkpoint 2 is complete, its transaction prepared, not
	// committed; the transaction after it prepared too, but no complete
	// checkpoint lists it.
	s.Close()
	sameLines(t, "after the crash", table(), lines(0, 100))
	sameLines(t, "prepared after the crash", prepared(t, conn), []string{db + "/tx-w2:0:1", db + "/tx-w:0:2", db + "/tx-w:0:3"})

	// Run 2 restores checkpoint 2: it commits tx-w:0:2 and rolls back
	// tx-w:0:3; the rows after checkpoint 2 come again.
	s = txOpen(t, url, "w", 0, 1)
	if err := restore(t, store, 2, s, 1); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "restored", table(), lines(0, 150))
	sameLines(t, "prepared after the restore", prepared(t, conn), []string{db + "/tx-w2:0:1"})
	txWrite(t, s, 150, 200)
	c3 := begin(t, store, 3)
	c3.barrier(t, s)
	c3.complete(t)
	if err := s.Commit(3); err != nil {
		t.Fatal(err)
	}
	if s.seq != 4 {
		t.Errorf("next seq %d, want 4 (run 1 used 1..3, 3 was rolled back and is reused)", s.seq)
	}
	s.Close()
	sameLines(t, "run 2", table(), lines(0, 200))

	// Run 3 restores checkpoint 3 again (a crash after the commit): its
	// transaction is no longer prepared, which counts as committed.
	s = txOpen(t, url, "w", 0, 1)
	if err := restore(t, store, 3, s, 1); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st["rows_committed"] != 0 {
		t.Errorf("stats after an idempotent restore %v", st)
	}
	// Run 3 writes, crashes before checkpoint 4 completes (its part is
	// written, no manifest): restored from 3, the transaction is rolled
	// back.
	txWrite(t, s, 200, 230)
	c4 := begin(t, store, 4)
	c4.barrier(t, s)
	s.Close()
	c4.w.Abort()
	s = txOpen(t, url, "w", 0, 1)
	if err := restore(t, store, 3, s, 1); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "after an incomplete checkpoint", table(), lines(0, 200))
	sameLines(t, "nothing of ours prepared", prepared(t, conn), []string{db + "/tx-w2:0:1"})
	// Abort rolls the open transaction back.
	txWrite(t, s, 200, 210)
	if err := s.sendBuffer(); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := s.PreCommit(); err != nil { // nothing open: no transaction
		t.Fatal(err)
	}
	sameLines(t, "after Abort", prepared(t, conn), []string{db + "/tx-w2:0:1"})
	srv.Exec(t, db, "ROLLBACK PREPARED 'tx-w2:0:1'")
}

// A restore at another parallelism: each subtask commits the listed
// transactions of the checkpoint's subtasks k with k mod parallelism =
// its own, and rolls back the other prepared transactions of those
// subtasks, also of subtasks no checkpoint knows (a run at a higher
// parallelism that crashed).
func TestExactlyOnceRescale(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, "CREATE TABLE w (id bigint PRIMARY KEY, name text)")
	conn := srv.Connect(t, db)
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	table := func() []string { return query(t, conn, "SELECT id, name FROM w") }
	ours := func() []string {
		var out []string
		for _, p := range prepared(t, conn) {
			if strings.HasPrefix(p, db+"/tx-w:") {
				out = append(out, strings.TrimPrefix(p, db+"/"))
			}
		}
		return out
	}
	// Run 1 at parallelism 3: checkpoint 1 is complete and committed by
	// none (a crash), each subtask prepared one transaction after it.
	var sinks []*TxSink
	c1 := begin(t, store, 1)
	for k := range 3 {
		s := txOpen(t, url, "w", k, 3)
		txWrite(t, s, 100*k, 100*k+10)
		c1.barrier(t, s)
		sinks = append(sinks, s)
	}
	c1.complete(t)
	for k, s := range sinks {
		txWrite(t, s, 100*k+10, 100*k+20)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	// And a prepared transaction of subtask 5, from an earlier run at a
	// higher parallelism.
	prepareByHand(t, srv, db, "w", "tx-w:5:3", 9999)
	sameLines(t, "prepared", ours(), []string{"tx-w:0:1", "tx-w:0:2", "tx-w:1:1", "tx-w:1:2", "tx-w:2:1", "tx-w:2:2", "tx-w:5:3"})

	// Run 2 at parallelism 2 restores checkpoint 1: subtask 0 finishes
	// subtasks 0 and 2 (and the orphan of 4... none), subtask 1 finishes 1
	// and the orphan of 5.
	s0, s1 := txOpen(t, url, "w", 0, 2), txOpen(t, url, "w", 1, 2)
	if err := restore(t, store, 1, s0, 2); err != nil {
		t.Fatal(err)
	}
	want := append(lines(0, 10), lines(200, 210)...)
	sameLines(t, "subtask 0 restored", table(), want)
	sameLines(t, "prepared after subtask 0", ours(), []string{"tx-w:1:1", "tx-w:1:2", "tx-w:5:3"})
	if err := restore(t, store, 1, s1, 2); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "both restored", table(), append(want, lines(100, 110)...))
	sameLines(t, "prepared after both", ours(), nil)
	if s0.seq != 2 || s1.seq != 2 {
		t.Errorf("next seqs %d %d", s0.seq, s1.seq)
	}
	// Checkpoint 2 of run 2 lists the transactions of both; a crash.
	c2 := begin(t, store, 2)
	for k, s := range []*TxSink{s0, s1} {
		txWrite(t, s, 1000+k*10, 1000+k*10+5)
		c2.barrier(t, s)
	}
	c2.complete(t)
	s0.Close()
	s1.Close()
	// Run 3 at parallelism 4: subtasks 2 and 3 are new; 3 rolls back a
	// lingering transaction of its index.
	prepareByHand(t, srv, db, "w", "tx-w:3:9", 8888)
	var run3 []*TxSink
	for k := range 4 {
		s := txOpen(t, url, "w", k, 4)
		if err := restore(t, store, 2, s, 4); err != nil {
			t.Fatal(err)
		}
		run3 = append(run3, s)
	}
	sameLines(t, "prepared after run 3's restore", ours(), nil)
	want = append(append(want, lines(100, 110)...), append(lines(1000, 1005), lines(1010, 1015)...)...)
	sameLines(t, "run 3", table(), want)
	if run3[0].seq != 3 || run3[1].seq != 3 || run3[2].seq != 1 || run3[3].seq != 1 {
		t.Errorf("next seqs %d %d %d %d", run3[0].seq, run3[1].seq, run3[2].seq, run3[3].seq)
	}
	// A fresh start (no checkpoint) at parallelism 2 rolls back what
	// lingers for its subtasks' shares.
	prepareByHand(t, srv, db, "w", "tx-w:2:4", 7777)
	prepareByHand(t, srv, db, "w", "tx-w:1:4", 6666)
	f0 := txOpen(t, url, "w", 0, 2)
	if err := f0.PreCommit(); err != nil { // the first call readies the sink
		t.Fatal(err)
	}
	sameLines(t, "after subtask 0's fresh start", ours(), []string{"tx-w:1:4"})
	f1 := txOpen(t, url, "w", 1, 2)
	if err := f1.PreCommit(); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "after both fresh starts", ours(), nil)
}

// Upsert and exactly once together: a changelog over several checkpoints
// and a crash; an update of a key that a prepared transaction holds waits
// for its commit, which comes from another goroutine (as the engine's
// checkpoint completion does).
func TestExactlyOnceUpsert(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, "CREATE TABLE up (k text PRIMARY KEY, n integer, v double precision, note text)")
	conn := srv.Connect(t, db)
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	open := func() *TxSink {
		s, err := openSinkAt(t, url, "up", rtSchema, 0, 1, "delivery_guarantee", "exactly_once", "mode", "upsert", "primary_key", "k", "batch_rows", "5")
		if err != nil {
			t.Fatal(err)
		}
		tx := s.(*TxSink)
		if err := tx.StartTransactions(); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows, kinds, live := changelog(rng, 600, 20)
	mem := memory.DefaultAllocator
	s := open()
	cut := []int{0, 150, 300, 450, len(rows)}
	// Checkpoints 1 and 2 complete; commits come late, from another
	// goroutine, while the sink writes the keys again.
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		feed(t, s, mem, rng, rows[cut[i]:cut[i+1]], kinds[cut[i]:cut[i+1]], 7)
		c := begin(t, store, uint64(i+1))
		c.barrier(t, s)
		c.complete(t)
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			time.Sleep(100 * time.Millisecond)
			if err := s.Commit(id); err != nil {
				t.Error(err)
			}
		}(c.id)
	}
	wg.Wait()
	// Checkpoint 3 completes, and the job dies before its commit, while
	// the next transaction waits for the locks the prepared one holds:
	// the server ends the job's sessions as when its process is killed.
	feed(t, s, mem, rng, rows[cut[2]:cut[3]], kinds[cut[2]:cut[3]], 7)
	c3 := begin(t, store, 3)
	c3.barrier(t, s)
	c3.complete(t)
	blocked := make(chan error, 1)
	go func() {
		err := s.Write(batch(mem, rtSchema, rows[cut[3]:cut[3]+20], kinds[cut[3]:cut[3]+20]))
		if err == nil {
			err = s.sendBuffer()
		}
		blocked <- err
	}()
	waitFor(t, conn, "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
	if _, err := conn.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'clink'"); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err == nil || !strings.Contains(err.Error(), "transaction clink-up-") {
		t.Fatalf("the write after the killed session: %v", err)
	}
	s.Close()
	// Run 2 restores 3 and replays the rest.
	s = open()
	if err := restore(t, store, 3, s, 1); err != nil {
		t.Fatal(err)
	}
	feed(t, s, mem, rng, rows[cut[3]:], kinds[cut[3]:], 7)
	c4 := begin(t, store, 4)
	c4.barrier(t, s)
	c4.complete(t)
	if err := s.Commit(4); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range live {
		want = append(want, rtLine(r))
	}
	sameLines(t, "upserted", query(t, conn, "SELECT k, n, v, note FROM up"), want)
	sameLines(t, "prepared", prepared(t, conn), nil)
}

// Without checkpoints the exactly-once sink refuses rows.
func TestExactlyOnceNeedsCheckpoints(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, "CREATE TABLE w (id bigint, name text)")
	s, err := openSink(t, url, "w", errSchema, "delivery_guarantee", "exactly_once")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write(batch(memory.DefaultAllocator, errSchema, rows(0, 1), nil))
	if err == nil || err.Error() != "postgres sink 'w': delivery_guarantee 'exactly_once' needs checkpoints (clink run --checkpoint-dir)" {
		t.Errorf("write: %v", err)
	}
	if err := s.Flush(); err == nil {
		t.Error("flush without checkpoints")
	}
	// The open transaction's gid names the sink's target by default.
	if p := s.(*TxSink).prefix; p != "clink-w-"+db+".public.w" {
		t.Errorf("default prefix %s", p)
	}
}

// A server without prepared transactions is refused when the sink opens,
// saying what to change.
func TestExactlyOnceNoPreparedTransactions(t *testing.T) {
	srv := pgtest.StartWith(t, pgtest.Config{MaxPreparedTransactions: -1})
	url := srv.CreateDatabase(t, "d")
	srv.Exec(t, "d", "CREATE TABLE w (id bigint, name text)")
	_, err := openSink(t, url, "w", errSchema, "delivery_guarantee", "exactly_once")
	want := "postgres sink 'w': delivery_guarantee 'exactly_once' needs prepared transactions, but the server at " + srv.Addr() + "/d has max_prepared_transactions = 0: set max_prepared_transactions in postgresql.conf"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	// at_least_once does not need them.
	if _, err := openSink(t, url, "w", errSchema); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls sql (a boolean) until it is true.
func waitFor(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ok bool
		if err := conn.QueryRow(context.Background(), sql).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not %s", sql)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
