package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// SchemaType is a schema's language, spelled as in the REST API.
type SchemaType string

const (
	Avro     SchemaType = "AVRO"
	Protobuf SchemaType = "PROTOBUF"
	JSON     SchemaType = "JSON" // understood by clients; refused by the dev server and by Check
)

// ParseType reads a schemaType as the REST API spells it; "" is AVRO.
func ParseType(s string) (SchemaType, error) {
	switch t := SchemaType(strings.ToUpper(s)); t {
	case "":
		return Avro, nil
	case Avro, Protobuf, JSON:
		return t, nil
	}
	return "", &InvalidSchemaError{Reason: fmt.Sprintf("unknown schemaType %q (want AVRO or PROTOBUF)", s)}
}

// Level is a compatibility level.
type Level string

const (
	None               Level = "NONE"
	Backward           Level = "BACKWARD"
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	Forward            Level = "FORWARD"
	ForwardTransitive  Level = "FORWARD_TRANSITIVE"
	Full               Level = "FULL"
	FullTransitive     Level = "FULL_TRANSITIVE"
)

// DefaultLevel is Confluent's default.
const DefaultLevel = Backward

// ParseLevel reads a compatibility level (case-insensitive).
func ParseLevel(s string) (Level, error) {
	switch l := Level(strings.ToUpper(s)); l {
	case None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive:
		return l, nil
	}
	return "", fmt.Errorf("invalid compatibility level %q (want NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE)", s)
}

func (l Level) transitive() bool { return strings.HasSuffix(string(l), "_TRANSITIVE") }
func (l Level) backward() bool {
	return l == Backward || l == BackwardTransitive || l == Full || l == FullTransitive
}
func (l Level) forward() bool {
	return l == Forward || l == ForwardTransitive || l == Full || l == FullTransitive
}

// InvalidSchemaError says a schema does not parse (REST error 42201).
type InvalidSchemaError struct {
	Type   SchemaType
	Reason string
}

func (e *InvalidSchemaError) Error() string {
	if e.Type == "" {
		return "invalid schema: " + e.Reason
	}
	return fmt.Sprintf("invalid %s schema: %s", e.Type, e.Reason)
}

// IncompatibleError lists why a schema is incompatible (REST error 409).
type IncompatibleError struct {
	Level    Level
	Messages []string
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("schema is incompatible under %s: %s", e.Level, strings.Join(e.Messages, "; "))
}

// Check reports whether newSchema may follow olds (oldest first) under
// level. It returns nil when compatible, an *InvalidSchemaError when a
// schema does not parse, and an *IncompatibleError naming every reason
// otherwise.
//
// BACKWARD: the new schema can read data written with the latest old one;
// FORWARD: the latest old schema can read data written with the new one;
// FULL: both; the _TRANSITIVE levels check against every old schema
// instead of the latest only; NONE checks only that newSchema parses.
//
// Avro uses hamba/avro's reader/writer resolution rules. Protobuf is a
// comparison of descriptors, for the message types both schemas hold
// (matched by full name); a data-writing schema W and a reading schema R
// are incompatible when:
//   - the package differs;
//   - a message of W is missing from R;
//   - a field number present in both changes wire type (the compatible
//     groups are int32/int64/uint32/uint64/bool/enum, sint32/sint64,
//     fixed32/sfixed32, fixed64/sfixed64, string/bytes; message and group
//     fields must keep their message type's full name; map fields compare
//     their key and value types);
//   - a field changes between repeated and singular;
//   - a proto2 required field is added, removed, or made required;
//   - a field moves into a oneof that already existed, or two or more
//     fields move into a new oneof.
//
// Renamed fields, added and removed optional fields, added messages, and
// enum changes are accepted (enum values are not compared).
// JSON Schema is not supported.
func Check(level Level, typ SchemaType, newSchema string, olds []string) error {
	vs := make([]version, len(olds))
	for i, s := range olds {
		vs[i] = version{label: fmt.Sprintf("old schema %d of %d", i+1, len(olds)), text: s}
	}
	return check(level, typ, newSchema, vs)
}

// version is an old schema and how messages name it.
type version struct {
	label string
	text  string
}

