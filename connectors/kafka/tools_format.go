package kafka

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/bufbuild/protocompile"
	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/clink-dev/clink/connectors/formats/avro"
	"github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/connectors/formats/registry"
	"github.com/clink-dev/clink/vector"
)

// The formats of `clink kafka consume --value-format/--key-format` and
// `clink kafka produce --value-format`, named as Flink's formats.
const (
	FormatRaw               = "raw"                // consume: the bytes as a JSON string
	FormatJSON              = "json"               // consume: the JSON as it is, on one line
	FormatAvroConfluent     = "avro-confluent"     // Avro binary after the Schema Registry header
	FormatProtobufConfluent = "protobuf-confluent" // Protobuf after the header and message indexes
)

// ConsumeFormats are the formats Consume decodes.
var ConsumeFormats = []string{FormatRaw, FormatJSON, FormatAvroConfluent, FormatProtobufConfluent}

// ProduceFormats are the formats Produce encodes.
var ProduceFormats = []string{FormatAvroConfluent, FormatProtobufConfluent}

// NeedsRegistry reports whether a format reads or writes schemas through a
// Schema Registry.
func NeedsRegistry(format string) bool {
	return format == FormatAvroConfluent || format == FormatProtobufConfluent
}

// toolDecoder turns keys or values into JSON. Decoders may queue rows
// (the Avro one builds a batch per schema id); flush appends every queued
// row, one line each, in the order they were added.
type toolDecoder interface {
	// add decodes one key or value (nil: a null, printed null); on error
	// nothing is queued.
	add(ctx context.Context, b []byte) error
	flush(dst []byte) []byte
	release()
}

func newToolDecoder(format string, reg *registry.Client) (toolDecoder, error) {
	if NeedsRegistry(format) && reg == nil {
		return nil, fmt.Errorf("format %s needs a schema registry", format)
	}
	switch format {
	case FormatRaw:
		return &rawTool{}, nil
	case FormatJSON:
		return &jsonTool{}, nil
	case FormatAvroConfluent:
		return &avroTool{reg: reg, byID: map[int]*avroToolReader{}}, nil
	case FormatProtobufConfluent:
		return &protoTool{reg: reg, byID: map[int]protoreflect.FileDescriptor{}}, nil
	}
	return nil, fmt.Errorf("unknown format %q (one of %s)", format, strings.Join(ConsumeFormats, ", "))
}

type rawTool struct{ out []byte }

func (d *rawTool) add(_ context.Context, b []byte) error {
	if b == nil {
		d.out = append(d.out, "null\n"...)
		return nil
	}
	q, _ := stdjson.Marshal(string(b))
	d.out = append(append(d.out, q...), '\n')
	return nil
}

func (d *rawTool) flush(dst []byte) []byte {
	dst = append(dst, d.out...)
	d.out = d.out[:0]
	return dst
}
func (d *rawTool) release() {}

type jsonTool struct {
	out []byte
	buf bytes.Buffer
}

func (d *jsonTool) add(_ context.Context, b []byte) error {
	if b == nil {
		d.out = append(d.out, "null\n"...)
		return nil
	}
	d.buf.Reset()
	if err := stdjson.Compact(&d.buf, b); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	d.out = append(append(d.out, d.buf.Bytes()...), '\n')
	return nil
}

func (d *jsonTool) flush(dst []byte) []byte {
	dst = append(dst, d.out...)
	d.out = d.out[:0]
	return dst
}
func (d *jsonTool) release() {}

// toolSchema fetches a writer schema, checking its type.
func toolSchema(ctx context.Context, reg *registry.Client, id int, want registry.SchemaType) (registry.Schema, error) {
	s, err := reg.SchemaByID(ctx, id)
	if err != nil {
		return s, err
	}
	if s.Type != want {
		return s, fmt.Errorf("schema id %d is %s, not %s", id, s.Type, want)
	}
	if len(s.References) > 0 {
		return s, fmt.Errorf("schema id %d has schema references, which are not supported", id)
	}
	return s, nil
}

