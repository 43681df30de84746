package kafka_test

import (
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/kafka"
)

var validateSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// kafkaTable validates opts (connector, brokers and topic filled in) as the
// planner does.
func kafkaTable(t *testing.T, brokers string, opts ...string) *connectors.Table {
	t.Helper()
	m := map[string]string{"connector": "kafka", "brokers": brokers, "topic": "in"}
	for i := 0; i+1 < len(opts); i += 2 {
		m[opts[i]] = opts[i+1]
	}
	vo, err := kafka.Connector{}.Spec().Validate(m)
	if err != nil {
		t.Fatal(err)
	}
	return &connectors.Table{Name: "t", Schema: validateSchema, Options: vo, EventTimeCol: -1}
}

// listener is a port that counts the connections made to it.
func listener(t *testing.T) (addr string, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	n := make(chan int, 1)
	n <- 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			n <- <-n + 1
		}
	}()
	return ln.Addr().String(), func() int {
		time.Sleep(50 * time.Millisecond)
		v := <-n
		n <- v
		return v
	}
}

// Every refusal of NewSource and NewSink that needs no I/O is made by the
// validator, in the same words.
func TestValidateRefuses(t *testing.T) {
	c := kafka.Connector{}
	for _, tc := range []struct {
		sink bool
		opts []string
		want string
	}{
		{false, []string{"on_error", "dead_letter"}, "kafka source 't': on_error = 'dead_letter' needs option 'dead_letter_topic'"},
		{false, []string{"dead_letter_topic", "bad"}, "kafka source 't': option 'dead_letter_topic' needs on_error = 'dead_letter' (it is 'fail')"},
		{false, []string{"on_error", "dead_letter", "dead_letter_topic", "in"}, "kafka source 't': dead_letter_topic must differ from topic"},
		{false, []string{"start_offsets", "0:x"}, "kafka source 't': option 'start_offsets': '0:x' is not partition:offset"},
		{false, []string{"start_offsets", "0:1,0:2"}, "kafka source 't': option 'start_offsets': partition 0 is given twice"},
		{false, []string{"start_offsets", "0:1", "start_timestamp_ms", "5"}, "kafka source 't': give either 'start_offsets' or 'start_timestamp_ms', not both"},
		{false, []string{"idle_timeout_ms", "-1"}, "kafka source 't': option 'idle_timeout_ms' must not be negative"},
		{false, []string{"connect_timeout_ms", "0"}, "kafka source 't': option 'connect_timeout_ms' must be positive"},
		{false, []string{"tls_ca_file", "/nonexistent/ca.pem"}, "kafka source 't': option 'tls_ca_file' needs security_protocol 'SSL' or 'SASL_SSL' (it is 'PLAINTEXT')"},
		{false, []string{"security_protocol", "SSL", "tls_cert_file", "/nonexistent/c.pem"}, "kafka source 't': options 'tls_cert_file' and 'tls_key_file' go together"},
		{false, []string{"security_protocol", "SASL_SSL", "sasl_password", "env://CLINK_TEST_UNSET"}, "kafka source 't': security_protocol 'SASL_SSL' needs option 'sasl_username'"},
		{false, []string{"sasl_username", "u"}, "kafka source 't': SASL credentials need security_protocol 'SASL_PLAINTEXT' or 'SASL_SSL' (it is 'PLAINTEXT')"},
		{true, []string{"transactional_id_prefix", "job-1"}, "kafka sink 't': option 'transactional_id_prefix' needs delivery_guarantee 'exactly_once'"},
		{true, []string{"transaction_timeout_ms", "60000"}, "kafka sink 't': option 'transaction_timeout_ms' needs delivery_guarantee 'exactly_once'"},
		{true, []string{"delivery_guarantee", "exactly_once", "transaction_timeout_ms", "0"}, "kafka sink 't': option 'transaction_timeout_ms' must be positive and fit in 32 bits (it is 0)"},
		{true, []string{"key_column", "nope"}, "kafka sink 't': key_column 'nope' is not a column of t"},
		{true, []string{"delivery_guarantee", "exactly_once", "key_column", "nope"}, "kafka sink 't': key_column 'nope' is not a column of t"},
		{true, []string{"brokers", " , "}, "kafka sink 't': option 'brokers': no broker given"},
		{true, []string{"security_protocol", "SASL_PLAINTEXT"}, "kafka sink 't': security_protocol 'SASL_PLAINTEXT' needs option 'sasl_username'"},
	} {
		addr, accepted := listener(t)
		tb := kafkaTable(t, addr, tc.opts...)
		var verr, nerr error
		if tc.sink {
			verr = c.ValidateSink(tb)
			_, nerr = c.NewSink(tb)
		} else {
			verr = c.ValidateSource(tb)
			_, nerr = c.NewSource(tb)
		}
		if verr == nil || verr.Error() != tc.want {
			t.Errorf("%v: validator: %v\nwant %s", tc.opts, verr, tc.want)
		}
		if nerr == nil || nerr.Error() != tc.want {
			t.Errorf("%v: NewSink/NewSource: %v\nwant %s", tc.opts, nerr, tc.want)
		}
		if n := accepted(); n != 0 {
			t.Errorf("%v: %d connections to the broker", tc.opts, n)
		}
	}
}

// A valid table passes without reaching the broker, reading a TLS file or
// resolving a secret: those are checked where the job runs.
func TestValidateNoIO(t *testing.T) {
	c := kafka.Connector{}
	for _, opts := range [][]string{
		nil,
		{"on_error", "dead_letter", "dead_letter_topic", "bad", "start_offsets", "0:42,1:17"},
		{"security_protocol", "SASL_SSL", "sasl_username", "env://CLINK_TEST_UNSET", "sasl_password", "env://CLINK_TEST_UNSET",
			"tls_ca_file", "/nonexistent/ca.pem", "tls_cert_file", "/nonexistent/c.pem", "tls_key_file", "/nonexistent/c.key"},
		{"delivery_guarantee", "exactly_once", "transactional_id_prefix", "job-1", "key_column", "sensor_id"},
	} {
		addr, accepted := listener(t)
		tb := kafkaTable(t, addr, opts...)
		if err := c.ValidateSource(tb); err != nil {
			t.Errorf("%v: ValidateSource: %v", opts, err)
		}
		if err := c.ValidateSink(tb); err != nil {
			t.Errorf("%v: ValidateSink: %v", opts, err)
		}
		if n := accepted(); n != 0 {
			t.Errorf("%v: %d connections to the broker", opts, n)
		}
	}
	// A closed port: nothing to reach, and the validators do not try.
	tb := kafkaTable(t, "127.0.0.1:1")
	if err := c.ValidateSink(tb); err != nil {
		t.Errorf("closed port: %v", err)
	}
}
