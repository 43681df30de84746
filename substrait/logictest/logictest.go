// Package logictest runs SQL logic files: data files holding statements,
// input rows, expected rows and expected errors. Every query runs at several
// batch sizes and parallelisms from a plan that went through protobuf
// bytes, and crashed at a checkpoint and restored (restore.go); every run
// must give the same multiset of rows.
package logictest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/print"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// Block is one record of a logic file.
type Block struct {
	Kind    string // input, statement, query
	Line    int
	Header  string            // the block's first line
	Params  map[string]string // key=value words after the kind
	Name    string            // input name
	SQL     string
	Body    []string // input rows, expected rows or expected error lines
	HasSep  bool     // a ---- line was present
	Comment []string // comment lines before the block
}

// ParseFile reads a logic file.
func ParseFile(path string) ([]*Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blocks []*Block
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var cur *Block
	inBody := false
	lineNo := 0
	var comments []string
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if cur == nil {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, "#") {
				comments = append(comments, line)
				continue
			}
			if t == "" {
				continue
			}
			f := strings.Fields(t)
			cur = &Block{Kind: f[0], Line: lineNo, Header: t, Params: map[string]string{}, Comment: comments}
			comments = nil
			switch cur.Kind {
			case "input":
				if len(f) < 2 {
					return nil, fmt.Errorf("%s:%d: input needs a name", path, lineNo)
				}
				cur.Name = f[1]
				inBody = true
			case "statement", "query":
				for _, w := range f[1:] {
					k, v, _ := strings.Cut(w, "=")
					cur.Params[k] = v
				}
			default:
				return nil, fmt.Errorf("%s:%d: unknown block %q", path, lineNo, f[0])
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			blocks = append(blocks, cur)
			cur, inBody = nil, false
			continue
		}
		if !inBody && line == "----" {
			inBody, cur.HasSep = true, true
			continue
		}
		if inBody {
			cur.Body = append(cur.Body, line)
		} else {
			cur.SQL += line + "\n"
		}
	}
	if cur != nil {
		blocks = append(blocks, cur)
	}
	return blocks, sc.Err()
}

// Result is what one query run produced.
type Result struct {
	// Label names the run: its batch size, and parallelism when above 1.
	Label   string
	Rows    []string
	Late    int64
	Skipped int64
	Err     error
	// SinkRows are the rows written to sinks other than print (a file
	// table a later query reads), "sink: row", sorted.
	SinkRows []string

	sourceRows map[string]int64 // rows emitted per source (eachSource keys)
	printSinks map[string]bool
	restored   *restoreMode // the parallelisms of a crash-and-restore run
	discarded  int          // rows the crashed run staged after its cut
	// interleaved is true when a keyed operator's subtasks feed a keyed
	// exchange: their changelogs reach the next keyed operator in an
	// order that depends on scheduling, so only the table the changelog
	// describes is the same at every parallelism (as in Flink), not how it
	// splits into changes.
	interleaved bool
}

// Interleaves reports whether plan at parallelism has a keyed operator
// whose subtasks feed a keyed exchange: its changelog is then defined only
// as the table it describes (see Result.interleaved). The cluster test
// compares such runs materialized.
func (r *Runner) Interleaves(plan *pb.Plan, parallelism int) (bool, error) {
	job, err := r.build(plan, 1, parallelism, memory.NewGoAllocator(), io.Discard)
	if err != nil {
		return false, err
	}
	return interleaves(job.Pipelines), nil
}

// interleaves reports whether a keyed operator of the job feeds a keyed
// exchange (Result.interleaved).
func interleaves(pipes []*engine.Pipeline) bool {
	for _, p := range pipes {
		if !internal(p.Sink) {
			continue
		}
		for _, n := range nodes(p) {
			if _, ok := n.Binary.(engine.KeyedBinary); ok {
				return true
			}
			for _, o := range n.Ops {
				if _, ok := o.(engine.Keyed); ok {
					return true
				}
			}
		}
	}
	return false
}

// Runner holds a file's state while it runs.
type Runner struct {
	Dir     string
	Reg     *connectors.Registry
	ddl     []string
	inputs  map[string]string
	Plans   []string // explain text of each query, in order
	Seed    uint64
	Batches []int
	queries int // queries run so far
}

// NewRunner makes a runner writing inputs under dir.
func NewRunner(dir string, seed uint64) *Runner {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Runner{Dir: dir, Reg: builtin.Registry(), inputs: map[string]string{}, Seed: seed,
		Batches: []int{1, 7, 1024, 2 + r.IntN(300)}}
}

var inputRef = regexp.MustCompile(`\$\{input:([A-Za-z0-9_./-]+)\}`)

