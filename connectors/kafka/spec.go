// Package kafka is the Kafka connector (franz-go): an unbounded or bounded
// JSON source with per-partition watermarks and offsets kept in the source,
// a JSON sink with the idempotent producer or, exactly once, transactions
// committed with checkpoints (TxSink), and the embedded development broker
// (kfake) behind `clink kafka serve`.
package kafka

import (
	"github.com/clink-dev/clink/connectors"
)

// Connector is the 'kafka' connector.
type Connector struct{}

var (
	_ connectors.SourceFactory = Connector{}
	_ connectors.SinkFactory   = Connector{}
)

// clientOptions are the options every Kafka client (source or sink) reads.
var clientOptions = []connectors.Option{
	{Name: "brokers", Aliases: []string{"properties.bootstrap.servers"}, Type: connectors.String, Required: true, Description: "comma-separated bootstrap brokers, host:port", Example: "localhost:9092"},
	{Name: "topic", Type: connectors.String, Required: true, Description: "the topic read or written", Example: "sensors"},
	{Name: "client_id", Aliases: []string{"properties.client.id"}, Type: connectors.String, Default: "clink", Description: "the Kafka client id the brokers see", Example: "clink-sensors"},
	{Name: "connect_timeout_ms", Type: connectors.Int, Default: "10000", Description: "how long the job waits at start-up for the brokers to answer (reachability, topic metadata, offsets) before failing", Example: "30000"},
	{Name: "security_protocol", Type: connectors.Enum, Values: []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, Default: "PLAINTEXT", Description: "as Kafka's security.protocol: TLS and/or SASL on the connection", Example: "SASL_SSL"},
	{Name: "sasl_mechanism", Type: connectors.Enum, Values: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, Default: "PLAIN", Description: "SASL mechanism when security_protocol is SASL_PLAINTEXT or SASL_SSL", Example: "SCRAM-SHA-512"},
	{Name: "sasl_username", Type: connectors.String, Secret: true, Description: "SASL user; `env://VAR` reads it from the environment", Example: "env://KAFKA_USER"},
	{Name: "sasl_password", Type: connectors.String, Secret: true, Description: "SASL password; give it as `env://VAR` to read it from the environment (a literal value is stored in the plan, which `clink explain` prints). Never logged", Example: "env://KAFKA_PASSWORD"},
	{Name: "tls_ca_file", Type: connectors.String, Description: "PEM file of CA certificates that verify the brokers (default: the system's roots)", Example: "/etc/kafka/ca.pem"},
	{Name: "tls_cert_file", Type: connectors.String, Description: "PEM client certificate for mutual TLS (with tls_key_file)", Example: "/etc/kafka/client.pem"},
	{Name: "tls_key_file", Type: connectors.String, Description: "PEM private key of tls_cert_file", Example: "/etc/kafka/client.key"},
	{Name: "tls_insecure_skip_verify", Type: connectors.Bool, Default: "false", Description: "do not verify the brokers' certificates (testing only)", Example: "true"},
}

// sourceOptions are read by the source only.
var sourceOptions = []connectors.Option{
	connectors.ScanParallelismOption,
	{Name: "event_time_column", Type: connectors.String, Description: "source: BIGINT epoch-ms or TIMESTAMP(3) column that carries event time; each partition has its own watermark", Example: "ts"},
	{Name: "watermark_lag_ms", Type: connectors.Int, Default: "0", Description: "source: a partition's watermark is the largest event time it has seen minus this lag", Example: "3000"},
	{Name: "idle_timeout_ms", Type: connectors.Int, Default: "0", Description: "source: a partition without records for this long stops holding the watermark back until it speaks again (0: never idle)", Example: "30000"},
	{Name: "allowed_lateness_ms", Type: connectors.Int, Default: "0", Description: "source: windows over this table's event time stay open this long after they fire: later rows update them (the result becomes a changelog: +I, then -U/+U; a SESSION whose bounds change: -D old, +I new); rows later than that are dropped", Example: "5000"},
	{Name: "on_error", Aliases: []string{"json.ignore-parse-errors"}, ValueAliases: map[string]string{"true": "skip", "false": "fail"}, Type: connectors.Enum, Values: []string{"fail", "skip", "dead_letter"}, Default: "fail", Description: "source: what a record that does not decode does: stop the job naming its topic/partition/offset, skip and count it, or produce it to dead_letter_topic and count it", Example: "dead_letter"},
	{Name: "dead_letter_topic", Type: connectors.String, Description: "source: with on_error = 'dead_letter', the topic bad records are produced to (key and value as read, headers clink.topic, clink.partition, clink.offset, clink.error)", Example: "sensors-bad"},
	{Name: "group_id", Aliases: []string{"properties.group.id"}, Type: connectors.String, Description: "source: a consumer group to which read offsets are committed every 5 s, as a courtesy for lag monitoring only: Clink assigns partitions itself, never joins the group, and does not start from its offsets", Example: "clink-sensors"},
	{Name: "auto_offset_reset", Aliases: []string{"scan.startup.mode", "properties.auto.offset.reset"}, ValueAliases: map[string]string{"earliest-offset": "earliest", "latest-offset": "latest"}, Type: connectors.Enum, Values: []string{"earliest", "latest"}, Default: "earliest", Description: "source: where a partition starts when start_offsets and start_timestamp_ms do not say, and where it resumes when its offset is out of range", Example: "latest"},
	{Name: "start_offsets", Type: connectors.String, Description: "source: exact start offsets, 'partition:offset' comma-separated; unlisted partitions follow auto_offset_reset", Example: "0:42,1:17"},
	{Name: "start_timestamp_ms", Aliases: []string{"scan.startup.timestamp-millis"}, Type: connectors.Int, Description: "source: start every partition at its first record whose timestamp is at or after this epoch-ms time", Example: "1772352000000"},
	{Name: "isolation_level", Aliases: []string{"properties.isolation.level"}, Type: connectors.Enum, Values: []string{"read_committed", "read_uncommitted"}, Default: "read_committed", Description: "source: 'read_committed' reads committed transactions and non-transactional records only (a partition is read up to its last stable offset, so an open transaction holds it back); 'read_uncommitted' also reads records of open and aborted transactions, Kafka's default. Clink defaults to read_committed, so rows of an aborted transaction (a restarted exactly-once writer's) are never read twice", Example: "read_uncommitted"},
	{Name: "scan_bounded", Aliases: []string{"scan.bounded.mode"}, ValueAliases: map[string]string{"latest-offset": "latest"}, Type: connectors.Enum, Values: []string{"unbounded", "latest"}, Default: "unbounded", Description: "source: 'latest' reads up to the end offsets listed at start-up and then ends (bounded: the final watermark fires every window), as Flink's scan.bounded.mode = latest-offset", Example: "latest"},
}

