package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/clink-dev/clink/connectors"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/engine"
)

func TestAssign(t *testing.T) {
	for n := int32(0); n <= 7; n++ {
		for p := 1; p <= 3; p++ {
			seen := map[int32]int{}
			for i := 0; i < p; i++ {
				got := Assign(n, i, p)
				if !sort.SliceIsSorted(got, func(a, b int) bool { return got[a] < got[b] }) {
					t.Errorf("Assign(%d, %d, %d) = %v: not sorted", n, i, p, got)
				}
				for _, q := range got {
					if int(q)%p != i {
						t.Errorf("Assign(%d, %d, %d) = %v: %d mod %d != %d", n, i, p, got, q, p, i)
					}
					seen[q]++
				}
			}
			for q := int32(0); q < n; q++ {
				if seen[q] != 1 {
					t.Errorf("n=%d p=%d: partition %d read by %d subtasks", n, p, q, seen[q])
				}
			}
			if len(seen) != int(n) {
				t.Errorf("n=%d p=%d: %d partitions assigned", n, p, len(seen))
			}
		}
	}
	if got := Assign(4, 0, 0); !reflect.DeepEqual(got, []int32{0, 1, 2, 3}) {
		t.Errorf("parallelism 0 counts as 1: %v", got)
	}
	if got := Assign(4, 2, 2); got != nil {
		t.Errorf("subtask out of range: %v", got)
	}
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "p", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

func value(p int32, n int, ts int64) string {
	return fmt.Sprintf(`{"p":%d,"n":%d,"ts":%d}`, p, n, ts)
}

// newTestSource opens a source on testSchema with options (key, value...).
func newTestSource(t *testing.T, addr, topic string, rt connectors.Runtime, opts ...string) *Source {
	t.Helper()
	m := map[string]string{"connector": "kafka", "brokers": addr, "topic": topic}
	for i := 0; i+1 < len(opts); i += 2 {
		m[opts[i]] = opts[i+1]
	}
	vo, err := spec.Validate(m)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Mem == nil {
		rt.Mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	}
	tbl := &connectors.Table{Name: "t", Schema: testSchema, Options: vo, EventTimeCol: -1, WatermarkLag: vo.Int("watermark_lag_ms"), Runtime: rt}
	if vo["event_time_column"] != "" {
		tbl.EventTimeCol = 2
	}
	s, err := newSource(tbl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// collected is what a source emitted.
type collected struct {
	rows   []string // JSON rows, in emission order
	rowWM  []int64  // per row, when event time is on
	wms    []int64  // watermark messages
	errRun error
}

// collect runs a (bounded) source to its end.
func collect(t *testing.T, s *Source) collected {
	t.Helper()
	var c collected
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.errRun = s.Run(ctx, func(m engine.Message) error {
		switch m.Kind {
		case engine.KindData:
			b := m.Batch
			for _, l := range strings.Split(strings.TrimSpace(string(cjson.AppendBatch(nil, b))), "\n") {
				if l != "" {
					c.rows = append(c.rows, l)
				}
			}
			c.rowWM = append(c.rowWM, b.RowWatermark...)
			b.Release()
		case engine.KindWatermark:
			c.wms = append(c.wms, m.Watermark)
		}
		return nil
	})
	if mem, ok := s.table.Runtime.Mem.(*memory.CheckedAllocator); ok && mem.CurrentAlloc() != 0 {
		t.Errorf("memory leak: %d bytes", mem.CurrentAlloc())
	}
	return c
}

func startBroker(t *testing.T, topics ...TopicSpec) *Broker {
	t.Helper()
	b, err := StartBroker(BrokerConfig{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func produceTo(t *testing.T, addr, topic string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// Subtask i of p reads exactly the partitions whose index mod p is i; the
// subtasks together read every record once.
func TestSourceAssignment(t *testing.T) {
	const parts = 5
	b := startBroker(t, TopicSpec{"r", parts})
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for n := 0; n <= int(p); n++ { // partition p holds p+1 records
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(value(p, n, 0))})
		}
	}
	produceTo(t, b.Addr(), "r", recs...)
	for par := 1; par <= 3; par++ {
		var all []string
		for sub := 0; sub < par; sub++ {
			s := newTestSource(t, b.Addr(), "r", connectors.Runtime{Subtask: sub, Parallelism: par}, "scan_bounded", "latest")
			c := collect(t, s)
			if c.errRun != nil {
				t.Fatal(c.errRun)
			}
			want := Assign(parts, sub, par)
			if got := s.Partitions(); !reflect.DeepEqual(got, want) {
				t.Errorf("p=%d subtask %d: partitions %v, want %v", par, sub, got, want)
			}
			wantOffsets := map[int32]int64{}
			for _, p := range want {
				wantOffsets[p] = int64(p) + 1
			}
			if got := s.Offsets(); !reflect.DeepEqual(got, wantOffsets) {
				t.Errorf("p=%d subtask %d: offsets %v, want %v", par, sub, got, wantOffsets)
			}
			for _, r := range c.rows {
				var p int
				fmt.Sscanf(r, `{"p":%d`, &p)
				if p%par != sub {
					t.Errorf("p=%d subtask %d read %s", par, sub, r)
				}
			}
			all = append(all, c.rows...)
		}
		if len(all) != len(recs) {
			t.Errorf("p=%d: %d rows in all, want %d", par, len(all), len(recs))
		}
	}
}

func TestSourceStartPositions(t *testing.T) {
	b := startBroker(t, TopicSpec{"r", 2})
	base := time.UnixMilli(1_000_000)
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for n := 0; n < 4; n++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(value(p, n, 0)), Timestamp: base.Add(time.Duration(n) * time.Second)})
		}
	}
	produceTo(t, b.Addr(), "r", recs...)
	count := func(rows []string) map[int]int {
		m := map[int]int{}
		for _, r := range rows {
			var p int
			fmt.Sscanf(r, `{"p":%d`, &p)
			m[p]++
		}
		return m
	}
	for _, c := range []struct {
		name    string
		opts    []string
		restore map[int32]int64
		want    map[int]int
	}{
		{"earliest", nil, nil, map[int]int{0: 4, 1: 4}},
		{"latest", []string{"auto_offset_reset", "latest"}, nil, map[int]int{}},
		{"offsets", []string{"start_offsets", "0:3"}, nil, map[int]int{0: 1, 1: 4}},
		{"offsets+latest", []string{"start_offsets", "1:1", "auto_offset_reset", "latest"}, nil, map[int]int{1: 3}},
		{"timestamp", []string{"start_timestamp_ms", fmt.Sprint(base.Add(2 * time.Second).UnixMilli())}, nil, map[int]int{0: 2, 1: 2}},
		{"timestamp after all", []string{"start_timestamp_ms", fmt.Sprint(base.Add(time.Hour).UnixMilli())}, nil, map[int]int{}},
		{"restore", []string{"start_offsets", "0:1"}, map[int32]int64{0: 2, 1: 3}, map[int]int{0: 2, 1: 1}},
	} {
		s := newTestSource(t, b.Addr(), "r", connectors.Runtime{}, append([]string{"scan_bounded", "latest"}, c.opts...)...)
		if c.restore != nil {
			s.StartAt(c.restore)
		}
		got := collect(t, s)
		if got.errRun != nil {
			t.Fatalf("%s: %v", c.name, got.errRun)
		}
		if m := count(got.rows); !reflect.DeepEqual(m, c.want) {
			t.Errorf("%s: rows per partition %v, want %v", c.name, m, c.want)
		}
		if o := s.Offsets(); o[0] != 4 && c.name != "latest" && c.name != "timestamp after all" {
			t.Errorf("%s: offsets after the run %v", c.name, o)
		}
	}
}

