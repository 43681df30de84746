package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	ckconn "github.com/clink-dev/clink/connectors/checkpoint"
	"github.com/clink-dev/clink/connectors/print"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
	"github.com/clink-dev/clink/vector"
)

// SystemSchema holds the system tables (also reachable unqualified).
const SystemSchema = "clink"

// StateTable is the table, in a job's schema job_<id>, of every stateful
// operator's state rows (as state-query's table 'state').
const StateTable = "state"

// JobSchema is the schema of job id's state tables.
func JobSchema(id string) string { return "job_" + id }

// pinnedState is a job's newest completed checkpoint, pinned while a
// query reads it.
type pinnedState struct {
	job       Job
	id        uint64
	path      string // the chk-<id> directory
	operators []string
	unpin     func()
}

// pinLatest pins the newest completed checkpoint of the store in dir; ok
// is false when it has none. It retries when retention removes the one
// it chose before the pin holds.
func pinLatest(j Job) (*pinnedState, bool, error) {
	st, err := checkpoint.NewStore(j.StateDir, checkpoint.Options{})
	if err != nil {
		return nil, false, err
	}
	var last error
	for range 5 {
		id, ok, err := st.Latest()
		if err != nil || !ok {
			return nil, false, err
		}
		unpin := checkpoint.Pin(j.StateDir, id)
		c, err := st.Open(id)
		if err != nil {
			unpin()
			last = err
			continue
		}
		var ops []string
		for _, p := range c.Parts() {
			if !slices.Contains(ops, p.Operator) {
				ops = append(ops, p.Operator)
			}
		}
		slices.Sort(ops)
		return &pinnedState{job: j, id: id, path: st.Path(id), operators: ops, unpin: unpin}, true, nil
	}
	return nil, false, fmt.Errorf("job %s: no stable checkpoint to read: %w", j.ID, last)
}

// intact reports whether the pinned checkpoint is still complete (a Retain
// that checked the pin just before it was taken could remove it).
func (p *pinnedState) intact() bool {
	_, err := os.Stat(filepath.Join(p.path, checkpoint.ManifestName))
	return err == nil
}

// stateTableName names operator op's table in the job's schema: a plain
// identifier as is, else quoted.
func stateTableName(job, op string) string {
	if plainIdent.MatchString(op) {
		return JobSchema(job) + "." + op
	}
	return JobSchema(job) + ".`" + strings.ReplaceAll(op, "`", "``") + "`"
}

var (
	plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	jobRef     = regexp.MustCompile("(?i)\\bjob_([0-9]+)\\b")
)

// query is one statement being planned and run.
type query struct {
	text string
	// job, when set, also declares table 'state' as that job's state
	// (clink state-query --job N).
	job    string
	script string
	// lines and prefix are the lines and bytes before the user's text in
	// script.
	lines, prefix int
	// sort is the ORDER BY the endpoint applies to the result (order.go).
	sort *sortSpec
	// global, when set, marks a global aggregate: its COUNT columns
	// (empty.go); sent says a result row went out.
	global []bool
	sent   bool
	tables map[string]*table
	pins   []*pinnedState
	schema *arrow.Schema
	mem    memory.Allocator
	// ctx and out are where run sends the result.
	ctx context.Context
	out chan<- arrow.RecordBatch
}

// send passes a result batch on (taking over rec), unless the reader is
// gone.
func (q *query) send(rec arrow.RecordBatch) error {
	if rec.NumRows() > 0 {
		q.sent = true
	}
	select {
	case q.out <- rec:
		return nil
	case <-q.ctx.Done():
		rec.Release()
		return q.ctx.Err()
	}
}

