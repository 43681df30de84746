package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/formats/protobuf"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// commitInterval is how often read offsets are committed to group_id.
const commitInterval = 5 * time.Second

// decodePool is the byte budget of the decoder's buffer pool: enough for
// the batches in flight between the source and its consumers.
const decodePool = 32 << 20

// NewSource checks the table's options; it contacts no broker (Run does).
func (Connector) NewSource(t *connectors.Table) (engine.Source, error) {
	s, err := newSource(t)
	if err != nil {
		return nil, fmt.Errorf("kafka source '%s': %w", t.Name, err)
	}
	return s, nil
}

var _ connectors.SourceValidator = Connector{}

// ValidateSource makes NewSource's checks that read no file (TLS
// certificates) and resolve no secret.
func (Connector) ValidateSource(t *connectors.Table) error {
	if _, err := sourceOf(t); err != nil {
		return fmt.Errorf("kafka source '%s': %w", t.Name, err)
	}
	return nil
}

func newSource(t *connectors.Table) (*Source, error) {
	s, err := sourceOf(t)
	if err != nil {
		return nil, err
	}
	if s.cc, err = clientConfig(t.Options); err != nil {
		return nil, err
	}
	if err := s.format.checkLatest(t.Schema); err != nil {
		return nil, err
	}
	if s.format.name == formatProto {
		// A local .proto file is compiled and checked against the columns
		// now, so that a field of the wrong type fails the plan.
		if s.format.md, _, err = s.format.messageOf(nil, 0); err == nil {
			err = protobuf.CheckSchema(t.Schema, s.format.md)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// sourceOf checks the table's options without I/O and returns its source,
// without a client configuration (newSource adds it).
func sourceOf(t *connectors.Table) (*Source, error) {
	o := t.Options
	if err := checkClient(o); err != nil {
		return nil, err
	}
	vf, err := valueFormat(o)
	if err != nil {
		return nil, err
	}
	if err := vf.checkSchema(t.Schema); err != nil {
		return nil, err
	}
	if _, _, err := keyFormat(o); err != nil {
		return nil, err
	}
	s := &Source{
		format:  vf,
		table:   t,
		topic:   o["topic"],
		onError: o["on_error"],
		dlq:     o["dead_letter_topic"],
		group:   o["group_id"],
		reset:   o["auto_offset_reset"],
		bounded: o["scan_bounded"] == "latest",
		dirty:   o["isolation_level"] == "read_uncommitted",
		idle:    time.Duration(o.Int("idle_timeout_ms")) * time.Millisecond,
	}
	if s.idle < 0 {
		return nil, &connectors.OptionError{Key: "idle_timeout_ms", Msg: "option 'idle_timeout_ms' must not be negative"}
	}
	switch {
	case s.onError == "dead_letter" && s.dlq == "":
		return nil, &connectors.OptionError{Key: "on_error", Msg: "on_error = 'dead_letter' needs option 'dead_letter_topic'"}
	case s.onError != "dead_letter" && s.dlq != "":
		return nil, &connectors.OptionError{Key: "dead_letter_topic", Msg: fmt.Sprintf("option 'dead_letter_topic' needs on_error = 'dead_letter' (it is '%s')", s.onError)}
	case s.dlq == s.topic && s.dlq != "":
		return nil, &connectors.OptionError{Key: "dead_letter_topic", Msg: "dead_letter_topic must differ from topic"}
	}
	if v := o["start_offsets"]; v != "" {
		var err error
		if s.starts, err = ParseOffsets(v); err != nil {
			return nil, &connectors.OptionError{Key: "start_offsets", Msg: fmt.Sprintf("option 'start_offsets': %v", err)}
		}
	}
	if _, ok := o["start_timestamp_ms"]; ok {
		if s.starts != nil {
			return nil, &connectors.OptionError{Key: "start_timestamp_ms", Msg: "give either 'start_offsets' or 'start_timestamp_ms', not both"}
		}
		s.startTS, s.hasStartTS = o.Int("start_timestamp_ms"), true
	}
	return s, nil
}

// ParseOffsets reads 'partition:offset,...'.
func ParseOffsets(v string) (map[int32]int64, error) {
	out := map[int32]int64{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		ps, os, ok := strings.Cut(item, ":")
		p, perr := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		off, oerr := strconv.ParseInt(strings.TrimSpace(os), 10, 64)
		if !ok || perr != nil || oerr != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("'%s' is not partition:offset", item)
		}
		if _, dup := out[int32(p)]; dup {
			return nil, fmt.Errorf("partition %d is given twice", p)
		}
		out[int32(p)] = off
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partition:offset given")
	}
	return out, nil
}

// Source reads JSON records from the partitions of one topic that its
// subtask is assigned (Assign). Each partition has its own watermark,
// advanced record by record in offset order; rows carry the watermark their
// partition had just before them.
//
// State: the next offset of each assigned partition, counting every record
// whose row has been emitted (or that was skipped or dead-lettered). The
// offsets committed to group_id are a copy for monitoring; Clink never
// reads them back.
type Source struct {
	table      *connectors.Table
	cc         *ClientConfig
	topic      string
	onError    string
	dlq        string
	group      string
	reset      string
	bounded    bool
	dirty      bool // isolation_level = 'read_uncommitted'
	format     format
	idle       time.Duration
	starts     map[int32]int64 // start_offsets
	startTS    int64
	hasStartTS bool
	restore    map[int32]int64 // StartAt
	restoreTS  map[int32]int64 // RestoreState: max event time per partition
	restoreWM  int64

	barriers *engine.Barriers
	cur      *reader // while Run runs: read in SnapshotState (same goroutine)

	rows, skipped, deadLettered atomic.Int64

	mu      sync.Mutex
	offsets map[int32]int64
	// lag is, per assigned partition, the records between the next one
	// to read and the end a consumer can read to (the last stable offset
	// under read_committed, else the high watermark), as of the last
	// fetch response.
	lag map[int32]int64
}

var (
	_ engine.Source        = (*Source)(nil)
	_ engine.StatsReporter = (*Source)(nil)
)

// Stats reports rows read, bad records skipped and bad records produced to
// the dead-letter topic.
func (s *Source) Stats() map[string]int64 {
	m := map[string]int64{
		"rows_read":             s.rows.Load(),
		"records_skipped":       s.skipped.Load(),
		"records_dead_lettered": s.deadLettered.Load(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lag != nil {
		var total int64
		for p, l := range s.lag {
			m[LagPartitionKey+strconv.Itoa(int(p))] = l
			total += l
		}
		m["records_lag"] = total
	}
	return m
}

// LagPartitionKey prefixes the Stats key of one partition's lag
// ("records_lag_partition_3"); "records_lag" is their sum.
const LagPartitionKey = "records_lag_partition_"

// noteLag records partition p's lag after a fetch response.
func (s *Source) noteLag(p int32, next, end int64) {
	if end < 0 {
		return // the broker did not say
	}
	s.mu.Lock()
	if s.lag == nil {
		s.lag = map[int32]int64{}
	}
	s.lag[p] = max(end-next, 0)
	s.mu.Unlock()
}

// Offsets returns the source's state: for each assigned partition, the
// offset of the next record to read. Every record before it has been
// emitted downstream (or skipped). Safe to call while Run runs.
func (s *Source) Offsets() map[int32]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]int64, len(s.offsets))
	for p, o := range s.offsets {
		out[p] = o
	}
	return out
}

// StartAt makes the next Run start the given partitions at the given
// offsets (a restore from saved Offsets), overriding the table's start
// options for them. Call it before Run.
func (s *Source) StartAt(offsets map[int32]int64) {
	s.restore = make(map[int32]int64, len(offsets))
	for p, o := range offsets {
		s.restore[p] = o
	}
}

// Partitions returns the assigned partitions (known once Run has started).
func (s *Source) Partitions() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int32, 0, len(s.offsets))
	for p := range s.offsets {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (s *Source) errorf(format string, args ...any) error {
	return fmt.Errorf("kafka source '%s': "+format, append([]any{s.table.Name}, args...)...)
}

// partition is the reading state of one assigned partition.
type partition struct {
	id      int32
	next    int64 // offset after the last record taken
	end     int64 // scan_bounded: read up to here
	done    bool
	idle    bool
	lastRec time.Time
}

// segment is a run of rows of one batch from one partition.
type segment struct{ part, from int }

// reader is one Run's state.
type reader struct {
	reach   *reach // warns while the brokers are out of reach
	s       *Source
	cl      *kgo.Client
	adm     *kadm.Client
	emit    func(engine.Message) error
	parts   []partition
	local   map[int32]int // partition id -> index in parts
	dec     recordDecoder
	wms     *engine.PartitionWatermarks
	lastWM  int64
	idle    bool // the watermark status emitted last is idle
	segs    []segment
	batchAt time.Time
	batch   int
	linger  time.Duration
	remain  int // partitions not done

	dlqMu  sync.Mutex
	dlqErr error
	dlqCB  func(*kgo.Record, error)

	committed  map[int32]int64
	commitAt   time.Time
	commitWarn string
}

// Run reads until ctx is done (then it returns ctx.Err()) or, with
// scan_bounded = 'latest', until every assigned partition reached the end
// offset it had at start-up (then it returns nil).
func (s *Source) Run(ctx context.Context, emit func(engine.Message) error) error {
	r, err := s.open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer r.close()
	r.emit = emit
	s.cur = r
	err = r.loop(ctx)
	// Everything produced to the dead-letter topic is acknowledged before
	// the source ends; the read offsets then go to the group.
	if ferr := r.flushDLQ(); ferr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = ferr
	}
	r.commit()
	return err
}

