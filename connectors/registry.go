package connectors

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine"
)

// Table is everything a connector needs to open one side of a table.
type Table struct {
	Name    string
	Schema  *arrow.Schema
	Options Options
	// EventTimeCol is the index of the event-time column, -1 without one.
	EventTimeCol int
	// WatermarkLag is watermark_lag_ms.
	WatermarkLag int64
	// Needed, when set, marks the columns the query reads (the planner's
	// projection pushdown; nil: all). A source may leave the others NULL
	// instead of decoding them; it must still produce every column.
	Needed  []bool
	Runtime Runtime
}

// Required marks the columns a record must give a value: the event-time
// column (Flink fails on a NULL rowtime; a record without one is a bad
// record under on_error). Nil without an event-time column.
func (t *Table) Required() []bool {
	if t.EventTimeCol < 0 {
		return nil
	}
	r := make([]bool, t.Schema.NumFields())
	r[t.EventTimeCol] = true
	return r
}

// Runtime carries engine settings that are not SQL: batch shape, memory,
// where printed output goes.
type Runtime struct {
	BatchSize   int
	Linger      time.Duration
	Mem         memory.Allocator
	Stdout      io.Writer
	Stderr      io.Writer
	Parallelism int
	Subtask     int
}

// Factory builds the sources and sinks of one connector.
type Factory interface {
	Spec() *Spec
}

// SourceFactory opens a table for reading.
type SourceFactory interface {
	NewSource(t *Table) (engine.Source, error)
}

// SinkFactory opens a table for writing.
type SinkFactory interface {
	NewSink(t *Table) (engine.Sink, error)
}

// SinkValidator is implemented by sink factories that check a table
// without I/O: options that depend on each other, guarantees the sink
// refuses. The planner calls ValidateSink before NewSink, and `clink
// explain` (and a cluster client before it submits) calls only it, so a
// refusal reads the same everywhere. It must not open a connection, touch
// a file or resolve a secret (env://), which happen where the sink runs.
type SinkValidator interface {
	ValidateSink(t *Table) error
}

// SinkStaging is implemented by sink factories whose sink stages its
// output in checkpoints (a two-phase sink) with some options only: Staged
// says whether the table's sink would. The planner puts the answer in the
// sink's state signature, so that a restore into a sink that no longer
// stages (or newly does) is refused rather than dropping the staged
// transactions silently. It must not do I/O, as SinkValidator.
type SinkStaging interface {
	Staged(t *Table) bool
}

// SourceValidator is SinkValidator for source factories.
type SourceValidator interface {
	ValidateSource(t *Table) error
}

// Boundedness is implemented by source factories that can tell whether a
// table's input ends (a file) or not (a topic). Without it a source is
// unbounded.
type Boundedness interface {
	Bounded(opts Options) bool
}

// UpdatingSink is implemented by sink factories that can consume a
// changelog (+I, -U, +U, -D rows), e.g. by upserting on a primary key.
// AcceptsUpdates returns why a table cannot, or nil.
type UpdatingSink interface {
	AcceptsUpdates(opts Options) error
}

// Registry maps connector names to factories. It is built by explicit
// Register calls.
type Registry struct {
	m       map[string]Factory
	aliases map[string]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Factory{}, aliases: map[string]string{}} }

// Alias makes name another name of connector target (Flink's
// 'filesystem' for 'file').
func (r *Registry) Alias(name, target string) { r.aliases[name] = target }

// Register adds f under its spec's name.
func (r *Registry) Register(f Factory) { r.m[f.Spec().Name] = f }

// Lookup returns the factory for name, or an error listing the known ones.
func (r *Registry) Lookup(name string) (Factory, error) {
	if t, ok := r.aliases[name]; ok {
		name = t
	}
	if f, ok := r.m[name]; ok {
		return f, nil
	}
	names := r.Names()
	msg := fmt.Sprintf("unknown connector '%s' (known: %s)", name, strings.Join(names, ", "))
	best, bd := "", 3
	for _, n := range names {
		if d := Distance(name, n); d < bd {
			best, bd = n, d
		}
	}
	if best != "" {
		msg = fmt.Sprintf("unknown connector '%s' (did you mean '%s'?)", name, best)
	}
	return nil, &OptionError{Key: "connector", Msg: msg}
}

// Names lists registered connectors, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CommonSourceOptions are accepted by every source connector; the planner reads
// them (event time, watermarks, error policy), the connector does not.
var CommonSourceOptions = []Option{
	{Name: "connector", Type: String, Required: true, Description: "the connector name", Example: "file"},
	{Name: "format", Type: Enum, Values: []string{"json"}, Default: "json", Description: "record format", Example: "json"},
	{Name: "event_time_column", Type: String, Description: "BIGINT epoch-ms or TIMESTAMP(3) column that carries event time; a table without one cannot be windowed (processing-time windows are not supported yet)", Example: "ts"},
	{Name: "watermark_lag_ms", Type: Int, Default: "0", Description: "a partition's watermark is the largest event time it has seen minus this lag", Example: "3000"},
	{Name: "allowed_lateness_ms", Type: Int, Default: "0", Description: "windows over this table's event time stay open this long after they fire: later rows update them (the result becomes a changelog: first firing +I, updates -U/+U; a SESSION whose bounds change: -D old, +I new); rows later than that are dropped", Example: "5000"},
	{Name: "on_error", Aliases: []string{"json.ignore-parse-errors"}, ValueAliases: map[string]string{"true": "skip", "false": "fail"}, Type: Enum, Values: []string{"fail", "skip"}, Default: "fail", Description: "what a malformed record does: stop the job naming it, or skip and count it", Example: "skip"},
}

// ScanParallelismOption is the source option (Flink's name) that reads a
// table with fewer subtasks than the job's; the planner reads it. Sources
// that split their input by subtask (Kafka partitions, files) accept it.
var ScanParallelismOption = Option{Name: "scan.parallelism", Type: Int,
	Description: "source: how many of the job's subtasks read the table (at most the job's parallelism; the others read nothing and are idle); default: the job's parallelism", Example: "2"}

// CommonSinkOptions are accepted by every sink connector.
var CommonSinkOptions = []Option{
	{Name: "connector", Type: String, Required: true, Description: "the connector name", Example: "file"},
	{Name: "format", Type: Enum, Values: []string{"json"}, Default: "json", Description: "record format", Example: "json"},
	DeliveryGuaranteeOption,
}

// DeliveryGuaranteeOption is the sink option that asks for a guarantee;
// each sink documents its default and refuses what it cannot keep.
var DeliveryGuaranteeOption = Option{Name: "delivery_guarantee", Aliases: []string{"sink.delivery-guarantee"},
	ValueAliases: map[string]string{"exactly-once": "exactly_once", "at-least-once": "at_least_once"},
	Type:         Enum, Values: []string{"exactly_once", "at_least_once", "none"},
	Description: "sink: the output guarantee under checkpoints; 'exactly_once' needs checkpoints (--checkpoint-dir) and is refused by sinks that cannot keep it", Example: "exactly_once"}

// ExactlyOnceRefused is the error of a sink asked for a guarantee it cannot
// keep.
func ExactlyOnceRefused(t *Table, connector, why string) error {
	return &OptionError{Key: "delivery_guarantee", Msg: fmt.Sprintf("sink '%s': connector '%s' cannot deliver exactly once (%s); use 'at_least_once'", t.Name, connector, why)}
}