func check(level Level, typ SchemaType, newSchema string, olds []version) error {
	if _, err := ParseLevel(string(level)); err != nil {
		return err
	}
	parsed, err := parse(typ, newSchema)
	if err != nil {
		return err
	}
	if level == None || len(olds) == 0 {
		return nil
	}
	if !level.transitive() {
		olds = olds[len(olds)-1:]
	}
	var msgs []string
	for _, o := range olds {
		old, err := parse(typ, o.text)
		if err != nil {
			return fmt.Errorf("%s does not parse: %w", o.label, err)
		}
		if level.backward() {
			for _, m := range compatible(typ, parsed, old) {
				msgs = append(msgs, fmt.Sprintf("the new schema cannot read data written with %s: %s", o.label, m))
			}
		}
		if level.forward() {
			for _, m := range compatible(typ, old, parsed) {
				msgs = append(msgs, fmt.Sprintf("%s cannot read data written with the new schema: %s", o.label, m))
			}
		}
	}
	if len(msgs) > 0 {
		return &IncompatibleError{Level: level, Messages: msgs}
	}
	return nil
}

// parse returns an avro.Schema or a protoreflect.FileDescriptor.
func parse(typ SchemaType, text string) (any, error) {
	switch typ {
	case Avro, "":
		// A fresh cache: hamba's default one is process-global, and two
		// versions of a record with the same name must not meet in it.
		s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
		if err != nil {
			return nil, &InvalidSchemaError{Type: Avro, Reason: err.Error()}
		}
		return s, nil
	case Protobuf:
		return parseProto(text)
	case JSON:
		return nil, &InvalidSchemaError{Type: JSON, Reason: "JSON Schema is not supported (AVRO and PROTOBUF are)"}
	}
	return nil, &InvalidSchemaError{Reason: fmt.Sprintf("unknown schemaType %q", typ)}
}

// compatible lists why reader cannot read writer's data; both come from
// parse with the same typ.
func compatible(typ SchemaType, reader, writer any) []string {
	if typ == Protobuf {
		return protoCompatible(reader.(protoreflect.FileDescriptor), writer.(protoreflect.FileDescriptor))
	}
	// A fresh checker each time: hamba's caches results by Parsing
	// Canonical Form fingerprints, which ignore defaults, and defaults
	// decide compatibility.
	if err := avro.NewSchemaCompatibility().Compatible(reader.(avro.Schema), writer.(avro.Schema)); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// Validate reports whether text parses as a schema of typ.
func Validate(typ SchemaType, text string) error {
	_, err := parse(typ, text)
	return err
}

// canonical returns a key under which equal schemas meet: for Avro the
// JSON with insignificant whitespace removed and object keys sorted (Avro
// gives key order no meaning; array order, e.g. of fields, is kept); for
// Protobuf the deterministic encoding of the file descriptor without
// source positions or comments. Two registrations with the same key share
// one id.
func canonical(typ SchemaType, text string) (string, error) {
	p, err := parse(typ, text)
	if err != nil {
		return "", err
	}
	if typ == Protobuf {
		fdp := protodesc.ToFileDescriptorProto(p.(protoreflect.FileDescriptor))
		fdp.SourceCodeInfo = nil
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
		if err != nil {
			return "", err
		}
		return "PROTOBUF:" + base64.StdEncoding.EncodeToString(b), nil
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", &InvalidSchemaError{Type: Avro, Reason: err.Error()}
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return "AVRO:" + strings.TrimSpace(buf.String()), nil
}

const protoFileName = "schema.proto"

func parseProto(text string) (protoreflect.FileDescriptor, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{protoFileName: text}),
		}),
	}
	files, err := c.Compile(context.Background(), protoFileName)
	if err != nil {
		reason := err.Error()
		if strings.Contains(reason, "not found") {
			reason += " (imports other than google/protobuf/*.proto need schema references, which are not supported)"
		}
		return nil, &InvalidSchemaError{Type: Protobuf, Reason: reason}
	}
	return files[0], nil
}

// protoCompatible lists why reader cannot read data written with writer.
func protoCompatible(reader, writer protoreflect.FileDescriptor) []string {
	var msgs []string
	if reader.Package() != writer.Package() {
		msgs = append(msgs, fmt.Sprintf("package changed from %q to %q", writer.Package(), reader.Package()))
	}
	rm := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	collectMessages(reader.Messages(), rm)
	wm := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	collectMessages(writer.Messages(), wm)
	// Walk the writer's messages in file order so messages are stable.
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			w := ms.Get(i)
			if w.IsMapEntry() {
				continue
			}
			r, ok := rm[w.FullName()]
			if !ok {
				if reader.Package() == writer.Package() {
					msgs = append(msgs, fmt.Sprintf("message %s removed", w.FullName()))
				}
			} else {
				msgs = append(msgs, protoMessage(r, w)...)
			}
			walk(w.Messages())
		}
	}
	walk(writer.Messages())
	return msgs
}