// avroToolReader decodes the records of one writer schema id into the columns
// avro.ArrowSchema derives from it.
type avroToolReader struct {
	dec *avro.Decoder
	w   *avro.Writer
}

// avroTool keeps one reader per writer schema id; rows queue in the
// current id's decoder and are flushed when the id changes, so output
// keeps the records' order.
type avroTool struct {
	reg  *registry.Client
	byID map[int]*avroToolReader
	cur  *avroToolReader
	out  []byte
}

func (d *avroTool) reader(ctx context.Context, id int) (*avroToolReader, error) {
	if r, ok := d.byID[id]; ok {
		return r, nil
	}
	s, err := toolSchema(ctx, d.reg, id, registry.Avro)
	if err != nil {
		return nil, err
	}
	schema, err := avro.ArrowSchema(s.Text)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	dec := avro.NewDecoder(schema, memory.DefaultAllocator, avro.Options{})
	w, err := dec.Writer(s.Text)
	if err != nil {
		dec.Release()
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	r := &avroToolReader{dec: dec, w: w}
	d.byID[id] = r
	return r, nil
}

func (d *avroTool) add(ctx context.Context, b []byte) error {
	if b == nil {
		d.flushCurrent()
		d.out = append(d.out, "null\n"...)
		return nil
	}
	id, payload, err := registry.ParseHeader(b)
	if err != nil {
		return err
	}
	r, err := d.reader(ctx, id)
	if err != nil {
		return err
	}
	if r != d.cur {
		d.flushCurrent()
		d.cur = r
	}
	if err := r.dec.AppendWriter(r.w, payload); err != nil {
		return fmt.Errorf("schema id %d: %w", id, err)
	}
	return nil
}

func (d *avroTool) flushCurrent() {
	if d.cur == nil || d.cur.dec.Len() == 0 {
		return
	}
	b := vector.New(d.cur.dec.Flush())
	d.out = json.AppendBatch(d.out, b)
	b.Release()
}

func (d *avroTool) flush(dst []byte) []byte {
	d.flushCurrent()
	dst = append(dst, d.out...)
	d.out = d.out[:0]
	return dst
}

func (d *avroTool) release() {
	for _, r := range d.byID {
		r.dec.Release()
	}
}

// protoTool decodes each record with dynamicpb and prints it with
// protojson (proto field names, unset fields left out), compacted: this
// path is for people reading a topic, not for throughput.
type protoTool struct {
	reg  *registry.Client
	byID map[int]protoreflect.FileDescriptor
	out  []byte
	buf  bytes.Buffer
}

func (d *protoTool) file(ctx context.Context, id int) (protoreflect.FileDescriptor, error) {
	if fd, ok := d.byID[id]; ok {
		return fd, nil
	}
	s, err := toolSchema(ctx, d.reg, id, registry.Protobuf)
	if err != nil {
		return nil, err
	}
	fd, err := compileProtoFile("schema.proto", s.Text)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	d.byID[id] = fd
	return fd, nil
}

func (d *protoTool) add(ctx context.Context, b []byte) error {
	if b == nil {
		d.out = append(d.out, "null\n"...)
		return nil
	}
	id, payload, err := registry.ParseHeader(b)
	if err != nil {
		return err
	}
	fd, err := d.file(ctx, id)
	if err != nil {
		return err
	}
	idx, payload, err := registry.ParseIndexes(payload)
	if err != nil {
		return fmt.Errorf("schema id %d: %w", id, err)
	}
	md, err := messageAt(fd, idx)
	if err != nil {
		return fmt.Errorf("schema id %d: %w", id, err)
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(payload, m); err != nil {
		return fmt.Errorf("schema id %d message %s: %w", id, md.FullName(), err)
	}
	text, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("schema id %d message %s: %w", id, md.FullName(), err)
	}
	// protojson varies its spacing on purpose; compact it so that lines
	// are stable.
	d.buf.Reset()
	if err := stdjson.Compact(&d.buf, text); err != nil {
		return err
	}
	d.out = append(append(d.out, d.buf.Bytes()...), '\n')
	return nil
}

func (d *protoTool) flush(dst []byte) []byte {
	dst = append(dst, d.out...)
	d.out = d.out[:0]
	return dst
}
func (d *protoTool) release() {}

// compileProtoFile compiles one .proto file's text; it may import only
// google/protobuf/*.proto, as the registry allows without references.
func compileProtoFile(name, text string) (protoreflect.FileDescriptor, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{name: text}),
		}),
	}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		return nil, err
	}
	return files[0], nil
}

