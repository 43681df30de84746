package engine

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// PartitionWatermarks tracks event-time watermarks per source partition
// (DESIGN §3): a partition's watermark is max ts seen − lag, advancing after
// every record; the source's watermark is the minimum over the partitions
// that are active (started, not finished, not idle).
type PartitionWatermarks struct {
	lag    int64
	maxTS  []int64
	state  []partState
	lastWM int64
}

type partState uint8

const (
	partPending partState = iota
	partActive
	partIdle
	partDone
)

// NewPartitionWatermarks tracks n partitions with the given lag in ms.
func NewPartitionWatermarks(n int, lag int64) *PartitionWatermarks {
	p := &PartitionWatermarks{lag: lag, maxTS: make([]int64, n), state: make([]partState, n), lastWM: MinWatermark}
	for i := range p.maxTS {
		p.maxTS[i] = MinWatermark
	}
	return p
}

// Start marks partition i as being read. A partition holds the source's
// watermark back from the start, before its first row (at the minimum),
// until it finishes or goes idle.
func (p *PartitionWatermarks) Start(i int) {
	if p.state[i] != partDone {
		p.state[i] = partActive
	}
}

// Done reports whether partition i has finished.
func (p *PartitionWatermarks) Done(i int) bool { return p.state[i] == partDone }

// Finish marks partition i as exhausted; it no longer holds the watermark.
func (p *PartitionWatermarks) Finish(i int) { p.state[i] = partDone }

// SetIdle sets partition i aside (idle) or brings it back.
func (p *PartitionWatermarks) SetIdle(i int, idle bool) {
	switch {
	case idle && p.state[i] == partActive:
		p.state[i] = partIdle
	case !idle && p.state[i] == partIdle:
		p.state[i] = partActive
	}
}

// Partition returns partition i's current watermark.
func (p *PartitionWatermarks) Partition(i int) int64 { return p.wmOf(p.maxTS[i]) }

func (p *PartitionWatermarks) wmOf(maxTS int64) int64 {
	if maxTS == MinWatermark {
		return MinWatermark
	}
	return maxTS - p.lag
}

// Observe assigns rowWM[k] = partition i's watermark before row k, for the
// event times ts (valid[k] false = null time, which does not advance it),
// and advances the partition over them. It is the column-wise running max.
func (p *PartitionWatermarks) Observe(i int, ts []int64, valid func(k int) bool, rowWM []int64) {
	m := p.maxTS[i]
	lag := p.lag
	if valid == nil {
		for k, t := range ts {
			if m == MinWatermark {
				rowWM[k] = MinWatermark
			} else {
				rowWM[k] = m - lag
			}
			if t > m {
				m = t
			}
		}
	} else {
		for k, t := range ts {
			if m == MinWatermark {
				rowWM[k] = MinWatermark
			} else {
				rowWM[k] = m - lag
			}
			if t > m && valid(k) {
				m = t
			}
		}
	}
	p.maxTS[i] = m
}

// Current returns the source watermark: the minimum over active partitions,
// never decreasing. With no active partition it stays where it was (a source
// whose every partition is idle does not advance).
func (p *PartitionWatermarks) Current() int64 {
	wm := MaxWatermark
	any := false
	for i, st := range p.state {
		if st != partActive && st != partPending {
			continue
		}
		any = true
		if w := p.wmOf(p.maxTS[i]); w < wm {
			wm = w
		}
	}
	if !any {
		return p.lastWM
	}
	if wm > p.lastWM {
		p.lastWM = wm
	}
	return p.lastWM
}

// AllDone reports whether every partition has finished.
func (p *PartitionWatermarks) AllDone() bool {
	for _, st := range p.state {
		if st != partDone {
			return false
		}
	}
	return true
}

// EventTimes exposes an event-time column (BIGINT epoch ms or
// TIMESTAMP(3)) as its raw int64 values, without copying, plus a validity
// test (nil when there are no nulls).
func EventTimes(a arrow.Array) ([]int64, func(int) bool) {
	switch a.DataType().ID() {
	case arrow.INT64, arrow.TIMESTAMP:
	default:
		panic(fmt.Sprintf("event time column of type %s", a.DataType()))
	}
	vals := arrow.GetValues[int64](a.Data(), 1)
	if a.NullN() == 0 {
		return vals, nil
	}
	return vals, func(i int) bool { return a.IsValid(i) }
}

// PartitionState is one partition's watermark state, as checkpoints keep it.
type PartitionState struct {
	MaxTS int64 // max event time seen (MinWatermark: none)
	Done  bool
}

// State returns every partition's state and the source watermark emitted
// last.
func (p *PartitionWatermarks) State() ([]PartitionState, int64) {
	out := make([]PartitionState, len(p.maxTS))
	for i := range out {
		out[i] = PartitionState{MaxTS: p.maxTS[i], Done: p.state[i] == partDone}
	}
	return out, p.lastWM
}

// SetState restores partition i's state (a restore before reading).
func (p *PartitionWatermarks) SetState(i int, st PartitionState) {
	p.maxTS[i] = st.MaxTS
	if st.Done {
		p.state[i] = partDone
	}
}

// SetLast restores the source watermark emitted last.
func (p *PartitionWatermarks) SetLast(wm int64) { p.lastWM = max(p.lastWM, wm) }
