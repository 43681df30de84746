package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKafkaOutageWarned: the dev broker goes away for 8 s under a running
// job (Kafka source into a Kafka sink) and comes back on the same port
// with its data: the job's stderr says when its source could not reach
// the brokers for 5 s and when they were reachable again, the job goes
// on, and every record reaches the output topic (outside tests found a
// 20-second broker outage left no line in any log).
func TestKafkaOutageWarned(t *testing.T) {
	bin := build(t)
	data := t.TempDir()
	addr := freePort(t)
	_, port, _ := strings.Cut(addr, ":")
	blog := &syncBuffer{}
	broker := startProc(t, bin, blog, "kafka", "serve", "--port", port, "--data-dir", data, "--topic", "in:1", "--topic", "out:1")
	waitFor(t, blog, addr, 20*time.Second)
	produce := func(from, n int) {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&b, `{"id":%d,"ts":%d}`+"\n", i, i*10)
		}
		clink(t, bin, b.String(), "kafka", "produce", "--brokers", addr, "--topic", "in")
	}
	produce(0, 50)
	jlog := &syncBuffer{}
	dir := t.TempDir()
	startProc(t, bin, jlog, "run", "--checkpoint-dir", filepath.Join(dir, "ck"), "-e", `SET 'execution.checkpointing.interval' = '200ms';
CREATE TABLE i (id BIGINT, ts BIGINT) WITH ('connector' = 'kafka', 'brokers' = '`+addr+`', 'topic' = 'in', 'event_time_column' = 'ts');
CREATE TABLE o (id BIGINT) WITH ('connector' = 'kafka', 'brokers' = '`+addr+`', 'topic' = 'out');
INSERT INTO o SELECT id FROM i;`)
	waitOut := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			got := strings.Count(string(consumeCommitted(t, addr, "out")), "\n")
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d records in the output topic:\njob:\n%s", got, n, jlog.String())
			}
		}
	}
	waitOut(50)
	broker.cmd.Process.Signal(syscall.SIGTERM)
	<-broker.done
	broker.done <- nil
	waitFor(t, jlog, "warning: kafka source 'i' (topic in): cannot reach brokers "+addr+" for ", 20*time.Second)
	time.Sleep(3 * time.Second)
	blog2 := &syncBuffer{}
	startProc(t, bin, blog2, "kafka", "serve", "--port", port, "--data-dir", data, "--topic", "in:1", "--topic", "out:1")
	waitFor(t, blog2, addr, 20*time.Second)
	waitFor(t, jlog, "kafka source 'i' (topic in): brokers "+addr+" reachable again after", 30*time.Second)
	produce(50, 50)
	waitOut(100)
	out := string(consumeCommitted(t, addr, "out"))
	for i := range 100 {
		if !strings.Contains(out, fmt.Sprintf(`{"id":%d}`, i)) {
			t.Fatalf("record %d missing from the output:\n%s\njob:\n%s", i, out, jlog.String())
		}
	}
	t.Logf("job log:\n%s", jlog.String())
}
