package nexmark

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Splits is the number of splits of the stream: split s holds the epochs
// (runs of 50 events) whose number mod Splits is s. Subtask i of p
// generates the splits whose number mod p is i, in event order, so every
// subtask emits a mix of all three kinds and event time never goes back
// within a subtask. A checkpoint keeps the next event of every split, so
// it restores at any parallelism.
const Splits = 128

func splitOf(e int64) int { return int(e / EpochEvents % Splits) }

// firstInSplit is the first event index >= c in split s.
func firstInSplit(c int64, s int) int64 {
	ep := c / EpochEvents
	if int(ep%Splits) == s {
		return c
	}
	d := (int64(s) - (ep+1)%Splits + Splits) % Splits
	return (ep + 1 + d) * EpochEvents
}

// NewSource checks the table's columns against its kind.
func (Connector) NewSource(t *connectors.Table) (engine.Source, error) {
	s, err := newSource(t)
	if err != nil {
		return nil, fmt.Errorf("nexmark source '%s': %w", t.Name, err)
	}
	return s, nil
}

var _ connectors.SourceValidator = Connector{}

// ValidateSource makes NewSource's checks (the columns, the options),
// which need no I/O.
func (Connector) ValidateSource(t *connectors.Table) error {
	if _, err := newSource(t); err != nil {
		return fmt.Errorf("nexmark source '%s': %w", t.Name, err)
	}
	return nil
}

func newSource(t *connectors.Table) (*Source, error) {
	o := t.Options
	kind, _ := ParseKind(o["table"])
	fields, err := bindColumns(kind, t.Schema)
	if err != nil {
		return nil, err
	}
	cfg := Config{Seed: o.Int("seed"), Rate: o.Int("events_per_second"), BaseTime: DefaultBaseTime}
	if cfg.Rate <= 0 {
		return nil, &connectors.OptionError{Key: "events_per_second", Msg: "option 'events_per_second' must be positive"}
	}
	s := &Source{table: t, kind: kind, fields: fields, end: math.MaxInt64, pace: o.Bool("pace")}
	if o.Has("events") {
		if s.end = o.Int("events"); s.end < 0 {
			return nil, &connectors.OptionError{Key: "events", Msg: "option 'events' must not be negative"}
		}
	}
	switch {
	case o.Has("base_time_ms"):
		cfg.BaseTime, s.baseSet = o.Int("base_time_ms"), true
	case s.pace:
		cfg.BaseTime = processStart
	}
	s.gen = NewGenerator(cfg)
	p, sub := max(t.Runtime.Parallelism, 1), t.Runtime.Subtask
	for sp := 0; sp < Splits; sp++ {
		s.own[sp] = sp%p == sub
	}
	return s, nil
}

// Source generates one table of the stream.
type Source struct {
	table   *connectors.Table
	kind    Kind
	fields  []int
	gen     *Generator
	end     int64 // first event index not generated (MaxInt64: unbounded)
	pace    bool
	baseSet bool
	own     [Splits]bool

	// Checkpoint state, read and written in the source's goroutine: every
	// owned event before cursor has been emitted, and events of split s
	// before resume[s] were emitted before the restore.
	barriers *engine.Barriers
	cursor   int64
	started  bool
	resume   [Splits]int64
	maxTS    int64
	lastWM   int64
	restored bool

	rows atomic.Int64
}

var (
	_ engine.Source        = (*Source)(nil)
	_ engine.StatsReporter = (*Source)(nil)
)

// Stats reports the rows generated.
func (s *Source) Stats() map[string]int64 { return map[string]int64{"rows_read": s.rows.Load()} }

// next returns the first event >= e that this subtask emits, or s.end.
func (s *Source) next(e int64) int64 {
	for e < s.end {
		e = NextOfKind(e, s.kind)
		sp := splitOf(e)
		switch {
		case !s.own[sp]:
			e = (e/EpochEvents + 1) * EpochEvents
		case e < s.resume[sp]:
			// Split sp resumes later in this epoch, or in a later epoch
			// of it (the subtask that had it was ahead): skip to there
			// within this epoch only, the epochs between belong to other
			// splits.
			e = min(s.resume[sp], (e/EpochEvents+1)*EpochEvents)
		default:
			return e
		}
	}
	return s.end
}

