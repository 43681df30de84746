package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestSavepointRestoreChangedLag runs the window aggregate with a
// watermark lag of 1000 ms over the first half of a seeded input, then
// restores its checkpoint into the same script with a lag of 2000 ms over
// the rest (a Kafka topic of the dev broker; the first run is interrupted
// after its checkpoints cover what it read): the windows written by both
// runs are exactly those computed here, none lost, none twice. Event times
// only grow, so no row is late under either lag and every window is
// exact. (A bounded first run does not do: its last checkpoint holds the
// end of input's watermark, after which every new row is late.)
func TestSavepointRestoreChangedLag(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "o.jsonl")
	type key struct {
		sensor string
		start  int64
	}
	type win struct{ count, sum int64 }
	want := map[key]win{}
	rng := rand.New(rand.NewPCG(7, 11))
	var part [2]strings.Builder
	ts, mid := int64(0), int64(0)
	for i := range 600 {
		ts += rng.Int64N(400)
		half := 0
		if i >= 300 {
			half = 1
		} else {
			// mid is the first run's last event time.
			mid = ts
		}
		s := fmt.Sprintf("s%d", rng.IntN(5))
		x := rng.Int64N(1000)
		fmt.Fprintf(&part[half], "{\"sensor\":\"%s\",\"x\":%d,\"ts\":%d}\n", s, x, ts)
		k := key{s, ts / 10000 * 10000}
		w := want[k]
		w.count++
		w.sum += x
		want[k] = w
	}
	addr := serveBroker(t, bin, "--topic", "readings:1")
	script := func(lag string) string {
		return "CREATE TABLE r (sensor STRING, x BIGINT, ts BIGINT) WITH ('connector'='kafka','brokers'='" + addr + "','topic'='readings','event_time_column'='ts','watermark_lag_ms'='" + lag + "');\n" +
			"CREATE TABLE o (sensor STRING, window_start BIGINT, c BIGINT, s BIGINT) WITH ('connector'='file','path'='" + out + "');\n" +
			"INSERT INTO o SELECT sensor, window_start, COUNT(*), SUM(x) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n"
	}
	// lines counts the output's committed rows.
	lines := func() int {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), "\n")
	}
	// runUntil runs the job until the output holds n rows and two more
	// checkpoints have had time to complete, then interrupts it: its
	// newest checkpoint covers every row it read.
	runUntil := func(n int, args ...string) {
		cmd := exec.Command(bin, append([]string{"run", "--checkpoint-interval-ms", "100"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for lines() < n && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if lines() < n {
			t.Fatalf("the job wrote %d rows, want %d\n%s", lines(), n, stderr.String())
		}
	}
	// fired counts the windows a watermark of wm has closed.
	fired := func(wm int64) int {
		n := 0
		for k := range want {
			if k.start+10000 <= wm {
				n++
			}
		}
		return n
	}
	clink(t, bin, part[0].String(), "kafka", "produce", "--brokers", addr, "--topic", "readings")
	ck1 := filepath.Join(dir, "ck1")
	runUntil(fired(mid-1000), "--checkpoint-dir", ck1, "-e", script("1000"))
	chks, _ := filepath.Glob(filepath.Join(ck1, "chk-*"))
	if len(chks) == 0 {
		t.Fatal("the first run left no checkpoint")
	}
	sort.Slice(chks, func(i, j int) bool {
		return len(chks[i]) < len(chks[j]) || len(chks[i]) == len(chks[j]) && chks[i] < chks[j]
	})
	sp := chks[len(chks)-1]
	if b, err := exec.Command(bin, "savepoint", "check", "--savepoint", sp, "-e", script("2000")).CombinedOutput(); err != nil {
		t.Fatalf("savepoint check: %v\n%s", err, b)
	}
	// A row far ahead closes every window of the input.
	end := fmt.Sprintf("{\"sensor\":\"end\",\"x\":0,\"ts\":%d}\n", ts+100000)
	clink(t, bin, part[1].String()+end, "kafka", "produce", "--brokers", addr, "--topic", "readings")
	runUntil(len(want), "--checkpoint-dir", filepath.Join(dir, "ck2"), "--from-savepoint", sp, "-e", script("2000"))
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[key]win{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Sensor      string `json:"sensor"`
			WindowStart int64  `json:"window_start"`
			C, S        int64
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		k := key{r.Sensor, r.WindowStart}
		if r.Sensor == "end" {
			continue
		}
		if _, dup := got[k]; dup {
			t.Errorf("window %v written twice", k)
		}
		got[k] = win{r.C, r.S}
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("window %v lost", k)
		} else if g != w {
			t.Errorf("window %v: count %d sum %d, want %d %d", k, g.count, g.sum, w.count, w.sum)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("window %v was not in the input", k)
		}
	}
}
