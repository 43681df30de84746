// Package planner turns a Substrait plan into a job graph the engine runs.
// It consumes only the plan: tables, connector options, watermarks and
// windows all come from the plan's relations and Clink's extension.
package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// Env is what the planner needs besides the plan.
type Env struct {
	Connectors *connectors.Registry
	Funcs      *kernels.Registry
	Runtime    connectors.Runtime
	// Subtasks, when set, are the subtasks this process runs (a cluster
	// Worker); BuildParallel plans only those. Nil plans them all.
	Subtasks []int
}

// Job is a planned job: one pipeline per plan root.
type Job struct {
	Pipelines []*engine.Pipeline
	// Checkpoint, when set, turns checkpoints on (the caller fills it).
	Checkpoint *engine.CheckpointConfig
}

// Build plans every root of p.
func Build(p *pb.Plan, env Env) (*Job, error) { return build(p, env, false) }

func build(p *pb.Plan, env Env, validate bool) (*Job, error) {
	b := &builder{env: env, fnames: substrait.FuncNames(p), validate: validate}
	job := &Job{}
	for i, r := range p.GetRelations() {
		root := r.GetRoot()
		if root == nil {
			return nil, fmt.Errorf("plan relation %d is not a root", i)
		}
		pl, err := b.root(root)
		if err != nil {
			return nil, err
		}
		pl.Name = fmt.Sprintf("root%d", i)
		job.Pipelines = append(job.Pipelines, pl)
	}
	if len(job.Pipelines) == 0 {
		return nil, fmt.Errorf("plan has no relations")
	}
	uniqueNames(job.Pipelines)
	return job, nil
}

// Validate checks p as Build would, without opening a source or sink:
// everything Build refuses that needs no I/O (options, the connectors'
// SourceValidator and SinkValidator checks, expressions, windows, column
// types) is refused with the same error. `clink explain` and a cluster
// client before it submits call it; it plans subtask 0 of
// env.Runtime.Parallelism.
func Validate(p *pb.Plan, env Env) error {
	_, err := build(p, env, true)
	return err
}

// BuildParallel plans p copies of every root of plan, for subtasks 0..p-1,
// and joins each root's copies with the keyed exchanges that
// engine.Parallelize puts in front of their keyed operators.
func BuildParallel(p *pb.Plan, env Env, parallelism int) (*Job, error) {
	if parallelism <= 1 {
		return Build(p, env)
	}
	local := make([]bool, parallelism)
	for _, i := range env.Subtasks {
		if i < 0 || i >= parallelism {
			return nil, fmt.Errorf("subtask %d of a job at parallelism %d", i, parallelism)
		}
		local[i] = true
	}
	copies := make([]*Job, parallelism)
	var some *Job
	for i := range parallelism {
		if env.Subtasks != nil && !local[i] {
			continue
		}
		e := env
		e.Runtime.Subtask, e.Runtime.Parallelism = i, parallelism
		j, err := Build(p, e)
		if err != nil {
			return nil, err
		}
		copies[i], some = j, j
	}
	if some == nil {
		return nil, fmt.Errorf("no subtask to plan")
	}
	job := &Job{}
	for k := range some.Pipelines {
		ps := make([]*engine.Pipeline, parallelism)
		for i, j := range copies {
			if j != nil {
				ps[i] = j.Pipelines[k]
			}
		}
		par, err := engine.Parallelize(ps, 0, 0)
		if err != nil {
			return nil, err
		}
		job.Pipelines = append(job.Pipelines, par...)
	}
	return job, nil
}

type builder struct {
	env    Env
	fnames map[uint32]string
	// validate plans without opening sources and sinks (Validate); the
	// job's nodes then have no Source and its pipelines no Sink.
	validate bool
	// reads are the sources opened by the root being planned, by table,
	// options and schema: a table read twice by one query (a self-join,
	// q7's bids against their windows' maximum) is read and decoded once
	// and every reference receives every batch.
	reads map[string]engine.Source
	// needs are the columns the root uses of each reading (projection
	// pushdown, see prune.go).
	needs needs
	// statement names the root being planned in state signatures:
	// "INSERT INTO <table>", or "SELECT" for a query printed.
	statement string
}

// chain is a node under construction: a source or a binary operator over
// two finished input nodes, then a chain of operators.
type chain struct {
	source engine.Source
	binary engine.BinaryOperator
	inputs []*engine.Node
	ops    []engine.Operator
	names  []string
	schema *arrow.Schema
	// sigs are the state signatures of ops (sign), sourceSig and
	// binarySig those of the source and the binary operator.
	sigs                 []checkpoint.Signature
	sourceSig, binarySig checkpoint.Signature
	// sourceName is the source table's name.
	sourceName string
	// updating is true once the chain carries a changelog (an unwindowed
	// aggregate), not only inserts.
	updating bool
}

