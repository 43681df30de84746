package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clink-dev/clink/connectors/formats/registry"
	"github.com/clink-dev/clink/connectors/kafka"
)

const kafkaUsage = `usage:
  clink kafka serve [--port 9092] [--topic NAME[:PARTITIONS]]... [--data-dir DIR]
        [--schema-registry-port N [--schema-registry-user USER:PASSWORD]]
        an embedded Kafka-protocol broker for development and tests (franz-go's
        kfake, 127.0.0.1 only); prints its address on stdout, runs until
        SIGINT/SIGTERM. --schema-registry-port also runs a development Schema
        Registry on 127.0.0.1 (0: a free port), printed as a second line
        "schema registry: http://127.0.0.1:PORT"; kept in DIR/schema-registry
  clink kafka create-topic [--brokers B] --topic NAME [--partitions N] [--if-not-exists]
  clink kafka produce [--brokers B] --topic NAME [--partition N | --key-field FIELD] < LINES
        [--value-format avro-confluent --value-schema FILE.avsc |
         --value-format protobuf-confluent --proto-file FILE.proto --message NAME]
        [--subject S (default TOPIC-value)]
        one record per non-blank stdin line (acks=all, idempotent); prints the count.
        With --value-format each line is a JSON object, encoded with the schema,
        which is registered first (an incompatible one is refused)
  clink kafka consume [--brokers B] --topic NAME [--from-beginning] [--to-end]
        [--max N] [--timeout D] [--count] [--isolation-level read_committed]
        [--value-format json|raw|avro-confluent|protobuf-confluent]
        [--key-format raw|json|avro-confluent|protobuf-confluent] [--skip-errors]
        record values, one per line, on stdout; with --value-format one JSON line
        per value, with --key-format {"key":K,"value":V} lines

Client flags (create-topic, produce, consume): --brokers (default localhost:9092),
--client-id, --security-protocol, --sasl-mechanism, --sasl-username,
--sasl-password (env://VAR reads the environment), --tls-ca-file, --tls-cert-file,
--tls-key-file, --tls-insecure-skip-verify: as the connector's options.
Schema Registry flags (produce, consume): --schema-registry URL,
--schema-registry-user USER:PASSWORD (env://VAR for the password or the whole value).
`