// sinkOptions are read by the sink only.
var sinkOptions = []connectors.Option{
	{Name: "key_column", Type: connectors.String, Description: "sink: the column whose value (as text; NULL gives no key) is the record key, so equal keys land in one partition (Kafka's murmur2 partitioner)", Example: "sensor_id"},
	deliveryGuarantee,
	{Name: "transactional_id_prefix", Aliases: []string{"sink.transactional-id-prefix"}, Type: connectors.String, Description: "sink, exactly_once: transactions are named `<prefix>-<subtask>-<n>`; unique per job writing to the cluster (default `clink-<table name>`)", Example: "clink-alerts-job"},
	{Name: "transaction_timeout_ms", Aliases: []string{"properties.transaction.timeout.ms"}, Type: connectors.Int, Default: "900000", Description: "sink, exactly_once: how long the brokers keep a transaction open before aborting it; must exceed a checkpoint interval plus the time a failed job takes to restart, and be at most the brokers' transaction.max.timeout.ms (default 15 min)", Example: "600000"},
}

// deliveryGuarantee is the shared option with the Kafka sink's default:
// at-least-once, as Flink's Kafka SQL sink.
var deliveryGuarantee = func() connectors.Option {
	o := connectors.DeliveryGuaranteeOption
	o.Default = "at_least_once"
	o.Description = "sink: 'at_least_once' (and 'none'): the idempotent producer, a restarted job may write rows again; 'exactly_once': one Kafka transaction per checkpoint, committed when the checkpoint completes (needs checkpoints: clink run --checkpoint-dir)"
	return o
}()

var spec = &connectors.Spec{
	Name: "kafka",
	Description: "JSON records in a Kafka topic (franz-go). As a source: Clink assigns partitions to subtasks itself (partition mod parallelism), keeps each partition's next offset in the source's state, and keeps one watermark per partition; unbounded unless scan_bounded = 'latest'. " +
		"As a sink: one JSON object per record value, optional key_column, acks=all with the idempotent producer (at-least-once), or with delivery_guarantee = 'exactly_once' one transaction per checkpoint. Options marked source: or sink: apply to that role only. See docs/kafka.md.",
	Guarantee: "Source: replayed exactly once from checkpoints (next offset per partition). Sink: **at-least-once** by default (acks=all, idempotent producer, flushed at every checkpoint); **exactly-once** with `delivery_guarantee = 'exactly_once'`: one Kafka transaction per checkpoint, committed when the checkpoint completes (consumers read with isolation `read_committed`).",
	Source:    true,
	Sink:      true,
	Options: join(
		[]connectors.Option{
			{Name: "connector", Type: connectors.String, Required: true, Description: "the connector name", Example: "kafka"},
			{Name: "format", Type: connectors.Enum, Values: []string{"json"}, Default: "json", Description: "record value format", Example: "json"},
		},
		clientOptions, sourceOptions, sinkOptions),
}

// optionDefault is an option's default value ("" without one).
func optionDefault(name string) string {
	for _, o := range spec.Options {
		if o.Name == name {
			return o.Default
		}
	}
	return ""
}

func join(lists ...[]connectors.Option) []connectors.Option {
	var out []connectors.Option
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }
