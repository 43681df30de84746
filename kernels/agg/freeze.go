package agg

import "github.com/clink-dev/clink/kernels/column"

// Copy-on-write snapshots of accumulator states with fixed-width
// accumulators: Freeze shares the accumulator chunks with a read-only copy
// (column.Chunked.Freeze), and every write path (Update, Reset, Merge,
// SetState) first copies the frozen chunks it is about to write.

// Freezer is a State that can be frozen.
type Freezer interface {
	State
	// Freeze returns a copy of the state whose StateFields and
	// StateColumns see the groups as they are now until h is released,
	// while the state goes on. O(chunks). Only those two methods may be
	// called on the copy.
	Freeze(h *column.Hold) State
}

// Freeze freezes every state of the plan (see Freezer); ok is false, and
// nothing is frozen, unless every state is a Freezer.
func (p *Plan) Freeze(h *column.Hold) (states []State, ok bool) {
	for _, s := range p.States {
		if _, ok := s.(Freezer); !ok {
			return nil, false
		}
	}
	states = make([]State, len(p.States))
	for i, s := range p.States {
		states[i] = s.(Freezer).Freeze(h)
	}
	return states, true
}

var (
	_ Freezer = (*aggFloatState[float64])(nil)
	_ Freezer = (*aggIntState[int64])(nil)
	_ Freezer = (*aggCountState)(nil)
	_ Freezer = (*aggBoolState)(nil)
	_ Freezer = (*aggDecState)(nil)
)

func (st *aggFloatState[T]) Freeze(h *column.Hold) State {
	return &aggFloatState[T]{dt: st.dt, e: st.e.Freeze(h), sum: st.sum, mm: st.mm}
}

func (st *aggFloatState[T]) unshare(gids []int32) { st.e.Unshare(gids) }

func (st *aggIntState[T]) Freeze(h *column.Hold) State {
	return &aggIntState[T]{dt: st.dt, noSum: st.noSum, e: st.e.Freeze(h), sum: st.sum, mm: st.mm}
}

func (st *aggIntState[T]) unshare(gids []int32) { st.e.Unshare(gids) }

func (st *aggCountState) Freeze(h *column.Hold) State {
	return &aggCountState{star: st.star, dt: st.dt, n: st.n.Freeze(h)}
}

func (st *aggCountState) unshare(gids []int32) { st.n.Unshare(gids) }

func (st *aggBoolState) Freeze(h *column.Hold) State {
	return &aggBoolState{e: st.e.Freeze(h)}
}

func (st *aggBoolState) unshare(gids []int32) { st.e.Unshare(gids) }

func (st *aggDecState) Freeze(h *column.Hold) State {
	return &aggDecState{dt: st.dt, n: st.n.Freeze(h), sum: st.sum.Freeze(h), mn: st.mn.Freeze(h), mx: st.mx.Freeze(h), wantExtr: st.wantExtr}
}

func (st *aggDecState) unshare(gids []int32) {
	st.n.Unshare(gids)
	st.sum.Unshare(gids)
	st.mn.Unshare(gids)
	st.mx.Unshare(gids)
}
