package cluster

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/flight/console"
	"github.com/clink-dev/clink/substrait/sql"
)

// route is one entry of the HTTP API. Every route goes through guard:
// the token unless public, and a capped body.
type route struct {
	pattern string // http.ServeMux pattern: "METHOD /path"
	handler http.HandlerFunc
	// leaderOnly routes are answered 503 by a standby.
	leaderOnly bool
	// console routes send a browser without a session to /ui/login.
	console bool
	// public routes answer without the token: the probes a load balancer
	// or Kubernetes sends.
	public bool
}

// defaultMaxBodyBytes caps a request body unless
// CoordinatorConfig.MaxBodyBytes says otherwise.
const defaultMaxBodyBytes = 4 << 20

// routes is the Coordinator's HTTP API (docs/cluster.md), as data so that
// a test walks it and checks that no route skips the token.
func (c *Coordinator) routes() []route {
	metrics := promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{})
	return []route{
		{pattern: "GET /healthz", handler: c.getHealthz, public: true},
		{pattern: "GET /readyz", handler: c.getReadyz, public: true},
		{pattern: "GET /api/v1/config", handler: c.getConfig},
		{pattern: "GET /api/v1/overview", handler: c.getOverview, leaderOnly: true},
		{pattern: "GET /api/v1/workers", handler: c.getWorkers, leaderOnly: true},
		{pattern: "GET /api/v1/jobs", handler: c.getJobs, leaderOnly: true},
		{pattern: "POST /api/v1/jobs", handler: c.postJob, leaderOnly: true},
		{pattern: "GET /api/v1/jobs/{id}", handler: c.getJob, leaderOnly: true},
		{pattern: "GET /api/v1/jobs/{id}/operators", handler: c.getOperators, leaderOnly: true},
		{pattern: "GET /api/v1/jobs/{id}/checkpoints", handler: c.getCheckpoints, leaderOnly: true},
		{pattern: "POST /api/v1/jobs/{id}/cancel", handler: c.postCancel, leaderOnly: true},
		{pattern: "PATCH /api/v1/jobs/{id}", handler: c.postCancel, leaderOnly: true}, // Flink's ?mode=cancel
		{pattern: "POST /api/v1/jobs/{id}/stop", handler: c.postStop, leaderOnly: true},
		{pattern: "POST /api/v1/jobs/{id}/savepoints", handler: c.postSavepoint, leaderOnly: true},
		{pattern: "GET /metrics", handler: metrics.ServeHTTP},
		// The web console (docs/console.md): its pages behind the token,
		// its sign-in page and form public.
		{pattern: "GET /ui", handler: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) }, public: true},
		{pattern: "GET /ui/login", handler: c.getLogin, public: true},
		{pattern: "POST /ui/login", handler: c.postLogin, public: true},
		{pattern: "GET /ui/", handler: console.Handler("/ui/").ServeHTTP, console: true},
		// Anything else is 404, after the token: without it nobody learns
		// which paths exist.
		{pattern: "/", handler: func(w http.ResponseWriter, r *http.Request) {
			writeErr(w, http.StatusNotFound, fmt.Errorf("no such resource: %s %s", r.Method, r.URL.Path))
		}},
	}
}

// api is the Coordinator's HTTP API.
func (c *Coordinator) api() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range c.routes() {
		mux.Handle(rt.pattern, c.guard(rt))
	}
	return mux
}