// node finishes the chain as an engine node.
func (c *chain) node() *engine.Node {
	return &engine.Node{Source: c.source, Binary: c.binary, Inputs: c.inputs, Ops: c.ops, Names: c.names, SourceName: c.sourceName,
		SourceSig: c.sourceSig, BinarySig: c.binarySig, Sigs: c.sigs}
}

func (c *chain) add(name string, o engine.Operator, schema *arrow.Schema) {
	c.ops = append(c.ops, o)
	c.names = append(c.names, name)
	c.schema = schema
}

func (b *builder) root(root *pb.RelRoot) (*engine.Pipeline, error) {
	b.reads = map[string]engine.Source{}
	in := root.GetInput()
	b.statement = "SELECT"
	if w := in.GetWrite(); w != nil {
		b.statement = "INSERT INTO " + strings.Join(w.GetNamedTable().GetNames(), ".")
	}
	b.needs = needs{}
	if w := in.GetWrite(); w != nil {
		b.needs.walk(w.GetInput(), allCols())
	} else {
		b.needs.walk(in, allCols())
	}
	if w := in.GetWrite(); w != nil {
		return b.write(w)
	}
	c, err := b.rel(in)
	if err != nil {
		return nil, err
	}
	names := root.GetNames()
	if len(names) != c.schema.NumFields() {
		return nil, fmt.Errorf("root names %v do not match %d output columns", names, c.schema.NumFields())
	}
	out := renamed(c.schema, names)
	c.add("rename", &op.Rename{Schema: out}, out)
	f, err := b.env.Connectors.Lookup("print")
	if err != nil {
		return nil, err
	}
	opts, err := f.Spec().Validate(map[string]string{"connector": "print"})
	if err != nil {
		return nil, err
	}
	sf := f.(connectors.SinkFactory)
	pt := &connectors.Table{Name: "print", Schema: out, Options: opts, EventTimeCol: -1, Runtime: b.env.Runtime}
	if err := validateSink(sf, pt); err != nil {
		return nil, err
	}
	var sink engine.Sink
	if !b.validate {
		if sink, err = sf.NewSink(pt); err != nil {
			return nil, err
		}
	}
	return &engine.Pipeline{Root: c.node(), Sink: sink, SinkName: "print", SinkSig: sinkSig("print", "print", "none")}, nil
}

func renamed(s *arrow.Schema, names []string) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: names[i], Type: f.Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

func (b *builder) write(w *pb.WriteRel) (*engine.Pipeline, error) {
	if w.GetOp() != pb.WriteRel_WRITE_OP_INSERT {
		return nil, fmt.Errorf("write %s is not supported (only INSERT)", w.GetOp())
	}
	name := strings.Join(w.GetNamedTable().GetNames(), ".")
	schema, err := substrait.ArrowSchema(w.GetTableSchema())
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	opts, err := substrait.OptionsOf(w.GetAdvancedExtension())
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", name, err)
	}
	t, f, err := b.openTable(name, schema, opts)
	if err != nil {
		return nil, err
	}
	sf, ok := f.(connectors.SinkFactory)
	if !ok {
		return nil, fmt.Errorf("table %s: connector '%s' cannot be written to", name, opts["connector"])
	}
	// A refused sink fails before any source is opened.
	if err := validateSink(sf, t); err != nil {
		return nil, err
	}
	c, err := b.rel(w.GetInput())
	if err != nil {
		return nil, err
	}
	if c.schema.NumFields() != schema.NumFields() {
		return nil, fmt.Errorf("INSERT INTO %s: query has %d columns, table has %d", name, c.schema.NumFields(), schema.NumFields())
	}
	for i, f := range c.schema.Fields() {
		if !arrow.TypeEqual(f.Type, schema.Field(i).Type) {
			return nil, fmt.Errorf("INSERT INTO %s: column %s is %s, the query gives %s", name, schema.Field(i).Name, kernels.SQLTypeName(schema.Field(i).Type), kernels.SQLTypeName(f.Type))
		}
	}
	c.add("rename", &op.Rename{Schema: schema}, schema)
	var sink engine.Sink
	if !b.validate {
		if sink, err = sf.NewSink(t); err != nil {
			return nil, err
		}
	}
	return &engine.Pipeline{Root: c.node(), Sink: sink, SinkName: name, SinkSig: sinkSig(name, opts["connector"], sinkDelivery(f, t))}, nil
}

