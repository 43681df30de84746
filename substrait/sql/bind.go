package sql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// Compile parses and binds a script. CREATE TABLE statements fill the
// catalog in order; every INSERT and SELECT becomes one root of the
// returned Substrait plan. Errors are *Error with the line and column.
func Compile(src string, reg *connectors.Registry) (*pb.Plan, error) {
	return compile(src, reg, true)
}

// Check binds a script that may hold only DDL; it returns the plan of its
// queries, nil when there are none.
func Check(src string, reg *connectors.Registry) (*pb.Plan, error) {
	return compile(src, reg, false)
}

func compile(src string, reg *connectors.Registry, needQuery bool) (*pb.Plan, error) {
	script, err := Parse(src)
	if err != nil {
		return nil, err
	}
	b := newBinder(src, reg)
	var roots []*pb.RelRoot
	for _, st := range script.Statements {
		root, err := b.statement(st)
		if err != nil {
			return nil, err
		}
		if root != nil {
			roots = append(roots, root)
		}
	}
	if len(roots) == 0 {
		if !needQuery {
			return nil, nil
		}
		last := script.Statements[len(script.Statements)-1]
		return nil, Errorf(src, last.Position(), "script has no INSERT INTO or SELECT statement to run")
	}
	plan := b.sb.Plan(roots...)
	if err := substrait.SetJobSettings(plan, b.settings); err != nil {
		return nil, err
	}
	return plan, nil
}

// Table is a catalog entry made by CREATE TABLE.
type Table struct {
	Name      string
	Schema    *arrow.Schema
	Options   map[string]string
	optPos    map[string]Pos
	EventTime string // event-time column, "" for processing time
	Pos       Pos
}

type binder struct {
	src    string
	reg    *connectors.Registry
	tables map[string]*Table
	sb     *substrait.Builder
	funcs  *kernels.Registry
	post   *postAgg
	ctes   []*named
	views  map[string]*named
	// unboundedState: the script accepted state that grows without end
	// (SET 'table.exec.state.ttl' = '0').
	unboundedState bool
	// settings are the runtime settings SET statements gave (canonical
	// keys: checkpoint_interval_ms, checkpoint_dir, savepoint_dir,
	// checkpoints_retained, parallelism); the plan carries them.
	settings map[string]string
	// topNTime: per ROW_NUMBER relation, its event-time partition column
	// (a window's end) or -1.
	topNTime map[*pb.ConsistentPartitionWindowRel]int
	// reads names the catalog tables the statement being bound reads.
	reads map[string]bool
	// lateness carries the window's allowed lateness from the window
	// binding to the aggregate relation being built.
	lateness int64
}

func newBinder(src string, reg *connectors.Registry) *binder {
	f := kernels.NewRegistry()
	kernels.RegisterScalar(f)
	return &binder{src: src, reg: reg, tables: map[string]*Table{}, views: map[string]*named{}, topNTime: map[*pb.ConsistentPartitionWindowRel]int{}, sb: substrait.NewBuilder(), funcs: f, settings: map[string]string{}}
}

// spelled is an identifier as the user wrote it: unquoted identifiers
// match case-insensitively, but declared column names and aliases keep
// their case in schemas and output, as in Flink.
func (b *binder) spelled(id Ident) string {
	if id.Quoted {
		return id.Name
	}
	end := id.Pos.Offset + len(id.Name)
	if id.Pos.Offset >= 0 && end <= len(b.src) {
		if raw := b.src[id.Pos.Offset:end]; strings.EqualFold(raw, id.Name) {
			return raw
		}
	}
	return id.Name
}

func (b *binder) errf(pos Pos, format string, args ...any) *Error {
	return Errorf(b.src, pos, format, args...)
}

func (b *binder) statement(st Statement) (*pb.RelRoot, error) {
	switch s := st.(type) {
	case *CreateTable:
		return nil, b.createTable(s)
	case *Insert:
		return b.insert(s)
	case *Query:
		rel, sc, err := b.query(s)
		if err != nil {
			return nil, err
		}
		return &pb.RelRoot{Input: rel, Names: sc.names()}, nil
	case *Set:
		return nil, b.set(s)
	case *CreateView:
		key := strings.ToLower(s.Name.String())
		if _, ok := b.views[key]; ok || b.tables[key] != nil {
			if s.IfNotExists {
				return nil, nil
			}
			return nil, b.errf(s.Name.Pos, "%s already exists", s.Name.String())
		}
		// Bind once now so a broken view is reported where it is defined.
		n := &named{name: s.Name.String(), columns: s.Columns, query: s.Query}
		if _, _, err := b.bindNamed(n, n.name, s.Pos); err != nil {
			return nil, err
		}
		b.views[key] = n
		return nil, nil
	case *DropTable:
		name := s.Name.String()
		key := strings.ToLower(name)
		if _, ok := b.tables[key]; !ok && !s.IfExists {
			return nil, b.errf(s.Name.Pos, "table %s does not exist", name)
		}
		delete(b.tables, key)
		return nil, nil
	case *Explain:
		return nil, b.errf(s.Pos, "EXPLAIN is a command: run 'clink explain FILE.sql'")
	}
	return nil, b.errf(st.Position(), "unsupported statement")
}