// guard is the one middleware of every route: the bearer token (when one
// is configured, unless the route is public), compared in constant time,
// and the body capped at maxBodyBytes (413 at once when Content-Length
// says more; else the handler's read fails past the cap, and it answers
// 413 without reading the rest).
func (c *Coordinator) guard(rt route) http.Handler {
	want := sha256.Sum256([]byte("Bearer " + c.cfg.Token))
	limit := c.maxBodyBytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rt.public && c.cfg.Token != "" {
			// Hashing both sides first keeps the comparison constant-time
			// in the token's length too.
			got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 && !c.consoleSession(r) {
				if rt.console {
					http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="clink"`)
				writeErr(w, http.StatusUnauthorized, fmt.Errorf("missing or wrong bearer token"))
				return
			}
		}
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close")
			writeErr(w, http.StatusRequestEntityTooLarge, tooLarge(limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if rt.leaderOnly && !c.IsLeader() {
			// A standby's jobs are not its own: 503, naming the leader
			// (as Flink's REST endpoint answers during leader election).
			if l := c.leaderHTTP(); l != "" {
				w.Header().Set("X-Clink-Leader", l)
			}
			writeErr(w, http.StatusServiceUnavailable, c.notLeader())
			return
		}
		rt.handler(w, r)
	})
}

func (c *Coordinator) maxBodyBytes() int64 {
	if c.cfg.MaxBodyBytes > 0 {
		return c.cfg.MaxBodyBytes
	}
	return defaultMaxBodyBytes
}

func tooLarge(limit int64) error {
	return fmt.Errorf("request body larger than %d bytes (the Coordinator's --max-request-bytes)", limit)
}

// decodeBody reads r's JSON body into v: 413 past the cap, 400 when it is
// not valid; an empty body is fine when optional. strict refuses unknown
// fields.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, strict, optional bool) bool {
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == io.EOF && optional {
		return true
	}
	if err == nil {
		return true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeErr(w, http.StatusRequestEntityTooLarge, tooLarge(mbe.Limit))
		return false
	}
	writeErr(w, http.StatusBadRequest, fmt.Errorf("request body: %v", err))
	return false
}

// getHealthz answers while the process serves.
func (c *Coordinator) getHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readiness is whether this Coordinator takes requests: its status and
// role. One Coordinator is always the leader; with HA a standby answers
// 503 "standby".
func (c *Coordinator) readiness() (int, string) {
	if !c.IsLeader() {
		return http.StatusServiceUnavailable, "standby"
	}
	return http.StatusOK, "leader"
}

// leaderHTTP is the HTTP address of the leader a standby knows ("" when
// it knows none, or without HA).
func (c *Coordinator) leaderHTTP() string {
	if c.ha == nil {
		return ""
	}
	c.ha.mu.Lock()
	defer c.ha.mu.Unlock()
	if l := c.ha.leader; l != nil && !l.expired(time.Now()) {
		return l.HTTP
	}
	return ""
}

func (c *Coordinator) getReadyz(w http.ResponseWriter, _ *http.Request) {
	status, body := c.readiness()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, body+"\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeErr(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]any{"errors": []string{err.Error()}})
}

// JobID is a job's id: a sequential integer, in JSON a number ("id": 1;
// a string "1" is accepted when read) and in paths /api/v1/jobs/1.
type JobID string

// MarshalJSON writes the id as a JSON number (as a string should it ever
// not be one).
func (id JobID) MarshalJSON() ([]byte, error) {
	if _, err := strconv.ParseUint(string(id), 10, 64); err == nil {
		return []byte(id), nil
	}
	return json.Marshal(string(id))
}

// UnmarshalJSON reads a number or a string.
func (id *JobID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = JobID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("job id: %w", err)
	}
	*id = JobID(n.String())
	return nil
}

// JobSummary is a job in GET /api/v1/jobs.
type JobSummary struct {
	ID    JobID  `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
	// Status repeats State (Flink's /jobs/:id/status; the tutorial reads
	// it in the list).
	Status string `json:"status"`
	// ErrorCount is the job's failed attempts.
	ErrorCount  int   `json:"error_count"`
	Parallelism int   `json:"parallelism"`
	StartTime   int64 `json:"start_time"`
	EndTime     int64 `json:"end_time,omitempty"`
	DurationMS  int64 `json:"duration_ms"`
}

// JobDetail is GET /api/v1/jobs/{id}.
type JobDetail struct {
	JobSummary
	Guarantee     string    `json:"guarantee"`
	Attempt       int       `json:"attempt"`
	Restarts      int       `json:"restarts"`
	Failure       string    `json:"failure,omitempty"`
	CheckpointDir string    `json:"checkpoint_dir,omitempty"`
	Latest        *ckRecord `json:"latest_checkpoint"`
	RestoredFrom  []uint64  `json:"restored_from,omitempty"`
	Savepoint     string    `json:"savepoint,omitempty"`
	// SQL is the script the job was submitted as ("" for a plan).
	SQL   string `json:"sql,omitempty"`
	Tasks []Task `json:"tasks"`
	// LateDropped and RecordsSkipped are the final counts of a finished
	// job (running jobs: see /operators).
	LateDropped    int64 `json:"late_records_dropped"`
	RecordsSkipped int64 `json:"records_skipped"`
}

// Task is one subtask's placement.
type Task struct {
	Subtask int    `json:"subtask"`
	Worker  string `json:"worker"`
	Addr    string `json:"worker_addr,omitempty"`
	State   string `json:"state"`
}

// Operator is one operator subtask's counters (from the Workers' last
// heartbeat).
type Operator struct {
	Name       string `json:"name"`
	Subtask    int    `json:"subtask"`
	Worker     string `json:"worker"`
	RecordsIn  int64  `json:"records_in"`
	RecordsOut int64  `json:"records_out"`
	// Watermark is the operator's event-time watermark in epoch
	// milliseconds, null before the first.
	Watermark   *int64 `json:"watermark"`
	LateDropped int64  `json:"late_dropped"`
	// RecordsSkipped counts a source's bad records skipped or sent to
	// its dead-letter topic (on_error).
	RecordsSkipped int64 `json:"records_skipped"`
}

func (c *Coordinator) summaryLocked(j *job) JobSummary {
	s := JobSummary{ID: JobID(j.id), Name: j.name, State: j.state, Status: j.state, ErrorCount: j.errorCount,
		Parallelism: j.parallelism, StartTime: j.created.UnixMilli()}
	end := time.Now()
	if !j.ended.IsZero() {
		s.EndTime = j.ended.UnixMilli()
		end = j.ended
	}
	s.DurationMS = end.Sub(j.created).Milliseconds()
	return s
}

// getConfig answers where the Coordinator listens, so that a client given
// the HTTP API's address (Flink's habit: the REST port) finds the Flight
// address it submits to (Submit).
func (c *Coordinator) getConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"flight_addr": c.FlightAddr(), "http_addr": c.HTTPAddr(), "flight_sql_addr": c.FlightSQLAddr(),
		"checkpoint_interval_ms": c.cfg.CheckpointInterval.Milliseconds(), "heartbeat_ms": c.cfg.Heartbeat.Milliseconds()})
}

