package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/formats/avro"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/connectors/formats/registry"
	"github.com/clink-dev/clink/vector"
)

// The record formats, by their Flink names.
const (
	formatJSON          = "json"
	formatAvro          = "avro"
	formatAvroConfluent = "avro-confluent"
)

// formatOptions are the options of the value and key formats.
var formatOptions = []connectors.Option{
	{Name: "format", Aliases: []string{"value.format"}, Type: connectors.Enum, Values: []string{formatJSON, formatAvro, formatAvroConfluent}, Default: formatJSON, Description: "record value format: 'json' (one object per value), 'avro' (Avro binary of the schema derived from the table's columns, no registry) or 'avro-confluent' (Avro in the Confluent wire format: a magic byte and a 4-byte schema id, schemas in a Schema Registry). See docs/formats.md", Example: "avro-confluent"},
	{Name: "avro-confluent.url", Aliases: []string{"avro-confluent.schema-registry.url", "value.avro-confluent.url", "value.avro-confluent.schema-registry.url"}, Type: connectors.String, Description: "with format 'avro-confluent': the Schema Registry's URL", Example: "http://localhost:8081"},
	{Name: "avro-confluent.subject", Aliases: []string{"avro-confluent.schema-registry.subject", "value.avro-confluent.subject"}, Type: connectors.String, Description: "sink, with format 'avro-confluent': the subject the value schema is registered under (default `<topic>-value`, Confluent's TopicNameStrategy)", Example: "readings-value"},
	{Name: "avro-confluent.basic-auth.credentials-source", Aliases: []string{"value.avro-confluent.basic-auth.credentials-source", "key.avro-confluent.basic-auth.credentials-source"}, Type: connectors.Enum, Values: []string{"USER_INFO"}, Default: "USER_INFO", Description: "where the registry's basic-auth credentials come from: 'USER_INFO', the option avro-confluent.basic-auth.user-info", Example: "USER_INFO"},
	{Name: "avro-confluent.basic-auth.user-info", Aliases: []string{"value.avro-confluent.basic-auth.user-info"}, Type: connectors.String, Secret: true, Description: "the registry's basic-auth credentials, `user:password`; give them as `env://VAR`", Example: "env://SR_USER_INFO"},
	{Name: "key.format", Type: connectors.Enum, Values: []string{formatJSON, formatAvro, formatAvroConfluent}, Description: "sink: the record key's format, written from the columns listed in key.fields (as Flink's key.format); a source reads every column from the value (value.fields-include = 'ALL') and does not decode keys", Example: "avro-confluent"},
	{Name: "key.fields", Type: connectors.String, Description: "with key.format: the columns of the key, separated by ';' (Flink's syntax)", Example: "sensor_id"},
	{Name: "value.fields-include", Type: connectors.Enum, Values: []string{"ALL"}, Default: "ALL", Description: "which columns the value holds: 'ALL' (Flink's default). 'EXCEPT_KEY' is not supported", Example: "ALL"},
	{Name: "key.avro-confluent.url", Aliases: []string{"key.avro-confluent.schema-registry.url"}, Type: connectors.String, Description: "with key.format 'avro-confluent': the Schema Registry's URL (default: avro-confluent.url)", Example: "http://localhost:8081"},
	{Name: "key.avro-confluent.subject", Aliases: []string{"key.avro-confluent.schema-registry.subject"}, Type: connectors.String, Description: "with key.format 'avro-confluent': the key schema's subject (default `<topic>-key`)", Example: "readings-key"},
	{Name: "key.avro-confluent.basic-auth.user-info", Type: connectors.String, Secret: true, Description: "the key registry's basic-auth credentials (default: avro-confluent.basic-auth.user-info)", Example: "env://SR_USER_INFO"},
}

// format is one side's (value or key) format with its registry settings.
type format struct {
	name    string
	url     string // registry (avro-confluent)
	subject string // registry subject (sinks)
	auth    string // user:password, possibly env://VAR (resolved when used)
}