// set applies SET 'key' = 'value'. Only keys Clink implements are
// accepted; anything else is an error, never silently ignored.
func (b *binder) set(s *Set) error {
	switch s.Key {
	case "table.exec.state.ttl":
		v := strings.TrimSpace(s.Value)
		if v == "0" || v == "0 ms" || v == "0ms" {
			b.unboundedState = true
			return nil
		}
		return b.errf(s.ValuePos, "state TTL '%s' is not supported yet: only '0' (keep state forever, accepting that it grows)", s.Value)
	}
	v := strings.TrimSpace(s.Value)
	switch s.Key {
	case "execution.checkpointing.interval":
		ms, ok := parseDurationMS(v)
		if !ok || ms <= 0 {
			return b.errf(s.ValuePos, "checkpoint interval '%s' is not a positive duration (e.g. '10s', '500 ms', '1 min')", s.Value)
		}
		b.settings["checkpoint_interval_ms"] = strconv.FormatInt(ms, 10)
		return nil
	case "execution.checkpointing.dir", "state.checkpoints.dir":
		dir, err := storeDir(v)
		if err != nil {
			return b.errf(s.ValuePos, "checkpoint directory '%s' %v", s.Value, err)
		}
		b.settings["checkpoint_dir"] = dir
		return nil
	case "execution.checkpointing.savepoint-dir", "state.savepoints.dir":
		dir, err := storeDir(v)
		if err != nil {
			return b.errf(s.ValuePos, "savepoint directory '%s' %v", s.Value, err)
		}
		b.settings["savepoint_dir"] = dir
		return nil
	case "execution.checkpointing.num-retained", "state.checkpoints.num-retained":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return b.errf(s.ValuePos, "'%s' must be a whole number of at least 1", s.Key)
		}
		b.settings["checkpoints_retained"] = v
		return nil
	case "execution.checkpointing.incremental", "state.backend.incremental":
		switch strings.ToLower(v) {
		case "true", "false":
			b.settings["incremental_checkpoints"] = strings.ToLower(v)
			return nil
		}
		return b.errf(s.ValuePos, "'%s' must be 'true' or 'false'", s.Key)
	case "execution.checkpointing.mode":
		if !strings.EqualFold(v, "EXACTLY_ONCE") {
			return b.errf(s.ValuePos, "checkpointing mode '%s' is not supported: Clink's barriers are aligned (EXACTLY_ONCE)", s.Value)
		}
		return nil
	case "parallelism.default":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return b.errf(s.ValuePos, "'parallelism.default' must be a whole number of at least 1")
		}
		b.settings["parallelism"] = v
		return nil
	}
	return b.errf(s.Pos, "SET '%s' is not supported (supported: 'table.exec.state.ttl' = '0', 'execution.checkpointing.interval', 'execution.checkpointing.dir' (or 'state.checkpoints.dir'), 'execution.checkpointing.savepoint-dir' (or 'state.savepoints.dir'), 'execution.checkpointing.num-retained', 'execution.checkpointing.incremental' (or 'state.backend.incremental'), 'execution.checkpointing.mode' = 'EXACTLY_ONCE', 'parallelism.default')", s.Key)
}

// parseDurationMS reads a Flink duration: a number with an optional unit
// (ms, s, sec, min, m, h; a bare number is milliseconds).
func parseDurationMS(v string) (int64, bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	mult := map[string]int64{"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
		"s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
		"m": 60000, "min": 60000, "mins": 60000, "minute": 60000, "minutes": 60000,
		"h": 3600000, "hour": 3600000, "hours": 3600000}
	m, ok := mult[strings.TrimSpace(v[i:])]
	if !ok || n > (1<<62)/m {
		return 0, false
	}
	return n * m, true
}

