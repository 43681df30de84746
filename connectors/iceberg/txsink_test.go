package iceberg

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clink-dev/clink/checkpoint"
)

// forEachTarget runs f against every catalog and warehouse: SQLite and
// PostgreSQL catalogs on a local warehouse, and SQLite with the warehouse
// in MinIO. A target whose server cannot run here is skipped.
func forEachTarget(t *testing.T, f func(t *testing.T, tg *target)) {
	for _, tgt := range targets {
		t.Run(tgt.name, func(t *testing.T) { f(t, tgt.make(t)) })
	}
}

func newStore(t *testing.T) *checkpoint.Store {
	t.Helper()
	s, err := checkpoint.NewStore(filepath.Join(t.TempDir(), "checkpoints"), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// One snapshot per checkpoint, tagged with it; nothing is visible before
// the checkpoint's Commit; a repeated Commit changes nothing.
func TestSnapshotPerCheckpoint(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		store := newStore(t)
		s := tg.txSink(t, 0, 1)
		write(t, s, 0, 40)
		write(t, s, 40, 50)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, 1, true, s)
		if got := tg.rows(t); len(got) != 0 {
			t.Fatalf("rows visible before the checkpoint's commit: %d", len(got))
		}
		if err := s.Commit(1); err != nil {
			t.Fatal(err)
		}
		if got := tg.rows(t); !equal(got, want(0, 50)) {
			t.Fatalf("after checkpoint 1: %s", diff(got, want(0, 50)))
		}
		write(t, s, 50, 120)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, 2, true, s)
		// A checkpoint without rows commits no snapshot.
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, 3, true, s)
		for range 2 {
			if err := s.Commit(3); err != nil {
				t.Fatal(err)
			}
		}
		if got := tg.rows(t); !equal(got, want(0, 120)) {
			t.Fatalf("after checkpoint 3: %s", diff(got, want(0, 120)))
		}
		if got := tg.checkpoints(t); strings.Join(got, " ") != "1/0 2/0" {
			t.Fatalf("snapshots of checkpoint/subtask %v, want 1/0 2/0", got)
		}
		for _, p := range tg.snapshots(t) {
			if p[PropSink] != "windows" || p[PropFiles] == "" {
				t.Errorf("summary %v", p)
			}
		}
		// Committing the same files again (a commit whose reply was lost)
		// finds the snapshot.
		if err := s.commitFiles(0, 2, []dataFile{{gen: 1, seq: 1, path: "does-not-matter"}}); err != nil {
			t.Fatal(err)
		}
		if n := len(tg.snapshots(t)); n != 2 {
			t.Fatalf("%d snapshots after a repeated commit", n)
		}
	})
}

// A crash between PreCommit and Commit: the restore commits the
// checkpoint's files once; a crash during or after that restore, and a
// commit that landed just before the crash, are not committed again.
func TestRestoreCommitsOnce(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		store := newStore(t)
		s := tg.txSink(t, 0, 1)
		write(t, s, 0, 30)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, 1, true, s)
		if err := s.Commit(1); err != nil {
			t.Fatal(err)
		}
		write(t, s, 30, 60)
		if err := s.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, 2, true, s)
		write(t, s, 60, 70) // open, after checkpoint 2: lost
		crash(s)
		if got := tg.rows(t); !equal(got, want(0, 30)) {
			t.Fatalf("before the restore: %s", diff(got, want(0, 30)))
		}
		for run := range 3 {
			r := tg.txSink(t, 0, 1)
			if err := restoreFrom(t, store, r, 2, 0, 1); err != nil {
				t.Fatalf("restore %d: %v", run, err)
			}
			if got := tg.rows(t); !equal(got, want(0, 60)) {
				t.Fatalf("after restore %d: %s", run, diff(got, want(0, 60)))
			}
			crash(r)
		}
		if got := tg.checkpoints(t); strings.Join(got, " ") != "1/0 2/0" {
			t.Fatalf("snapshots %v, want 1/0 2/0", got)
		}
		// The restored run goes on; its first checkpoint after the
		// restore commits its own rows.
		r := tg.txSink(t, 0, 1)
		if err := restoreFrom(t, store, r, 2, 0, 1); err != nil {
			t.Fatal(err)
		}
		write(t, r, 60, 100)
		if err := r.PreCommit(); err != nil {
			t.Fatal(err)
		}
		snapshotTo(t, store, 3, true, r)
		// The commit lands, then the process dies before it knows.
		if err := r.Commit(3); err != nil {
			t.Fatal(err)
		}
		crash(r)
		r2 := tg.txSink(t, 0, 1)
		if err := restoreFrom(t, store, r2, 3, 0, 1); err != nil {
			t.Fatal(err)
		}
		if got := tg.rows(t); !equal(got, want(0, 100)) {
			t.Fatalf("final: %s", diff(got, want(0, 100)))
		}
		if got := tg.checkpoints(t); strings.Join(got, " ") != "1/0 2/0 3/0" {
			t.Fatalf("snapshots %v, want 1/0 2/0 3/0", got)
		}
		// Only committed files are left in the data directory.
		if got := tg.dataFiles(t); len(got) != 3 {
			t.Fatalf("data files %v, want the 3 committed ones", got)
		}
	})
}

