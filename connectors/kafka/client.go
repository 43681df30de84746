package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/clink-dev/clink/connectors"
)

// ClientConfig is how to reach a cluster: the options every Kafka client of
// Clink shares (the connector's tables, `clink kafka produce|consume`).
type ClientConfig struct {
	Brokers  []string
	ClientID string
	// ConnectTimeout bounds start-up: reaching a broker, metadata, offsets.
	ConnectTimeout time.Duration

	TLS *tls.Config // nil: plaintext
	// SASL, when Mechanism is set: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
}

// defaultTimeout is the connect timeout when a ClientConfig sets none.
const defaultTimeout = 10 * time.Second

func (c *ClientConfig) timeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return defaultTimeout
}

// String names the brokers; it never shows credentials.
func (c *ClientConfig) String() string { return strings.Join(c.Brokers, ",") }

// kgoOpts are the franz-go options for c.
func (c *ClientConfig) kgoOpts() []kgo.Opt {
	id := c.ClientID
	if id == "" {
		id = "clink"
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(id)}
	opts = append(opts, kgo.DialTimeout(c.timeout()))
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS))
	}
	switch c.SASLMechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha512Mechanism()))
	}
	return opts
}

// checkClient is clientConfig's checks that need no I/O (options that go
// together, values), so that a table can be validated where its files and
// secrets are not: it reads no file and resolves no env:// secret.
func checkClient(o connectors.Options) error {
	if len(brokers(o)) == 0 {
		return &connectors.OptionError{Key: "brokers", Msg: "option 'brokers': no broker given"}
	}
	if connectTimeout(o) <= 0 {
		return &connectors.OptionError{Key: "connect_timeout_ms", Msg: "option 'connect_timeout_ms' must be positive"}
	}
	proto := o["security_protocol"]
	if strings.HasSuffix(proto, "SSL") {
		if (o["tls_cert_file"] == "") != (o["tls_key_file"] == "") {
			return &connectors.OptionError{Key: "tls_cert_file", Msg: "options 'tls_cert_file' and 'tls_key_file' go together"}
		}
	} else {
		for _, k := range []string{"tls_ca_file", "tls_cert_file", "tls_key_file"} {
			if o[k] != "" {
				return &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s' needs security_protocol 'SSL' or 'SASL_SSL' (it is '%s')", k, proto)}
			}
		}
	}
	if strings.HasPrefix(proto, "SASL") {
		if o["sasl_username"] == "" {
			return noSASLUser(proto)
		}
	} else if o["sasl_username"] != "" || o["sasl_password"] != "" {
		return &connectors.OptionError{Key: "sasl_username", Msg: fmt.Sprintf("SASL credentials need security_protocol 'SASL_PLAINTEXT' or 'SASL_SSL' (it is '%s')", proto)}
	}
	return nil
}

func noSASLUser(proto string) error {
	return &connectors.OptionError{Key: "sasl_username", Msg: fmt.Sprintf("security_protocol '%s' needs option 'sasl_username'", proto)}
}

func connectTimeout(o connectors.Options) time.Duration {
	return time.Duration(o.Int("connect_timeout_ms")) * time.Millisecond
}

func brokers(o connectors.Options) []string {
	var out []string
	for _, b := range strings.Split(o["brokers"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// clientConfig reads the client options of a table: checkClient's checks,
// then the TLS files and the secrets. Secrets may be given as env://VAR;
// their values never appear in an error.
func clientConfig(o connectors.Options) (*ClientConfig, error) {
	if err := checkClient(o); err != nil {
		return nil, err
	}
	c := &ClientConfig{Brokers: brokers(o), ClientID: o["client_id"], ConnectTimeout: connectTimeout(o)}
	proto := o["security_protocol"]
	if strings.HasSuffix(proto, "SSL") {
		tc, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		c.TLS = tc
	}
	if strings.HasPrefix(proto, "SASL") {
		c.SASLMechanism = o["sasl_mechanism"]
		var err error
		if c.SASLUser, err = o.Secret("sasl_username"); err != nil {
			return nil, err
		}
		if c.SASLPassword, err = o.Secret("sasl_password"); err != nil {
			return nil, err
		}
		if c.SASLUser == "" {
			return nil, noSASLUser(proto) // env:// named an empty variable
		}
	}
	return c, nil
}

// NewClientConfig reads client options given by name as in a table's WITH
// clause (brokers, client_id, connect_timeout_ms, security_protocol,
// sasl_*, tls_*), with their defaults, for tools outside SQL.
func NewClientConfig(opts map[string]string) (*ClientConfig, error) {
	s := &connectors.Spec{Name: "kafka", Options: clientOptions}
	all := map[string]string{"topic": "-"}
	for k, v := range opts {
		if v != "" {
			all[k] = v
		}
	}
	vo, err := s.Validate(all)
	if err != nil {
		return nil, err
	}
	return clientConfig(vo)
}

func tlsConfig(o connectors.Options) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Bool("tls_insecure_skip_verify")} //nolint:gosec // opt-in for testing
	if ca := o["tls_ca_file"]; ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, &connectors.OptionError{Key: "tls_ca_file", Msg: fmt.Sprintf("option 'tls_ca_file': %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &connectors.OptionError{Key: "tls_ca_file", Msg: fmt.Sprintf("option 'tls_ca_file': %s holds no PEM certificate", ca)}
		}
		tc.RootCAs = pool
	}
	if cert, key := o["tls_cert_file"], o["tls_key_file"]; cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, &connectors.OptionError{Key: "tls_cert_file", Msg: fmt.Sprintf("options 'tls_cert_file'/'tls_key_file': %v", err)}
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// newClient connects (lazily, as franz-go does) with extra options.
func (c *ClientConfig) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(c.kgoOpts(), extra...)...)
}

// ErrUnreachable says no broker answered at start-up.
var ErrUnreachable = errors.New("cannot reach brokers")

// ErrNoTopic says the topic does not exist.
var ErrNoTopic = errors.New("does not exist")

// partitions checks that a broker answers and the topic exists within the
// connect timeout, and returns the topic's partition count.
func (c *ClientConfig) partitions(ctx context.Context, cl *kgo.Client, topic string) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		switch {
		case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("no answer within %s", c.timeout())
		case c.SASLMechanism != "" && errors.Is(err, io.EOF):
			err = fmt.Errorf("%w (the broker closed the connection: were the SASL credentials refused?)", err)
		}
		return 0, fmt.Errorf("%w %s: %v", ErrUnreachable, c, err)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("topic %s: metadata from %s: %w", topic, c, err)
	}
	td, ok := md.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("topic %s %w (brokers %s)", topic, ErrNoTopic, c)
	}
	if td.Err != nil {
		return 0, fmt.Errorf("topic %s: %w (brokers %s)", topic, td.Err, c)
	}
	return int32(len(td.Partitions)), nil
}