// Each row carries its own partition's watermark before it; the source
// watermark is the minimum over partitions and only rises.
func TestSourceRowWatermarks(t *testing.T) {
	b := startBroker(t, TopicSpec{"r", 2})
	produceTo(t, b.Addr(), "r",
		&kgo.Record{Partition: 0, Value: []byte(value(0, 0, 1000))},
		&kgo.Record{Partition: 0, Value: []byte(value(0, 1, 5000))},
		&kgo.Record{Partition: 0, Value: []byte(value(0, 2, 3000))},
		&kgo.Record{Partition: 0, Value: []byte(value(0, 3, 2000))}, // behind: does not advance
		&kgo.Record{Partition: 0, Value: []byte(value(0, 4, 6000))},
		&kgo.Record{Partition: 1, Value: []byte(value(1, 0, 2000))},
		&kgo.Record{Partition: 1, Value: []byte(value(1, 1, 2500))},
	)
	want := map[string]int64{ // "p/n" -> row watermark
		"0/0": engine.MinWatermark, "0/1": 500, "0/2": 4500, "0/3": 4500, "0/4": 4500,
		"1/0": engine.MinWatermark, "1/1": 1500,
	}
	for _, batch := range []int{1, 3, 1024} {
		s := newTestSource(t, b.Addr(), "r", connectors.Runtime{BatchSize: batch}, "scan_bounded", "latest", "event_time_column", "ts", "watermark_lag_ms", "500")
		c := collect(t, s)
		if c.errRun != nil {
			t.Fatal(c.errRun)
		}
		if len(c.rows) != len(want) || len(c.rowWM) != len(c.rows) {
			t.Fatalf("batch %d: %d rows, %d row watermarks", batch, len(c.rows), len(c.rowWM))
		}
		for i, r := range c.rows {
			var p, n int
			fmt.Sscanf(r, `{"p":%d,"n":%d`, &p, &n)
			if w := want[fmt.Sprintf("%d/%d", p, n)]; c.rowWM[i] != w {
				t.Errorf("batch %d: row %s has watermark %d, want %d", batch, r, c.rowWM[i], w)
			}
		}
		for i := 1; i < len(c.wms); i++ {
			if c.wms[i] <= c.wms[i-1] {
				t.Errorf("batch %d: watermarks do not rise: %v", batch, c.wms)
			}
		}
		// Partition 1 reaches 2500-500 = 2000 and holds the minimum; a
		// higher watermark may come only once it has finished, and is
		// then partition 0's own: 4500 (if partition 1 finished while
		// partition 0 was still reading) or its final 5500.
		if len(c.wms) == 0 || !contains(c.wms, 2000) && c.wms[len(c.wms)-1] != 5500 {
			t.Errorf("batch %d: watermarks %v", batch, c.wms)
		}
		for _, w := range c.wms {
			if w > 2000 && w != 4500 && w != 5500 {
				t.Errorf("batch %d: watermark %d is neither partition 1's 2000 nor one of partition 0's (4500, 5500)", batch, w)
			}
		}
	}
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// group_id receives the source's offsets; the source never reads them.
func TestSourceCourtesyCommit(t *testing.T) {
	b := startBroker(t, TopicSpec{"r", 2})
	produceTo(t, b.Addr(), "r",
		&kgo.Record{Partition: 0, Value: []byte(value(0, 0, 0))},
		&kgo.Record{Partition: 0, Value: []byte(value(0, 1, 0))},
		&kgo.Record{Partition: 1, Value: []byte(value(1, 0, 0))},
	)
	for run := 0; run < 2; run++ {
		s := newTestSource(t, b.Addr(), "r", connectors.Runtime{}, "scan_bounded", "latest", "group_id", "g")
		c := collect(t, s)
		if c.errRun != nil {
			t.Fatal(c.errRun)
		}
		// The second run reads everything again: committed offsets are
		// for monitoring only.
		if len(c.rows) != 3 {
			t.Fatalf("run %d: %d rows, want 3", run, len(c.rows))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) { got[o.Partition] = o.At })
	if want := map[int32]int64{0: 2, 1: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
}

// An unbounded source stops on cancellation with ctx.Err() and keeps the
// offsets of what it emitted.
func TestSourceUnboundedStops(t *testing.T) {
	b := startBroker(t, TopicSpec{"r", 1})
	produceTo(t, b.Addr(), "r", &kgo.Record{Partition: 0, Value: []byte(value(0, 0, 0))})
	s := newTestSource(t, b.Addr(), "r", connectors.Runtime{Linger: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	rows := make(chan struct{}, 10)
	done := make(chan error)
	go func() {
		done <- s.Run(ctx, func(m engine.Message) error {
			if m.Kind == engine.KindData {
				m.Batch.Release()
				rows <- struct{}{}
			}
			return nil
		})
	}()
	select {
	case <-rows:
	case <-time.After(20 * time.Second):
		t.Fatal("no row")
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if o := s.Offsets(); o[0] != 1 {
		t.Errorf("offsets %v", o)
	}
}

func TestSourceSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "alice", "plain-secret"),
		kfake.Superuser("SCRAM-SHA-256", "bob", "scram-secret"),
		kfake.Superuser("SCRAM-SHA-512", "carol", "scram512-secret"),
		kfake.SeedTopics(1, "r"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "plain-secret"}.AsMechanism()), kgo.DefaultProduceTopic("r"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(value(0, 0, 0))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	t.Setenv("CLINK_TEST_KAFKA_PASSWORD", "scram-secret")
	for _, cfg := range [][]string{
		{"sasl_mechanism", "PLAIN", "sasl_username", "alice", "sasl_password", "plain-secret"},
		{"sasl_mechanism", "SCRAM-SHA-256", "sasl_username", "bob", "sasl_password", "env://CLINK_TEST_KAFKA_PASSWORD"},
		{"sasl_mechanism", "SCRAM-SHA-512", "sasl_username", "carol", "sasl_password", "scram512-secret"},
	} {
		s := newTestSource(t, addr, "r", connectors.Runtime{}, append([]string{"scan_bounded", "latest", "security_protocol", "SASL_PLAINTEXT"}, cfg...)...)
		if got := collect(t, s); got.errRun != nil || len(got.rows) != 1 {
			t.Errorf("%s: rows %v, err %v", cfg[1], got.rows, got.errRun)
		}
	}
	// A wrong password fails, and the error does not show it.
	s := newTestSource(t, addr, "r", connectors.Runtime{}, "scan_bounded", "latest", "security_protocol", "SASL_PLAINTEXT",
		"sasl_mechanism", "SCRAM-SHA-256", "sasl_username", "bob", "sasl_password", "wrong-secret-value", "connect_timeout_ms", "3000")
	got := collect(t, s)
	if got.errRun == nil || strings.Contains(got.errRun.Error(), "wrong-secret-value") || strings.Contains(got.errRun.Error(), "scram-secret") {
		t.Errorf("wrong password: %v", got.errRun)
	}
}

func TestSourceTLS(t *testing.T) {
	dir := t.TempDir()
	serverTLS, caFile := selfSigned(t, dir)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(serverTLS), kfake.SeedTopics(1, "r"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(pem)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.DefaultProduceTopic("r"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(value(0, 0, 0))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	s := newTestSource(t, addr, "r", connectors.Runtime{}, "scan_bounded", "latest", "security_protocol", "SSL", "tls_ca_file", caFile)
	if got := collect(t, s); got.errRun != nil || len(got.rows) != 1 {
		t.Errorf("TLS: rows %v, err %v", got.rows, got.errRun)
	}
	// Without the CA the certificate is not trusted.
	s = newTestSource(t, addr, "r", connectors.Runtime{}, "scan_bounded", "latest", "security_protocol", "SSL", "connect_timeout_ms", "3000")
	if got := collect(t, s); got.errRun == nil || !strings.Contains(got.errRun.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v", got.errRun)
	}
}

// selfSigned writes a CA-less self-signed certificate for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "clink test broker"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kder, _ := x509.MarshalECPrivateKey(key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}}, caFile
}
