package cluster

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clink-dev/clink/engine"
)

// workerCollector is a Worker's /metrics (and, with telemetry, its OTLP
// metrics): the Worker's own state and the counters of every operator
// subtask it runs, under the Coordinator's names and labels
// (docs/observability.md#metrics), read when scraped.
type workerCollector struct{ w *Worker }

// kafkaLagKey prefixes a source's per-partition lag in its stats
// (kafka.LagPartitionKey; the cluster does not import connectors).
const kafkaLagKey = "records_lag_partition_"

var (
	mwRegistered = prometheus.NewDesc("clink_worker_registered", "1 while registered with a Coordinator.", nil, nil)
	mwEpoch      = prometheus.NewDesc("clink_worker_leader_epoch", "The newest leader epoch this Worker has seen.", nil, nil)
	mwSlots      = prometheus.NewDesc("clink_worker_slots", "Task slots of this Worker.", nil, nil)
	mwAttempts   = prometheus.NewDesc("clink_worker_attempts", "Job attempts running on this Worker.", nil, nil)
	mwFences     = prometheus.NewDesc("clink_worker_self_fences_total", "Times this Worker cancelled its tasks for want of a leader.", nil, nil)
	mwDelay      = prometheus.NewDesc("clink_operator_watermark_delay_ms", "How far an operator subtask's watermark is behind the wall clock (ms).", []string{"job_id", "operator", "subtask"}, nil)
	mwLag        = prometheus.NewDesc("clink_source_records_lag", "Records of a source partition not read yet: its end (the last stable offset under read_committed, else the high watermark) minus the next offset to read, as of the last fetch.", []string{"job_id", "operator", "subtask", "partition"}, nil)
	workerDescs  = []*prometheus.Desc{mwRegistered, mwEpoch, mwSlots, mwAttempts, mwFences, mRecordsIn, mRecordsOut, mLate, mSkipped, mWatermark, mwDelay, mwLag}
)

func (m *workerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range workerDescs {
		ch <- d
	}
}

func (m *workerCollector) Collect(ch chan<- prometheus.Metric) {
	w := m.w
	w.mu.Lock()
	reg := 0.0
	if w.registered {
		reg = 1
	}
	epoch, attempts, fences := w.epoch, len(w.attempts), w.selfFences
	w.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(mwRegistered, prometheus.GaugeValue, reg)
	ch <- prometheus.MustNewConstMetric(mwEpoch, prometheus.GaugeValue, float64(epoch))
	ch <- prometheus.MustNewConstMetric(mwSlots, prometheus.GaugeValue, float64(w.cfg.Slots))
	ch <- prometheus.MustNewConstMetric(mwAttempts, prometheus.GaugeValue, float64(attempts))
	ch <- prometheus.MustNewConstMetric(mwFences, prometheus.CounterValue, float64(fences))
	now := time.Now().UnixMilli()
	w.mu.Lock()
	type jobOps struct {
		job string
		ops []engine.LiveOp
	}
	var live []jobOps
	for ref, a := range w.attempts {
		live = append(live, jobOps{ref.Job, a.live.Snapshot()})
	}
	w.mu.Unlock()
	lagSeen := map[[4]string]bool{}
	for _, jo := range live {
		for _, o := range jo.ops {
			sub := strconv.Itoa(o.Subtask)
			for k, v := range o.Extra {
				p, ok := strings.CutPrefix(k, kafkaLagKey)
				if !ok || lagSeen[[4]string{jo.job, o.Name, sub, p}] {
					continue
				}
				lagSeen[[4]string{jo.job, o.Name, sub, p}] = true
				ch <- prometheus.MustNewConstMetric(mwLag, prometheus.GaugeValue, float64(v), jo.job, o.Name, sub, p)
			}
		}
	}
	seen := map[[3]string]bool{}
	for _, ts := range w.stats() {
		for _, o := range ts.Ops {
			sub := strconv.Itoa(o.Subtask)
			if k := [3]string{ts.Job, o.Name, sub}; seen[k] {
				continue // two pipelines' heads of one name, or an old attempt: keep the first
			} else {
				seen[k] = true
			}
			ch <- prometheus.MustNewConstMetric(mRecordsIn, prometheus.CounterValue, float64(o.RowsIn), ts.Job, o.Name, sub)
			ch <- prometheus.MustNewConstMetric(mRecordsOut, prometheus.CounterValue, float64(o.RowsOut), ts.Job, o.Name, sub)
			ch <- prometheus.MustNewConstMetric(mLate, prometheus.CounterValue, float64(o.Late), ts.Job, o.Name, sub)
			ch <- prometheus.MustNewConstMetric(mSkipped, prometheus.CounterValue, float64(o.Skipped), ts.Job, o.Name, sub)
			if o.Watermark != engine.MinWatermark {
				ch <- prometheus.MustNewConstMetric(mWatermark, prometheus.GaugeValue, float64(o.Watermark), ts.Job, o.Name, sub)
				ch <- prometheus.MustNewConstMetric(mwDelay, prometheus.GaugeValue, float64(now-o.Watermark), ts.Job, o.Name, sub)
			}
		}
	}
}