func (r *Runner) expand(s string) (string, error) {
	var err error
	out := inputRef.ReplaceAllStringFunc(s, func(m string) string {
		name := inputRef.FindStringSubmatch(m)[1]
		p, ok := r.inputs[name]
		if !ok {
			err = fmt.Errorf("unknown input %q", name)
		}
		return p
	})
	return out, err
}

// AddInput writes an input block. "input name" makes name.jsonl; "input
// name/part" makes a file inside directory name (each file a partition).
func (r *Runner) AddInput(b *Block) error {
	dir, file := b.Name, b.Name
	if i := strings.IndexByte(b.Name, '/'); i >= 0 {
		dir, file = b.Name[:i], b.Name
		r.inputs[dir] = filepath.Join(r.Dir, dir)
	}
	p := filepath.Join(r.Dir, file+".jsonl")
	if dir != file {
		p = filepath.Join(r.Dir, file+".jsonl")
	} else {
		r.inputs[dir] = p
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(strings.Join(b.Body, "\n")+"\n"), 0o644)
}

// Compile compiles the accumulated DDL plus sqlText.
func (r *Runner) Compile(sqlText string) (*pb.Plan, string, error) {
	full := strings.Join(append(append([]string{}, r.ddl...), sqlText), ";\n")
	full, err := r.expand(full)
	if err != nil {
		return nil, full, err
	}
	p, err := sql.Compile(full, r.Reg)
	return p, full, err
}

// Statement runs a statement block's SQL: DDL is kept for later blocks.
func (r *Runner) Statement(sqlText string) error {
	full := strings.Join(append(append([]string{}, r.ddl...), sqlText), ";\n")
	full, err := r.expand(full)
	if err != nil {
		return err
	}
	plan, err := sql.Check(full, r.Reg)
	if err != nil {
		return err
	}
	if plan != nil {
		return fmt.Errorf("a statement block must not hold a query; use a query block")
	}
	r.ddl = append(r.ddl, strings.TrimRight(strings.TrimSpace(sqlText), ";"))
	return nil
}

// Query compiles sqlText, round-trips the plan through protobuf bytes, and
// runs it once per batch size, and at parallelism 2, 3 and 4. With restore
// it also runs it crashed at a checkpoint and restored (RunRestored): at a
// parallelism from 1 to 4 restored at the same and at another one (both
// drawn from the file's seed), and checkpointed at 1, restored at 4 and
// that restored at 2 (RunRestoredChain). Every run of a query is one Result. Notes name the
// crash-and-restore runs the plan does not support, with the reason.
func (r *Runner) Query(sqlText string, restore bool) (results []Result, notes []string, err error) {
	plan, _, err := r.Compile(sqlText)
	if err != nil {
		return nil, nil, err
	}
	r.queries++
	r.Plans = append(r.Plans, strings.ReplaceAll(substrait.Explain(plan), r.Dir, "$DIR"))
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(plan)
	if err != nil {
		return nil, nil, err
	}
	rows := map[int]map[string]int64{} // per source, by parallelism
	for _, bs := range r.Batches {
		back, err := unmarshal(data)
		if err != nil {
			return nil, nil, err
		}
		res := r.Run(back, bs, 1)
		res.Label = fmt.Sprintf("batch size %d", bs)
		results = append(results, res)
		rows[1] = res.sourceRows
	}
	// The same rows at parallelism 2, 3 and 4 (DESIGN §3).
	for _, p := range []int{2, 3, 4} {
		back, err := unmarshal(data)
		if err != nil {
			return nil, nil, err
		}
		res := r.Run(back, 7, p)
		res.Label = fmt.Sprintf("batch size 7 at parallelism %d", p)
		results = append(results, res)
		rows[p] = res.sourceRows
	}
	if !restore {
		return results, nil, nil
	}
	for _, res := range results {
		if res.Err != nil {
			return results, nil, nil // the caller reports the failed run
		}
	}
	job, err := r.build(plan, 1, 1, memory.NewGoAllocator(), io.Discard)
	if err != nil {
		return nil, nil, err
	}
	if err := engine.CheckCheckpoints(job.Pipelines); err != nil {
		return results, []string{fmt.Sprintf("checkpoint-and-restore not supported: %v", err)}, nil
	}
	for _, p := range job.Pipelines {
		if _, ok := p.Sink.(*print.Sink); !ok && !internal(p.Sink) {
			notes = append(notes, fmt.Sprintf("sink %s is not print: the crash runs put the exactly-once collector in its place and compare its rows with what the straight runs wrote to it", p.SinkName))
		}
	}
	// The cuts, batch size and parallelisms are drawn from the file's seed
	// and the query's place in the file: a failure repeats.
	rng := rand.New(rand.NewPCG(r.Seed, uint64(r.queries)))
	batch := 1 + rng.IntN(10)
	p := 1 + rng.IntN(4)
	modes := []restoreMode{{p, p}, {p, 1 + (p+rng.IntN(3))%4}}
	for _, m := range modes {
		counts := rows[m.from]
		cuts := map[string]int64{}
		var at []string
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			cuts[k] = rng.Int64N(counts[k] + 1)
			at = append(at, fmt.Sprintf("%s: %d of %d", k, cuts[k], counts[k]))
		}
		res := r.RunRestored(data, batch, m.from, m.to, cuts)
		res.restored = &m
		res.Label = fmt.Sprintf("batch size %d at parallelism %d, checkpoint after rows [%s], restored at parallelism %d", batch, m.from, strings.Join(at, ", "), m.to)
		results = append(results, res)
	}
	// A checkpoint taken at 1, restored at 4 (which checkpoints at once),
	// that restored at 2.
	cuts := map[string]int64{}
	var at []string
	for _, k := range slices.Sorted(maps.Keys(rows[1])) {
		cuts[k] = rng.Int64N(rows[1][k] + 1)
		at = append(at, fmt.Sprintf("%s: %d of %d", k, cuts[k], rows[1][k]))
	}
	res := r.RunRestoredChain(data, batch, [3]int{1, 4, 2}, cuts)
	res.restored = &restoreMode{1, 2}
	res.Label = fmt.Sprintf("batch size %d at parallelism 1, checkpoint after rows [%s], restored at parallelism 4, checkpointed at once, restored at parallelism 2", batch, strings.Join(at, ", "))
	results = append(results, res)
	return results, notes, nil
}

