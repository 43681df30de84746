package engine

import (
	"sync"
	"sync/atomic"
)

// LiveStats are the counters of running pipelines, for monitoring: after
// Refresh, each node's goroutine copies its operators' counters at its next
// message (counters are never read across goroutines).
type LiveStats struct {
	gen atomic.Uint64
	mu  sync.Mutex
	ops map[liveKey]LiveOp
}

type liveKey struct {
	r *runner
	i int // index of the operator in the runner's published list
	s *OpStats
}

// LiveOp is one operator subtask's counters.
type LiveOp struct {
	Pipeline string
	Subtask  int
	OpStats
}

// NewLiveStats returns an empty set of counters.
func NewLiveStats() *LiveStats { return &LiveStats{ops: map[liveKey]LiveOp{}} }

// Refresh asks every node for fresh counters.
func (l *LiveStats) Refresh() { l.gen.Add(1) }

// Snapshot returns the counters published so far, in no particular order.
func (l *LiveStats) Snapshot() []LiveOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LiveOp, 0, len(l.ops))
	for _, o := range l.ops {
		o.Extra = cloneExtra(o.Extra)
		out = append(out, o)
	}
	return out
}

func cloneExtra(m map[string]int64) map[string]int64 {
	if m == nil {
		return nil
	}
	c := make(map[string]int64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// tick publishes nr's counters if a refresh was asked since its last
// publication; it runs in nr's goroutine. The root node also publishes
// the sink's.
func (l *LiveStats) tick(r *runner, nr *nodeRun) {
	g := l.gen.Load()
	if g == nr.pub {
		return
	}
	nr.pub = g
	extra := make([]map[string]int64, len(nr.stats))
	for i, op := range nr.node.Ops {
		if rep, ok := op.(StatsReporter); ok {
			extra[i+1] = rep.Stats()
		}
	}
	if rep, ok := nr.head().(StatsReporter); ok {
		// The source's (a Kafka source's lag, its skipped records), or
		// the binary operator's.
		extra[0] = rep.Stats()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	name, sub := r.p.Name, r.p.Subtask
	for i, s := range nr.stats {
		o := LiveOp{Pipeline: name, Subtask: sub, OpStats: *s}
		o.Extra = extra[i]
		l.ops[liveKey{r, i, s}] = o
	}
	if nr.node == r.p.root() {
		o := LiveOp{Pipeline: name, Subtask: sub, OpStats: *r.sinkStats}
		o.Name = "sink_" + r.p.SinkName
		l.ops[liveKey{r, -1, r.sinkStats}] = o
	}
}
