// Package cluster runs jobs on a Coordinator and Workers. Control calls
// are Arrow Flight actions with JSON bodies; the shuffle between Workers
// is the flight package's; people use the Coordinator's HTTP API.
//
// Worker → Coordinator: register, heartbeat (with operator counters),
// ack (a checkpoint's parts), finished (every local subtask ended), done
// (the attempt ended, with its error), leave (the Worker shuts down).
// Coordinator → Worker: deploy, trigger, complete, cancel.
// Client → Coordinator: submit, savepoint (also stop with savepoint).
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/clink-dev/clink/checkpoint"
	cflight "github.com/clink-dev/clink/flight"
)

// Action names.
const (
	actRegister  = "clink.register"
	actHeartbeat = "clink.heartbeat"
	actAck       = "clink.ack"
	actFinished  = "clink.finished"
	actDone      = "clink.done"
	actDeploy    = "clink.deploy"
	actTrigger   = "clink.trigger"
	actComplete  = "clink.complete"
	actCancel    = "clink.cancel"
	actSubmit    = "clink.submit"
	actConfig    = "clink.config"
	actPin       = "clink.pin"
	actSavepoint = "clink.savepoint"
	actLeave     = "clink.leave"
)

type registerReq struct {
	ID    string `json:"id"`
	Addr  string `json:"addr"`
	Slots int    `json:"slots"`
}

type registerResp struct {
	HeartbeatMS int `json:"heartbeat_ms"`
	// Epoch is the leader epoch of an HA Coordinator (0: none).
	Epoch uint64 `json:"epoch,omitempty"`
}

type heartbeatReq struct {
	ID    string      `json:"id"`
	Tasks []taskStats `json:"tasks,omitempty"`
}

type heartbeatResp struct {
	Known bool `json:"known"`
}

// taskStats are one attempt's operator counters on one Worker.
type taskStats struct {
	Job     string    `json:"job"`
	Attempt int       `json:"attempt"`
	Ops     []opStats `json:"ops"`
}

type opStats struct {
	Name      string `json:"name"`
	Subtask   int    `json:"subtask"`
	RowsIn    int64  `json:"rows_in"`
	RowsOut   int64  `json:"rows_out"`
	Watermark int64  `json:"watermark"`
	Late      int64  `json:"late_dropped"`
	Skipped   int64  `json:"records_skipped"`
}

type attemptRef struct {
	Job     string `json:"job"`
	Attempt int    `json:"attempt"`
	// Epoch is the leader epoch of the HA Coordinator the attempt belongs
	// to (0 without HA): a Worker refuses calls of an older epoch than
	// the newest it has seen.
	Epoch uint64 `json:"epoch,omitempty"`
}

type deployReq struct {
	attemptRef
	Name        string         `json:"name"`
	Plan        []byte         `json:"plan"`
	Parallelism int            `json:"parallelism"`
	Subtasks    []int          `json:"subtasks"`
	Peers       map[int]string `json:"peers"` // subtask -> Worker address
	BatchSize   int            `json:"batch_size,omitempty"`
	LingerMS    int            `json:"linger_ms,omitempty"`
	// Checkpoints, when set, turns checkpoints on.
	Checkpoints *ckSpec `json:"checkpoints,omitempty"`
}

type ckSpec struct {
	Dir     string `json:"dir"`
	Restore uint64 `json:"restore,omitempty"`
	// RestoreDir, when set, is checkpoint Restore's directory outside Dir:
	// a savepoint.
	RestoreDir  string `json:"restore_dir,omitempty"`
	Fingerprint string `json:"fingerprint"`
	// AllowNonRestoredState lets the restore drop the state of operators
	// the job no longer has.
	AllowNonRestoredState bool `json:"allow_non_restored_state,omitempty"`
	// Full turns incremental checkpoints off (every part full).
	Full bool `json:"full,omitempty"`
}

type triggerReq struct {
	attemptRef
	ID    uint64 `json:"id"`
	Final bool   `json:"final,omitempty"`
	// Completed is the newest checkpoint the Coordinator completed (a
	// trigger may overtake its completion message).
	Completed uint64 `json:"completed,omitempty"`
}

