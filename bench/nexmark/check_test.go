package nexmark

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/kafka"
	gen "github.com/clink-dev/clink/connectors/nexmark"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// The independent check of every query: the engine's output on a small
// stream against the query's hand-written loop over the generator's
// events (Go maps and slices, no engine code), row for row.

// checkEvents and checkRate give 40 s of event time: windows of every
// query open and close during the run.
const (
	checkEvents = 100_000
	checkRate   = 2500
)

// runEngine runs a script in-process and returns what the print sink
// wrote.
func runEngine(t *testing.T, script string, parallelism int) []byte {
	t.Helper()
	reg := builtin.Registry()
	plan, err := sql.Compile(script, reg)
	if err != nil {
		t.Fatalf("%v\n%s", err, script)
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	var out bytes.Buffer
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rt := connectors.Runtime{BatchSize: 1000, Linger: time.Hour, Mem: mem, Stdout: &out, Stderr: io.Discard, Parallelism: parallelism}
	job, err := planner.BuildParallel(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt}, parallelism)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// engineRows turns print-sink output into rows in the hand loops' form;
// an updating result is applied to a table by q.Key.
func engineRows(t *testing.T, q *Query, out []byte) []string {
	t.Helper()
	table := map[string]string{}
	var rows []string
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		val := func(c string) string {
			v, ok := m[c]
			if !ok {
				t.Fatalf("no column %s in %v", c, m)
			}
			return fmt.Sprint(v)
		}
		var vals []string
		for _, c := range q.Columns {
			vals = append(vals, val(c))
		}
		row := strings.Join(vals, "|")
		if q.Key == nil {
			if op, ok := m["op"]; ok && op != "+I" {
				t.Fatalf("%s: insert-only query printed %v", q.Name, m)
			}
			rows = append(rows, row)
			continue
		}
		var key []string
		for _, c := range q.Key {
			key = append(key, val(c))
		}
		switch m["op"] {
		case "+I", "+U":
			table[strings.Join(key, "|")] = row
		case "-U", "-D":
			delete(table, strings.Join(key, "|"))
		}
	}
	if q.Key != nil {
		for _, r := range table {
			rows = append(rows, r)
		}
	}
	sort.Strings(rows)
	return rows
}

func handRows(out *Out) []string {
	rows := append([]string(nil), out.Lines...)
	for _, r := range out.Table {
		rows = append(rows, r)
	}
	sort.Strings(rows)
	return rows
}

func compare(t *testing.T, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the hand loop produced no rows: the check would prove nothing")
	}
	i, j := 0, 0
	var diffs []string
	for (i < len(got) || j < len(want)) && len(diffs) < 10 {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			diffs = append(diffs, "engine only: "+got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			diffs = append(diffs, "hand only:   "+want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("engine %d rows, hand loop %d rows; first differences:\n%s", len(got), len(want), strings.Join(diffs, "\n"))
	}
}

// TestQueries checks every query's engine output against its hand loop,
// at parallelism 1, and at 2 where the planner parallelizes the job.
func TestQueries(t *testing.T) {
	src := Source{Events: checkEvents, Seed: 11, Rate: checkRate}
	for _, q := range Queries() {
		t.Run(q.Name, func(t *testing.T) {
			out := &Out{Collect: true}
			FeedGenerator(q.New(out), q, gen.Config{Seed: src.Seed, Rate: src.Rate, BaseTime: gen.DefaultBaseTime}, checkEvents)
			want := handRows(out)
			for _, p := range []int{1, 2} {
				if p == 2 && (q.Key != nil || len(q.Tables) > 1 || q.SelfJoin) {
					continue // joins and changelogs run at parallelism 1
				}
				got := engineRows(t, q, runEngine(t, src.Script(q, "print"), p))
				compare(t, got, want)
			}
			t.Logf("%s: %d rows", q.Name, len(want))
		})
	}
}

// TestQueriesViaKafka produces a small stream to the embedded broker and
// checks the engine reading the topics and the hand loops' Kafka path
// (hand parsing of the records) against the generator's hand loops.
func TestQueriesViaKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a broker")
	}
	b, err := kafka.StartBroker(kafka.BrokerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	stream := gen.Config{Seed: 5, Rate: checkRate, BaseTime: gen.DefaultBaseTime}
	const n = 40_000
	counts, err := Produce(context.Background(), ProduceConfig{Brokers: b.Addr(), Tables: gen.Kinds, Stream: stream, Events: n})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range gen.Kinds {
		if counts[k] != gen.CountOfKind(n, k) {
			t.Fatalf("produced %d %s records, want %d", counts[k], k, gen.CountOfKind(n, k))
		}
	}
	src := Source{Brokers: b.Addr()}
	for _, name := range []string{"q1", "q4", "q7", "q8"} {
		q, _ := Lookup(name)
		t.Run(name, func(t *testing.T) {
			want := &Out{Collect: true}
			FeedGenerator(q.New(want), q, stream, n)
			viaKafka := &Out{Collect: true}
			got, err := FeedKafka(context.Background(), q.New(viaKafka), q, b.Addr(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != q.Events(n) {
				t.Fatalf("hand loop read %d records, want %d", got, q.Events(n))
			}
			compare(t, handRows(viaKafka), handRows(want))
			compare(t, engineRows(t, q, runEngine(t, src.Script(q, "print"), 1)), handRows(want))
		})
	}
}