// messageAt follows Confluent's message indexes: the first into the
// file's top-level messages, each next one into the previous message's
// nested messages.
func messageAt(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	ms := fd.Messages()
	var md protoreflect.MessageDescriptor
	for k, i := range idx {
		if i >= ms.Len() {
			return nil, fmt.Errorf("message index %d at position %d: the schema has %d messages there", i, k+1, ms.Len())
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("no message indexes")
	}
	return md, nil
}

// indexesOf is messageAt's inverse.
func indexesOf(md protoreflect.MessageDescriptor) []int {
	var idx []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		if _, ok := d.(protoreflect.MessageDescriptor); !ok {
			break
		}
		idx = append([]int{d.Index()}, idx...)
	}
	return idx
}

// findMessage finds a message by full name, or by its name within the
// file's package ("Outer.Inner" for a nested one).
func findMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	var all []string
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			if md.IsMapEntry() {
				continue
			}
			full := string(md.FullName())
			rel := strings.TrimPrefix(full, string(fd.Package())+".")
			if full == name || rel == name {
				found = md
			}
			all = append(all, rel)
			walk(md.Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		return nil, fmt.Errorf("no message %q in %s (it has %s)", name, fd.Path(), strings.Join(all, ", "))
	}
	return found, nil
}

// toolEncoder turns one JSON line into a framed record value.
type toolEncoder interface {
	append(dst, line []byte) ([]byte, error)
}

// newToolEncoder registers (or finds) the schema under the subject and
// returns an encoder framing records with its id.
func newToolEncoder(ctx context.Context, pc ProduceConfig) (toolEncoder, error) {
	if pc.Registry == nil {
		return nil, fmt.Errorf("format %s needs a schema registry", pc.ValueFormat)
	}
	subject := pc.Subject
	if subject == "" {
		subject = pc.Topic + "-value"
	}
	switch pc.ValueFormat {
	case FormatAvroConfluent:
		schema, err := avro.ArrowSchema(pc.Schema)
		if err != nil {
			return nil, err
		}
		e, err := newAvroToolEncoder(pc.Schema, schema)
		if err != nil {
			return nil, err
		}
		id, err := pc.Registry.Register(ctx, subject, pc.Schema, registry.Avro)
		if err != nil {
			return nil, err
		}
		e.header = registry.AppendHeader(nil, id)
		return e, nil
	case FormatProtobufConfluent:
		name := pc.SchemaName
		if name == "" {
			name = "schema.proto"
		}
		fd, err := compileProtoFile(filepath.Base(name), pc.Schema)
		if err != nil {
			return nil, err
		}
		if pc.Message == "" {
			return nil, errors.New("protobuf-confluent needs the message name")
		}
		md, err := findMessage(fd, pc.Message)
		if err != nil {
			return nil, err
		}
		id, err := pc.Registry.Register(ctx, subject, pc.Schema, registry.Protobuf)
		if err != nil {
			return nil, err
		}
		return &protoToolEncoder{prefix: registry.AppendIndexes(registry.AppendHeader(nil, id), indexesOf(md)), md: md}, nil
	}
	return nil, fmt.Errorf("unknown format %q (one of %s)", pc.ValueFormat, strings.Join(ProduceFormats, ", "))
}