func collectMessages(ms protoreflect.MessageDescriptors, into map[protoreflect.FullName]protoreflect.MessageDescriptor) {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		into[m.FullName()] = m
		collectMessages(m.Messages(), into)
	}
}

func protoMessage(r, w protoreflect.MessageDescriptor) []string {
	var msgs []string
	name := w.FullName()
	wf, rf := w.Fields(), r.Fields()
	for i := 0; i < wf.Len(); i++ {
		f := wf.Get(i)
		g := rf.ByNumber(f.Number())
		if g == nil {
			if f.Cardinality() == protoreflect.Required {
				msgs = append(msgs, fmt.Sprintf("%s: required field %d (%s) removed", name, f.Number(), f.Name()))
			}
			continue
		}
		if why := protoFieldType(g, f); why != "" {
			msgs = append(msgs, fmt.Sprintf("%s: field %d (%s) %s", name, f.Number(), g.Name(), why))
		}
		if (g.Cardinality() == protoreflect.Required) != (f.Cardinality() == protoreflect.Required) {
			msgs = append(msgs, fmt.Sprintf("%s: field %d (%s) changes between required and not required", name, f.Number(), g.Name()))
		}
	}
	for i := 0; i < rf.Len(); i++ {
		g := rf.Get(i)
		if wf.ByNumber(g.Number()) == nil && g.Cardinality() == protoreflect.Required {
			msgs = append(msgs, fmt.Sprintf("%s: required field %d (%s) added", name, g.Number(), g.Name()))
		}
	}
	// Oneofs: a field the writer had outside a oneof and the reader has
	// inside one is "moved"; into a oneof the writer already had, or
	// several into a new one, two values may then arrive for one oneof.
	ro := r.Oneofs()
	for i := 0; i < ro.Len(); i++ {
		o := ro.Get(i)
		if o.IsSynthetic() {
			continue
		}
		var moved []string
		for j := 0; j < o.Fields().Len(); j++ {
			g := o.Fields().Get(j)
			f := wf.ByNumber(g.Number())
			if f == nil {
				continue
			}
			if wo := f.ContainingOneof(); wo == nil || wo.IsSynthetic() {
				moved = append(moved, fmt.Sprintf("%d (%s)", g.Number(), g.Name()))
			}
		}
		existed := false
		for j := 0; j < w.Oneofs().Len(); j++ {
			if wo := w.Oneofs().Get(j); !wo.IsSynthetic() && wo.Name() == o.Name() {
				existed = true
			}
		}
		if (existed && len(moved) > 0) || len(moved) > 1 {
			msgs = append(msgs, fmt.Sprintf("%s: field(s) %s moved into oneof %s", name, strings.Join(moved, ", "), o.Name()))
		}
	}
	return msgs
}

// protoFieldType says why field r cannot read what w wrote, or "".
func protoFieldType(r, w protoreflect.FieldDescriptor) string {
	if r.IsList() != w.IsList() || r.IsMap() != w.IsMap() {
		return fmt.Sprintf("changes from %s to %s", cardinality(w), cardinality(r))
	}
	if r.IsMap() {
		if why := protoFieldType(r.MapKey(), w.MapKey()); why != "" {
			return "map key " + why
		}
		if why := protoFieldType(r.MapValue(), w.MapValue()); why != "" {
			return "map value " + why
		}
		return ""
	}
	rk, wk := r.Kind(), w.Kind()
	if wireGroup(rk) != wireGroup(wk) {
		return fmt.Sprintf("changes type from %s to %s", typeName(w), typeName(r))
	}
	if (rk == protoreflect.MessageKind || rk == protoreflect.GroupKind) && r.Message().FullName() != w.Message().FullName() {
		return fmt.Sprintf("changes type from %s to %s", typeName(w), typeName(r))
	}
	return ""
}

func cardinality(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map"
	case f.IsList():
		return "repeated"
	}
	return "singular"
}

func typeName(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(f.Message().FullName())
	case protoreflect.EnumKind:
		return "enum " + string(f.Enum().FullName())
	}
	return f.Kind().String()
}

// wireGroup names the kinds that read each other's encoding.
func wireGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "bytes"
	}
	return k.String() // float, double, message, group: alone
}
