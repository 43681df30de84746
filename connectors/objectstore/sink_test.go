package objectstore

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"

	"github.com/clink-dev/clink/checkpoint"
)

// testStore runs the sink's scenarios against one store; each gets a
// fresh target (its own bucket or directory).
func testStore(t *testing.T, newTarget func(t *testing.T) *target) {
	t.Run("exactly once across a crash", func(t *testing.T) { testCrash(t, newTarget(t)) })
	t.Run("restore at a lower parallelism", func(t *testing.T) { testRescale(t, newTarget(t)) })
	t.Run("at least once", func(t *testing.T) { testAtLeastOnce(t, newTarget(t)) })
	t.Run("large file", func(t *testing.T) { testLarge(t, newTarget(t)) })
}

// testLarge writes one file of about 20 MB, which takes
// the stores' big-object paths: S3 multipart upload, GCS resumable
// upload, Azure blocks.
func testLarge(t *testing.T, tg *target) {
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tg.txSink(t, 0, 1)
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	mem := memory.DefaultAllocator
	var rows []string
	for range 32 {
		b := array.NewRecordBuilder(mem, testSchema)
		for range 1024 {
			id := make([]byte, 1024)
			for i := range id {
				id[i] = byte('a' + rng.IntN(26))
			}
			n := rng.Int64()
			b.Field(0).(*array.StringBuilder).Append(string(id))
			b.Field(1).(*array.Int64Builder).Append(n)
			b.Field(2).AppendNull()
			rows = append(rows, fmt.Sprintf("%s|%d|null", id, n))
		}
		if err := s.Write(vector.New(b.NewRecordBatch())); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 1, true, s)
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	keys := tg.list(t, tg.pub)
	if len(keys) != 1 {
		t.Fatalf("published %v, want one file", keys)
	}
	if n := len(tg.get(t, keys[0])); n < 17<<20 {
		t.Fatalf("the file has %d bytes, want over 17 MB", n)
	}
	sort.Strings(rows)
	if got := tg.published(t); !equal(got, rows) {
		t.Fatalf("read back %d rows, want %d", len(got), len(rows))
	}
}

// testCrash: checkpoints commit, then a crash comes between a completed
// checkpoint and its Commit, with more rows staged and open after it. The
// published prefix never holds anything partial or uncommitted; the
// restore publishes the checkpoint's files and drops the rest.
func testCrash(t *testing.T, tg *target) {
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Small files: files roll at about 200 bytes.
	a := tg.txSink(t, 0, 1, "rolling_max_bytes", "200")
	write(t, a, 0, 10)
	if got := tg.published(t); len(got) != 0 {
		t.Fatalf("rows published before any checkpoint: %v", got)
	}
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 1, true, a)
	if err := a.Commit(1); err != nil {
		t.Fatal(err)
	}
	if got := tg.published(t); !equal(got, want(0, 10)) {
		t.Fatalf("after checkpoint 1: %v", got)
	}
	for i := 10; i < 40; i += 10 {
		write(t, a, i, i+10)
	}
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 2, true, a)
	if n := len(tg.staged(t)); n < 2 {
		t.Fatalf("checkpoint 2 staged %d files; rolling_max_bytes should have made several", n)
	}
	// No Commit(2): the process dies. Before that, rows after the
	// checkpoint are staged (pre-committed for checkpoint 3, which never
	// completes) and more are in an open file.
	write(t, a, 40, 45)
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 3, false, a)
	write(t, a, 45, 50)
	if got := tg.published(t); !equal(got, want(0, 10)) {
		t.Fatalf("before the restore: %v", got)
	}

	b := tg.txSink(t, 0, 1)
	defer b.Close()
	if err := restoreFrom(t, store, b, 2, 0, 1); err != nil {
		t.Fatal(err)
	}
	if got := tg.published(t); !equal(got, want(0, 40)) {
		t.Fatalf("after restoring checkpoint 2: %d rows, want 40: %v", len(got), got)
	}
	if st := tg.staged(t); len(st) != 0 {
		t.Fatalf("staging after the restore: %v", st)
	}
	write(t, b, 40, 60)
	if err := b.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 4, true, b)
	for range 2 { // idempotent
		if err := b.Commit(4); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(3); err != nil {
		t.Fatal(err)
	}
	if got := tg.published(t); !equal(got, want(0, 60)) {
		t.Fatalf("after checkpoint 4: %v", got)
	}
	// The job dies after Commit(4); a restore from 4 finds the files
	// published already.
	c := tg.txSink(t, 0, 1)
	defer c.Close()
	if err := restoreFrom(t, store, c, 4, 0, 1); err != nil {
		t.Fatal(err)
	}
	if got := tg.published(t); !equal(got, want(0, 60)) {
		t.Fatalf("after restoring checkpoint 4 again: %v", got)
	}
	// Nothing but final part files and (empty) staging in the bucket.
	for _, k := range tg.list(t, tg.bucket) {
		if !strings.HasPrefix(k, tg.pub) {
			t.Errorf("object %s is outside the published prefix", k)
		}
	}
	a.Close()
}