func (c *Coordinator) getOverview(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slots, free := 0, 0
	for _, wk := range c.workers {
		slots += wk.slots
		free += wk.slots - wk.used
	}
	states := map[string]int{}
	for _, j := range c.jobs {
		states[j.state]++
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": len(c.workers), "slots_total": slots, "slots_available": free,
		"jobs": states, "uptime_ms": time.Since(c.started).Milliseconds()})
}

func (c *Coordinator) getWorkers(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	for _, wk := range c.workers {
		out = append(out, map[string]any{"id": wk.id, "addr": wk.addr, "slots": wk.slots, "slots_free": wk.slots - wk.used,
			"last_heartbeat": wk.lastBeat.UnixMilli()})
	}
	sort.Slice(out, func(a, b int) bool { return out[a]["id"].(string) < out[b]["id"].(string) })
	writeJSON(w, http.StatusOK, map[string]any{"workers": out})
}

func (c *Coordinator) getJobs(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []JobSummary{}
	for _, id := range c.order {
		out = append(out, c.summaryLocked(c.jobs[id]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

// postJob submits SQL: {"sql": "...", "name": "...", "parallelism": N,
// "fresh": false, "from_checkpoint": 0, "from_savepoint": "DIR",
// "allow_non_restored_state": false}. An unknown field is refused.
func (c *Coordinator) postJob(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SQL              string `json:"sql"`
		Name             string `json:"name"`
		Parallelism      int    `json:"parallelism"`
		Fresh            bool   `json:"fresh"`
		FromCheckpoint   uint64 `json:"from_checkpoint"`
		FromSavepoint    string `json:"from_savepoint"`
		AllowNonRestored bool   `json:"allow_non_restored_state"`
	}
	if !decodeBody(w, r, &req, true, false) {
		return
	}
	plan, err := sql.Compile(req.SQL, c.cfg.Connectors)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(plan)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err)
		return
	}
	resp, err := c.Submit(&SubmitRequest{Name: req.Name, Plan: data, SQL: req.SQL, Parallelism: req.Parallelism, Fresh: req.Fresh, FromCheckpoint: req.FromCheckpoint, FromSavepoint: req.FromSavepoint, AllowNonRestoredState: req.AllowNonRestored})
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, http.StatusAccepted, resp)
}