// Orphans: files written after the restored checkpoint (a closed one of
// an incomplete checkpoint, the open one) are deleted, those of subtasks
// beyond a lower parallelism too; committed files stay.
func TestOrphanCleanup(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		store := newStore(t)
		// Three subtasks write rows; checkpoint 1 completes, its commit
		// does not happen.
		var sinks []TxSink
		for k := range 3 {
			s := tg.txSink(t, k, 3)
			write(t, s, k*100, k*100+20)
			if err := s.PreCommit(); err != nil {
				t.Fatal(err)
			}
			sinks = append(sinks, s)
		}
		snapshotTo(t, store, 1, true, sinks...)
		// Subtask 0 commits checkpoint 1, the others crash first.
		if err := sinks[0].Commit(1); err != nil {
			t.Fatal(err)
		}
		// After checkpoint 1: a closed file of a checkpoint that never
		// completes, and an open file.
		for k, s := range sinks {
			write(t, s, k*100+20, k*100+30)
			if err := s.PreCommit(); err != nil {
				t.Fatal(err)
			}
		}
		snapshotTo(t, store, 2, false, sinks...)
		for k, s := range sinks {
			write(t, s, k*100+30, k*100+40)
			crash(s)
		}
		if n := len(tg.dataFiles(t)); n != 9 {
			t.Fatalf("%d data files before the restore, want 9", n)
		}
		// Restore at parallelism 2: subtask 0 also finishes subtask 2.
		var r []TxSink
		for k := range 2 {
			s := tg.txSink(t, k, 2)
			if err := restoreFrom(t, store, s, 1, k, 2); err != nil {
				t.Fatal(err)
			}
			r = append(r, s)
		}
		wantRows := concat(want(0, 20), want(100, 120), want(200, 220))
		if got := tg.rows(t); !equal(got, wantRows) {
			t.Fatalf("after the restore: %s", diff(got, wantRows))
		}
		if got := tg.checkpoints(t); strings.Join(got, " ") != "1/0 1/1 1/2" {
			t.Fatalf("snapshots %v, want 1/0 1/1 1/2", got)
		}
		if got := tg.dataFiles(t); len(got) != 3 {
			t.Fatalf("data files %v, want the 3 committed ones", got)
		}
		// Checkpoint 3 at parallelism 2 keeps subtask 2's run state in
		// subtask 0's part; a restore at parallelism 3 hands it back.
		for k, s := range r {
			write(t, s, 1000+k*100, 1000+k*100+10)
			if err := s.PreCommit(); err != nil {
				t.Fatal(err)
			}
		}
		snapshotTo(t, store, 3, true, r...)
		for _, s := range r {
			crash(s)
		}
		var r3 []TxSink
		for k := range 3 {
			s := tg.txSink(t, k, 3)
			if err := restoreFrom(t, store, s, 3, k, 3); err != nil {
				t.Fatal(err)
			}
			r3 = append(r3, s)
		}
		if len(r3[2].runs) != 0 || r3[2].gen < 2 {
			t.Fatalf("subtask 2 after the rescale: generation %d, adopted %v; want its own run back", r3[2].gen, r3[2].runs)
		}
		wantRows = concat(wantRows, want(1000, 1010), want(1100, 1110))
		if got := tg.rows(t); !equal(got, wantRows) {
			t.Fatalf("after the second restore: %s", diff(got, wantRows))
		}
		if got := tg.dataFiles(t); len(got) != 5 {
			t.Fatalf("data files %v, want the 5 committed ones", got)
		}
	})
}