// valueFormat reads the value format's options.
func valueFormat(o connectors.Options) (format, error) {
	f := format{name: o["format"], url: o["avro-confluent.url"], subject: o["avro-confluent.subject"], auth: o["avro-confluent.basic-auth.user-info"]}
	if f.subject == "" {
		f.subject = o["topic"] + "-value"
	}
	if o["value.fields-include"] != "" && o["value.fields-include"] != "ALL" {
		return f, &connectors.OptionError{Key: "value.fields-include", Msg: "value.fields-include = 'EXCEPT_KEY' is not supported: values hold every column"}
	}
	return f, f.check("")
}

// keyFormat reads key.format's options; ok is false without a key format.
func keyFormat(o connectors.Options) (f format, ok bool, err error) {
	if o["key.format"] == "" {
		if o["key.fields"] != "" {
			return f, false, &connectors.OptionError{Key: "key.fields", Msg: "option 'key.fields' needs 'key.format'"}
		}
		return f, false, nil
	}
	if o["key_column"] != "" {
		return f, false, &connectors.OptionError{Key: "key.format", Msg: "give either 'key_column' (the key as text) or 'key.format' with 'key.fields', not both"}
	}
	if o["key.fields"] == "" {
		return f, false, &connectors.OptionError{Key: "key.format", Msg: "option 'key.format' needs 'key.fields' (the key's columns, ';'-separated)"}
	}
	f = format{name: o["key.format"], url: o["key.avro-confluent.url"], subject: o["key.avro-confluent.subject"], auth: o["key.avro-confluent.basic-auth.user-info"]}
	if f.url == "" {
		f.url = o["avro-confluent.url"]
	}
	if f.auth == "" {
		f.auth = o["avro-confluent.basic-auth.user-info"]
	}
	if f.subject == "" {
		f.subject = o["topic"] + "-key"
	}
	return f, true, f.check("key.")
}

// check makes the format's checks without I/O; prefix is "key." for keys.
func (f format) check(prefix string) error {
	if f.name == formatAvroConfluent && f.url == "" {
		return &connectors.OptionError{Key: prefix + "format", Msg: fmt.Sprintf("%sformat 'avro-confluent' needs option 'avro-confluent.url' (the Schema Registry)", prefix)}
	}
	if f.name != formatAvroConfluent && f.url != "" && prefix == "" {
		return &connectors.OptionError{Key: "avro-confluent.url", Msg: fmt.Sprintf("option 'avro-confluent.url' needs format 'avro-confluent' (it is '%s')", f.name)}
	}
	return nil
}

// checkSchema reports whether the format can hold every column of schema.
func (f format) checkSchema(schema *arrow.Schema) error {
	if f.name == formatJSON {
		return cjson.CheckSchema(schema)
	}
	return avro.CheckSchema(schema)
}

// client opens the format's registry client.
func (f format) client(timeout time.Duration) (*registry.Client, error) {
	opts := registry.ClientOptions{Timeout: timeout}
	if f.auth != "" {
		info, err := connectors.Secret("avro-confluent.basic-auth.user-info", f.auth)
		if err != nil {
			return nil, err
		}
		user, pass, ok := strings.Cut(info, ":")
		if !ok {
			return nil, &connectors.OptionError{Key: "avro-confluent.basic-auth.user-info", Msg: "option 'avro-confluent.basic-auth.user-info' must be user:password"}
		}
		opts.User, opts.Password = user, pass
	}
	return registry.NewClient(f.url, opts)
}

// recordDecoder turns record values into Arrow rows: a JSON, Avro or
// registry-backed Avro decoder. Append's error is a bad record (the
// source's on_error applies) unless it is a *fatalError.
type recordDecoder interface {
	Append(value []byte) error
	Len() int
	Flush() arrow.RecordBatch
	Release()
}

