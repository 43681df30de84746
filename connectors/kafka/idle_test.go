package kafka_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/substrait/sql"
)

// startParallel plans and starts SQL embedded at the given parallelism.
func startParallel(t *testing.T, script string, parallelism int, timeout time.Duration) *running {
	t.Helper()
	r, err := startAt(t, script, 64, parallelism, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// idleRow is one reading of the idleness workload.
type idleRow struct {
	part   int32
	sensor string
	ts     int64
	v      int
}

const (
	idleLag    = 2000
	idleWindow = 10000
)

// idleRecompute is the independent model of what the job must print: the
// 10 s windows per sensor over the rows that are not late, among the
// windows whose end the watermark has reached. A row is late when its
// window's end is <= its own partition's watermark before it (max ts seen
// in the partition - lag) or <= floor, the operator's watermark when the
// row arrives (a window already fired).
type idleRecompute struct {
	maxTS map[int32]int64
	sums  map[string][2]int64 // "sensor/start" -> count, sum
	late  int
}

func newIdleRecompute() *idleRecompute {
	return &idleRecompute{maxTS: map[int32]int64{}, sums: map[string][2]int64{}}
}

func (m *idleRecompute) add(rows []idleRow, floor int64) {
	for _, r := range rows {
		end := r.ts - r.ts%idleWindow + idleWindow
		own := engine.MinWatermark
		if mt, ok := m.maxTS[r.part]; ok {
			own = mt - idleLag
		}
		if end <= own || end <= floor {
			m.late++
		} else {
			k := fmt.Sprintf("%s/%d", r.sensor, r.ts-r.ts%idleWindow)
			s := m.sums[k]
			m.sums[k] = [2]int64{s[0] + 1, s[1] + int64(r.v)}
		}
		if mt, ok := m.maxTS[r.part]; !ok || r.ts > mt {
			m.maxTS[r.part] = r.ts
		}
	}
}

// closed lists, sorted, the printed rows of the windows that end at or
// before wm.
func (m *idleRecompute) closed(wm int64) []string {
	var out []string
	for k, s := range m.sums {
		var sensor string
		var start int64
		fmt.Sscanf(strings.Replace(k, "/", " ", 1), "%s %d", &sensor, &start)
		if start+idleWindow <= wm {
			out = append(out, fmt.Sprintf(`{"sensor_id":"%s","window_start":%d,"c":%d,"s":%d}`, sensor, start, s[0], s[1]))
		}
	}
	sort.Strings(out)
	return out
}

// idleRun makes readings of sensors on partition part from ts from to to
// (inclusive) every step ms; every fifth comes 4 s late in its partition
// (beyond the lag: late when its window has passed).
func idleRun(part int32, sensors []string, from, to, step int64, v0 int) []idleRow {
	var out []idleRow
	for i, ts := 0, from; ts <= to; i, ts = i+1, ts+step {
		t := ts
		if i%5 == 4 {
			t -= 4000
		}
		out = append(out, idleRow{part: part, sensor: sensors[i%len(sensors)], ts: max(t, 0), v: v0 + i})
	}
	return out
}

func produceIdle(t *testing.T, addr string, rows []idleRow) {
	t.Helper()
	recs := make([]rec, len(rows))
	for i, r := range rows {
		recs[i] = rec{r.part, r.sensor, reading(r.sensor, r.ts, r.v)}
	}
	produce(t, addr, "r", recs...)
}

func countPart(rows []idleRow, part int32) int {
	n := 0
	for _, r := range rows {
		if r.part == part {
			n++
		}
	}
	return n
}

// waitOffset waits until the job's sources have read partition part up to
// offset off.
func (r *running) waitOffset(part int32, off int64, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, src := range r.sources {
			if src.Offsets()[part] >= off {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("partition %d not read up to offset %d in %s", part, off, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLines waits until the job printed n lines (or timeout), then a
// moment for wrong extra ones.
func (r *running) waitLines(n int, timeout time.Duration) []string {
	r.waitRows(n, timeout)
	got := r.out.lines()
	sort.Strings(got)
	return got
}

// TestSourceIdleSubtasks (#16): four partitions, partition 2 empty,
// partition 3 going quiet mid-stream, idle_timeout_ms set. At parallelism
// 1, 2 and 4 (at 4 the subtask owning partition 2 has nothing else, at 5
// one subtask owns no partition at all) the idle subtasks must not hold
// back the watermark downstream (nor, at parallelism 4 with
// scan.parallelism 2, the two subtasks that read nothing): every window the active partitions passed
// fires, exact against an independent recomputation; when partition 3
// speaks again its row for a fired window is late, and its later rows
// count. Embedded at 1, 2, 4 and 5 (and at 4 with scan.parallelism 2),
// and on a cluster of two Workers at 1, 2 and 4.
func TestSourceIdleSubtasks(t *testing.T) {
	for _, c := range []struct {
		par, scan int
		cluster   bool
	}{{1, 0, false}, {2, 0, false}, {4, 0, false}, {5, 0, false}, {4, 2, false}, {1, 0, true}, {2, 0, true}, {4, 0, true}} {
		par := c.par
		name := fmt.Sprintf("parallelism=%d", par)
		if c.scan > 0 {
			name += fmt.Sprintf(",scan.parallelism=%d", c.scan)
		}
		if c.cluster {
			name = "cluster," + name
		}
		t.Run(name, func(t *testing.T) {
			b := broker(t, "r:4")
			model := newIdleRecompute()
			// Phase 1: partitions 0 and 1 to 60 s, partition 3 to 20 s,
			// partition 2 nothing. All of it is read long before the
			// idle timeout, while the empty partition still holds the
			// watermark: only a partition's own order decides lateness.
			phase1 := append(append(idleRun(0, []string{"a", "d"}, 0, 60000, 700, 0),
				idleRun(1, []string{"b"}, 0, 60000, 900, 1000)...),
				idleRun(3, []string{"c"}, 0, 20000, 800, 2000)...)
			produceIdle(t, b.Addr(), phase1)
			model.add(phase1, engine.MinWatermark)
			// With partitions 2 and 3 idle the watermark is that of
			// partitions 0 and 1.
			w1 := min(model.maxTS[0], model.maxTS[1]) - idleLag
			want1 := model.closed(w1)

			ddl := table("r", "sensor_id STRING, ts BIGINT, v BIGINT", b.Addr(), "r",
				"event_time_column", "ts", "watermark_lag_ms", fmt.Sprint(idleLag), "idle_timeout_ms", "1000", "on_error", "skip")
			if c.scan > 0 {
				ddl = table("r", "sensor_id STRING, ts BIGINT, v BIGINT", b.Addr(), "r",
					"event_time_column", "ts", "watermark_lag_ms", fmt.Sprint(idleLag), "idle_timeout_ms", "1000", "on_error", "skip", "scan.parallelism", fmt.Sprint(c.scan))
			}
			var r idleJob
			if c.cluster {
				r = startOnCluster(t, ddl+windowQuery, par)
			} else {
				r = embeddedJob{startParallel(t, ddl+windowQuery, par, 2*time.Minute)}
			}
			// Partitions 0 and 1 stay live: records without an event time
			// (bad records, skipped) keep them from going idle without
			// moving their watermark.
			alive := make(chan struct{})
			kept := make(chan struct{})
			go func() {
				defer close(kept)
				for {
					select {
					case <-alive:
						return
					case <-time.After(200 * time.Millisecond):
					}
					produce(t, b.Addr(), "r", rec{0, "a", `{"sensor_id":"a","ts":null,"v":0}`}, rec{1, "b", `{"sensor_id":"b","ts":null,"v":0}`})
				}
			}()
			defer func() { close(alive); <-kept }()
			if got := r.waitLines(len(want1), 60*time.Second); !reflect.DeepEqual(got, want1) {
				t.Fatalf("after partitions 2 and 3 went idle:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want1, "\n"))
			}

			// Phase 2: partition 3 speaks again, first with a row for a
			// window that fired (late), then on; every partition but 2
			// ends at 100 s, so the windows ending by 98 s fire.
			// Partition 3's rows go first and are read before the others
			// move the watermark on (were they read after, its windows
			// would have fired without them: late, as in Flink).
			back := []idleRow{{3, "c", 25000, 7}, {3, "c", 70000, 8}, {3, "c", 75000, 9}, {3, "c", 100000, 10}}
			produceIdle(t, b.Addr(), back)
			r.caughtUp(3, int64(countPart(phase1, 3)+len(back)))
			var phase2 []idleRow
			phase2 = append(phase2, idleRun(0, []string{"a", "d"}, 62000, 100000, 1100, 100)...)
			phase2 = append(phase2, idleRun(1, []string{"b"}, 61000, 100000, 1300, 200)...)
			phase2 = append(phase2, idleRow{0, "a", 100000, 11}, idleRow{1, "b", 100000, 12})
			produceIdle(t, b.Addr(), phase2)
			model.add(append(back, phase2...), w1)
			want := model.closed(100000 - idleLag)
			got := r.waitLines(len(want), 60*time.Second)
			close(alive)
			<-kept
			alive = make(chan struct{})
			late, counted := r.finish(t)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("windows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if counted && late != int64(model.late) {
				t.Errorf("late_rows_dropped = %d, want %d", late, model.late)
			}
		})
	}
}

// idleJob is the idleness test's job, embedded or on a cluster.
type idleJob interface {
	// waitLines waits for n printed lines and returns them sorted.
	waitLines(n int, timeout time.Duration) []string
	// caughtUp waits until the job read partition part up to offset off.
	caughtUp(part int32, off int64)
	// finish stops the job: the late rows it dropped, when it can tell.
	finish(t *testing.T) (late int64, counted bool)
}

type embeddedJob struct{ *running }

func (e embeddedJob) caughtUp(part int32, off int64) { e.waitOffset(part, off, 30*time.Second) }

func (e embeddedJob) finish(t *testing.T) (int64, bool) {
	res := e.stop()
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res.total("late_rows_dropped"), true
}

// clusterJob runs the job on an in-process Coordinator and two Workers
// of three slots (the shuffle between them over Arrow Flight).
type clusterJob struct {
	t   *testing.T
	c   *cluster.Coordinator
	id  string
	out *syncBuffer
}

func startOnCluster(t *testing.T, script string, par int) *clusterJob {
	t.Helper()
	plan, err := sql.Compile(script, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	c, err := cluster.NewCoordinator(cluster.CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Connectors: builtin.Registry(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()
	j := &clusterJob{t: t, c: c, out: &syncBuffer{}}
	for i := range 2 {
		w, err := cluster.NewWorker(cluster.WorkerConfig{ID: fmt.Sprintf("w%d", i+1), Coordinator: c.FlightAddr(), Slots: 3,
			Connectors: builtin.Registry(), Stdout: j.out, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("cluster log:\n%s", strings.Join(log.lines(), "\n"))
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := c.Submit(&cluster.SubmitRequest{Name: "idle", Plan: data, Parallelism: par, BatchSize: 64, LingerMS: 5})
		if err == nil {
			j.id = string(resp.Job)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("submit: %v", err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, _ := c.Job(j.id); d.State == cluster.StateRunning {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("job %s: %s %s", j.id, d.State, d.Failure)
		}
	}
	return j
}

func (j *clusterJob) waitLines(n int, timeout time.Duration) []string {
	for deadline := time.Now().Add(timeout); len(j.out.lines()) < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	got := j.out.lines()
	sort.Strings(got)
	return got
}

// caughtUp cannot see a Worker's sources: it gives them 2 s, far more
// than a fetch takes (the idle timeout is 1 s: the partition may idle
// again meanwhile, which changes nothing).
func (j *clusterJob) caughtUp(int32, int64) { time.Sleep(2 * time.Second) }

// finish cancels the job; a canceled job's late counts are not final, so
// they are not compared.
func (j *clusterJob) finish(t *testing.T) (int64, bool) {
	if err := j.c.Cancel(j.id); err != nil {
		t.Fatal(err)
	}
	return 0, false
}