// open connects, assigns partitions and resolves where each starts (and,
// bounded, ends), all within the connect timeout.
func (s *Source) open(ctx context.Context) (*reader, error) {
	t := s.table
	rt := t.Runtime
	admin, err := s.cc.newClient()
	if err != nil {
		return nil, s.errorf("%v", err)
	}
	defer admin.Close()
	n, err := s.cc.partitions(ctx, admin, s.topic)
	if err != nil {
		return nil, s.errorf("%v", err)
	}
	if s.dlq != "" {
		if _, err := s.cc.partitions(ctx, admin, s.dlq); err != nil {
			return nil, s.errorf("dead_letter_topic: %v", err)
		}
	}
	for p := range s.starts {
		if p >= n {
			return nil, s.errorf("start_offsets names partition %d; topic %s has %d partitions", p, s.topic, n)
		}
	}
	ids := Assign(n, rt.Subtask, rt.Parallelism)

	lctx, cancel := context.WithTimeout(ctx, s.cc.timeout())
	defer cancel()
	adm := kadm.NewClient(admin)
	var listed kadm.ListedOffsets
	switch {
	case s.hasStartTS:
		listed, err = adm.ListOffsetsAfterMilli(lctx, s.startTS, s.topic)
	case s.reset == "latest":
		listed, err = adm.ListEndOffsets(lctx, s.topic)
	default:
		listed, err = adm.ListStartOffsets(lctx, s.topic)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, s.errorf("topic %s: listing start offsets: %v", s.topic, err)
	}
	var ends kadm.ListedOffsets
	if s.bounded && s.dirty {
		ends, err = adm.ListEndOffsets(lctx, s.topic)
	} else if s.bounded {
		ends, err = adm.ListCommittedOffsets(lctx, s.topic) // last stable offsets
	}
	if s.bounded {
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return nil, s.errorf("topic %s: listing end offsets: %v", s.topic, err)
		}
	}

	r := &reader{s: s, local: make(map[int32]int, len(ids)), committed: map[int32]int64{}}
	consume := map[int32]kgo.Offset{}
	offsets := make(map[int32]int64, len(ids))
	for i, id := range ids {
		st := partition{id: id, end: -1}
		if o, ok := s.restore[id]; ok {
			st.next = o
		} else if o, ok := s.starts[id]; ok {
			st.next = o
		} else {
			lo, ok := listed.Lookup(s.topic, id)
			if !ok {
				return nil, s.errorf("topic %s partition %d: no start offset listed", s.topic, id)
			}
			st.next = lo.Offset
		}
		if s.bounded {
			eo, ok := ends.Lookup(s.topic, id)
			if !ok {
				return nil, s.errorf("topic %s partition %d: no end offset listed", s.topic, id)
			}
			st.end = eo.Offset
			st.done = st.next >= st.end
		}
		offsets[id] = st.next
		r.local[id] = i
		r.parts = append(r.parts, st)
		if !st.done {
			consume[id] = kgo.NewOffset().At(st.next)
			r.remain++
		}
	}
	s.mu.Lock()
	s.offsets = offsets
	s.mu.Unlock()

	resetTo := kgo.NewOffset().AtStart()
	if s.reset == "latest" {
		resetTo = kgo.NewOffset().AtEnd()
	}
	// Small fetches keep the memory of a fast consumer small (franz-go
	// buffers up to 50 MiB per fetch by default): a fetch is at most
	// 512 KiB (128 KiB per partition), two in flight. Measured on the dev
	// broker, 1 M sensor readings: peak RSS 60 MB instead of 210 MB with
	// 4 MiB fetches, and less CPU (fewer decompressed records wait for the
	// garbage collector); 512 KiB per round trip still allows hundreds of
	// MB/s per millisecond of latency.
	opts := []kgo.Opt{kgo.ConsumeResetOffset(resetTo), kgo.KeepControlRecords(), kgo.WithPools(&recordPool{}),
		kgo.FetchMaxBytes(512 << 10), kgo.FetchMaxPartitionBytes(128 << 10), kgo.MaxConcurrentFetches(2)}
	if !s.dirty {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if len(consume) > 0 {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: consume}))
	}
	r.reach = newReach(fmt.Sprintf("kafka source '%s' (topic %s)", s.table.Name, s.topic), strings.Join(s.cc.Brokers, ","), rt.Stderr)
	opts = append(opts, r.reach.opt())
	if r.cl, err = s.cc.newClient(opts...); err != nil {
		r.reach.close()
		return nil, s.errorf("%v", err)
	}
	r.adm = kadm.NewClient(r.cl)
	r.dlqCB = r.dlqDone
	r.batch = rt.BatchSize
	if r.batch <= 0 {
		r.batch = 8192
	}
	r.linger = rt.Linger
	if r.linger <= 0 {
		r.linger = 20 * time.Millisecond
	}
	if r.dec, err = s.format.newDecoder(t, vector.NewPool(rt.Mem, decodePool), s.cc.timeout()); err != nil {
		r.cl.Close()
		return nil, s.errorf("%v", err)
	}
	r.wms = engine.NewPartitionWatermarks(len(ids), t.WatermarkLag)
	r.lastWM = engine.MinWatermark
	if s.restoreTS != nil {
		r.lastWM = s.restoreWM
		r.wms.SetLast(s.restoreWM)
	}
	now := time.Now()
	for i := range r.parts {
		r.parts[i].lastRec = now
		if ts, ok := s.restoreTS[r.parts[i].id]; ok {
			r.wms.SetState(i, engine.PartitionState{MaxTS: ts})
		}
		if r.parts[i].done {
			r.wms.Finish(i)
		} else {
			r.wms.Start(i)
		}
	}
	r.commitAt = now.Add(commitInterval)
	return r, nil
}