// prepare snapshots the catalog, pins the state the text refers to and
// builds the script: the tables' declarations, then the text.
func prepare(cat Catalog, text, job string, mem memory.Allocator) (*query, error) {
	q := &query{text: text, job: job, tables: map[string]*table{}, mem: mem}
	var ddl []string
	for _, t := range systemTables(cat, time.Now()) {
		q.tables[t.name] = t
		ddl = append(ddl, t.ddl())
		qualified := *t
		qualified.name = SystemSchema + "." + t.name
		q.tables[qualified.name] = &qualified
		ddl = append(ddl, qualified.ddl())
	}
	wanted := map[string]bool{}
	for _, m := range jobRef.FindAllStringSubmatch(text, -1) {
		wanted[m[1]] = true
	}
	jobs := cat.Jobs()
	if job != "" {
		wanted[job] = true
		if !slices.ContainsFunc(jobs, func(j Job) bool { return j.ID == job }) {
			return nil, status.Errorf(codes.NotFound, "no job %s", job)
		}
	}
	for _, j := range jobs {
		if !wanted[j.ID] {
			continue
		}
		if j.StateDir == "" {
			if j.ID == job {
				q.release()
				return nil, status.Errorf(codes.FailedPrecondition, "job %s runs without checkpoints: it has no state to read", j.ID)
			}
			continue
		}
		p, ok, err := pinLatest(j)
		if err != nil {
			q.release()
			return nil, err
		}
		if !ok {
			if j.ID == job {
				q.release()
				return nil, status.Errorf(codes.FailedPrecondition, "job %s has no completed checkpoint yet: its state is read from the newest one", j.ID)
			}
			continue
		}
		q.pins = append(q.pins, p)
		names := []string{JobSchema(j.ID) + "." + StateTable}
		if j.ID == job {
			names = append(names, StateTable)
		}
		for _, n := range names {
			d, err := stateDDL(n, p.path, "")
			if err != nil {
				q.release()
				return nil, err
			}
			ddl = append(ddl, d)
		}
		for _, op := range p.operators {
			d, err := stateDDL(stateTableName(j.ID, op), p.path, op)
			if err != nil {
				q.release()
				return nil, err
			}
			ddl = append(ddl, d)
		}
	}
	q.script = strings.Join(ddl, ";\n") + ";\n"
	q.lines, q.prefix = strings.Count(q.script, "\n"), len(q.script)
	run, spec := splitOrderBy(text)
	q.script += run
	q.sort = spec
	if counts, ok := globalAggregate(run); ok {
		q.global = counts
	}
	return q, nil
}

func stateDDL(name, path, op string) (string, error) {
	opts := map[string]string{"path": path}
	if op != "" {
		opts["operator"] = op
	}
	d, _, err := ckconn.DDL(name, opts)
	if err != nil {
		return "", fmt.Errorf("table %s: %w", name, err)
	}
	return d, nil
}

// release unpins the query's checkpoints.
func (q *query) release() {
	for _, p := range q.pins {
		p.unpin()
	}
	q.pins = nil
}

// compile parses and binds the script; an error in the text points into
// the text (line:column) rather than into the declarations before it.
func (q *query) compile() (*planner.Job, error) {
	reg := q.registry()
	plan, err := sql.Compile(q.script, reg)
	if err != nil {
		return nil, q.userPos(err)
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	rt := connectors.Runtime{BatchSize: 8192, Linger: 20 * time.Millisecond, Mem: q.mem, Stdout: io.Discard, Stderr: io.Discard, Parallelism: 1}
	job, err := planner.BuildParallel(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt}, 1)
	if err != nil {
		return nil, q.userPos(err)
	}
	if len(job.Pipelines) != 1 || q.schema == nil {
		return nil, &queryError{errors.New("give one query (SELECT ...): INSERT INTO and several statements are not run here")}
	}
	if err := q.sort.resolve(q.schema); err != nil {
		return nil, &queryError{err}
	}
	return job, nil
}

// queryError is an error in the user's statement (InvalidArgument).
type queryError struct{ err error }