type ackReq struct {
	attemptRef
	Worker string                `json:"worker"`
	ID     uint64                `json:"id"`
	Parts  []checkpoint.PartInfo `json:"parts"`
	// Operators are the Worker's operators with state.
	Operators []checkpoint.OperatorInfo `json:"operators,omitempty"`
	// SyncMS is the longest synchronous part of the Worker's snapshots.
	SyncMS float64 `json:"sync_ms,omitempty"`
}

type workerReport struct {
	attemptRef
	Worker string `json:"worker"`
	Error  string `json:"error,omitempty"`
	// Late and Skipped count rows dropped as late and bad records skipped
	// by the attempt's subtasks on this Worker.
	Late    int64 `json:"late_dropped,omitempty"`
	Skipped int64 `json:"records_skipped,omitempty"`
}

// SubmitRequest is what `clink run --coordinator` sends.
type SubmitRequest struct {
	Name string `json:"name"`
	// Plan is the Substrait plan (binary protobuf).
	Plan []byte `json:"plan"`
	// SQL is the script the plan was compiled from, when there is one:
	// kept with the job (persisted with HA) and shown by its detail.
	SQL         string `json:"sql,omitempty"`
	Parallelism int    `json:"parallelism,omitempty"`
	// Fresh ignores the checkpoints in the job's directory;
	// FromCheckpoint picks one.
	Fresh          bool   `json:"fresh,omitempty"`
	FromCheckpoint uint64 `json:"from_checkpoint,omitempty"`
	// FromSavepoint restores a savepoint directory (or a checkpoint's
	// chk-<id> directory) instead; new checkpoints go to the job's
	// directory as always.
	FromSavepoint string `json:"from_savepoint,omitempty"`
	// AllowNonRestoredState lets the restore drop the state of operators
	// the job no longer has (Flink's --allowNonRestoredState); without
	// it, such a restore is refused.
	AllowNonRestoredState bool `json:"allow_non_restored_state,omitempty"`
	// BatchSize and LingerMS shape the micro-batches (defaults 8192 rows,
	// 20 ms).
	BatchSize int `json:"batch_size,omitempty"`
	LingerMS  int `json:"linger_ms,omitempty"`
}

// SubmitResponse answers a submission.
type SubmitResponse struct {
	Job           JobID  `json:"job"`
	Guarantee     string `json:"guarantee"`
	CheckpointDir string `json:"checkpoint_dir,omitempty"`
	RestorePoint  uint64 `json:"restore_point,omitempty"`
	// FromSavepoint is the directory RestorePoint is read from, when it is
	// not the job's checkpoint directory.
	FromSavepoint string `json:"from_savepoint,omitempty"`
	// Via is the Flight address Submit went to when the address it was
	// given is the Coordinator's HTTP API ("" otherwise).
	Via string `json:"-"`
}

// call runs a JSON action.
func call(ctx context.Context, cl flight.Client, name string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	out, err := cflight.Call(ctx, cl, name, body)
	if err != nil {
		return err
	}
	if resp != nil {
		if err := json.Unmarshal(out, resp); err != nil {
			return fmt.Errorf("%s: bad answer: %v", name, err)
		}
	}
	return nil
}

// handle registers a JSON action.
func handle[Req any](s *cflight.Server, name string, f func(ctx context.Context, req *Req) (any, error)) {
	s.Handle(name, func(ctx context.Context, body []byte) ([]byte, error) {
		req := new(Req)
		if err := json.Unmarshal(body, req); err != nil {
			return nil, fmt.Errorf("%s: bad request: %v", name, err)
		}
		resp, err := f(ctx, req)
		if err != nil {
			return nil, err
		}
		if resp == nil {
			resp = struct{}{}
		}
		return json.Marshal(resp)
	})
}