func (r *reader) close() {
	if r.dec != nil {
		r.dec.Release()
	}
	if r.cl != nil {
		r.cl.Close()
	}
	if r.reach != nil {
		r.reach.close()
	}
}

func (r *reader) loop(ctx context.Context) error {
	s := r.s
	if len(r.parts) == 0 && !s.bounded {
		// Nothing assigned to this subtask: it idles until stopped,
		// passing checkpoint barriers on. It says so downstream, so that
		// it does not hold back the watermark of the subtasks it feeds.
		r.idle = true
		if err := r.emit(engine.Message{Kind: engine.KindIdle}); err != nil {
			return err
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.barriers.C():
				if err := r.barrier(); err != nil {
					return err
				}
			}
		}
	}
	var finished []int
	for r.remain > 0 || !s.bounded {
		wait := r.pollWait()
		pctx, cancel := context.WithTimeout(ctx, wait)
		s.barriers.SetWake(cancel) // a barrier request ends the poll
		fetches := r.cl.PollFetches(pctx)
		s.barriers.SetWake(nil)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		now := time.Now()
		for _, f := range fetches {
			for ti := range f.Topics {
				ft := &f.Topics[ti]
				for pi := range ft.Partitions {
					fp := &ft.Partitions[pi]
					if fp.Err != nil {
						if errors.Is(fp.Err, context.DeadlineExceeded) || errors.Is(fp.Err, context.Canceled) {
							if ctx.Err() != nil {
								return ctx.Err()
							}
							continue
						}
						return s.errorf("topic %s partition %d: %v", ft.Topic, fp.Partition, fp.Err)
					}
					li, ok := r.local[fp.Partition]
					if !ok || ft.Topic != s.topic {
						continue
					}
					st := &r.parts[li]
					end := fp.HighWatermark
					if !s.dirty {
						end = fp.LastStableOffset
					}
					if st.done || len(fp.Records) == 0 {
						s.noteLag(fp.Partition, st.next, end)
						continue
					}
					st.lastRec = now
					if st.idle {
						st.idle = false
						r.wms.SetIdle(li, false)
						// Downstream hears the source is active
						// before its rows.
						if err := r.status(); err != nil {
							return err
						}
					}
					err := r.records(ctx, li, fp.Records)
					for _, rec := range fp.Records {
						rec.Recycle() // the rows hold copies
					}
					s.noteLag(fp.Partition, st.next, end)
					if err != nil {
						return err
					}
					if s.bounded && st.next >= st.end {
						st.done = true // takes no more records; finished below
						finished = append(finished, li)
					}
				}
			}
		}
		if err := r.dlqError(); err != nil {
			return err
		}
		if len(finished) > 0 {
			// A finished partition stops holding the watermark only
			// after its rows have gone downstream.
			if err := r.flush(); err != nil {
				return err
			}
			drop := make([]int32, 0, len(finished))
			for _, li := range finished {
				r.wms.Finish(li)
				drop = append(drop, r.parts[li].id)
				r.remain--
			}
			r.cl.RemoveConsumePartitions(map[string][]int32{s.topic: drop})
			finished = finished[:0]
			if err := r.watermark(); err != nil {
				return err
			}
			if err := r.status(); err != nil {
				return err
			}
		}
		if r.dec.Len() > 0 && now.Sub(r.batchAt) >= r.linger {
			if err := r.flush(); err != nil {
				return err
			}
		}
		if err := r.checkIdle(now); err != nil {
			return err
		}
		if !now.Before(r.commitAt) {
			r.commit()
		}
		if err := r.barrier(); err != nil {
			return err
		}
	}
	return r.flush()
}