func (c *Coordinator) job(w http.ResponseWriter, r *http.Request) *job {
	id := r.PathValue("id")
	c.mu.Lock()
	j, ok := c.jobs[id]
	c.mu.Unlock()
	if !ok {
		writeErr(w, http.StatusNotFound, fmt.Errorf("no job %s", id))
		return nil
	}
	return j
}

func (c *Coordinator) getJob(w http.ResponseWriter, r *http.Request) {
	j := c.job(w, r)
	if j == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	writeJSON(w, http.StatusOK, c.detailLocked(j))
}

// Workers is the number of registered Workers.
func (c *Coordinator) Workers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.workers)
}

// Job returns a job's detail (what GET /api/v1/jobs/{id} answers).
func (c *Coordinator) Job(id string) (JobDetail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		return JobDetail{}, false
	}
	return c.detailLocked(j), true
}

func (c *Coordinator) detailLocked(j *job) JobDetail {
	d := JobDetail{JobSummary: c.summaryLocked(j), Guarantee: j.guarantee, Attempt: j.attempt,
		Restarts: j.restarts, Failure: j.failure, CheckpointDir: j.ckDir, Latest: j.latest,
		RestoredFrom: j.restoredIDs, Savepoint: j.savepoint, SQL: j.req.SQL, Tasks: []Task{}, LateDropped: j.late, RecordsSkipped: j.skipped}
	for s := range j.parallelism {
		t := Task{Subtask: s, State: j.state}
		if j.assign != nil {
			t.Worker = j.assign[s]
			if wk, ok := c.workers[t.Worker]; ok {
				t.Addr = wk.addr
			}
		}
		if j.state == StateRestarting || j.state == StateCreated {
			t.State = "SCHEDULED"
		}
		d.Tasks = append(d.Tasks, t)
	}
	return d
}

// operatorsLocked gathers a job's operator counters from the Workers'
// heartbeats of its current attempt.
func (c *Coordinator) operatorsLocked(j *job) []Operator {
	out := []Operator{}
	for _, wk := range c.workers {
		for _, t := range wk.tasks {
			if t.Job != j.id || t.Attempt != j.attempt {
				continue
			}
			for _, o := range t.Ops {
				op := Operator{Name: o.Name, Subtask: o.Subtask, Worker: wk.id, RecordsIn: o.RowsIn, RecordsOut: o.RowsOut, LateDropped: o.Late, RecordsSkipped: o.Skipped}
				if o.Watermark != engine.MinWatermark {
					wm := o.Watermark
					op.Watermark = &wm
				}
				out = append(out, op)
			}
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Name != out[b].Name {
			return out[a].Name < out[b].Name
		}
		return out[a].Subtask < out[b].Subtask
	})
	return out
}

func (c *Coordinator) getOperators(w http.ResponseWriter, r *http.Request) {
	j := c.job(w, r)
	if j == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"job": JobID(j.id), "attempt": j.attempt, "operators": c.operatorsLocked(j)})
}

func (c *Coordinator) getCheckpoints(w http.ResponseWriter, r *http.Request) {
	j := c.job(w, r)
	if j == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hist := append([]ckRecord{}, j.history...)
	sort.Slice(hist, func(a, b int) bool { return hist[a].ID > hist[b].ID })
	writeJSON(w, http.StatusOK, map[string]any{
		"counts":  map[string]int{"completed": j.ckCount, "failed": j.ckFailed},
		"latest":  j.latest,
		"history": hist,
		"dir":     j.ckDir,
	})
}

