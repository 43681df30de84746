package planner

import (
	"strconv"

	"github.com/clink-dev/clink/engine"
)

// uniqueNames makes the operator names of a job unique, for the stats and
// the Coordinator's /operators: a name that occurs once keeps it, and a
// name that repeats keeps it the first time and gets "_2", "_3", ... after.
// The numbering is the one checkpoint part files have always used
// (docs/state-format.md) and runs in the same order (pipelines in plan
// order, a node before its inputs), so a stateful operator's name is the
// name of its state: window_aggregate_2 restores window_aggregate_2's
// part files, as before. Numbering from "_1" would rename the state of
// every job with two operators of one kind, which a restore then refuses.
func uniqueNames(pipes []*engine.Pipeline) {
	seen := map[string]int{}
	done := map[*engine.Node]bool{}
	var visit func(n *engine.Node)
	visit = func(n *engine.Node) {
		if n == nil || done[n] {
			return
		}
		done[n] = true
		for i, name := range n.Names {
			seen[name]++
			if k := seen[name]; k > 1 {
				n.Names[i] = name + "_" + strconv.Itoa(k)
			}
		}
		for _, in := range n.Inputs {
			visit(in)
		}
	}
	for _, p := range pipes {
		visit(p.Root)
	}
}