// A start without a checkpoint deletes what a crashed run left
// uncommitted, and keeps what it committed.
func TestFreshStartCleansUp(t *testing.T) {
	tg := sqliteLocal(t)
	store := newStore(t)
	s := tg.txSink(t, 0, 1)
	write(t, s, 0, 10)
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 1, true, s)
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	write(t, s, 10, 20)
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	write(t, s, 20, 30)
	crash(s)
	if n := len(tg.dataFiles(t)); n != 3 {
		t.Fatalf("%d data files, want 3", n)
	}
	f := tg.txSink(t, 0, 1)
	write(t, f, 100, 110)
	if got := tg.dataFiles(t); len(got) != 2 {
		t.Fatalf("data files %v, want the committed one and the new open one", got)
	}
	if f.gen != 2 {
		t.Fatalf("generation %d, want 2 (above the crashed run's)", f.gen)
	}
	if err := f.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, newStore(t), 1, true, f)
	if err := f.Commit(1); err != nil {
		t.Fatal(err)
	}
	wantRows := concat(want(0, 10), want(100, 110))
	if got := tg.rows(t); !equal(got, wantRows) {
		t.Fatalf("%s", diff(got, wantRows))
	}
}

// Subtasks commit concurrently (as Workers of a cluster do): conflicting
// commits are retried on the refreshed table, every checkpoint of every
// subtask lands once.
func TestConcurrentCommits(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		const par, checkpoints = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, par)
		for k := range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := tg.txSink(t, k, par)
				for c := 1; c <= checkpoints; c++ {
					from := k*1000 + c*10
					if err := s.Write(batch(s.mem, from, from+10, false)); err != nil {
						errs <- err
						return
					}
					if err := s.PreCommit(); err != nil {
						errs <- err
						return
					}
					s.l.Assign(uint64(c))
					if err := s.Commit(uint64(c)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var wantRows []string
		for k := range par {
			for c := 1; c <= checkpoints; c++ {
				wantRows = append(wantRows, want(k*1000+c*10, k*1000+c*10+10)...)
			}
		}
		wantRows = concat(wantRows)
		if got := tg.rows(t); !equal(got, wantRows) {
			t.Fatalf("%s", diff(got, wantRows))
		}
		if n := len(tg.checkpoints(t)); n != par*checkpoints {
			t.Fatalf("%d snapshots, want %d", n, par*checkpoints)
		}
	})
}

// Without checkpoints, and at least once, the sink commits at Flush (the
// end of input, a barrier) and every commit_interval_ms.
func TestAtLeastOnce(t *testing.T) {
	tg := sqliteLocal(t)
	s, err := NewSink(tg.table(0, 1, "delivery_guarantee", "at_least_once"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(Sink); !ok {
		t.Fatalf("NewSink returned %T, want Sink", s)
	}
	defer s.Close()
	write(t, s, 0, 10)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := tg.rows(t); !equal(got, want(0, 10)) {
		t.Fatalf("%s", diff(got, want(0, 10)))
	}
	// A TxSink without StartTransactions (a job without checkpoints)
	// commits by time too.
	s2, err := NewSink(tg.table(0, 1, "commit_interval_ms", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	write(t, s2, 10, 20)
	time.Sleep(5 * time.Millisecond)
	write(t, s2, 20, 30)
	if got := tg.rows(t); !equal(got, want(0, 30)) {
		t.Fatalf("commit by time: %s", diff(got, want(0, 30)))
	}
	if err := s2.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, p := range tg.snapshots(t) {
		if _, ok := p[PropCheckpointID]; ok {
			t.Errorf("a commit without checkpoints names checkpoint %s", p[PropCheckpointID])
		}
	}
}

// Files roll at target_file_size: one checkpoint with several files is
// still one snapshot.
func TestRollingOneSnapshot(t *testing.T) {
	tg := sqliteLocal(t)
	store := newStore(t)
	s := tg.txSink(t, 0, 1, "target_file_size", "1KB")
	for i := 0; i < 400; i += 20 {
		write(t, s, i, i+20)
	}
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 7, true, s)
	if err := s.Commit(7); err != nil {
		t.Fatal(err)
	}
	if got := tg.rows(t); !equal(got, want(0, 400)) {
		t.Fatalf("%s", diff(got, want(0, 400)))
	}
	files := tg.dataFiles(t)
	snaps := tg.snapshots(t)
	if len(files) < 3 || len(snaps) != 1 {
		t.Fatalf("%d files in %d snapshots, want several in one", len(files), len(snaps))
	}
	if want := fmt.Sprintf("1:0-%d", len(files)-1); snaps[0][PropFiles] != want {
		t.Fatalf("clink.files %q, want %q", snaps[0][PropFiles], want)
	}
}

// Restoring into another table or under another sink id is refused.
func TestRestoreElsewhereRefused(t *testing.T) {
	tg := sqliteLocal(t)
	store := newStore(t)
	s := tg.txSink(t, 0, 1)
	write(t, s, 0, 10)
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, store, 1, true, s)
	crash(s)
	r := tg.txSink(t, 0, 1, "sink_id", "other")
	err := restoreFrom(t, store, r, 1, 0, 1)
	if err == nil || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("restore under another sink id: %v", err)
	}
}
