package cluster

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var ckLineRE = regexp.MustCompile(`job_id=(\d+) checkpoints? (\d+)(?:-(\d+))? complete`)

// loggedCompletions is every checkpoint id the log says completed, and the
// number of lines saying so.
func loggedCompletions(t *testing.T, log string) (map[uint64]bool, int) {
	t.Helper()
	ids := map[uint64]bool{}
	lines := 0
	for _, m := range ckLineRE.FindAllStringSubmatch(log, -1) {
		lines++
		from, _ := strconv.ParseUint(m[2], 10, 64)
		to := from
		if m[3] != "" {
			to, _ = strconv.ParseUint(m[3], 10, 64)
		}
		for id := from; id <= to; id++ {
			if ids[id] {
				t.Errorf("checkpoint %d logged twice:\n%s", id, log)
			}
			ids[id] = true
		}
	}
	return ids, lines
}

// TestCheckpointLogPace: a job's completed checkpoints are logged at a
// pace a person can read: the first of each attempt at once, the rest
// summed up once per CheckpointLogInterval, a failure at once and the
// first completion after it at once; every line names the job, and
// together they account for every completed checkpoint.
func TestCheckpointLogPace(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 2 * time.Millisecond,
		CheckpointLogInterval: 200 * time.Millisecond, RestartDelay: time.Millisecond})
	began := time.Now()
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	ref := w.expect(t, actDeploy).ref
	var done []uint64
	// run completes checkpoints of attempt ref for d, and then until
	// more() is false (for at most 10 s more).
	run := func(ref attemptRef, d time.Duration, more func() bool) {
		t.Helper()
		end, limit := time.Now().Add(d), time.Now().Add(d+10*time.Second)
		for time.Now().Before(end) || (more() && time.Now().Before(limit)) {
			ck := w.expect(t, actTrigger)
			if ck.ref != ref {
				continue
			}
			fc.event(t, ref, event{kind: evAck, worker: "f1", id: ck.id})
			w.expect(t, actComplete)
			done = append(done, ck.id)
			time.Sleep(3 * time.Millisecond)
		}
	}
	run(ref, 500*time.Millisecond, func() bool {
		return !strings.Contains(fc.log.String(), "job_id="+id+" checkpoints "+itoa(done[0]+1)+"-")
	})
	first := done[0]
	if !strings.Contains(fc.log.String(), "job_id="+id+" checkpoint "+itoa(first)+" complete (0 parts, ") {
		t.Fatalf("the first checkpoint is not logged at once:\n%s", fc.log.String())
	}
	if !strings.Contains(fc.log.String(), "job_id="+id+" checkpoints "+itoa(first+1)+"-") {
		t.Fatalf("no summary from checkpoint %d on:\n%s", first+1, fc.log.String())
	}
	// A failure: the checkpoint in flight fails (logged), the next
	// attempt's first completion is logged at once.
	pending := w.expect(t, actTrigger)
	fc.event(t, ref, event{kind: evDone, worker: "f1", err: "boom"})
	fc.waitLog(t, "job_id="+id+" checkpoint "+itoa(pending.id)+" failed: attempt failed: f1: boom")
	ref2 := w.expect(t, actDeploy).ref
	run(ref2, 20*time.Millisecond, func() bool { return false })
	after := done[len(done)-1]
	for _, c := range done {
		if c > pending.id {
			after = c
			break
		}
	}
	fc.waitLog(t, "job_id="+id+" checkpoint "+itoa(after)+" complete (0 parts, ")
	if err := fc.c.Cancel(id); err != nil {
		t.Fatal(err)
	}
	fc.waitState(t, id, StateCanceled)
	log := fc.log.String()
	ids, lines := loggedCompletions(t, log)
	for _, c := range done {
		if !ids[c] {
			t.Errorf("checkpoint %d completed but is in no log line", c)
		}
	}
	// At most: the first, one summary per interval, the rest at the
	// failure, the second attempt's first and its rest at the cancel.
	most := 4 + int(time.Since(began)/(200*time.Millisecond))
	if lines > most || lines >= len(done) {
		t.Errorf("%d checkpoints in %d log lines (at most %d):\n%s", len(done), lines, most, log)
	}
	for _, ln := range strings.Split(strings.TrimSpace(log), "\n") {
		if strings.Contains(ln, "checkpoint") && !strings.Contains(ln, "job_id="+id+" ") {
			t.Errorf("a line about checkpoints without job_id: %s", ln)
		}
	}
}

// TestCheckpointLogEvery: a negative CheckpointLogInterval logs every
// checkpoint.
func TestCheckpointLogEvery(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 2 * time.Millisecond, CheckpointLogInterval: -1})
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	ref := w.expect(t, actDeploy).ref
	for range 5 {
		ck := w.expect(t, actTrigger)
		fc.event(t, ref, event{kind: evAck, worker: "f1", id: ck.id})
		fc.waitLog(t, "job_id="+id+" checkpoint "+itoa(ck.id)+" complete")
	}
}