// validateSink runs the factory's SinkValidator, if it has one.
func validateSink(sf connectors.SinkFactory, t *connectors.Table) error {
	if v, ok := sf.(connectors.SinkValidator); ok {
		return v.ValidateSink(t)
	}
	return nil
}

// openSource runs the factory's SourceValidator, then opens the source
// unless the builder only validates.
func (b *builder) openSource(sf connectors.SourceFactory, t *connectors.Table) (engine.Source, error) {
	if v, ok := sf.(connectors.SourceValidator); ok {
		if err := v.ValidateSource(t); err != nil {
			return nil, err
		}
	}
	if b.validate {
		return nil, nil
	}
	return sf.NewSource(t)
}

// openTable validates a table's options against its connector's spec.
func (b *builder) openTable(name string, schema *arrow.Schema, opts map[string]string) (*connectors.Table, connectors.Factory, error) {
	cname, ok := opts["connector"]
	if !ok {
		return nil, nil, fmt.Errorf("table %s has no 'connector' option", name)
	}
	f, err := b.env.Connectors.Lookup(cname)
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: %w", name, err)
	}
	vo, err := f.Spec().Validate(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: %w", name, err)
	}
	t := &connectors.Table{Name: name, Schema: schema, Options: vo, EventTimeCol: -1, Runtime: b.env.Runtime}
	if col, ok := vo["event_time_column"]; ok && col != "" {
		idx := -1
		for i, f := range schema.Fields() {
			if strings.EqualFold(f.Name, col) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, nil, fmt.Errorf("table %s: event_time_column '%s' is not a column", name, col)
		}
		switch schema.Field(idx).Type.ID() {
		case arrow.INT64, arrow.TIMESTAMP:
		default:
			return nil, nil, fmt.Errorf("table %s: event_time_column '%s' must be BIGINT (epoch ms) or TIMESTAMP(3), not %s", name, col, kernels.SQLTypeName(schema.Field(idx).Type))
		}
		t.EventTimeCol = idx
	}
	t.WatermarkLag = vo.Int("watermark_lag_ms")
	if t.WatermarkLag < 0 {
		return nil, nil, fmt.Errorf("table %s: watermark_lag_ms must not be negative", name)
	}
	return t, f, nil
}

func (b *builder) rel(r *pb.Rel) (*chain, error) {
	switch x := r.GetRelType().(type) {
	case *pb.Rel_Read:
		return b.read(x.Read)
	case *pb.Rel_Filter:
		c, err := b.rel(x.Filter.GetInput())
		if err != nil {
			return nil, err
		}
		pred, err := b.expr(x.Filter.GetCondition(), c.schema)
		if err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		c.add("filter", &op.Filter{Pred: pred, Mem: b.env.Runtime.Mem}, c.schema)
		return c, b.emit(c, x.Filter.GetCommon())
	case *pb.Rel_Project:
		c, err := b.rel(x.Project.GetInput())
		if err != nil {
			return nil, err
		}
		n := c.schema.NumFields()
		var exprs []kernels.Expr
		var names []string
		for i, f := range c.schema.Fields() {
			exprs = append(exprs, kernels.ColRef(i, f.Type, f.Name))
			names = append(names, f.Name)
		}
		for i, e := range x.Project.GetExpressions() {
			ke, err := b.expr(e, c.schema)
			if err != nil {
				return nil, fmt.Errorf("project: %w", err)
			}
			exprs = append(exprs, ke)
			// A column passed on keeps its name (state signatures name
			// key and argument columns: a projection that moves a column
			// does not change the state it shapes); a computed one is $N.
			name := "$" + strconv.Itoa(n+i)
			if ref, ok := substrait.FieldIndex(e); ok && ref < n {
				name = c.schema.Field(ref).Name
			}
			names = append(names, name)
		}
		if em := x.Project.GetCommon().GetEmit(); em != nil {
			var e2 []kernels.Expr
			var n2 []string
			for _, m := range em.GetOutputMapping() {
				if int(m) >= len(exprs) {
					return nil, fmt.Errorf("project emit references column %d of %d", m, len(exprs))
				}
				e2 = append(e2, exprs[m])
				n2 = append(n2, names[m])
			}
			exprs, names = e2, n2
		}
		p := op.NewProject(exprs, names, b.env.Runtime.Mem)
		c.add("project", p, p.Schema)
		return c, nil
	case *pb.Rel_Aggregate:
		return b.aggregate(x.Aggregate)
	case *pb.Rel_Join:
		return b.join(x.Join)
	case *pb.Rel_Window:
		return b.topN(x.Window)
	case *pb.Rel_Set:
		return b.union(x.Set)
	case nil:
		return nil, fmt.Errorf("empty relation")
	}
	return nil, fmt.Errorf("relation %s is not supported by Clink's runtime", relName(r))
}

