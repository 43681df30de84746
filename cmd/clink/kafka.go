package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/clink-dev/clink/connectors/kafka"
)

const kafkaUsage = `usage:
  clink kafka serve [--port 9092] [--topic NAME[:PARTITIONS]]... [--data-dir DIR]
        an embedded Kafka-protocol broker for development and tests (franz-go's
        kfake, 127.0.0.1 only); prints its address on stdout, runs until
        SIGINT/SIGTERM
  clink kafka create-topic [--brokers B] --topic NAME [--partitions N] [--if-not-exists]
  clink kafka produce [--brokers B] --topic NAME [--partition N | --key-field FIELD] < LINES
        one record per non-blank stdin line (acks=all, idempotent); prints the count
  clink kafka consume [--brokers B] --topic NAME [--from-beginning] [--to-end]
        [--max N] [--timeout D] [--count]
        record values, one per line, on stdout

Client flags (create-topic, produce, consume): --brokers (default localhost:9092),
--client-id, --security-protocol, --sasl-mechanism, --sasl-username,
--sasl-password (env://VAR reads the environment), --tls-ca-file, --tls-cert-file,
--tls-key-file, --tls-insecure-skip-verify: as the connector's options.
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
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return kafka.Serve(ctx, kafka.BrokerConfig{Port: *port, Topics: topics, DataDir: *dataDir}, func(addr string) {
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
	})
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
	if err := fs.Parse(args); err != nil {
		return &usageError{}
	}
	if *topic == "" {
		return &usageError{"produce needs --topic"}
	}
	if *partition >= 0 && *keyField != "" {
		return &usageError{"give either --partition or --key-field, not both"}
	}
	cc, err := cf.config()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := kafka.Produce(ctx, cc, kafka.ProduceConfig{Topic: *topic, Partition: int32(*partition), KeyField: *keyField}, os.Stdin)
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
	if err := fs.Parse(args); err != nil {
		return &usageError{}
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
	n, err := kafka.Consume(ctx, cc, kafka.ConsumeConfig{Topic: *topic, ReadUncommitted: *isolation == "read_uncommitted", FromBeginning: *fromBeginning, ToEnd: *toEnd, Max: *maxN, Idle: *timeout, CountOnly: *count, Pools: *pools}, os.Stdout)
	if *count {
		fmt.Println(n)
	}
	fmt.Fprintf(os.Stderr, "clink kafka: %d records from %s in %s\n", n, *topic, time.Since(start).Round(time.Millisecond))
	return err
}