// syncWriter serializes writes (the subtasks of a parallel job print
// concurrently).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Run runs a plan embedded at a batch size and parallelism and collects
// its printed rows, sorted.
func (r *Runner) Run(plan *pb.Plan, batch, parallelism int) Result {
	var out bytes.Buffer
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	job, err := r.build(plan, batch, parallelism, mem, &syncWriter{w: &out})
	if err != nil {
		return Result{Err: err}
	}
	counted := map[string]*countSource{}
	eachSource(job.Pipelines, func(key string, src engine.Source) engine.Source {
		c := &countSource{Source: src}
		counted[key] = c
		return c
	})
	var sinkMu sync.Mutex
	var sinkRows []string
	for _, p := range job.Pipelines {
		if _, ok := p.Sink.(*print.Sink); !ok && !internal(p.Sink) {
			p.Sink = &teeSink{Sink: p.Sink, name: p.SinkName, mu: &sinkMu, rows: &sinkRows}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stats, err := job.Run(ctx)
	res := Result{Err: err, SinkRows: sinkRows, sourceRows: map[string]int64{}, interleaved: interleaves(job.Pipelines)}
	for k, c := range counted {
		res.sourceRows[k] = c.rows
	}
	for _, s := range stats {
		if s != nil {
			res.Late += s.Total("late_rows_dropped")
			res.Skipped += s.Total("records_skipped")
		}
	}
	if err == nil && mem.CurrentAlloc() != 0 {
		res.Err = fmt.Errorf("memory leak: %d bytes still allocated after the run", mem.CurrentAlloc())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" {
			res.Rows = append(res.Rows, l)
		}
	}
	sort.Strings(res.Rows)
	sort.Strings(res.SinkRows)
	return res
}

// build plans p copies of the plan at a batch size, printing to w.
func (r *Runner) build(plan *pb.Plan, batch, parallelism int, mem memory.Allocator, w io.Writer) (*planner.Job, error) {
	rt := connectors.Runtime{BatchSize: batch, Linger: time.Hour, Mem: mem, Stdout: w, Stderr: w}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	return planner.BuildParallel(plan, planner.Env{Connectors: r.Reg, Funcs: funcs, Runtime: rt}, parallelism)
}

// FormatParams renders block params deterministically.
func FormatParams(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if m[k] == "" {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+"="+m[k])
		}
	}
	return strings.Join(parts, " ")
}

// Materialize applies a printed changelog ({"op":"+I",...} lines) and
// returns the rows it leaves, sorted.
func Materialize(lines []string) ([]string, error) {
	count := map[string]int{}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"op":"`) || len(l) < 12 {
			count[l]++
			continue
		}
		op := l[7:9]
		row := "{" + strings.TrimPrefix(l[11:], ",")
		switch op {
		case "+I", "+U":
			count[row]++
		case "-U", "-D":
			if count[row] == 0 {
				return nil, fmt.Errorf("changelog retracts a row it never inserted: %s", row)
			}
			count[row]--
		}
	}
	var out []string
	for row, n := range count {
		for ; n > 0; n-- {
			out = append(out, row)
		}
	}
	slices.Sort(out)
	return out, nil
}
