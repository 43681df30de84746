package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/formats/avro"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/connectors/formats/protobuf"
	"github.com/clink-dev/clink/connectors/formats/registry"
	"github.com/clink-dev/clink/vector"
)

// The record formats, by their Flink names.
const (
	formatJSON           = "json"
	formatAvro           = "avro"
	formatAvroConfluent  = "avro-confluent"
	formatProto          = "protobuf"
	formatProtoConfluent = "protobuf-confluent"
)

// formatNames are the formats a value or key may have.
var formatNames = []string{formatJSON, formatAvro, formatAvroConfluent, formatProto, formatProtoConfluent}

// formatOptions are the options of the value and key formats.
var formatOptions = []connectors.Option{
	{Name: "format", Aliases: []string{"value.format"}, Type: connectors.Enum, Values: formatNames, Default: formatJSON, Description: "record value format: 'json' (one object per value), 'avro' (Avro binary of the schema derived from the table's columns, no registry), 'avro-confluent' (Avro in the Confluent wire format: a magic byte and a 4-byte schema id, schemas in a Schema Registry), 'protobuf' (a message of protobuf.proto-file) or 'protobuf-confluent' (Protobuf in the Confluent wire format, with message indexes). See docs/formats.md", Example: "avro-confluent"},
	{Name: "protobuf.proto-file", Aliases: []string{"value.protobuf.proto-file"}, Type: connectors.String, Description: "with format 'protobuf': the .proto file (compiled when the job starts, imports beside it), read where the job runs; with 'protobuf-confluent' on a sink: the schema to register (default: a message derived from the table's columns)", Example: "/etc/clink/edge.proto"},
	{Name: "protobuf.message-name", Aliases: []string{"value.protobuf.message-name"}, Type: connectors.String, Description: "with format 'protobuf' or 'protobuf-confluent': the message, by full or package-relative name (default: the file's first message)", Example: "edge.v1.Request"},
	{Name: "protobuf.read-default-values", Aliases: []string{"value.protobuf.read-default-values"}, Type: connectors.Bool, Default: "false", Description: "source: an absent field that has presence (proto2, proto3 optional, messages) reads as its default value instead of NULL, as Flink's option", Example: "true"},
	{Name: "protobuf-confluent.url", Aliases: []string{"value.protobuf-confluent.url"}, Type: connectors.String, Description: "with format 'protobuf-confluent': the Schema Registry's URL", Example: "http://localhost:8081"},
	{Name: "protobuf-confluent.subject", Aliases: []string{"value.protobuf-confluent.subject"}, Type: connectors.String, Description: "with format 'protobuf-confluent': the subject (default `<topic>-value`); a source reads with the subject's latest schema, a sink registers its schema under it", Example: "edge-logs-value"},
	{Name: "protobuf-confluent.basic-auth.user-info", Aliases: []string{"value.protobuf-confluent.basic-auth.user-info"}, Type: connectors.String, Secret: true, Description: "the registry's basic-auth credentials, `user:password`; give them as `env://VAR`", Example: "env://SR_USER_INFO"},
	{Name: "avro-confluent.url", Aliases: []string{"avro-confluent.schema-registry.url", "value.avro-confluent.url", "value.avro-confluent.schema-registry.url"}, Type: connectors.String, Description: "with format 'avro-confluent': the Schema Registry's URL", Example: "http://localhost:8081"},
	{Name: "avro-confluent.subject", Aliases: []string{"avro-confluent.schema-registry.subject", "value.avro-confluent.subject"}, Type: connectors.String, Description: "sink, with format 'avro-confluent': the subject the value schema is registered under (default `<topic>-value`, Confluent's TopicNameStrategy)", Example: "readings-value"},
	{Name: "avro-confluent.basic-auth.credentials-source", Aliases: []string{"value.avro-confluent.basic-auth.credentials-source", "key.avro-confluent.basic-auth.credentials-source"}, Type: connectors.Enum, Values: []string{"USER_INFO"}, Default: "USER_INFO", Description: "where the registry's basic-auth credentials come from: 'USER_INFO', the option avro-confluent.basic-auth.user-info", Example: "USER_INFO"},
	{Name: "avro-confluent.basic-auth.user-info", Aliases: []string{"value.avro-confluent.basic-auth.user-info"}, Type: connectors.String, Secret: true, Description: "the registry's basic-auth credentials, `user:password`; give them as `env://VAR`", Example: "env://SR_USER_INFO"},
	{Name: "key.format", Type: connectors.Enum, Values: []string{formatJSON, formatAvro, formatAvroConfluent, formatProtoConfluent}, Description: "sink: the record key's format, written from the columns listed in key.fields (as Flink's key.format); a source reads every column from the value (value.fields-include = 'ALL') and does not decode keys", Example: "avro-confluent"},
	{Name: "key.fields", Type: connectors.String, Description: "with key.format: the columns of the key, separated by ';' (Flink's syntax)", Example: "sensor_id"},
	{Name: "value.fields-include", Type: connectors.Enum, Values: []string{"ALL"}, Default: "ALL", Description: "which columns the value holds: 'ALL' (Flink's default). 'EXCEPT_KEY' is not supported", Example: "ALL"},
	{Name: "key.avro-confluent.url", Aliases: []string{"key.avro-confluent.schema-registry.url"}, Type: connectors.String, Description: "with key.format 'avro-confluent': the Schema Registry's URL (default: avro-confluent.url)", Example: "http://localhost:8081"},
	{Name: "key.avro-confluent.subject", Aliases: []string{"key.avro-confluent.schema-registry.subject"}, Type: connectors.String, Description: "with key.format 'avro-confluent': the key schema's subject (default `<topic>-key`)", Example: "readings-key"},
	{Name: "key.protobuf-confluent.url", Type: connectors.String, Description: "with key.format 'protobuf-confluent': the Schema Registry's URL (default: protobuf-confluent.url); the key's message is derived from the key.fields columns (`clink.generated.Key`), registered under `<topic>-key`", Example: "http://localhost:8081"},
	{Name: "key.avro-confluent.basic-auth.user-info", Type: connectors.String, Secret: true, Description: "the key registry's basic-auth credentials (default: avro-confluent.basic-auth.user-info)", Example: "env://SR_USER_INFO"},
}