// barrier emits the requested checkpoint barriers after the rows read so
// far (flushed first, and dead letters acknowledged), so that the offsets
// in the source's state cover exactly the records before each barrier.
func (r *reader) barrier() error {
	if !r.s.barriers.Pending() {
		return nil
	}
	if err := r.flush(); err != nil {
		return err
	}
	if err := r.flushDLQ(); err != nil {
		return err
	}
	for {
		id, ok := r.s.barriers.Next()
		if !ok {
			return nil
		}
		if err := r.emit(engine.Message{Kind: engine.KindBarrier, Checkpoint: id}); err != nil {
			return err
		}
	}
}

// pollWait is how long the next poll may wait for records: until the
// pending batch's linger ends, a partition may turn idle, or a commit is
// due.
func (r *reader) pollWait() time.Duration {
	now := time.Now()
	until := now.Add(time.Second)
	if r.dec.Len() > 0 {
		until = r.batchAt.Add(r.linger)
	}
	if r.s.idle > 0 {
		for i := range r.parts {
			if st := &r.parts[i]; !st.done && !st.idle {
				if t := st.lastRec.Add(r.s.idle); t.Before(until) {
					until = t
				}
			}
		}
	}
	if r.s.group != "" && r.commitAt.Before(until) {
		until = r.commitAt
	}
	return max(until.Sub(now), time.Millisecond)
}

