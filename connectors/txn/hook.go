package txn

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// KillEnv names the SIGKILL test hook: CLINK_TEST_KILL_AT=<point>:<n>
// makes the process kill itself (SIGKILL, nothing flushed or cleaned up)
// when a ledger reaches point during the n-th checkpoint this process
// takes (n >= 1; the first checkpoint after a restore is 1 again). The
// conformance suite (connectors/conformance) uses it to crash a job at each
// two-phase point deterministically. It is a test hook: never set it in
// production.
const KillEnv = "CLINK_TEST_KILL_AT"

// Point is a moment of two-phase commit at which the hook can kill.
type Point string

const (
	// BeforePreCommit: at the barrier, before the open transaction is
	// staged (rows written, nothing durable).
	BeforePreCommit Point = "before-precommit"
	// AfterPreCommit: staged and recorded in the sink's state part; the
	// checkpoint is not complete (its manifest not written).
	AfterPreCommit Point = "after-precommit"
	// AfterManifest: the checkpoint is complete (manifest written),
	// nothing of it committed in the external system.
	AfterManifest Point = "after-manifest"
	// AfterCommit: the sink committed the checkpoint's transactions
	// (other sinks of the job may not have).
	AfterCommit Point = "after-commit"
)

// Points are the hook's points in the order a checkpoint passes them.
var Points = []Point{BeforePreCommit, AfterPreCommit, AfterManifest, AfterCommit}

// KillAt is the value of KillEnv that kills at point p of checkpoint n.
func KillAt(p Point, n int) string { return fmt.Sprintf("%s=%s:%d", KillEnv, p, n) }

// ParseKillAt reads a KillEnv value.
func ParseKillAt(s string) (Point, int, error) {
	ps, ns, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 {
		return "", 0, fmt.Errorf("%s=%q: want <point>:<checkpoint n >= 1>", KillEnv, s)
	}
	for _, p := range Points {
		if string(p) == ps {
			return p, n, nil
		}
	}
	return "", 0, fmt.Errorf("%s=%q: unknown point %q (one of %v)", KillEnv, s, ps, Points)
}

type hook struct {
	point Point
	n     int // 0: off
}

var killAt = sync.OnceValue(func() hook {
	v := os.Getenv(KillEnv)
	if v == "" {
		return hook{}
	}
	p, n, err := ParseKillAt(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clink: ignoring the test hook: %v\n", err)
		return hook{}
	}
	return hook{point: p, n: n}
})

// hit kills the process if the hook is set to point p of the count-th
// checkpoint (id: its id, 0 if not known yet).
func hit(p Point, count int, id uint64) {
	h := killAt()
	if h.n == 0 || h.point != p || h.n != count {
		return
	}
	what := fmt.Sprintf("checkpoint %d of this run", count)
	if id != 0 {
		what += fmt.Sprintf(" (id %d)", id)
	}
	fmt.Fprintf(os.Stderr, "clink: test hook %s=%s:%d: SIGKILL at %s of %s\n", KillEnv, p, h.n, p, what)
	kill()
}

var killMu sync.Mutex

// kill sends SIGKILL to this process and waits for it.
func kill() {
	killMu.Lock() // one at a time; nobody returns
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	select {}
}
