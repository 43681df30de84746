// Package checkpoint is the checkpoint connector: a bounded source over
// the state rows of a checkpoint (docs/state-format.md), so that Clink's
// own SQL can query a job's state. clink state-query declares its table.
package checkpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	chk "github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// Connector is the 'checkpoint' connector.
type Connector struct{}

var (
	_ connectors.SourceFactory = Connector{}
	_ connectors.Boundedness   = Connector{}
)

var spec = &connectors.Spec{
	Name: "checkpoint",
	Description: "The state rows of a checkpoint, read once (bounded): one row per state entry, every part of the selected operators in order (operator, subtask, file order). " +
		"Columns are matched by name: the fixed columns slot, key_group, key, window_start, window_end, the value columns of the parts, and `operator` (STRING) and `subtask` (INT) naming the part. " +
		"A column that a part lacks is null in its rows. `clink state-query` declares the table for you.",
	Guarantee: "Source (bounded): reads the state of one completed checkpoint; reading it again gives the same rows.",
	Source:    true,
	Options: append(append([]connectors.Option{}, connectors.CommonSourceOptions...),
		connectors.Option{Name: "path", Type: connectors.String, Required: true, Description: "a checkpoint directory (the newest complete checkpoint in it, or 'id'), one chk-<id> directory or a savepoint; also an object store's URL (s3://, gs://, azure://bucket/prefix)", Example: "/data/chk"},
		connectors.Option{Name: "id", Type: connectors.Int, Description: "the checkpoint id to read in a checkpoint directory; default the newest complete one", Example: "42"},
		connectors.Option{Name: "operator", Type: connectors.String, Description: "read only this operator's parts; default every operator", Example: "window_agg"},
		connectors.Option{Name: "slot", Type: connectors.String, Description: "read only the rows of this slot", Example: "source_offsets"},
	),
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// Bounded: a checkpoint is read once.
func (Connector) Bounded(connectors.Options) bool { return true }

// Virtual columns: which part a row comes from.
const (
	ColOperator = "operator"
	ColSubtask  = "subtask"
)

// fixedColumns is the number of fixed leading columns of a part.
const fixedColumns = 5

// selection reads the options that name the checkpoint and its parts,
// without I/O.
func selection(opts connectors.Options) (uint64, stateio.Selection, error) {
	var id uint64
	if opts.Has("id") {
		v := opts.Int("id")
		if v < 1 {
			return 0, stateio.Selection{}, &connectors.OptionError{Key: "id", Msg: fmt.Sprintf("option 'id': %d is not a checkpoint id (1, 2, ...)", v)}
		}
		id = uint64(v)
	}
	return id, stateio.Selection{Operator: opts["operator"], Slot: opts["slot"]}, nil
}

// open opens the checkpoint the options name.
func open(opts connectors.Options) (*chk.Checkpoint, stateio.Selection, error) {
	id, sel, err := selection(opts)
	if err != nil {
		return nil, sel, err
	}
	c, err := stateio.Open(opts["path"], id)
	if err != nil {
		return nil, stateio.Selection{}, err
	}
	if _, err := sel.Parts(c); err != nil {
		return nil, sel, err
	}
	return c, sel, nil
}

var _ connectors.SourceValidator = Connector{}

// ValidateSource checks the options without opening the checkpoint: that
// it exists and has the operator is checked where the job runs.
func (Connector) ValidateSource(t *connectors.Table) error {
	if _, _, err := selection(t.Options); err != nil {
		return fmt.Errorf("checkpoint source '%s': %w", t.Name, err)
	}
	return nil
}

// NewSource opens the checkpoint; the parts are read when the job runs.
func (Connector) NewSource(t *connectors.Table) (engine.Source, error) {
	c, sel, err := open(t.Options)
	if err != nil {
		return nil, fmt.Errorf("checkpoint source '%s': %w", t.Name, err)
	}
	return &Source{table: t, ckpt: c, sel: sel}, nil
}

// Column is a column of the table over a checkpoint's state.
type Column struct {
	Name string
	// SQL is its type in Clink SQL, e.g. "BIGINT" or "DECIMAL(38, 2)".
	SQL string
}

// Columns reads the selected parts of a checkpoint and returns the columns
// of the table over them: the fixed columns, then the value columns in
// order of first appearance, then operator and subtask. Value columns
// whose type Clink SQL lacks (lists, structs, maps, binary, dates) are
// left out and named in notes. A name with different SQL types in two
// parts (two operators' states) is an error asking for an operator.
func Columns(opts connectors.Options) (cols []Column, notes []string, err error) {
	c, sel, err := open(opts)
	if err != nil {
		return nil, nil, err
	}
	cols = []Column{{chk.ColSlot, "STRING"}, {chk.ColKeyGroup, "INT"}, {chk.ColKey, "STRING"}, {chk.ColWindowStart, "BIGINT"}, {chk.ColWindowEnd, "BIGINT"}}
	seen := map[string]int{}
	for i, col := range cols {
		seen[strings.ToLower(col.Name)] = i
	}
	from := map[string]string{} // column -> part that declared it first
	left := map[string]bool{}
	err = stateio.Each(c, sel, func(p *chk.Part) error {
		for _, f := range p.Schema.Fields()[fixedColumns:] {
			typ, ok := sqlType(f.Type)
			key := strings.ToLower(f.Name)
			if !ok {
				if !left[key] {
					left[key] = true
					notes = append(notes, fmt.Sprintf("column %s (%s) of %s is left out: Clink SQL has no such type", f.Name, f.Type, p.Operator))
				}
				continue
			}
			if i, dup := seen[key]; dup {
				if cols[i].SQL != typ {
					return fmt.Errorf("column %s is %s in %s but %s in %s; select one operator", f.Name, cols[i].SQL, from[key], typ, p.Path)
				}
				continue
			}
			seen[key] = len(cols)
			from[key] = p.Path
			cols = append(cols, Column{f.Name, typ})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, v := range []Column{{ColOperator, "STRING"}, {ColSubtask, "INT"}} {
		if _, dup := seen[v.Name]; !dup {
			cols = append(cols, v)
		}
	}
	return cols, notes, nil
}

// DDL is a CREATE TABLE statement for a table over the checkpoint's
// state, with the columns Columns returns and the given WITH options
// ('connector' is added).
func DDL(table string, opts map[string]string) (ddl string, notes []string, err error) {
	with := map[string]string{"connector": spec.Name}
	for k, v := range opts {
		with[k] = v
	}
	valid, err := spec.Validate(with)
	if err != nil {
		return "", nil, err
	}
	cols, notes, err := Columns(valid)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", table)
	for i, c := range cols {
		sep := ","
		if i == len(cols)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %s %s%s\n", quote(c.Name), c.SQL, sep)
	}
	b.WriteString(") WITH ('connector' = 'checkpoint'")
	keys := make([]string, 0, len(opts))
	for k := range opts {
		if k != "connector" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, ", '%s' = '%s'", k, strings.ReplaceAll(opts[k], "'", "''"))
	}
	b.WriteString(")")
	return b.String(), notes, nil
}

// quote quotes an identifier with backticks (Flink's quoting), so that
// reserved words such as `partition` can be column names.
func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// sqlType maps a value column's Arrow type to the Clink SQL type the
// source converts it to, if there is one.
func sqlType(dt arrow.DataType) (string, bool) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", true
	case *arrow.Int8Type:
		return "TINYINT", true
	case *arrow.Int16Type, *arrow.Uint8Type:
		return "SMALLINT", true
	case *arrow.Int32Type, *arrow.Uint16Type:
		return "INT", true
	case *arrow.Int64Type, *arrow.Uint32Type:
		return "BIGINT", true
	case *arrow.Uint64Type:
		return "DECIMAL(20, 0)", true
	case *arrow.Float32Type:
		return "FLOAT", true
	case *arrow.Float64Type:
		return "DOUBLE", true
	case *arrow.StringType, *arrow.LargeStringType:
		return "STRING", true
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale), true
	case *arrow.TimestampType:
		return "TIMESTAMP(3)", true
	}
	return "", false
}