// fatalError is a decoding failure that is not the record's fault (the
// registry cannot be reached): the job fails whatever on_error says, and
// restarts from its last checkpoint.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// newDecoder opens the table's value decoder.
func (f format) newDecoder(t *connectors.Table, mem memory.Allocator, timeout time.Duration) (recordDecoder, error) {
	switch f.name {
	case formatAvro:
		return avro.NewDecoder(t.Schema, mem, avro.Options{Needed: t.Needed, Required: t.Required()}), nil
	case formatAvroConfluent:
		cl, err := f.client(timeout)
		if err != nil {
			return nil, err
		}
		return &confluentAvro{Decoder: avro.NewDecoder(t.Schema, mem, avro.Options{Needed: t.Needed, Required: t.Required()}), cl: cl, timeout: timeout, writers: map[int]*avro.Writer{}, refused: map[int]error{}}, nil
	}
	return cjson.NewDecoder(t.Schema, mem, cjson.Options{Needed: t.Needed, Required: t.Required()}), nil
}

// confluentAvro decodes Avro records in the Confluent wire format: each
// record's writer schema is fetched from the registry by id (once: ids
// are immutable) and resolved against the table's columns.
type confluentAvro struct {
	*avro.Decoder
	cl      *registry.Client
	timeout time.Duration
	writers map[int]*avro.Writer
	refused map[int]error // ids whose schema cannot be read into the table
}

func (c *confluentAvro) Append(value []byte) error {
	id, payload, err := registry.ParseHeader(value)
	if err != nil {
		return err
	}
	w := c.writers[id]
	if w == nil {
		if err := c.refused[id]; err != nil {
			return err
		}
		if w, err = c.writer(id); err != nil {
			return err
		}
	}
	return c.AppendWriter(w, payload)
}

// writer fetches and compiles the writer schema of id.
func (c *confluentAvro) writer(id int) (*avro.Writer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.cl.SchemaByID(ctx, id)
	if errors.Is(err, registry.ErrUnknownID) {
		return nil, err // a bad record: fetched again if it comes again
	}
	if err != nil {
		return nil, &fatalError{err}
	}
	if s.Type != registry.Avro {
		err = fmt.Errorf("schema id %d is a %s schema, not Avro", id, s.Type)
	} else {
		var w *avro.Writer
		if w, err = c.Writer(s.Text); err == nil {
			c.writers[id] = w
			return w, nil
		}
		err = fmt.Errorf("schema id %d: %w", id, err)
	}
	c.refused[id] = err
	return nil, err
}

// recordEncoder turns the live rows of a batch into record bytes: each
// row's record is dst[start:ends[k]], start being the previous end plus
// sep (JSON lines are separated by a newline, binary records by nothing).
type recordEncoder interface {
	appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int)
	sep() int
}

// jsonEncoder writes rows as JSON objects.
type jsonEncoder struct{}

func (jsonEncoder) sep() int { return 1 }

func (jsonEncoder) appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int) {
	from := len(dst)
	dst = cjson.AppendBatch(dst, b)
	for i := from; i < len(dst); i++ {
		if dst[i] == '\n' {
			ends = append(ends, i)
		}
	}
	return dst, ends
}

// avroEncoder writes rows as Avro binary, after the Confluent header when
// id >= 0.
type avroEncoder struct {
	enc *avro.Encoder
	id  int
}

func (avroEncoder) sep() int { return 0 }

func (e avroEncoder) appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int) {
	if e.id < 0 {
		dst, ends = e.enc.AppendBatch(dst, b, ends)
		e.enc.Unbind()
		return dst, ends
	}
	each(b, func(i int) {
		dst = registry.AppendHeader(dst, e.id)
		dst = e.enc.AppendRow(dst, b.Rec, i)
		ends = append(ends, len(dst))
	})
	e.enc.Unbind()
	return dst, ends
}

