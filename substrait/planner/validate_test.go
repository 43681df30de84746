package planner_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// fake is a source and sink connector that counts what it opens and
// refuses mode = 'bad' in its validators.
type fake struct{ opened *int }

var errBad = errors.New("mode 'bad' is refused")

func (fake) Spec() *connectors.Spec {
	return &connectors.Spec{Name: "fake", Source: true, Sink: true, Options: []connectors.Option{
		{Name: "connector", Type: connectors.String, Required: true},
		{Name: "mode", Type: connectors.String},
	}}
}

func (f fake) check(t *connectors.Table) error {
	if t.Options["mode"] == "bad" {
		return errBad
	}
	return nil
}

func (f fake) ValidateSink(t *connectors.Table) error   { return f.check(t) }
func (f fake) ValidateSource(t *connectors.Table) error { return f.check(t) }

func (f fake) NewSink(*connectors.Table) (engine.Sink, error) {
	*f.opened++
	return nil, errors.New("opened a sink")
}

func (f fake) NewSource(*connectors.Table) (engine.Source, error) {
	*f.opened++
	return nil, errors.New("opened a source")
}

// Validate runs the connectors' validators and never opens a source or a
// sink; Build runs the same validators before it opens them.
func TestValidate(t *testing.T) {
	opened := 0
	reg := connectors.NewRegistry()
	reg.Register(fake{&opened})
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	env := planner.Env{Connectors: reg, Funcs: funcs, Runtime: connectors.Runtime{BatchSize: 16, Mem: memory.NewGoAllocator(), Parallelism: 1}}
	compile := func(src, sink string) string {
		return "CREATE TABLE s (a BIGINT) WITH ('connector' = 'fake', 'mode' = '" + src + "');\n" +
			"CREATE TABLE k (a BIGINT) WITH ('connector' = 'fake', 'mode' = '" + sink + "');\n" +
			"INSERT INTO k SELECT a + 1 FROM s WHERE a > 0"
	}
	for _, c := range []struct {
		src, sink string
		err       error
	}{{"ok", "ok", nil}, {"bad", "ok", errBad}, {"ok", "bad", errBad}} {
		p, err := sql.Compile(compile(c.src, c.sink), reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := planner.Validate(p, env); !errors.Is(err, c.err) {
			t.Errorf("Validate(source %s, sink %s) = %v, want %v", c.src, c.sink, err, c.err)
		}
		if opened != 0 {
			t.Fatalf("Validate opened %d sources or sinks", opened)
		}
		if c.err != nil {
			if _, err := planner.Build(p, env); !errors.Is(err, c.err) || opened != 0 {
				t.Errorf("Build(source %s, sink %s) = %v after %d opens, want %v first", c.src, c.sink, err, opened, c.err)
			}
		}
	}
}