func (e *queryError) Error() string { return e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

func (q *query) userPos(err error) error {
	var se *sql.Error
	if !errors.As(err, &se) {
		return &queryError{err}
	}
	e := *se
	if q.job == "" && strings.HasPrefix(e.Msg, "table state does not exist") {
		e.Msg = "table state does not exist: a job's state is job_<id>.state (SELECT ... FROM job_1.state), or name the job (clink sql --job N)"
	}
	if e.Pos.Line > q.lines {
		e.Pos.Line -= q.lines
		e.Pos.Offset -= q.prefix
		e.Src = q.text
	}
	return &queryError{&e}
}

// run runs the planned job, sending its result batches on out (the
// caller owns them), and closes out when done. A read of state that
// retention removed despite the pin is an error, never a partial result.
func (q *query) run(ctx context.Context, job *planner.Job, out chan<- arrow.RecordBatch) error {
	q.ctx, q.out = ctx, out
	if testHookRun != nil {
		var ids []uint64
		for _, p := range q.pins {
			ids = append(ids, p.id)
		}
		testHookRun(ids)
	}
	_, err := job.Run(ctx)
	if err == nil {
		for _, p := range q.pins {
			if !p.intact() {
				return fmt.Errorf("checkpoint %d of job %s was removed while it was read; run the query again", p.id, p.job.ID)
			}
		}
	}
	return err
}

// testHookRun, when set, is called with the pinned checkpoints' ids
// before a query runs.
var testHookRun func(pinned []uint64)

// registry has the connectors a query may read: the system tables, the
// checkpoint connector for state, and 'print' for the result.
func (q *query) registry() *connectors.Registry {
	r := connectors.NewRegistry()
	r.Register(memConnector{q})
	r.Register(ckconn.Connector{})
	r.Register(resultConnector{q})
	return r
}

const memConnectorName = "clink_system"

// memConnector serves the system tables of the query's snapshot.
type memConnector struct{ q *query }

var memSpec = &connectors.Spec{
	Name:        memConnectorName,
	Description: "A system table of the Flight SQL endpoint, read once.",
	Source:      true,
	Options: append(append([]connectors.Option{}, connectors.CommonSourceOptions...),
		connectors.Option{Name: "table", Type: connectors.String, Required: true, Description: "the system table", Example: "jobs"}),
}

var (
	_ connectors.SourceFactory = memConnector{}
	_ connectors.Boundedness   = memConnector{}
)

func (memConnector) Spec() *connectors.Spec          { return memSpec }
func (memConnector) Bounded(connectors.Options) bool { return true }

func (m memConnector) NewSource(t *connectors.Table) (engine.Source, error) {
	tbl, ok := m.q.tables[t.Options["table"]]
	if !ok {
		return nil, fmt.Errorf("no system table %q", t.Options["table"])
	}
	return &memSource{t: t, tbl: tbl}, nil
}

type memSource struct {
	t   *connectors.Table
	tbl *table
}

// Run emits the table's rows as one batch.
func (s *memSource) Run(ctx context.Context, emit func(engine.Message) error) error {
	if len(s.tbl.rows) == 0 {
		return nil
	}
	mem := s.t.Runtime.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := array.NewRecordBuilder(mem, s.t.Schema)
	defer b.Release()
	for _, row := range s.tbl.rows {
		for i, v := range row {
			if err := appendValue(b.Field(i), v); err != nil {
				return fmt.Errorf("system table %s column %s: %w", s.tbl.name, s.tbl.cols[i].name, err)
			}
		}
	}
	return emit(engine.Message{Kind: engine.KindData, Batch: vector.New(b.NewRecordBatch())})
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	default:
		return fmt.Errorf("unexpected builder %T", b)
	}
	return nil
}

// resultConnector stands in for 'print', the sink of a bare SELECT: it
// sends the result to the Flight SQL stream instead.
type resultConnector struct{ q *query }

func (resultConnector) Spec() *connectors.Spec { return print.Connector{}.Spec() }

func (r resultConnector) NewSink(t *connectors.Table) (engine.Sink, error) {
	r.q.schema = t.Schema
	return &resultSink{q: r.q, mem: t.Runtime.Mem, alive: map[string][]int{}}, nil
}

// resultSink passes insert-only batches on as they come; a changelog (an
// unwindowed GROUP BY's updates) is folded into its final rows, sent at
// end of input.
type resultSink struct {
	q   *query
	mem memory.Allocator
	// The changelog's rows: each inserted row by record and index, alive
	// until retracted; alive maps a row's values to its live entries.
	recs  []arrow.RecordBatch
	rows  []rowRef
	alive map[string][]int
}