// records appends one partition's records (in offset order) to the batch.
func (r *reader) records(ctx context.Context, li int, recs []*kgo.Record) error {
	s := r.s
	st := &r.parts[li]
	dec := r.dec
	for _, rec := range recs {
		if st.end >= 0 && rec.Offset >= st.end {
			break // scan_bounded: past the end listed at start-up
		}
		st.next = rec.Offset + 1
		if rec.Attrs.IsControl() || rec.Value == nil {
			continue // transaction markers and tombstones carry no row
		}
		if dec.Len() == 0 {
			r.batchAt = time.Now()
		}
		if n := len(r.segs); n == 0 || r.segs[n-1].part != li {
			r.segs = append(r.segs, segment{part: li, from: dec.Len()})
		}
		if derr := dec.Append(rec.Value); derr != nil {
			var fatal *fatalError
			if errors.As(derr, &fatal) {
				return s.errorf("topic %s partition %d offset %d: %v", s.topic, st.id, rec.Offset, derr)
			}
			switch s.onError {
			case "skip":
				s.skipped.Add(1)
			case "dead_letter":
				r.deadLetter(ctx, rec, derr)
			default:
				return s.errorf("topic %s partition %d offset %d: %v", s.topic, st.id, rec.Offset, derr)
			}
		}
		if dec.Len() >= r.batch {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush emits the buffered rows with their per-row watermarks, then the
// source watermark if it rose, and publishes the offsets they reach.
func (r *reader) flush() error {
	t := r.s.table
	n := r.dec.Len()
	if n == 0 {
		r.segs = r.segs[:0]
		r.publish()
		return nil
	}
	rec := r.dec.Flush()
	b := vector.New(rec)
	if t.EventTimeCol >= 0 {
		b.RowWatermark = make([]int64, n)
		ts, valid := engine.EventTimes(rec.Column(t.EventTimeCol))
		for k, sg := range r.segs {
			to := n
			if k+1 < len(r.segs) {
				to = r.segs[k+1].from
			}
			var v func(int) bool
			if valid != nil {
				from := sg.from
				v = func(i int) bool { return valid(from + i) }
			}
			r.wms.Observe(sg.part, ts[sg.from:to], v, b.RowWatermark[sg.from:to])
		}
	}
	r.segs = r.segs[:0]
	r.s.rows.Add(int64(n))
	if err := r.emit(engine.Message{Kind: engine.KindData, Batch: b}); err != nil {
		return err
	}
	r.publish()
	return r.watermark()
}

// watermark emits the source watermark if it rose.
func (r *reader) watermark() error {
	if r.s.table.EventTimeCol < 0 {
		return nil
	}
	if wm := r.wms.Current(); wm > r.lastWM {
		r.lastWM = wm
		return r.emit(engine.Message{Kind: engine.KindWatermark, Watermark: wm})
	}
	return nil
}

// publish makes the offsets reached so far the source's state.
func (r *reader) publish() {
	s := r.s
	s.mu.Lock()
	for i := range r.parts {
		s.offsets[r.parts[i].id] = r.parts[i].next
	}
	s.mu.Unlock()
}

// status emits the source's watermark status when it changed: idle when
// every partition that has not finished is idle (Flink's
// WatermarkStatus.IDLE; the subtasks it feeds then leave it out of their
// watermark), active again when one speaks.
func (r *reader) status() error {
	all, any := true, false
	for i := range r.parts {
		if st := &r.parts[i]; !st.done {
			any = true
			all = all && st.idle
		}
	}
	idle := any && all
	if !any || idle == r.idle {
		return nil
	}
	r.idle = idle
	if idle {
		return r.emit(engine.Message{Kind: engine.KindIdle})
	}
	return r.emit(engine.Message{Kind: engine.KindActive})
}

// checkIdle sets aside partitions quiet for idle_timeout_ms, oldest first,
// moving the watermark after each as if they had turned idle one by one.
func (r *reader) checkIdle(now time.Time) error {
	if r.s.idle <= 0 {
		return nil
	}
	flushed := false
	for {
		oldest := -1
		for i := range r.parts {
			st := &r.parts[i]
			if st.done || st.idle || now.Sub(st.lastRec) < r.s.idle {
				continue
			}
			if oldest < 0 || st.lastRec.Before(r.parts[oldest].lastRec) {
				oldest = i
			}
		}
		if oldest < 0 {
			return r.status()
		}
		if !flushed {
			// Rows already read go out before the watermark moves.
			if err := r.flush(); err != nil {
				return err
			}
			flushed = true
		}
		r.parts[oldest].idle = true
		r.wms.SetIdle(oldest, true)
		if err := r.watermark(); err != nil {
			return err
		}
	}
}

func (r *reader) deadLetter(ctx context.Context, rec *kgo.Record, derr error) {
	s := r.s
	// The record is recycled once decoded: the dead letter keeps copies.
	out := &kgo.Record{
		Topic: s.dlq,
		Key:   clone(rec.Key),
		Value: clone(rec.Value),
		Headers: []kgo.RecordHeader{
			{Key: "clink.topic", Value: []byte(rec.Topic)},
			{Key: "clink.partition", Value: strconv.AppendInt(nil, int64(rec.Partition), 10)},
			{Key: "clink.offset", Value: strconv.AppendInt(nil, rec.Offset, 10)},
			{Key: "clink.error", Value: []byte(derr.Error())},
		},
	}
	r.cl.Produce(ctx, out, r.dlqCB)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func (r *reader) dlqDone(rec *kgo.Record, err error) {
	if err == nil {
		r.s.deadLettered.Add(1)
		return
	}
	r.dlqMu.Lock()
	if r.dlqErr == nil {
		r.dlqErr = fmt.Errorf("dead_letter_topic %s: producing the record of partition %s offset %s: %w",
			rec.Topic, header(rec, "clink.partition"), header(rec, "clink.offset"), err)
	}
	r.dlqMu.Unlock()
}

func header(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (r *reader) dlqError() error {
	r.dlqMu.Lock()
	defer r.dlqMu.Unlock()
	if r.dlqErr != nil {
		return r.s.errorf("%v", r.dlqErr)
	}
	return nil
}

// flushDLQ waits until the dead-letter records are acknowledged.
func (r *reader) flushDLQ() error {
	if r.s.dlq == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.s.cc.timeout())
	defer cancel()
	if err := r.cl.Flush(ctx); err != nil {
		return r.s.errorf("dead_letter_topic %s: %v", r.s.dlq, err)
	}
	return r.dlqError()
}

// commit copies the source's offsets to group_id: a courtesy for lag
// monitoring (kafka-consumer-groups, Burrow), never read back by Clink. A
// failure is reported on stderr, once per distinct error, and does not stop
// the job.
func (r *reader) commit() {
	s := r.s
	r.commitAt = time.Now().Add(commitInterval)
	if s.group == "" || len(r.parts) == 0 {
		return
	}
	cur := s.Offsets()
	os := kadm.Offsets{}
	for p, o := range cur {
		if c, ok := r.committed[p]; ok && c == o {
			continue
		}
		os.Add(kadm.Offset{Topic: s.topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	if len(os) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cc.timeout())
	defer cancel()
	resp, err := r.adm.CommitOffsets(ctx, s.group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		if msg := err.Error(); msg != r.commitWarn && s.table.Runtime.Stderr != nil {
			r.commitWarn = msg
			fmt.Fprintf(s.table.Runtime.Stderr, "clink: kafka source '%s': committing offsets to group %s (a courtesy for monitoring) failed: %v\n", s.table.Name, s.group, err)
		}
		return
	}
	for p, o := range cur {
		r.committed[p] = o
	}
}
