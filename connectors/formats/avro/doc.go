// Package avro reads and writes Avro binary records (the value of a Kafka
// record, without the Schema Registry's 5-byte prefix, which the connector
// strips to pick the writer schema) for Clink's connectors, going straight
// between bytes and Arrow columns.
package avro