type rowRef struct {
	rec  int
	i    int32
	dead bool
}

func (s *resultSink) Write(b *vector.Batch) error {
	if b.Kinds == nil && s.q.sort == nil {
		c := b.Compact(s.mem)
		rec := c.Rec
		c.Rec = nil
		if c != b {
			b.Release()
		}
		return s.q.send(rec)
	}
	ri := len(s.recs)
	rec := b.Rec
	live := liveRows(b, int(rec.NumRows()))
	s.recs = append(s.recs, rec)
	b.Rec = nil
	var kb strings.Builder
	for _, i := range live {
		kb.Reset()
		for c := 0; c < int(rec.NumCols()); c++ {
			col := rec.Column(c)
			if col.IsNull(i) {
				kb.WriteString("\x01")
			} else {
				kb.WriteString(strconv.Quote(col.ValueStr(i)))
			}
			kb.WriteByte(0)
		}
		k := kb.String()
		kind := vector.Insert
		if b.Kinds != nil {
			kind = b.Kinds[i]
		}
		switch kind {
		case vector.Insert, vector.UpdateAfter:
			s.alive[k] = append(s.alive[k], len(s.rows))
			s.rows = append(s.rows, rowRef{rec: ri, i: int32(i)})
		default:
			if l := s.alive[k]; len(l) > 0 {
				s.rows[l[len(l)-1]].dead = true
				s.alive[k] = l[:len(l)-1]
			}
		}
	}
	return nil
}

func liveRows(b *vector.Batch, n int) []int {
	out := make([]int, 0, n)
	b.Rows(func(i int) { out = append(out, i) })
	return out
}

// Flush sends the folded changelog's live rows, a batch per record they
// came in.
func (s *resultSink) Flush() error {
	if err := s.flush(); err != nil {
		return err
	}
	if s.q.global != nil && !s.q.sent {
		return s.q.send(emptyAggregateRow(s.mem, s.q.schema, s.q.global))
	}
	return nil
}

func (s *resultSink) flush() error {
	if s.q.sort != nil {
		return s.flushSorted()
	}
	byRec := map[int][]int32{}
	for _, r := range s.rows {
		if !r.dead {
			byRec[r.rec] = append(byRec[r.rec], r.i)
		}
	}
	for ri, rec := range s.recs {
		idx := byRec[ri]
		if len(idx) > 0 {
			cols := make([]arrow.Array, rec.NumCols())
			for c := range cols {
				cols[c] = vector.Take(s.mem, rec.Column(c), idx)
			}
			out := array.NewRecordBatch(rec.Schema(), cols, int64(len(idx)))
			for _, c := range cols {
				c.Release()
			}
			if err := s.q.send(out); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushSorted sends the live rows in the ORDER BY's order, as one batch.
func (s *resultSink) flushSorted() error {
	if len(s.recs) == 0 {
		return nil
	}
	offsets := make([]int32, len(s.recs))
	var n int32
	for i, r := range s.recs {
		offsets[i] = n
		n += int32(r.NumRows())
	}
	var idx []int32
	for _, r := range s.rows {
		if !r.dead {
			idx = append(idx, offsets[r.rec]+r.i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	schema := s.recs[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	for c := range cols {
		parts := make([]arrow.Array, len(s.recs))
		for i, r := range s.recs {
			parts[i] = r.Column(c)
		}
		all, err := array.Concatenate(parts, s.mem)
		if err != nil {
			return err
		}
		cols[c] = all
	}
	whole := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	defer whole.Release()
	sortRows(whole, s.q.sort.keys, idx)
	if l := s.q.sort.limit; l >= 0 && int64(len(idx)) > l {
		idx = idx[:l]
	}
	if len(idx) == 0 {
		return nil
	}
	out := make([]arrow.Array, len(cols))
	for c := range out {
		out[c] = vector.Take(s.mem, whole.Column(c), idx)
	}
	rec := array.NewRecordBatch(schema, out, int64(len(idx)))
	for _, c := range out {
		c.Release()
	}
	return s.q.send(rec)
}

func (s *resultSink) Close() error {
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
	return nil
}