// start is where generation begins: the earliest restored split position.
func (s *Source) start() int64 {
	if !s.restored {
		return 0
	}
	c := int64(math.MaxInt64)
	for sp := 0; sp < Splits; sp++ {
		if s.own[sp] {
			c = min(c, s.resume[sp])
		}
	}
	if c == math.MaxInt64 {
		return s.end
	}
	return c
}

// Run generates the table's events until the stream's end (or forever).
func (s *Source) Run(ctx context.Context, emit func(engine.Message) error) error {
	t := s.table
	rt := t.Runtime
	batchSize := rt.BatchSize
	if batchSize <= 0 {
		batchSize = 8192
	}
	linger := rt.Linger
	if linger <= 0 {
		linger = 20 * time.Millisecond
	}
	w := newBatchWriter(s.kind, t.Schema, s.fields, rt.Mem, batchSize)
	defer w.release()
	wms := engine.NewPartitionWatermarks(1, t.WatermarkLag)
	wms.Start(0)
	if !s.restored {
		s.maxTS, s.lastWM = engine.MinWatermark, engine.MinWatermark
	}
	wms.SetState(0, engine.PartitionState{MaxTS: s.maxTS})
	wms.SetLast(s.lastWM)
	s.cursor = s.start()
	s.started = true

	flush := func(e int64) error {
		s.cursor = e
		rec := w.flush()
		if rec == nil {
			return nil
		}
		b := vector.New(rec)
		n := int(rec.NumRows())
		if t.EventTimeCol >= 0 {
			b.RowWatermark = make([]int64, n)
			ts, _ := engine.EventTimes(rec.Column(t.EventTimeCol))
			wms.Observe(0, ts, nil, b.RowWatermark)
			st, _ := wms.State()
			s.maxTS = st[0].MaxTS
		}
		s.rows.Add(int64(n))
		if err := emit(engine.Message{Kind: engine.KindData, Batch: b}); err != nil {
			return err
		}
		if t.EventTimeCol >= 0 {
			if wm := wms.Current(); wm > s.lastWM {
				s.lastWM = wm
				return emit(engine.Message{Kind: engine.KindWatermark, Watermark: wm})
			}
		}
		return nil
	}
	// barrier emits requested barriers after the rows generated so far.
	barrier := func(e int64) error {
		if !s.barriers.Pending() {
			return nil
		}
		if err := flush(e); err != nil {
			return err
		}
		for {
			id, ok := s.barriers.Next()
			if !ok {
				return nil
			}
			if err := emit(engine.Message{Kind: engine.KindBarrier, Checkpoint: id}); err != nil {
				return err
			}
		}
	}

	cfg := s.gen.Config()
	var r row
	var p Person
	var a Auction
	var bid Bid
	var timer *time.Timer
	batchStart := time.Now()
	e := s.cursor
	for {
		if err := barrier(e); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Events before due are on time on the wall clock (pace only).
		due := int64(math.MaxInt64)
		if s.pace {
			now := time.Now().UnixMilli()
			due = ((now-cfg.BaseTime+1)*cfg.Rate + 999) / 1000
		}
		for !w.full() {
			e = s.next(e)
			if e >= s.end || e >= due {
				break
			}
			if w.n == 0 {
				batchStart = time.Now()
			}
			switch s.kind {
			case KindPerson:
				s.gen.Person(e, &p)
				r.person(&p)
			case KindAuction:
				s.gen.Auction(e, &a)
				r.auction(&a)
			default:
				s.gen.Bid(e, &bid)
				r.bid(&bid)
			}
			w.add(&r)
			e++
		}
		if w.full() || e >= s.end {
			if err := flush(e); err != nil {
				return err
			}
			if e >= s.end {
				return nil
			}
			continue
		}
		// Paced and ahead of the clock: a partly filled batch leaves once
		// it has lingered; sleep until the next event is due, the batch's
		// linger ends or a barrier is requested.
		wait := time.Duration(cfg.Time(e)-time.Now().UnixMilli()) * time.Millisecond
		if w.n > 0 {
			left := linger - time.Since(batchStart)
			if left <= 0 {
				if err := flush(e); err != nil {
					return err
				}
				continue
			}
			wait = min(wait, left)
		}
		if wait <= 0 {
			continue
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.barriers.C():
		case <-timer.C:
		}
	}
}