// newEncoder opens an encoder of schema's rows; for avro-confluent it
// registers (or finds) the schema under the format's subject, checking
// compatibility with the subject's versions first.
func (f format) newEncoder(schema *arrow.Schema, timeout time.Duration) (recordEncoder, error) {
	if f.name == formatJSON {
		return jsonEncoder{}, nil
	}
	enc, err := avro.NewEncoder(schema)
	if err != nil {
		return nil, err
	}
	if f.name == formatAvro {
		return avroEncoder{enc: enc, id: -1}, nil
	}
	text, err := avro.SchemaFor(schema, "")
	if err != nil {
		return nil, err
	}
	cl, err := f.client(timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	id, err := cl.Register(ctx, f.subject, text, registry.Avro)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s, subject %s: %w", f.url, f.subject, err)
	}
	return avroEncoder{enc: enc, id: id}, nil
}

// keyColumns are the columns of key.fields, in their order.
func keyColumns(t *connectors.Table) ([]int, error) {
	var cols []int
	for _, name := range strings.Split(t.Options["key.fields"], ";") {
		name = strings.TrimSpace(name)
		col := -1
		for i, f := range t.Schema.Fields() {
			if f.Name == name || (col < 0 && strings.EqualFold(f.Name, name)) {
				col = i
			}
		}
		if col < 0 {
			return nil, &connectors.OptionError{Key: "key.fields", Msg: fmt.Sprintf("key.fields names '%s', which is not a column of %s", name, t.Name)}
		}
		cols = append(cols, col)
	}
	return cols, nil
}

// keyProjection is a batch's key columns as a batch of their own.
type keyProjection struct {
	cols   []int
	schema *arrow.Schema
}

func newKeyProjection(schema *arrow.Schema, cols []int) keyProjection {
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		fields[k] = schema.Field(c)
	}
	return keyProjection{cols: cols, schema: arrow.NewSchema(fields, nil)}
}

// of returns b's key columns (sharing b's arrays and selection); the
// caller releases it.
func (p keyProjection) of(b *vector.Batch) *vector.Batch {
	arrs := make([]arrow.Array, len(p.cols))
	for k, c := range p.cols {
		arrs[k] = b.Rec.Column(c)
	}
	kb := vector.New(array.NewRecordBatch(p.schema, arrs, b.Rec.NumRows()))
	kb.Sel = b.Sel
	return kb
}

// sinkFormat turns a sink's rows into record values and keys.
type sinkFormat struct {
	value  recordEncoder
	keyCol int // key_column (the key as text), -1 without one
	key    recordEncoder
	keyOf  keyProjection
}

// checkSinkFormat makes newSinkFormat's checks without I/O.
func checkSinkFormat(t *connectors.Table) error {
	vf, err := valueFormat(t.Options)
	if err != nil {
		return err
	}
	if err := vf.checkSchema(t.Schema); err != nil {
		return err
	}
	kf, ok, err := keyFormat(t.Options)
	if err != nil || !ok {
		return err
	}
	cols, err := keyColumns(t)
	if err != nil {
		return err
	}
	return kf.checkSchema(newKeyProjection(t.Schema, cols).schema)
}

// newSinkFormat opens the sink's encoders, registering their schemas.
func newSinkFormat(t *connectors.Table, timeout time.Duration) (*sinkFormat, error) {
	if err := checkSinkFormat(t); err != nil {
		return nil, err
	}
	vf, _ := valueFormat(t.Options)
	var sf sinkFormat
	var err error
	if sf.value, err = vf.newEncoder(t.Schema, timeout); err != nil {
		return nil, fmt.Errorf("value format: %w", err)
	}
	sf.keyCol, _ = keyColumn(t) // checked
	if kf, ok, _ := keyFormat(t.Options); ok {
		cols, _ := keyColumns(t)
		sf.keyOf = newKeyProjection(t.Schema, cols)
		if sf.key, err = kf.newEncoder(sf.keyOf.schema, timeout); err != nil {
			return nil, fmt.Errorf("key format: %w", err)
		}
	}
	return &sf, nil
}