// Submit sends a job to the Coordinator at addr, its Flight address or
// its HTTP API's (callCoordinator); resp.Via is the Flight address found
// through the HTTP API. opts: cflight.WithTLS for a Coordinator with TLS.
func Submit(ctx context.Context, addr, token string, req *SubmitRequest, opts ...cflight.Option) (*SubmitResponse, error) {
	resp, via, err := callCoordinator[SubmitResponse](ctx, addr, token, actSubmit, req, opts...)
	if err != nil {
		return nil, err
	}
	resp.Via = via
	return resp, nil
}

// callCoordinator runs action on the Coordinator at addr, its Flight
// address. When nobody speaks Flight there, addr may be the Coordinator's
// HTTP API (a Flink user gives the REST port, 8081): it asks its GET
// /api/v1/config for the Flight address and calls there; via is that
// address ("" when addr spoke Flight). A failed TLS handshake is
// reported as is.
//
// addr may list several Coordinators, comma-separated (highly available
// ones): they are tried in order, and a standby's answer naming the
// leader sends the call there.
func callCoordinator[T any](ctx context.Context, addr, token, action string, req any, opts ...cflight.Option) (resp *T, via string, err error) {
	var cands []string
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		cands = []string{addr}
	}
	tried := map[string]bool{}
	for i := 0; i < len(cands); i++ {
		a := cands[i]
		if tried[a] {
			continue
		}
		tried[a] = true
		resp, via, err = callOneCoordinator[T](ctx, a, token, action, req, opts...)
		if err == nil {
			if via == "" && i > 0 {
				via = a
			}
			return resp, via, nil
		}
		if !strings.Contains(err.Error(), ErrNotLeader.Error()) && !cflight.Unreachable(err) && !strings.Contains(err.Error(), "cannot reach the Coordinator") {
			return nil, "", err
		}
		if l := leaderNamed(err); l != "" && !tried[l] {
			cands = slices.Insert(cands, i+1, l)
		}
	}
	if len(tried) == 1 {
		return nil, "", err
	}
	return nil, "", fmt.Errorf("no leader among the Coordinators %s: %v", addr, err)
}

// leaderNamed is the leader's Flight address a standby's refusal names
// ("" when it names none).
func leaderNamed(err error) string {
	m := leaderRE.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	return m[1]
}

var leaderRE = regexp.MustCompile(`the leader is \S+ at (\S+) \(epoch \d+\)`)