func cmdKafka(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, kafkaUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = kafkaServe(args[1:])
	case "create-topic":
		err = kafkaCreateTopic(args[1:])
	case "produce":
		err = kafkaProduce(args[1:])
	case "consume":
		err = kafkaConsume(args[1:])
	case "-h", "--help", "help":
		fmt.Print(kafkaUsage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "clink kafka: unknown command %q\n\n%s", args[0], kafkaUsage)
		return 2
	}
	var usageErr *usageError
	switch {
	case errors.As(err, &usageErr):
		if usageErr.msg != "" {
			fmt.Fprintln(os.Stderr, "clink kafka:", usageErr.msg)
		}
		return 2
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// topicsFlag collects repeated --topic NAME[:PARTITIONS].
type topicsFlag []kafka.TopicSpec

func (f *topicsFlag) String() string { return "" }

func (f *topicsFlag) Set(s string) error {
	t, err := kafka.ParseTopicSpec(s)
	if err != nil {
		return err
	}
	*f = append(*f, t)
	return nil
}

func kafkaServe(args []string) error {
	fs := flag.NewFlagSet("kafka serve", flag.ContinueOnError)
	port := fs.Int("port", 9092, "port on 127.0.0.1 (0: any free port)")
	var topics topicsFlag
	fs.Var(&topics, "topic", "create topic NAME with PARTITIONS partitions (default 1) unless it exists; repeatable")
	dataDir := fs.String("data-dir", "", "keep topics, records and group offsets in this directory across restarts (default: in memory)")
	srPort := fs.Int("schema-registry-port", -1, "also run a development Schema Registry on this port of 127.0.0.1 (0: any free port; default: none)")
	srUser := fs.String("schema-registry-user", "", "USER:PASSWORD the registry requires (HTTP basic auth); env://VAR reads the password, or the whole value, from the environment")
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	if *srUser != "" && *srPort < 0 {
		return &usageError{"--schema-registry-user needs --schema-registry-port"}
	}
	// The registry listens before the broker starts, so that a taken port
	// fails before anything is printed; it answers once the broker is up.
	var srv *registry.Server
	var srLn net.Listener
	if *srPort >= 0 {
		opts := registry.Options{}
		if *dataDir != "" {
			opts.DataDir = filepath.Join(*dataDir, "schema-registry")
		}
		if *srUser != "" {
			user, pass, err := userPassword("--schema-registry-user", *srUser)
			if err != nil {
				return err
			}
			opts.Users = map[string]string{user: pass}
		}
		var err error
		if srv, err = registry.NewServer(opts); err != nil {
			return err
		}
		if srLn, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*srPort))); err != nil {
			return fmt.Errorf("schema registry: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srErr := make(chan error, 1)
	started := false
	err := kafka.Serve(ctx, kafka.BrokerConfig{Port: *port, Topics: topics, DataDir: *dataDir}, func(addr string) {
		names := make([]string, len(topics))
		for i, t := range topics {
			names[i] = fmt.Sprintf("%s:%d", t.Name, t.Partitions)
		}
		fmt.Println(addr)
		where := "in memory"
		if *dataDir != "" {
			where = "data in " + *dataDir
		}
		fmt.Fprintf(os.Stderr, "clink kafka: broker listening on %s (%s; topics: %s)\n", addr, where, strings.Join(names, " "))
		if srv != nil {
			url := "http://" + srLn.Addr().String()
			fmt.Println("schema registry: " + url)
			fmt.Fprintf(os.Stderr, "clink kafka: schema registry on %s\n", url)
			started = true
			go func() {
				if err := srv.Serve(srLn); err != nil {
					srErr <- err
					stop()
				}
			}()
		}
	})
	if srv != nil {
		srv.Close()
		if !started {
			srLn.Close()
		}
	}
	select {
	case e := <-srErr:
		if err == nil {
			err = e
		}
	default:
	}
	return err
}

// userPassword reads USER:PASSWORD, where the password, or the whole
// value, may be env://VAR.
func userPassword(flagName, v string) (user, pass string, err error) {
	if name, ok := strings.CutPrefix(v, "env://"); ok {
		if v, err = fromEnv(flagName, name); err != nil {
			return "", "", err
		}
	}
	user, pass, ok := strings.Cut(v, ":")
	if !ok || user == "" {
		return "", "", &usageError{flagName + " must be USER:PASSWORD"}
	}
	if name, ok := strings.CutPrefix(pass, "env://"); ok {
		if pass, err = fromEnv(flagName, name); err != nil {
			return "", "", err
		}
	}
	return user, pass, nil
}

func fromEnv(flagName, name string) (string, error) {
	v, ok := os.LookupEnv(name)
	if !ok || name == "" {
		return "", &usageError{fmt.Sprintf("%s: environment variable %q is not set", flagName, name)}
	}
	return v, nil
}

// registryFlags are the Schema Registry flags of produce and consume.
type registryFlags struct {
	url, user *string
}

func (r *registryFlags) register(fs *flag.FlagSet) {
	r.url = fs.String("schema-registry", "", "Schema Registry URL, for the avro-confluent and protobuf-confluent formats")
	r.user = fs.String("schema-registry-user", "", "USER:PASSWORD for the registry's basic auth; env://VAR reads the password, or the whole value, from the environment")
}

// client returns nil when no format needs a registry.
func (r *registryFlags) client(formats ...string) (*registry.Client, error) {
	need := ""
	for _, f := range formats {
		if kafka.NeedsRegistry(f) {
			need = f
		}
	}
	if need == "" {
		return nil, nil
	}
	if *r.url == "" {
		return nil, &usageError{fmt.Sprintf("format %s needs --schema-registry URL", need)}
	}
	var opts registry.ClientOptions
	if *r.user != "" {
		var err error
		if opts.User, opts.Password, err = userPassword("--schema-registry-user", *r.user); err != nil {
			return nil, err
		}
	}
	return registry.NewClient(*r.url, opts)
}

func oneOf(flagName, v string, allowed []string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return &usageError{fmt.Sprintf("%s must be one of %s, not %q", flagName, strings.Join(allowed, ", "), v)}
}

// clientFlags are the connection flags of create-topic, produce and consume.
type clientFlags struct {
	opts map[string]*string
	skip *bool
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	c.opts = map[string]*string{
		"brokers":           fs.String("brokers", "localhost:9092", "comma-separated bootstrap brokers"),
		"client_id":         fs.String("client-id", "clink", "client id"),
		"security_protocol": fs.String("security-protocol", "PLAINTEXT", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
		"sasl_mechanism":    fs.String("sasl-mechanism", "PLAIN", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
		"sasl_username":     fs.String("sasl-username", "", "SASL user (env://VAR reads the environment)"),
		"sasl_password":     fs.String("sasl-password", "", "SASL password (env://VAR reads the environment)"),
		"tls_ca_file":       fs.String("tls-ca-file", "", "PEM CA certificates"),
		"tls_cert_file":     fs.String("tls-cert-file", "", "PEM client certificate"),
		"tls_key_file":      fs.String("tls-key-file", "", "PEM client key"),
	}
	c.skip = fs.Bool("tls-insecure-skip-verify", false, "do not verify the brokers' certificates")
}

func (c *clientFlags) config() (*kafka.ClientConfig, error) {
	m := map[string]string{}
	for k, v := range c.opts {
		m[k] = *v
	}
	if *c.skip {
		m["tls_insecure_skip_verify"] = "true"
	}
	return kafka.NewClientConfig(m)
}

func kafkaCreateTopic(args []string) error {
	fs := flag.NewFlagSet("kafka create-topic", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs)
	topic := fs.String("topic", "", "topic name")
	parts := fs.Int("partitions", 1, "partitions")
	ifNotExists := fs.Bool("if-not-exists", false, "an existing topic is not an error")
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if *topic == "" || *parts < 1 {
		return &usageError{"create-topic needs --topic and --partitions >= 1"}
	}
	cc, err := cf.config()
	if err != nil {
		return err
	}
	if err := kafka.CreateTopic(context.Background(), cc, kafka.TopicSpec{Name: *topic, Partitions: int32(*parts)}, *ifNotExists); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "clink kafka: topic %s with %d partitions\n", *topic, *parts)
	return nil
}

func kafkaProduce(args []string) error {
	fs := flag.NewFlagSet("kafka produce", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs)
	topic := fs.String("topic", "", "topic name")
	partition := fs.Int("partition", -1, "send every record to this partition (default: by key, or spread)")
	keyField := fs.String("key-field", "", "top-level JSON field whose value is the record key (Kafka's murmur2 partitioning)")
	var rf registryFlags
	rf.register(fs)
	valueFormat := fs.String("value-format", "", "encode each JSON line: avro-confluent or protobuf-confluent (default: send lines as they are)")
	valueSchema := fs.String("value-schema", "", "avro-confluent: the Avro schema file (.avsc)")
	protoFile := fs.String("proto-file", "", "protobuf-confluent: the .proto file (imports: google/protobuf/*.proto only)")
	message := fs.String("message", "", "protobuf-confluent: the message of each line (its name, or full name)")
	subject := fs.String("subject", "", "the registry subject (default TOPIC-value)")
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if *topic == "" {
		return &usageError{"produce needs --topic"}
	}
	if *partition >= 0 && *keyField != "" {
		return &usageError{"give either --partition or --key-field, not both"}
	}
	if err := oneOf("--value-format", *valueFormat, kafka.ProduceFormats); err != nil {
		return err
	}
	pc := kafka.ProduceConfig{Topic: *topic, Partition: int32(*partition), KeyField: *keyField, ValueFormat: *valueFormat, Subject: *subject, Message: *message}
	switch *valueFormat {
	case "":
		if *valueSchema != "" || *protoFile != "" || *message != "" || *subject != "" {
			return &usageError{"--value-schema, --proto-file, --message and --subject need --value-format"}
		}
	case kafka.FormatAvroConfluent:
		if *valueSchema == "" || *protoFile != "" || *message != "" {
			return &usageError{"--value-format avro-confluent needs --value-schema FILE.avsc (and no --proto-file or --message)"}
		}
		pc.SchemaName = *valueSchema
	case kafka.FormatProtobufConfluent:
		if *protoFile == "" || *message == "" || *valueSchema != "" {
			return &usageError{"--value-format protobuf-confluent needs --proto-file FILE.proto and --message NAME (and no --value-schema)"}
		}
		pc.SchemaName = *protoFile
	}
	if pc.SchemaName != "" {
		text, err := os.ReadFile(pc.SchemaName)
		if err != nil {
			return err
		}
		pc.Schema = string(text)
	}
	reg, err := rf.client(*valueFormat)
	if err != nil {
		return err
	}
	pc.Registry = reg
	cc, err := cf.config()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := kafka.Produce(ctx, cc, pc, os.Stdin)
	fmt.Printf("produced %d records to %s\n", n, *topic)
	return err
}

func kafkaConsume(args []string) error {
	fs := flag.NewFlagSet("kafka consume", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs)
	topic := fs.String("topic", "", "topic name")
	fromBeginning := fs.Bool("from-beginning", false, "start at each partition's first record (default: only new records)")
	toEnd := fs.Bool("to-end", false, "stop at the end offsets listed at start")
	maxN := fs.Int64("max", 0, "stop after this many records")
	timeout := fs.Duration("timeout", 0, "stop when no record arrived for this long")
	count := fs.Bool("count", false, "print only the number of records read (a bare franz-go consume loop, for benchmarks)")
	pools := fs.Bool("pools", false, "recycle records and decompression buffers through pools, as the Kafka source does (benchmarks)")
	isolation := fs.String("isolation-level", "read_committed", "read_committed (records of committed transactions and non-transactional ones) or read_uncommitted (every record, aborted transactions' too)")
	var rf registryFlags
	rf.register(fs)
	valueFormat := fs.String("value-format", "", "decode each value to one JSON line: json, raw, avro-confluent or protobuf-confluent (default: values as they are)")
	keyFormat := fs.String("key-format", "", "also decode keys (raw, json, avro-confluent or protobuf-confluent) and print {\"key\":K,\"value\":V} lines")
	skipErrors := fs.Bool("skip-errors", false, "with --value-format: report records that do not decode on stderr and go on (default: stop with an error)")
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if err := oneOf("--value-format", *valueFormat, kafka.ConsumeFormats); err != nil {
		return err
	}
	if err := oneOf("--key-format", *keyFormat, kafka.ConsumeFormats); err != nil {
		return err
	}
	if *valueFormat == "" && (*keyFormat != "" || *skipErrors) {
		return &usageError{"--key-format and --skip-errors need --value-format"}
	}
	if *valueFormat != "" && *count {
		return &usageError{"--count prints no records: give it no --value-format"}
	}
	reg, err := rf.client(*valueFormat, *keyFormat)
	if err != nil {
		return err
	}
	if *topic == "" {
		return &usageError{"consume needs --topic"}
	}
	if *isolation != "read_committed" && *isolation != "read_uncommitted" {
		return &usageError{fmt.Sprintf("--isolation-level must be read_committed or read_uncommitted, not %q", *isolation)}
	}
	cc, err := cf.config()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	cfg := kafka.ConsumeConfig{Topic: *topic, ReadUncommitted: *isolation == "read_uncommitted", FromBeginning: *fromBeginning, ToEnd: *toEnd, Max: *maxN, Idle: *timeout, CountOnly: *count, Pools: *pools,
		ValueFormat: *valueFormat, KeyFormat: *keyFormat, Registry: reg}
	skipped := 0
	if *skipErrors {
		cfg.OnError = func(err error) {
			skipped++
			fmt.Fprintln(os.Stderr, "clink kafka: skipped:", err)
		}
	}
	n, err := kafka.Consume(ctx, cc, cfg, os.Stdout)
	if *count {
		fmt.Println(n)
	}
	if *skipErrors {
		fmt.Fprintf(os.Stderr, "clink kafka: %d records from %s in %s, %d skipped as they did not decode\n", n, *topic, time.Since(start).Round(time.Millisecond), skipped)
	} else {
		fmt.Fprintf(os.Stderr, "clink kafka: %d records from %s in %s\n", n, *topic, time.Since(start).Round(time.Millisecond))
	}
	return err
}