func (c *Coordinator) postCancel(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPatch {
		if m := r.URL.Query().Get("mode"); m != "" && m != "cancel" {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("mode %q: only cancel", m))
			return
		}
	}
	id := r.PathValue("id")
	if err := c.Cancel(id); err != nil {
		writeErr(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"job": JobID(id), "state": StateCanceled})
}

func (c *Coordinator) postStop(w http.ResponseWriter, r *http.Request) {
	body, ok := savepointBody(w, r)
	if !ok {
		return
	}
	c.answerSavepoint(w, &SavepointRequest{Job: JobID(r.PathValue("id")), Dir: body.Dir, Stop: true})
}

// postSavepoint is Flink's POST /jobs/{id}/savepoints, answered when the
// savepoint is complete (Flink answers a trigger id to poll): body
// optional, {"target-directory": "DIR", "cancel-job": false}; cancel-job
// true is stop with savepoint.
func (c *Coordinator) postSavepoint(w http.ResponseWriter, r *http.Request) {
	body, ok := savepointBody(w, r)
	if !ok {
		return
	}
	c.answerSavepoint(w, &SavepointRequest{Job: JobID(r.PathValue("id")), Dir: body.Dir, Stop: body.Stop})
}

type savepointReqBody struct {
	Dir  string `json:"target-directory"`
	Stop bool   `json:"cancel-job"`
}

func savepointBody(w http.ResponseWriter, r *http.Request) (savepointReqBody, bool) {
	var b savepointReqBody
	ok := decodeBody(w, r, &b, false, true)
	return b, ok
}