func callOneCoordinator[T any](ctx context.Context, addr, token, action string, req any, opts ...cflight.Option) (resp *T, via string, err error) {
	do := func(addr string) (*T, error) {
		cl, err := cflight.Dial(addr, token, opts...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		var resp T
		if err := call(ctx, cl, action, req, &resp); err != nil {
			return nil, err
		}
		return &resp, nil
	}
	if resp, err = do(addr); err == nil || !(cflight.Unreachable(err) || cflight.NotFlight(err)) || cflight.TLSError(err) {
		return resp, "", err
	}
	flightAddr, answered, herr := FlightAddrOf(ctx, addr, token, opts...)
	switch {
	case answered && herr != nil:
		return nil, "", herr
	case herr != nil:
		return nil, "", fmt.Errorf("cannot reach the Coordinator at %s (is `clink coordinator` running there?): %v", addr, err)
	}
	if resp, err = do(flightAddr); err != nil {
		if cflight.Unreachable(err) {
			return nil, "", fmt.Errorf("%s is the Coordinator's HTTP API, but its Flight address %s does not answer: %v", addr, flightAddr, err)
		}
		return nil, "", err
	}
	return resp, flightAddr, nil
}

// FlightAddrOf asks the Coordinator's HTTP API at addr (host:port) for its
// Flight address; an unspecified host there (0.0.0.0, [::]) becomes addr's
// host. answered: an HTTP server answered (its error, say a wrong token,
// is then the one to report). With cflight.WithTLS in opts it speaks
// HTTPS, presenting the certificate.
func FlightAddrOf(ctx context.Context, addr, token string, opts ...cflight.Option) (flightAddr string, answered bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	scheme, hc := "http://", http.DefaultClient
	if tc := cflight.TLSOf(opts...); tc != nil {
		scheme, hc = "https://", &http.Client{Transport: &http.Transport{TLSClientConfig: tc.Client("")}}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+addr+"/api/v1/config", nil)
	if err != nil {
		return "", false, err
	}
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := hc.Do(hr)
	if err != nil {
		return "", false, err
	}
	defer res.Body.Close()
	var body struct {
		FlightAddr string   `json:"flight_addr"`
		Errors     []string `json:"errors"`
	}
	derr := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&body)
	switch {
	case res.StatusCode != http.StatusOK && len(body.Errors) > 0:
		return "", true, fmt.Errorf("the Coordinator's HTTP API at %s: %s", addr, strings.Join(body.Errors, "; "))
	case res.StatusCode != http.StatusOK:
		return "", true, fmt.Errorf("%s answers HTTP %s to GET /api/v1/config: not a Coordinator's HTTP API", addr, res.Status)
	case derr != nil || body.FlightAddr == "":
		return "", true, fmt.Errorf("%s: GET /api/v1/config has no flight_addr: not a Coordinator's HTTP API", addr)
	}
	host, port, err := net.SplitHostPort(body.FlightAddr)
	if err != nil {
		return "", true, fmt.Errorf("%s: flight_addr %q: %v", addr, body.FlightAddr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, _, err = net.SplitHostPort(addr); err != nil {
			return "", true, err
		}
	}
	return net.JoinHostPort(host, port), true, nil
}

// configResp answers actConfig: the Coordinator's other addresses.
type configResp struct {
	FlightSQLAddr string `json:"flight_sql_addr"`
	HTTPAddr      string `json:"http_addr"`
}

// FlightSQLAddrOf finds the Flight SQL endpoint of the Coordinator at
// addr, which may be its HTTP API (8081: GET /api/v1/config), its Flight
// address (6123: the clink.config action) or the Flight SQL address
// itself (returned as is when neither answers). An unspecified host in
// the answer (0.0.0.0) becomes addr's.
func FlightSQLAddrOf(ctx context.Context, addr, token string, opts ...cflight.Option) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	found := ""
	if body, ok := httpConfig(ctx, addr, token, opts...); ok {
		found = body
	} else if cl, err := cflight.Dial(addr, token, opts...); err == nil {
		var resp configResp
		if call(ctx, cl, actConfig, &struct{}{}, &resp) == nil {
			found = resp.FlightSQLAddr
			if found == "" {
				cl.Close()
				return "", fmt.Errorf("the Coordinator at %s serves no Flight SQL endpoint (its --flight-sql-addr is off)", addr)
			}
		}
		cl.Close()
	}
	if found == "" {
		return addr, nil
	}
	host, port, err := net.SplitHostPort(found)
	if err != nil {
		return "", fmt.Errorf("%s: flight_sql_addr %q: %v", addr, found, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, _, err = net.SplitHostPort(addr); err != nil {
			return "", err
		}
	}
	return net.JoinHostPort(host, port), nil
}

// httpConfig is the flight_sql_addr of the Coordinator's HTTP API at addr
// (ok false when no Coordinator's HTTP API answers there).
func httpConfig(ctx context.Context, addr, token string, opts ...cflight.Option) (string, bool) {
	scheme, hc := "http://", http.DefaultClient
	if tc := cflight.TLSOf(opts...); tc != nil {
		scheme, hc = "https://", &http.Client{Transport: &http.Transport{TLSClientConfig: tc.Client("")}}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+addr+"/api/v1/config", nil)
	if err != nil {
		return "", false
	}
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := hc.Do(hr)
	if err != nil {
		return "", false
	}
	defer res.Body.Close()
	var body struct {
		FlightSQLAddr string `json:"flight_sql_addr"`
		FlightAddr    string `json:"flight_addr"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&body) != nil || body.FlightAddr == "" {
		return "", false
	}
	return body.FlightSQLAddr, body.FlightSQLAddr != ""
}