// sqlType maps a SQL type to the engine's Arrow type.
func (b *binder) sqlType(t TypeName) (arrow.DataType, error) {
	switch t.Base {
	case TypeBigint:
		return arrow.PrimitiveTypes.Int64, nil
	case TypeInt:
		return arrow.PrimitiveTypes.Int32, nil
	case TypeSmallint:
		return arrow.PrimitiveTypes.Int16, nil
	case TypeTinyint:
		return arrow.PrimitiveTypes.Int8, nil
	case TypeDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case TypeFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case TypeVarchar:
		return arrow.BinaryTypes.String, nil
	case TypeBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case TypeDecimal:
		// Flink's default is DECIMAL(10, 0).
		p, sc := 10, 0
		if t.HasPrecision {
			p, sc = t.Precision, t.Scale
		}
		if p < 1 || p > 38 || sc < 0 || sc > p {
			return nil, b.errf(t.Pos, "DECIMAL(%d, %d) is not valid: precision 1..38, scale 0..precision", p, sc)
		}
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
	case TypeTimestamp:
		if t.HasPrecision && t.Precision != 3 {
			return nil, b.errf(t.Pos, "TIMESTAMP(%d) is not supported: Clink timestamps have millisecond precision, use TIMESTAMP(3)", t.Precision)
		}
		return arrow.FixedWidthTypes.Timestamp_ms, nil
	}
	return nil, b.errf(t.Pos, "type %s is not supported yet", t.String())
}

func (b *binder) createTable(s *CreateTable) error {
	name := s.Name.String()
	key := strings.ToLower(name)
	if _, ok := b.tables[key]; ok {
		if s.IfNotExists {
			return nil
		}
		return b.errf(s.Name.Pos, "table %s already exists", name)
	}
	t := &Table{Name: name, Options: map[string]string{}, optPos: map[string]Pos{}, Pos: s.Pos}
	var fields []arrow.Field
	seen := map[string]bool{}
	for _, c := range s.Columns {
		name := b.spelled(c.Name)
		if seen[strings.ToLower(name)] {
			return b.errf(c.Name.Pos, "column %s is declared twice", name)
		}
		seen[strings.ToLower(name)] = true
		at, err := b.sqlType(c.Type)
		if err != nil {
			return err
		}
		fields = append(fields, arrow.Field{Name: name, Type: at, Nullable: true})
	}
	t.Schema = arrow.NewSchema(fields, nil)
	for _, o := range s.Options {
		t.Options[o.Key] = o.Value
		t.optPos[o.Key] = o.Pos
	}
	if pk := s.PrimaryKey; pk != nil {
		if _, ok := t.Options["primary_key"]; ok {
			return b.errf(pk.Pos, "give either PRIMARY KEY or 'primary_key', not both")
		}
		var cols []string
		for _, c := range pk.Columns {
			idx := t.column(c.Name)
			if idx < 0 {
				return b.errf(c.Pos, "PRIMARY KEY column %s is not a column of %s", c.Name, name)
			}
			cols = append(cols, t.Schema.Field(idx).Name)
		}
		t.Options["primary_key"] = strings.Join(cols, ",")
		t.optPos["primary_key"] = pk.Pos
	}
	if w := s.Watermark; w != nil {
		lag, err := b.watermarkLag(w)
		if err != nil {
			return err
		}
		if _, ok := t.Options["event_time_column"]; ok {
			return b.errf(w.Pos, "give either WATERMARK FOR or 'event_time_column', not both")
		}
		t.Options["event_time_column"] = w.Column.Name
		t.Options["watermark_lag_ms"] = strconv.FormatInt(lag, 10)
		t.optPos["event_time_column"] = w.Pos
		t.optPos["watermark_lag_ms"] = w.Pos
	}
	if err := b.validateOptions(t, s.Pos); err != nil {
		return err
	}
	if col, ok := t.Options["event_time_column"]; ok {
		idx := t.column(col)
		if idx < 0 {
			return b.errf(t.optPos["event_time_column"], "event_time_column '%s' is not a column of %s", col, name)
		}
		f := t.Schema.Field(idx)
		if f.Type.ID() != arrow.INT64 && f.Type.ID() != arrow.TIMESTAMP {
			return b.errf(t.optPos["event_time_column"], "event_time_column '%s' is %s; it must be BIGINT (epoch ms) or TIMESTAMP(3)", col, kernels.SQLTypeName(f.Type))
		}
		t.EventTime = f.Name
	}
	b.tables[key] = t
	return nil
}