// format is one side's (value or key) format with its registry settings.
type format struct {
	name    string
	url     string // registry (avro-confluent, protobuf-confluent)
	subject string // registry subject
	auth    string // user:password, possibly env://VAR (resolved when used)

	protoFile    string // protobuf.proto-file
	message      string // protobuf.message-name
	readDefaults bool   // protobuf.read-default-values

	md protoreflect.MessageDescriptor // protobuf: compiled by NewSource
}

// valueFormat reads the value format's options.
func valueFormat(o connectors.Options) (format, error) {
	f := format{name: o["format"], url: o["avro-confluent.url"], subject: o["avro-confluent.subject"], auth: o["avro-confluent.basic-auth.user-info"],
		protoFile: o["protobuf.proto-file"], message: o["protobuf.message-name"], readDefaults: o["protobuf.read-default-values"] == "true"}
	if f.name == formatProtoConfluent {
		f.url, f.subject, f.auth = o["protobuf-confluent.url"], o["protobuf-confluent.subject"], o["protobuf-confluent.basic-auth.user-info"]
		for _, k := range []string{"avro-confluent.url", "avro-confluent.subject", "avro-confluent.basic-auth.user-info"} {
			if o[k] != "" {
				return f, &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s' needs format 'avro-confluent' (it is 'protobuf-confluent')", k)}
			}
		}
	}
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
	if f.name == formatProtoConfluent {
		f.url, f.message = o["key.protobuf-confluent.url"], derivedKeyMessage
		if f.url == "" {
			f.url = o["protobuf-confluent.url"]
		}
	} else if f.url == "" {
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
	switch {
	case f.name == formatAvroConfluent && f.url == "":
		return &connectors.OptionError{Key: prefix + "format", Msg: fmt.Sprintf("%sformat 'avro-confluent' needs option '%savro-confluent.url' (the Schema Registry)", prefix, prefix)}
	case f.name == formatProtoConfluent && f.url == "":
		return &connectors.OptionError{Key: prefix + "format", Msg: fmt.Sprintf("%sformat 'protobuf-confluent' needs option '%sprotobuf-confluent.url' (the Schema Registry)", prefix, prefix)}
	case f.name == formatProto && f.protoFile == "":
		return &connectors.OptionError{Key: prefix + "format", Msg: "format 'protobuf' needs option 'protobuf.proto-file' (and protobuf.message-name unless it is the file's first message)"}
	case prefix == "" && f.name != formatAvroConfluent && f.name != formatProtoConfluent && f.url != "":
		return &connectors.OptionError{Key: "avro-confluent.url", Msg: fmt.Sprintf("option 'avro-confluent.url' needs format 'avro-confluent' (it is '%s')", f.name)}
	case prefix == "" && f.name != formatProto && f.name != formatProtoConfluent && (f.protoFile != "" || f.message != ""):
		return &connectors.OptionError{Key: "protobuf.proto-file", Msg: fmt.Sprintf("options 'protobuf.*' need format 'protobuf' or 'protobuf-confluent' (it is '%s')", f.name)}
	}
	return nil
}

// checkSchema reports whether the format can hold every column of schema.
// Protobuf columns are checked against the message when the job starts
// (the .proto file or the registry's schema is read there).
func (f format) checkSchema(schema *arrow.Schema) error {
	switch f.name {
	case formatJSON:
		return cjson.CheckSchema(schema)
	case formatAvro, formatAvroConfluent:
		return avro.CheckSchema(schema)
	}
	return nil
}

// message compiles the Protobuf message: from protobuf.proto-file, or the
// subject's latest schema in the registry (protobuf-confluent sources). id
// is the schema's registry id (-1 without one).
func (f format) messageOf(cl *registry.Client, timeout time.Duration) (md protoreflect.MessageDescriptor, id int, err error) {
	if f.md != nil {
		return f.md, -1, nil
	}
	if f.protoFile != "" {
		md, err = protobuf.Compile(f.protoFile, f.message)
		return md, -1, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	latest, err := cl.Latest(ctx, f.subject)
	if err != nil {
		return nil, -1, fmt.Errorf("schema registry %s, subject %s: %w", f.url, f.subject, err)
	}
	if latest.Type != registry.Protobuf {
		return nil, -1, fmt.Errorf("schema registry %s, subject %s: the latest schema is %s, not Protobuf", f.url, f.subject, latest.Type)
	}
	md, err = protobuf.CompileSource(f.subject+".proto", latest.Text, f.message)
	if err != nil {
		return nil, -1, fmt.Errorf("schema registry %s, subject %s version %d: %w", f.url, f.subject, latest.Version, err)
	}
	return md, latest.ID, nil
}

// checkLatest checks the table's columns against the latest schema of a
// registry format's subject, so that a column the subject's records cannot
// fill (a nested record, a string for a BIGINT) fails the plan naming the
// field. It is a best effort: without a reachable registry or a registered
// subject nothing is checked here, and each record's own schema is still
// checked as it comes.
func (f format) checkLatest(schema *arrow.Schema) error {
	if f.name != formatAvroConfluent && f.name != formatProtoConfluent {
		return nil
	}
	cl, err := f.client(2 * time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	latest, err := cl.Latest(ctx, f.subject)
	if err != nil {
		return nil
	}
	where := fmt.Sprintf("schema registry %s, subject %s version %d", f.url, f.subject, latest.Version)
	if f.name == formatAvroConfluent {
		if latest.Type != registry.Avro {
			return fmt.Errorf("%s: the latest schema is %s, not Avro", where, latest.Type)
		}
		dec := avro.NewDecoder(schema, memory.DefaultAllocator, avro.Options{})
		defer dec.Release()
		if _, err := dec.Writer(latest.Text); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
	if latest.Type != registry.Protobuf {
		return fmt.Errorf("%s: the latest schema is %s, not Protobuf", where, latest.Type)
	}
	md, err := protobuf.CompileSource(f.subject+".proto", latest.Text, f.message)
	if err == nil {
		err = protobuf.CheckSchema(schema, md)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// messageIndexes is md's path in its file, as Confluent's message indexes.
func messageIndexes(md protoreflect.MessageDescriptor) []int {
	var idx []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		m, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		idx = append([]int{m.Index()}, idx...)
	}
	return idx
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
	case formatProto, formatProtoConfluent:
		var cl *registry.Client
		if f.name == formatProtoConfluent {
			var err error
			if cl, err = f.client(timeout); err != nil {
				return nil, err
			}
		}
		md, _, err := f.messageOf(cl, timeout)
		if err != nil {
			return nil, err
		}
		dec, err := protobuf.NewDecoder(t.Schema, md, mem, protobuf.Options{Needed: t.Needed, Required: t.Required(), ReadDefaultValues: f.readDefaults})
		if err != nil {
			return nil, err
		}
		if cl == nil {
			return dec, nil
		}
		return &confluentProto{Decoder: dec, cl: cl, timeout: timeout, known: map[int]error{}}, nil
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

// confluentProto decodes Protobuf records in the Confluent wire format
// with the reader's message (the subject's latest schema when the job
// started): fields are matched by number, so records of earlier and later
// versions decode too (unknown fields are skipped, missing ones default).
// Each record's schema id must be a Protobuf schema the registry knows.
type confluentProto struct {
	*protobuf.Decoder
	cl      *registry.Client
	timeout time.Duration
	known   map[int]error // schema ids seen: nil if Protobuf
	indexes []int
}

func (c *confluentProto) Append(value []byte) error {
	id, payload, err := registry.ParseHeader(value)
	if err != nil {
		return err
	}
	ierr, ok := c.known[id]
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		s, err := c.cl.SchemaByID(ctx, id)
		cancel()
		switch {
		case errors.Is(err, registry.ErrUnknownID):
			return err
		case err != nil:
			return &fatalError{err}
		case s.Type != registry.Protobuf:
			ierr = fmt.Errorf("schema id %d is a %s schema, not Protobuf", id, s.Type)
		}
		c.known[id] = ierr
	}
	if ierr != nil {
		return ierr
	}
	if c.indexes, payload, err = registry.AppendParseIndexes(c.indexes[:0], payload); err != nil {
		return err
	}
	return c.Decoder.Append(payload)
}

// recordEncoder turns the live rows of a batch into record bytes: each
// row's record is dst[start:ends[k]], start being the previous end plus
// sep (JSON lines are separated by a newline, binary records by nothing).
type recordEncoder interface {
	appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int, error)
	sep() int
}

// jsonEncoder writes rows as JSON objects.
type jsonEncoder struct{}

func (jsonEncoder) sep() int { return 1 }

func (jsonEncoder) appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int, error) {
	from := len(dst)
	dst = cjson.AppendBatch(dst, b)
	for i := from; i < len(dst); i++ {
		if dst[i] == '\n' {
			ends = append(ends, i)
		}
	}
	return dst, ends, nil
}

// avroEncoder writes rows as Avro binary, after the Confluent header when
// id >= 0.
type avroEncoder struct {
	enc *avro.Encoder
	id  int
}

func (avroEncoder) sep() int { return 0 }

func (e avroEncoder) appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int, error) {
	if e.id < 0 {
		dst, ends = e.enc.AppendBatch(dst, b, ends)
		e.enc.Unbind()
		return dst, ends, nil
	}
	each(b, func(i int) {
		dst = registry.AppendHeader(dst, e.id)
		dst = e.enc.AppendRow(dst, b.Rec, i)
		ends = append(ends, len(dst))
	})
	e.enc.Unbind()
	return dst, ends, nil
}

// protoEncoder writes rows as Protobuf messages, after the Confluent
// header and message indexes when id >= 0.
type protoEncoder struct {
	enc     *protobuf.Encoder
	id      int
	indexes []int
}

func (protoEncoder) sep() int { return 0 }

func (e protoEncoder) appendRecords(dst []byte, b *vector.Batch, ends []int) ([]byte, []int, error) {
	if e.id < 0 {
		return e.enc.AppendBatch(dst, ends, b)
	}
	var err error
	each(b, func(i int) {
		if err != nil {
			return
		}
		dst = registry.AppendHeader(dst, e.id)
		dst = registry.AppendIndexes(dst, e.indexes)
		dst = e.enc.AppendRow(dst, b.Rec, i)
		err = e.enc.Err()
		ends = append(ends, len(dst))
	})
	return dst, ends, err
}

// newEncoder opens an encoder of schema's rows; for avro-confluent it
// registers (or finds) the schema under the format's subject, checking
// compatibility with the subject's versions first.
func (f format) newEncoder(schema *arrow.Schema, timeout time.Duration) (recordEncoder, error) {
	if f.name == formatJSON {
		return jsonEncoder{}, nil
	}
	if f.name == formatProto || f.name == formatProtoConfluent {
		return f.newProtoEncoder(schema, timeout)
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
	id, err := f.register(text, registry.Avro, timeout)
	if err != nil {
		return nil, err
	}
	return avroEncoder{enc: enc, id: id}, nil
}

// derivedMessage names the message a protobuf-confluent sink derives from
// its table's columns when given no .proto file.
const derivedMessage = "clink.generated.Row"

// derivedKeyMessage names the message of a protobuf-confluent key.
const derivedKeyMessage = "clink.generated.Key"

// newProtoEncoder opens a Protobuf encoder; protobuf-confluent registers
// the message's file (protobuf.proto-file, or one derived from the
// table's columns) under the subject.
func (f format) newProtoEncoder(schema *arrow.Schema, timeout time.Duration) (recordEncoder, error) {
	if f.name == formatProto {
		md, _, err := f.messageOf(nil, timeout)
		if err != nil {
			return nil, err
		}
		enc, err := protobuf.NewEncoder(schema, md)
		if err != nil {
			return nil, err
		}
		return protoEncoder{enc: enc, id: -1}, nil
	}
	var text string
	var err error
	if f.protoFile != "" {
		b, rerr := os.ReadFile(f.protoFile)
		if rerr != nil {
			return nil, rerr
		}
		text = string(b)
	} else {
		name := f.message
		if name == "" {
			name = derivedMessage
		}
		if text, err = protobuf.MessageFor(schema, name); err != nil {
			return nil, err
		}
	}
	md, err := protobuf.CompileSource(f.subject+".proto", text, f.message)
	if err != nil {
		return nil, err
	}
	enc, err := protobuf.NewEncoder(schema, md)
	if err != nil {
		return nil, err
	}
	id, err := f.register(text, registry.Protobuf, timeout)
	if err != nil {
		return nil, err
	}
	return protoEncoder{enc: enc, id: id, indexes: messageIndexes(md)}, nil
}

// register registers (or finds) schema text under the format's subject,
// after checking its compatibility with the subject's versions.
func (f format) register(text string, typ registry.SchemaType, timeout time.Duration) (int, error) {
	cl, err := f.client(timeout)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	id, err := cl.Register(ctx, f.subject, text, typ)
	if err != nil {
		return 0, fmt.Errorf("schema registry %s, subject %s: %w", f.url, f.subject, err)
	}
	return id, nil
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
