// Package print is the print connector: rows as JSON lines on standard
// output. A bare SELECT writes through it.
package print

import (
	"bufio"
	"fmt"
	"os"
	"sync"

	"github.com/clink-dev/clink/connectors"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Connector is the 'print' connector.
type Connector struct{}

var spec = &connectors.Spec{
	Name:        "print",
	Description: "Writes each row as a JSON object on its own line to standard output (or standard error). A bare SELECT uses it.",
	Guarantee:   "Sink: at-least-once: rows are printed as they come, and after a restore the rows since the last checkpoint print again; `delivery_guarantee = 'exactly_once'` is refused.",
	Sink:        true,
	Options: append(append([]connectors.Option{}, connectors.CommonSinkOptions...),
		connectors.Option{Name: "standard_error", Type: connectors.Bool, Default: "false", Description: "print to standard error instead of standard output", Example: "true"},
	),
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

var _ connectors.SinkValidator = Connector{}

// ValidateSink refuses 'exactly_once'.
func (Connector) ValidateSink(t *connectors.Table) error {
	if t.Options["delivery_guarantee"] == "exactly_once" {
		return connectors.ExactlyOnceRefused(t, "print", "it writes rows as they come; a restart prints the rows after the restored checkpoint again")
	}
	return nil
}

// NewSink returns a sink on standard output.
func (c Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	if err := c.ValidateSink(t); err != nil {
		return nil, err
	}
	w := t.Runtime.Stdout
	if t.Options.Bool("standard_error") {
		w = t.Runtime.Stderr
	}
	if w == nil {
		w = os.Stdout
	}
	return &Sink{w: bufio.NewWriterSize(w, 1<<16)}, nil
}

// Sink prints JSON lines. Each batch is flushed as it is written so rows
// appear as soon as their window fires.
type Sink struct {
	w   *bufio.Writer
	buf []byte
}

var _ engine.Sink = (*Sink)(nil)

// Write prints the batch's live rows.
func (s *Sink) Write(b *vector.Batch) error {
	if b.Kinds != nil {
		s.buf = AppendChangelog(s.buf[:0], b)
	} else {
		s.buf = cjson.AppendBatch(s.buf[:0], b)
	}
	b.Release()
	// Subtasks of a parallel job share the output: a batch's lines go out
	// together.
	printMu.Lock()
	defer printMu.Unlock()
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("print sink: %w", err)
	}
	return s.w.Flush()
}

var printMu sync.Mutex

// AppendChangelog writes the live rows of a changelog batch as JSON lines
// whose first key, "op", is the row's kind (+I, -U, +U, -D), as Flink's
// changelog shows it.
func AppendChangelog(dst []byte, b *vector.Batch) []byte {
	b.Rows(func(i int) {
		start := len(dst)
		dst = cjson.AppendRow(dst, b, i)
		row := dst[start+1:] // without the opening brace
		head := `{"op":"` + b.Kinds[i].String() + `"`
		if len(row) > 2 { // not {}
			head += ","
		}
		dst = append(dst[:start], append([]byte(head), row...)...)
	})
	return dst
}

// Flush flushes buffered output.
func (s *Sink) Flush() error { return s.w.Flush() }

// Close flushes.
func (s *Sink) Close() error { return s.w.Flush() }

// AcceptsUpdates: the print sink shows a changelog with each row's kind.
func (Connector) AcceptsUpdates(connectors.Options) error { return nil }