// testRescale: three subtasks stage files for a checkpoint that completes
// but is not committed; the job comes back at parallelism 2, and subtask
// 0 also publishes subtask 2's files (2 mod 2 = 0). A subtask 3 of an
// earlier, crashed run left a staged file that no checkpoint lists:
// subtask 1 (3 mod 2) deletes it.
func testRescale(t *testing.T, tg *target) {
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sinks []TxSink
	for i := range 3 {
		s := tg.txSink(t, i, 3)
		defer s.Close()
		write(t, s, i*10, i*10+10)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		sinks = append(sinks, s)
	}
	orphan := tg.txSink(t, 3, 4)
	write(t, orphan, 100, 110)
	if err := orphan.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 1, true, sinks...)
	if n := len(tg.staged(t)); n != 4 {
		t.Fatalf("%d staged files, want 4", n)
	}
	for i := range 2 {
		s := tg.txSink(t, i, 2)
		defer s.Close()
		if err := restoreFrom(t, store, s, 1, i, 2); err != nil {
			t.Fatal(err)
		}
	}
	if got := tg.published(t); !equal(got, want(0, 30)) {
		t.Fatalf("after the restore at parallelism 2: %v", got)
	}
	if st := tg.staged(t); len(st) != 0 {
		t.Fatalf("staging after the restore: %v", st)
	}
}

// testAtLeastOnce: each file is published when it is closed (a flush).
func testAtLeastOnce(t *testing.T, tg *target) {
	s, err := NewSink(tg.table(0, 1, "delivery_guarantee", "at_least_once"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(Sink); !ok {
		t.Fatalf("NewSink returned %T, want Sink", s)
	}
	write(t, s, 0, 10)
	if got := tg.published(t); len(got) != 0 {
		t.Fatalf("published before the flush: %v", got)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	write(t, s, 10, 15)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := tg.published(t); !equal(got, want(0, 15)) {
		t.Fatalf("after two flushes: %v", got)
	}
	if st := tg.staged(t); len(st) != 0 {
		t.Fatalf("staging: %v", st)
	}
}

func TestLocal(t *testing.T) { testStore(t, localTarget) }

// TestRollByTime: a file open longer than rolling_interval_ms is closed
// (and, at least once, published) at the next row.
func TestRollByTime(t *testing.T) {
	tg := localTarget(t)
	s, err := NewSink(tg.table(0, 1, "delivery_guarantee", "at_least_once", "rolling_interval_ms", "50"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write(t, s, 0, 10)
	time.Sleep(60 * time.Millisecond)
	write(t, s, 10, 20) // rolls: the file was open 60 ms
	if got := tg.published(t); !equal(got, want(0, 20)) {
		t.Fatalf("after the roll by time: %v", got)
	}
	write(t, s, 20, 30) // a new file, open
	if n := len(tg.list(t, tg.pub)); n != 1 {
		t.Fatalf("%d files published, want 1", n)
	}
}