func (c *Coordinator) answerSavepoint(w http.ResponseWriter, req *SavepointRequest) {
	resp, err := c.savepoint(req)
	if err != nil {
		writeErr(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func statusOf(err error) int {
	if strings.HasPrefix(err.Error(), "no job ") {
		return http.StatusNotFound
	}
	return http.StatusConflict
}

// collector exports the Coordinator's state to Prometheus at scrape time.
type collector struct{ c *Coordinator }

var (
	mWorkers     = prometheus.NewDesc("clink_workers", "Registered Workers.", nil, nil)
	mSlots       = prometheus.NewDesc("clink_slots", "Task slots of the registered Workers, by state (free, used).", []string{"state"}, nil)
	mJobs        = prometheus.NewDesc("clink_jobs", "Jobs by state.", []string{"state"}, nil)
	mRestarts    = prometheus.NewDesc("clink_job_restarts_total", "Restarts of a job after failures.", []string{"job_id", "job_name"}, nil)
	mCkDone      = prometheus.NewDesc("clink_job_checkpoints_completed_total", "Completed checkpoints of a job.", []string{"job_id", "job_name"}, nil)
	mCkFailed    = prometheus.NewDesc("clink_job_checkpoints_failed_total", "Failed or abandoned checkpoints of a job.", []string{"job_id", "job_name"}, nil)
	mCkLatest    = prometheus.NewDesc("clink_job_last_checkpoint_id", "Id of a job's newest completed checkpoint.", []string{"job_id", "job_name"}, nil)
	mCkBytes     = prometheus.NewDesc("clink_job_last_checkpoint_bytes", "State bytes of a job's newest completed checkpoint.", []string{"job_id", "job_name"}, nil)
	mCkSync      = prometheus.NewDesc("clink_job_last_checkpoint_sync_duration_ms", "Longest synchronous snapshot (the pause at the barrier) of a job's newest completed checkpoint.", []string{"job_id", "job_name"}, nil)
	mCkSize      = prometheus.NewDesc("clink_job_last_checkpoint_state_size_bytes", "Bytes of every file a job's newest completed checkpoint needs (its own and the earlier files its delta parts build on).", []string{"job_id", "job_name"}, nil)
	mRecordsIn   = prometheus.NewDesc("clink_operator_records_in_total", "Rows into an operator subtask.", []string{"job_id", "operator", "subtask"}, nil)
	mRecordsOut  = prometheus.NewDesc("clink_operator_records_out_total", "Rows out of an operator subtask.", []string{"job_id", "operator", "subtask"}, nil)
	mLate        = prometheus.NewDesc("clink_operator_late_records_dropped_total", "Late rows an operator subtask dropped.", []string{"job_id", "operator", "subtask"}, nil)
	mSkipped     = prometheus.NewDesc("clink_operator_records_skipped_total", "Bad records a source subtask skipped or dead-lettered (on_error).", []string{"job_id", "operator", "subtask"}, nil)
	mWatermark   = prometheus.NewDesc("clink_operator_watermark_ms", "Event-time watermark of an operator subtask (epoch ms).", []string{"job_id", "operator", "subtask"}, nil)
	allMetricSet = []*prometheus.Desc{mWorkers, mSlots, mJobs, mRestarts, mCkDone, mCkFailed, mCkLatest, mCkBytes, mCkSync, mCkSize, mRecordsIn, mRecordsOut, mLate, mSkipped, mWatermark}
)

func (m *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allMetricSet {
		ch <- d
	}
}

func (m *collector) Collect(ch chan<- prometheus.Metric) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(mWorkers, prometheus.GaugeValue, float64(len(c.workers)))
	free, used := 0, 0
	for _, w := range c.workers {
		free += w.slots - w.used
		used += w.used
	}
	ch <- prometheus.MustNewConstMetric(mSlots, prometheus.GaugeValue, float64(free), "free")
	ch <- prometheus.MustNewConstMetric(mSlots, prometheus.GaugeValue, float64(used), "used")
	states := map[string]int{StateCreated: 0, StateRunning: 0, StateRestarting: 0, StateFinished: 0, StateCanceled: 0, StateFailed: 0}
	for _, id := range c.order {
		j := c.jobs[id]
		states[j.state]++
		ch <- prometheus.MustNewConstMetric(mRestarts, prometheus.CounterValue, float64(j.restarts), j.id, j.name)
		ch <- prometheus.MustNewConstMetric(mCkDone, prometheus.CounterValue, float64(j.ckCount), j.id, j.name)
		ch <- prometheus.MustNewConstMetric(mCkFailed, prometheus.CounterValue, float64(j.ckFailed), j.id, j.name)
		if j.latest != nil {
			ch <- prometheus.MustNewConstMetric(mCkLatest, prometheus.GaugeValue, float64(j.latest.ID), j.id, j.name)
			ch <- prometheus.MustNewConstMetric(mCkBytes, prometheus.GaugeValue, float64(j.latest.Bytes), j.id, j.name)
			ch <- prometheus.MustNewConstMetric(mCkSync, prometheus.GaugeValue, j.latest.SyncMS, j.id, j.name)
			ch <- prometheus.MustNewConstMetric(mCkSize, prometheus.GaugeValue, float64(j.latest.StateSize), j.id, j.name)
		}
		if terminal(j.state) {
			continue
		}
		seen := map[[2]string]bool{}
		for _, o := range c.operatorsLocked(j) {
			sub := strconv.Itoa(o.Subtask)
			if seen[[2]string{o.Name, sub}] {
				continue // two pipelines' heads of one name: keep the first
			}
			seen[[2]string{o.Name, sub}] = true
			ch <- prometheus.MustNewConstMetric(mRecordsIn, prometheus.CounterValue, float64(o.RecordsIn), j.id, o.Name, sub)
			ch <- prometheus.MustNewConstMetric(mRecordsOut, prometheus.CounterValue, float64(o.RecordsOut), j.id, o.Name, sub)
			ch <- prometheus.MustNewConstMetric(mLate, prometheus.CounterValue, float64(o.LateDropped), j.id, o.Name, sub)
			ch <- prometheus.MustNewConstMetric(mSkipped, prometheus.CounterValue, float64(o.RecordsSkipped), j.id, o.Name, sub)
			if o.Watermark != nil {
				ch <- prometheus.MustNewConstMetric(mWatermark, prometheus.GaugeValue, float64(*o.Watermark), j.id, o.Name, sub)
			}
		}
	}
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(mJobs, prometheus.GaugeValue, float64(n), s)
	}
}
