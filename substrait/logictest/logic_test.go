package logictest

import (
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite expected rows, errors and golden plans from actual output")

// TestLogic runs every testdata/*.test file. Each query runs from a plan
// round-tripped through protobuf bytes, three ways: straight, at batch
// sizes 1, 7, 1024 and a random size and at parallelism 2, 3 and 4;
// crashed right after a checkpoint whose barrier sits at a cut drawn from
// the file's seed, and restored from it at the same parallelism; and the
// same restored at another parallelism; and checkpointed at parallelism
// 1, restored at 4, checkpointed there and restored at 2 (Runner.Query,
// Runner.RunRestored, Runner.RunRestoredChain). A query
// expected to fail runs straight only. Every run must give the expected
// multiset of rows, late-row and skipped-record counts, and leave no Arrow
// memory allocated. The log names the runs a plan does not support, and
// why, and counts the queries of each file by the ways they ran.
func TestLogic(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no logic files")
	}
	tally := &modeTally{unsupported: map[string]int{}}
	t.Cleanup(func() { tally.log(t, len(files)) })
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".test"), func(t *testing.T) {
			t.Parallel()
			runFile(t, f, tally)
		})
	}
}

func runFile(t *testing.T, path string, all *modeTally) {
	tally := &modeTally{unsupported: map[string]int{}}
	defer func() {
		t.Logf("queries: %d; straight only (expected to fail): %d; also crashed at a checkpoint and restored at the same parallelism: %d, of them also at another parallelism: %d", tally.queries, tally.failing, tally.restored, tally.rescaled)
		all.add(tally)
	}()
	blocks, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	h.Write([]byte(filepath.Base(path)))
	seed := h.Sum64()
	r := NewRunner(t.TempDir(), seed)
	t.Logf("batch sizes %v (seed %d)", r.Batches, seed)
	changed := false
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", path, b.Line)
		switch b.Kind {
		case "input":
			if err := r.AddInput(b); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case "statement":
			err := r.Statement(b.SQL)
			if _, wantErr := b.Params["error"]; wantErr {
				if err == nil {
					t.Errorf("%s: expected an error, statement succeeded", where)
					continue
				}
				if !matchError(b, r.normalize(err)) {
					if *rewrite {
						b.Body, b.HasSep, changed = errorLines(r.normalize(err)), true, true
						continue
					}
					t.Errorf("%s: error mismatch\nwant:\n%s\ngot:\n%s", where, strings.Join(b.Body, "\n"), err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", where, err)
			}
		case "query":
			_, wantErr := b.Params["error"]
			results, notes, err := r.Query(b.SQL, !wantErr) // a failing query runs straight only
			for _, n := range notes {
				t.Logf("%s: %s", where, n)
			}
			tally.count(wantErr, results, notes)
			failed := ""
			if err == nil {
				for _, res := range results {
					if res.Err != nil {
						err, failed = res.Err, res.Label+": "
						break
					}
				}
			}
			if wantErr {
				if err == nil {
					t.Errorf("%s: expected an error, query succeeded", where)
				} else if !matchError(b, r.normalize(err)) {
					if *rewrite {
						b.Body, b.HasSep, changed = errorLines(r.normalize(err)), true, true
						continue
					}
					t.Errorf("%s: error mismatch\nwant:\n%s\ngot:\n%s", where, strings.Join(b.Body, "\n"), err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %s%v", where, failed, err)
				continue
			}
			if _, ok := b.Params["materialize"]; ok {
				// The changelog of an outer join depends on how the inputs
				// interleave; the table it describes does not.
				for i := range results {
					m, err := Materialize(results[i].Rows)
					if err != nil {
						t.Errorf("%s: %v", where, err)
					}
					results[i].Rows = m
				}
			}
			// What a sink table holds is the changelog applied (an upsert
			// file sink, the one case, writes it so); how a changelog
			// splits into updates depends on batch boundaries.
			for i := range results {
				if results[i].SinkRows, err = materializeSinks(results[i].SinkRows); err != nil {
					t.Errorf("%s: %s: %v", where, results[i].Label, err)
				}
			}
			want := slices.Clone(b.Body)
			slices.Sort(want)
			for _, res := range results {
				if res.interleaved && !slices.Equal(res.Rows, results[0].Rows) {
					// Only the table the changelog describes is defined
					// (Result.interleaved).
					got, err1 := Materialize(res.Rows)
					base, err2 := Materialize(results[0].Rows)
					if err := errors.Join(err1, err2); err != nil {
						t.Errorf("%s: %s: %v", where, res.Label, err)
					}
					if slices.Equal(got, base) {
						res.Rows = results[0].Rows
					}
				}
				if !slices.Equal(res.Rows, results[0].Rows) {
					t.Errorf("%s: %s gives different rows than %s:\n%s\nvs\n%s", where, res.Label, results[0].Label, strings.Join(res.Rows, "\n"), strings.Join(results[0].Rows, "\n"))
				}
				if !slices.Equal(res.SinkRows, results[0].SinkRows) {
					t.Errorf("%s: %s writes different rows to its sinks than %s:\n%s\nvs\n%s", where, res.Label, results[0].Label, strings.Join(res.SinkRows, "\n"), strings.Join(results[0].SinkRows, "\n"))
				}
				if res.Late != results[0].Late || res.Skipped != results[0].Skipped {
					t.Errorf("%s: %s counts late=%d skipped=%d, %s late=%d skipped=%d", where, res.Label, res.Late, res.Skipped, results[0].Label, results[0].Late, results[0].Skipped)
				}
			}
			got := results[0]
			if *rewrite {
				if !slices.Equal(got.Rows, want) {
					b.Body, changed = got.Rows, true
				}
				b.HasSep = true
				if lateStr(got.Late) != b.Params["late"] {
					b.Params["late"], changed = lateStr(got.Late), true
				}
				if got.Skipped != 0 || b.Params["skipped"] != "" {
					if b.Params["skipped"] != lateStr(got.Skipped) {
						b.Params["skipped"], changed = lateStr(got.Skipped), true
					}
				}
				continue
			}
			if !slices.Equal(got.Rows, want) {
				t.Errorf("%s: rows mismatch\nwant:\n%s\ngot:\n%s", where, strings.Join(want, "\n"), strings.Join(got.Rows, "\n"))
			}
			if lateStr(got.Late) != b.Params["late"] {
				t.Errorf("%s: late rows dropped: want %s, got %d", where, b.Params["late"], got.Late)
			}
			if s := b.Params["skipped"]; s != "" && s != lateStr(got.Skipped) || s == "" && got.Skipped != 0 {
				t.Errorf("%s: records skipped: want %q, got %d", where, s, got.Skipped)
			}
		}
	}
	golden := strings.TrimSuffix(path, ".test") + ".plans"
	plans := strings.Join(r.Plans, "\n")
	if *rewrite {
		if changed {
			if err := os.WriteFile(path, []byte(format(blocks)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(golden, []byte(plans), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("golden plans: %v (run with -rewrite)", err)
	}
	if string(want) != plans {
		t.Errorf("plans differ from %s (run with -rewrite and review):\n%s", golden, plans)
	}
}

// normalize hides the temporary directory in error texts.
func (r *Runner) normalize(err error) error {
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), r.Dir, "$DIR"))
}

// materialize applies a changelog printed with "op" keys: +I and +U add a
// row, -U and -D remove one equal row. It returns the sorted result.
func lateStr(n int64) string { return fmt.Sprint(n) }

func errorLines(err error) []string { return strings.Split(err.Error(), "\n") }

// matchError: the expected lines must be the first lines of the error.
func matchError(b *Block, err error) bool {
	got := errorLines(err)
	if len(b.Body) == 0 {
		return false
	}
	if len(got) < len(b.Body) {
		return false
	}
	for i, l := range b.Body {
		if got[i] != l {
			return false
		}
	}
	return true
}

// format writes blocks back with their comments.
func format(blocks []*Block) string {
	var sb strings.Builder
	for i, b := range blocks {
		if i > 0 {
			sb.WriteString("\n")
		}
		for _, c := range b.Comment {
			sb.WriteString(c + "\n")
		}
		switch b.Kind {
		case "input":
			sb.WriteString("input " + b.Name + "\n")
			for _, l := range b.Body {
				sb.WriteString(l + "\n")
			}
			continue
		default:
			head := b.Kind
			if p := FormatParams(b.Params); p != "" {
				head += " " + p
			}
			sb.WriteString(head + "\n")
			sb.WriteString(b.SQL)
			if b.HasSep {
				sb.WriteString("----\n")
				for _, l := range b.Body {
					sb.WriteString(l + "\n")
				}
			}
		}
	}
	return sb.String()
}

// modeTally counts the queries of all files by the modes they ran in.
type modeTally struct {
	mu                                   sync.Mutex
	queries, failing, restored, rescaled int
	runs, restoreRuns, discarded         int
	unsupported                          map[string]int // reason -> queries
}

func (m *modeTally) count(wantErr bool, results []Result, notes []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries++
	if wantErr {
		m.failing++
	}
	same, other := false, false
	for _, res := range results {
		m.runs++
		if res.restored != nil {
			m.restoreRuns++
			m.discarded += res.discarded
			same = same || res.restored.from == res.restored.to
			other = other || res.restored.from != res.restored.to
		}
	}
	if same {
		m.restored++
	}
	if other {
		m.rescaled++
	}
	for _, n := range notes {
		if strings.Contains(n, "not supported") {
			m.unsupported[unsupportedKind.ReplaceAllString(n, "")]++
		}
	}
}

// unsupportedKind strips the operator names out of a reason, to count
// queries by kind of limitation.
var unsupportedKind = regexp.MustCompile(` \([^)]*\)$`)

func (m *modeTally) add(o *modeTally) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries += o.queries
	m.failing += o.failing
	m.restored += o.restored
	m.rescaled += o.rescaled
	m.runs += o.runs
	m.restoreRuns += o.restoreRuns
	m.discarded += o.discarded
	for k, v := range o.unsupported {
		m.unsupported[k] += v
	}
}

func (m *modeTally) log(t *testing.T, files int) {
	t.Logf("%d files, %d queries (%d runs): %d expected to fail run straight only; %d crashed at a checkpoint and restored at the same parallelism, %d of them also restored at another parallelism (%d crash-and-restore runs; the crashed runs staged %d output rows after their cut, all discarded by the restores and written again)",
		files, m.queries, m.runs, m.failing, m.restored, m.rescaled, m.restoreRuns, m.discarded)
	for _, reason := range slices.Sorted(maps.Keys(m.unsupported)) {
		t.Logf("  %d queries: %s", m.unsupported[reason], reason)
	}
}

// materializeSinks materializes each sink's changelog ("sink: row" lines).
func materializeSinks(lines []string) ([]string, error) {
	by := map[string][]string{}
	for _, l := range lines {
		sink, row, _ := strings.Cut(l, ": ")
		by[sink] = append(by[sink], row)
	}
	var out []string
	for _, sink := range slices.Sorted(maps.Keys(by)) {
		rows, err := Materialize(by[sink])
		if err != nil {
			return nil, fmt.Errorf("sink %s: %w", sink, err)
		}
		for _, r := range rows {
			out = append(out, sink+": "+r)
		}
	}
	return out, nil
}