// Column conversions between what Clink's JSON format reads and what
// avro.Encoder writes for the registered schema.
const (
	convNone   = iota
	convDate   // JSON "YYYY-MM-DD" (a string column) to date32
	convMicros // timestamp[ms] to timestamp[us] (timestamp-micros)
)

// newAvroToolEncoder reads lines into the columns of schema (ArrowSchema of
// text) and writes them with text. It refuses the schemas whose binary
// form differs from what avro.Encoder writes, naming the field: the record
// must be written exactly as the registered schema says.
func newAvroToolEncoder(text string, schema *arrow.Schema) (*avroToolEncoder, error) {
	s, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{})
	if err != nil {
		return nil, err
	}
	if r, ok := s.(*hamba.RefSchema); ok {
		s = r.Schema()
	}
	rec := s.(*hamba.RecordSchema) // avro.ArrowSchema checked
	e := &avroToolEncoder{conv: make([]int, schema.NumFields())}
	jsonFields := slices.Clone(schema.Fields())
	encFields := slices.Clone(schema.Fields())
	required := make([]bool, schema.NumFields())
	for i, f := range rec.Fields() {
		required[i] = !jsonFields[i].Nullable
		t := f.Type()
		if u, ok := t.(*hamba.UnionSchema); ok {
			if u.Types()[0].Type() != hamba.Null {
				return nil, fmt.Errorf("avro schema: field %q: produce writes a nullable field as the union [\"null\", T], not [T, \"null\"]", f.Name())
			}
			t = u.Types()[1]
		}
		if r, ok := t.(*hamba.RefSchema); ok {
			t = r.Schema()
		}
		var why string
		switch t := t.(type) {
		case *hamba.EnumSchema:
			why = "an enum"
		case *hamba.FixedSchema:
			why = "a fixed decimal"
		case *hamba.PrimitiveSchema:
			switch l := t.Logical(); {
			case l == nil:
			case l.Type() == hamba.TimestampMicros:
				e.conv[i] = convMicros
				encFields[i].Type = arrow.FixedWidthTypes.Timestamp_us
			case l.Type() == hamba.Date:
				e.conv[i] = convDate
				jsonFields[i].Type = arrow.BinaryTypes.String
			}
		}
		if why != "" {
			return nil, fmt.Errorf("avro schema: field %q: produce cannot write %s (consume reads it)", f.Name(), why)
		}
	}
	e.jsonSchema, e.encSchema = arrow.NewSchema(jsonFields, nil), arrow.NewSchema(encFields, nil)
	if err := json.CheckSchema(e.jsonSchema); err != nil {
		return nil, fmt.Errorf("avro schema: %w (produce reads lines with Clink's JSON format)", err)
	}
	if e.enc, err = avro.NewEncoder(e.encSchema); err != nil {
		return nil, err
	}
	e.dec = json.NewDecoder(e.jsonSchema, memory.DefaultAllocator, json.Options{Required: required})
	return e, nil
}

type avroToolEncoder struct {
	header     []byte
	jsonSchema *arrow.Schema // what the JSON decoder fills
	encSchema  *arrow.Schema // what the encoder writes
	conv       []int         // per column
	dec        *json.Decoder
	enc        *avro.Encoder
}

func (e *avroToolEncoder) append(dst, line []byte) ([]byte, error) {
	if err := e.dec.Append(line); err != nil {
		return dst, err
	}
	rec := e.dec.Flush()
	defer rec.Release()
	if slices.ContainsFunc(e.conv, func(c int) bool { return c != convNone }) {
		var err error
		if rec, err = e.convert(rec); err != nil {
			return dst, err
		}
		defer rec.Release()
	}
	dst = append(dst, e.header...)
	dst = e.enc.AppendRow(dst, rec, 0)
	e.enc.Unbind()
	return dst, nil
}