func relName(r *pb.Rel) string {
	s := fmt.Sprintf("%T", r.GetRelType())
	return strings.TrimPrefix(s, "*substraitpb.Rel_")
}

// emit applies a RelCommon emit mapping as a projection.
func (b *builder) emit(c *chain, common *pb.RelCommon) error {
	em := common.GetEmit()
	if em == nil {
		return nil
	}
	var exprs []kernels.Expr
	var names []string
	for _, m := range em.GetOutputMapping() {
		if int(m) >= c.schema.NumFields() {
			return fmt.Errorf("emit references column %d of %d", m, c.schema.NumFields())
		}
		f := c.schema.Field(int(m))
		exprs = append(exprs, kernels.ColRef(int(m), f.Type, f.Name))
		names = append(names, f.Name)
	}
	p := op.NewProject(exprs, names, b.env.Runtime.Mem)
	c.add("emit", p, p.Schema)
	return nil
}

func (b *builder) read(rd *pb.ReadRel) (*chain, error) {
	if vt := rd.GetVirtualTable(); vt != nil {
		return b.values(rd, vt)
	}
	nt := rd.GetNamedTable()
	if nt == nil {
		return nil, fmt.Errorf("read: only named tables are supported")
	}
	name := strings.Join(nt.GetNames(), ".")
	schema, err := substrait.ArrowSchema(rd.GetBaseSchema())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	if rd.GetFilter() != nil || rd.GetProjection() != nil {
		return nil, fmt.Errorf("table %s: ReadRel filter/projection pushdown is not supported", name)
	}
	opts, err := substrait.OptionsOf(rd.GetAdvancedExtension())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	t, f, err := b.openTable(name, schema, opts)
	if err != nil {
		return nil, err
	}
	ps, err := b.scanParallelism(name, t.Options)
	if err != nil {
		return nil, err
	}
	if ps > 0 {
		t.Runtime.Parallelism = ps
	}
	sf, ok := f.(connectors.SourceFactory)
	if !ok {
		return nil, fmt.Errorf("table %s: connector '%s' cannot be read from", name, opts["connector"])
	}
	key := readKey(name, schema, opts)
	t.Needed = b.needs.neededOf(key, schema.NumFields(), t.EventTimeCol)
	src := b.reads[key]
	if src == nil {
		if src, err = b.openSource(sf, t); err != nil {
			return nil, err
		}
		b.reads[key] = src
	}
	c := &chain{source: src, schema: schema, sourceName: name, sourceSig: sourceSig(name, opts["connector"], b.statement)}
	return c, b.emit(c, rd.GetCommon())
}

// scanParallelism is the table option scan.parallelism (Flink's name,
// connectors.ScanParallelismOption): how many of the job's subtasks read
// the table. Subtask i < N reads as subtask i of N (Kafka partitions and
// files index mod N); the others read nothing (an unbounded Kafka
// source's are idle from the start, a file source's end at once). The
// rows then reach the keyed operators through their exchanges, at the
// job's parallelism. 0: not set (the job's parallelism).
func (b *builder) scanParallelism(name string, opts map[string]string) (int, error) {
	v, ok := opts["scan.parallelism"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("table %s: scan.parallelism must be a whole number >= 1, not %q", name, v)
	}
	if job := max(b.env.Runtime.Parallelism, 1); n > job {
		return 0, fmt.Errorf("table %s: scan.parallelism %d is more than the job's parallelism %d; a source cannot run more subtasks than the job (raise --parallelism or 'parallelism.default')", name, n, job)
	}
	return n, nil
}

// readKey identifies one reading of a table: its name, schema and options.
func readKey(name string, schema *arrow.Schema, opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteByte(0)
	sb.WriteString(schema.String())
	for _, k := range keys {
		sb.WriteByte(0)
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(opts[k])
	}
	return sb.String()
}

// fname is the simple name of a function anchor ("add" of "add:i64_i64").
func (b *builder) fname(anchor uint32) (string, error) {
	n, ok := b.fnames[anchor]
	if !ok {
		return "", fmt.Errorf("function anchor %d is not declared in the plan", anchor)
	}
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	return n, nil
}
