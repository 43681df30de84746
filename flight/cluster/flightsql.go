package cluster

import (
	"sort"

	"github.com/clink-dev/clink/flight/flightsql"
)

// sqlCatalog is what the Coordinator's Flight SQL endpoint sees of it
// (docs/flightsql.md): the same snapshots the HTTP API answers.
type sqlCatalog struct{ c *Coordinator }

var _ flightsql.Catalog = sqlCatalog{}

func (s sqlCatalog) Jobs() []flightsql.Job {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []flightsql.Job{}
	for _, id := range c.order {
		j := c.jobs[id]
		fj := flightsql.Job{ID: j.id, Name: j.name, Status: j.state, Guarantee: j.guarantee, Parallelism: j.parallelism,
			Attempt: j.attempt, Restarts: j.restarts, Failures: j.errorCount, StartTime: j.created.UnixMilli(), Failure: j.failure}
		if !j.ended.IsZero() {
			fj.EndTime = j.ended.UnixMilli()
		}
		if j.latest != nil {
			fj.LatestCheckpoint = j.latest.ID
		}
		if j.store != nil {
			fj.StateDir = j.store.Dir()
		}
		out = append(out, fj)
	}
	return out
}

func (s sqlCatalog) Operators() []flightsql.Operator {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []flightsql.Operator{}
	for _, id := range c.order {
		for _, o := range c.operatorsLocked(c.jobs[id]) {
			out = append(out, flightsql.Operator{Job: id, Name: o.Name, Subtask: o.Subtask, Worker: o.Worker, RecordsIn: o.RecordsIn,
				RecordsOut: o.RecordsOut, Watermark: o.Watermark, LateDropped: o.LateDropped, RecordsSkipped: o.RecordsSkipped})
		}
	}
	return out
}

func (s sqlCatalog) Checkpoints() []flightsql.Checkpoint {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []flightsql.Checkpoint{}
	for _, id := range c.order {
		hist := append([]ckRecord{}, c.jobs[id].history...)
		sort.Slice(hist, func(a, b int) bool { return hist[a].ID < hist[b].ID })
		for _, r := range hist {
			out = append(out, flightsql.Checkpoint{Job: id, ID: r.ID, Status: r.Status, Kind: r.Kind, Trigger: r.Triggered.UnixMilli(),
				Duration: r.Duration, Parts: r.Parts, Bytes: r.Bytes, StateSize: r.StateSize, SyncMS: r.SyncMS, Path: r.Path, Failure: r.Reason})
		}
	}
	return out
}

func (s sqlCatalog) Workers() []flightsql.Worker {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []flightsql.Worker{}
	for _, w := range c.workers {
		out = append(out, flightsql.Worker{ID: w.id, Addr: w.addr, Slots: w.slots, Free: w.slots - w.used, LastHeartbeat: w.lastBeat.UnixMilli()})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}