// convert turns a decoded one-row record into the encoder's columns.
func (e *avroToolEncoder) convert(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for i, c := range cols {
			if c != nil && e.conv[i] != convNone {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		switch e.conv[i] {
		case convNone:
			cols[i] = c
		case convDate:
			b := array.NewDate32Builder(memory.DefaultAllocator)
			str := c.(*array.String)
			for r := 0; r < str.Len(); r++ {
				if str.IsNull(r) {
					b.AppendNull()
					continue
				}
				d, err := time.Parse(time.DateOnly, str.Value(r))
				if err != nil {
					b.Release()
					return nil, fmt.Errorf("field %q: expected a date YYYY-MM-DD, found %q", rec.ColumnName(i), str.Value(r))
				}
				b.Append(arrow.Date32FromTime(d))
			}
			cols[i] = b.NewArray()
			b.Release()
		case convMicros:
			b := array.NewTimestampBuilder(memory.DefaultAllocator, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
			ts := c.(*array.Timestamp)
			for r := 0; r < ts.Len(); r++ {
				if ts.IsNull(r) {
					b.AppendNull()
					continue
				}
				b.Append(ts.Value(r) * 1000)
			}
			cols[i] = b.NewArray()
			b.Release()
		}
	}
	return array.NewRecordBatch(e.encSchema, cols, rec.NumRows()), nil
}

type protoToolEncoder struct {
	prefix []byte // header and message indexes
	md     protoreflect.MessageDescriptor
}

func (e *protoToolEncoder) append(dst, line []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(e.md)
	if err := protojson.Unmarshal(line, m); err != nil {
		return dst, err
	}
	dst = append(dst, e.prefix...)
	return proto.MarshalOptions{}.MarshalAppend(dst, m)
}

// toolFormat writes the records of Consume with a ValueFormat: values
// only, or {"key":K,"value":V} with a KeyFormat.
type toolFormat struct {
	key, value toolDecoder // key nil: values only
	out        []byte
}

func newToolFormat(cfg ConsumeConfig) (*toolFormat, error) {
	if cfg.ValueFormat == "" {
		if cfg.KeyFormat != "" {
			return nil, errors.New("a key format needs a value format")
		}
		return nil, nil
	}
	f := &toolFormat{}
	var err error
	if f.value, err = newToolDecoder(cfg.ValueFormat, cfg.Registry); err != nil {
		return nil, fmt.Errorf("value format: %w", err)
	}
	if cfg.KeyFormat != "" {
		if f.key, err = newToolDecoder(cfg.KeyFormat, cfg.Registry); err != nil {
			return nil, fmt.Errorf("key format: %w", err)
		}
	}
	return f, nil
}

// add decodes one record; on error nothing of it is written.
func (f *toolFormat) add(ctx context.Context, r *kgo.Record) error {
	if f.key == nil {
		return f.value.add(ctx, r.Value)
	}
	// Each record is flushed at once, to pair its key with its value.
	if err := f.key.add(ctx, r.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := f.value.add(ctx, r.Value); err != nil {
		f.key.flush(nil)
		return fmt.Errorf("value: %w", err)
	}
	f.out = append(f.out, `{"key":`...)
	f.out = f.key.flush(f.out)
	f.out = append(f.out[:len(f.out)-1], `,"value":`...)
	f.out = f.value.flush(f.out)
	f.out = append(f.out[:len(f.out)-1], "}\n"...)
	return nil
}

// flush returns every line added since the last flush; the slice is
// reused by the next add.
func (f *toolFormat) flush() []byte {
	if f.key == nil {
		f.out = f.value.flush(f.out[:0])
		return f.out
	}
	out := f.out
	f.out = f.out[:0]
	return out
}

func (f *toolFormat) release() {
	f.value.release()
	if f.key != nil {
		f.key.release()
	}
}