func (t *Table) column(name string) int {
	for i, f := range t.Schema.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range t.Schema.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// watermarkLag reads WATERMARK FOR ts AS ts [- INTERVAL ...].
func (b *binder) watermarkLag(w *Watermark) (int64, error) {
	bad := b.errf(w.Expr.Position(), "WATERMARK FOR %s AS must be '%s' or '%s - INTERVAL ...'", w.Column.Name, w.Column.Name, w.Column.Name)
	switch e := w.Expr.(type) {
	case *ColumnRef:
		if !strings.EqualFold(e.Column.Name, w.Column.Name) {
			return 0, bad
		}
		return 0, nil
	case *BinaryExpr:
		c, ok := e.Left.(*ColumnRef)
		if !ok || e.Op != OpSub || !strings.EqualFold(c.Column.Name, w.Column.Name) {
			return 0, bad
		}
		ms, err := b.durationMS(e.Right)
		if err != nil {
			return 0, err
		}
		return ms, nil
	}
	return 0, bad
}

// durationMS reads an INTERVAL literal or an integer count of milliseconds.
func (b *binder) durationMS(e Expr) (int64, error) {
	switch x := e.(type) {
	case *IntervalLit:
		return x.Duration.Milliseconds(), nil
	case *IntLit:
		return x.Value, nil
	}
	return 0, b.errf(e.Position(), "expected an INTERVAL or a number of milliseconds, found %s", e.String())
}

func (b *binder) validateOptions(t *Table, pos Pos) error {
	cname, ok := t.Options["connector"]
	if !ok {
		return b.errf(pos, "table %s needs a 'connector' option in its WITH clause (known: %s)", t.Name, strings.Join(b.reg.Names(), ", "))
	}
	f, err := b.reg.Lookup(cname)
	if err != nil {
		return b.optErr(t, pos, err)
	}
	vo, err := f.Spec().Validate(t.Options)
	if err != nil {
		return b.optErr(t, pos, err)
	}
	// The plan carries the canonical option names (Flink aliases resolved)
	// with their values as given; defaults stay implicit.
	canon := map[string]string{}
	for k := range t.Options {
		if _, ok := vo[k]; ok {
			canon[k] = vo[k]
			continue
		}
		for name, v := range vo {
			if _, given := t.Options[name]; !given && f.Spec().IsAlias(k, name) {
				canon[name] = v
				t.optPos[name] = t.optPos[k]
			}
		}
	}
	t.Options = canon
	return nil
}

func (b *binder) optErr(t *Table, pos Pos, err error) error {
	if oe, ok := err.(*connectors.OptionError); ok {
		if p, ok := t.optPos[oe.Key]; ok {
			return b.errf(p, "table %s: %s", t.Name, oe.Msg)
		}
		return b.errf(pos, "table %s: %s", t.Name, oe.Msg)
	}
	return b.errf(pos, "table %s: %v", t.Name, err)
}

func (b *binder) lookup(n ObjectName) (*Table, error) {
	t, ok := b.tables[strings.ToLower(n.String())]
	if !ok {
		var names []string
		for _, t := range b.tables {
			names = append(names, t.Name)
		}
		msg := fmt.Sprintf("table %s does not exist", n.String())
		if s := suggest(n.String(), names); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return nil, b.errf(n.Pos, "%s", msg)
	}
	return t, nil
}

// read builds the ReadRel of a table.
func (b *binder) read(t *Table) (*pb.Rel, error) {
	ns, err := substrait.Schema(t.Schema)
	if err != nil {
		return nil, b.errf(t.Pos, "table %s: %v", t.Name, err)
	}
	ae, err := substrait.Options(t.Options)
	if err != nil {
		return nil, err
	}
	return &pb.Rel{RelType: &pb.Rel_Read{Read: &pb.ReadRel{
		Common:            substrait.Direct(),
		BaseSchema:        ns,
		ReadType:          &pb.ReadRel_NamedTable_{NamedTable: &pb.ReadRel_NamedTable{Names: []string{t.Name}}},
		AdvancedExtension: ae,
	}}}, nil
}

func (b *binder) insert(s *Insert) (*pb.RelRoot, error) {
	t, err := b.lookup(s.Table)
	if err != nil {
		return nil, err
	}
	f, _ := b.reg.Lookup(t.Options["connector"])
	if _, ok := f.(connectors.SinkFactory); !ok {
		return nil, b.errf(s.Table.Pos, "table %s: connector '%s' cannot be written to", t.Name, t.Options["connector"])
	}
	b.reads = map[string]bool{}
	rel, sc, err := b.query(s.Query)
	if err != nil {
		return nil, err
	}
	if b.reads[strings.ToLower(t.Name)] && t.Options["connector"] != "kafka" {
		return nil, b.errf(s.Table.Pos, "INSERT INTO %s reads %s too: a %s table cannot be read and written by the same statement (the sink would overwrite its input)", t.Name, t.Name, t.Options["connector"])
	}
	if sc.updating {
		us, ok := f.(connectors.UpdatingSink)
		if !ok {
			return nil, b.errf(s.Table.Pos, "table %s (connector '%s') cannot consume the updates of this query (an unwindowed GROUP BY produces a changelog); write to a sink that accepts updates", t.Name, t.Options["connector"])
		}
		if err := us.AcceptsUpdates(t.Options); err != nil {
			return nil, b.errf(s.Table.Pos, "table %s cannot consume the updates of this query: %v", t.Name, err)
		}
	}
	// Map query columns to table columns: by position, or by the column list.
	target := make([]int, len(sc.cols))
	if s.Columns != nil {
		if len(s.Columns) != len(sc.cols) {
			return nil, b.errf(s.Pos, "INSERT INTO %s lists %d columns but the query returns %d", t.Name, len(s.Columns), len(sc.cols))
		}
		for i, c := range s.Columns {
			idx := t.column(c.Name)
			if idx < 0 {
				return nil, b.errf(c.Pos, "table %s has no column %s", t.Name, c.Name)
			}
			target[i] = idx
		}
	} else {
		if len(sc.cols) != t.Schema.NumFields() {
			return nil, b.errf(s.Query.Pos, "INSERT INTO %s: the query returns %d columns, the table has %d", t.Name, len(sc.cols), t.Schema.NumFields())
		}
		for i := range target {
			target[i] = i
		}
	}
	exprs := make([]*pb.Expression, t.Schema.NumFields())
	for i, ti := range target {
		want := t.Schema.Field(ti).Type
		e := bound{pb: substrait.FieldRef(i), typ: sc.cols[i].typ}
		ce, ok := b.coerce(e, want)
		if !ok {
			return nil, b.errf(sc.cols[i].pos, "INSERT INTO %s: column %s is %s but the query gives %s", t.Name, t.Schema.Field(ti).Name, kernels.SQLTypeName(want), kernels.SQLTypeName(sc.cols[i].typ))
		}
		exprs[ti] = ce.pb
	}
	for i, e := range exprs {
		if e == nil {
			pt, _ := substrait.TypeOf(t.Schema.Field(i).Type)
			exprs[i] = substrait.LitNull(pt)
		}
	}
	rel = project(rel, len(sc.cols), exprs)
	ns, err := substrait.Schema(t.Schema)
	if err != nil {
		return nil, err
	}
	ae, err := substrait.Options(t.Options)
	if err != nil {
		return nil, err
	}
	w := &pb.Rel{RelType: &pb.Rel_Write{Write: &pb.WriteRel{
		WriteType:         &pb.WriteRel_NamedTable{NamedTable: &pb.NamedObjectWrite{Names: []string{t.Name}}},
		TableSchema:       ns,
		Op:                pb.WriteRel_WRITE_OP_INSERT,
		Input:             rel,
		Output:            pb.WriteRel_OUTPUT_MODE_NO_OUTPUT,
		AdvancedExtension: ae,
	}}}
	names := make([]string, t.Schema.NumFields())
	for i, f := range t.Schema.Fields() {
		names[i] = f.Name
	}
	return &pb.RelRoot{Input: w, Names: names}, nil
}

// project wraps rel in a ProjectRel that emits only exprs.
func project(rel *pb.Rel, nIn int, exprs []*pb.Expression) *pb.Rel {
	mapping := make([]int32, len(exprs))
	for i := range mapping {
		mapping[i] = int32(nIn + i)
	}
	return &pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{
		Common:      &pb.RelCommon{EmitKind: &pb.RelCommon_Emit_{Emit: &pb.RelCommon_Emit{OutputMapping: mapping}}},
		Input:       rel,
		Expressions: exprs,
	}}}
}

// storeDir reads a checkpoint or savepoint directory: a local path
// (file:///... or /...) or an object store's URL (s3://, s3a://, gs://,
// azure://bucket/prefix; the binary registers their clients).
func storeDir(v string) (string, error) {
	dir := strings.TrimPrefix(v, "file://")
	if dir == "" {
		return "", errors.New("is empty")
	}
	scheme, rest, ok := strings.Cut(dir, "://")
	if !ok {
		return dir, nil
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a", "gs", "azure":
		if bucket, _, _ := strings.Cut(rest, "/"); bucket == "" {
			return "", fmt.Errorf("names no bucket (%s://bucket/prefix)", scheme)
		}
		return dir, nil
	}
	return "", errors.New("must be a local path (file:///... or /...) or an object store's URL (s3://, gs://, azure://bucket/prefix)")
}
