package protobuf

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// conv is how a field's wire value is read: its protobuf scalar type, or
// google.protobuf.Timestamp.
type conv uint8

const (
	cInvalid conv = iota
	cInt32
	cInt64
	cUint32
	cUint64
	cSint32
	cSint64
	cFixed32
	cSfixed32
	cFixed64
	cSfixed64
	cBool
	cEnum
	cFloat
	cDouble
	cString
	cTimestamp
)

func (c conv) isInt() bool { return cInt32 <= c && c <= cSfixed64 }

func (c conv) is64() bool {
	return c == cInt64 || c == cUint64 || c == cSint64 || c == cFixed64 || c == cSfixed64
}

func (c conv) isUnsigned() bool {
	return c == cUint32 || c == cUint64 || c == cFixed32 || c == cFixed64
}

// wire is the wire type a field of conv c is written with.
func (c conv) wire() protowire.Type {
	switch c {
	case cFixed32, cSfixed32, cFloat:
		return protowire.Fixed32Type
	case cFixed64, cSfixed64, cDouble:
		return protowire.Fixed64Type
	case cString, cTimestamp:
		return protowire.BytesType
	}
	return protowire.VarintType
}

func scalarConv(k protoreflect.Kind) conv {
	switch k {
	case protoreflect.Int32Kind:
		return cInt32
	case protoreflect.Int64Kind:
		return cInt64
	case protoreflect.Uint32Kind:
		return cUint32
	case protoreflect.Uint64Kind:
		return cUint64
	case protoreflect.Sint32Kind:
		return cSint32
	case protoreflect.Sint64Kind:
		return cSint64
	case protoreflect.Fixed32Kind:
		return cFixed32
	case protoreflect.Sfixed32Kind:
		return cSfixed32
	case protoreflect.Fixed64Kind:
		return cFixed64
	case protoreflect.Sfixed64Kind:
		return cSfixed64
	case protoreflect.BoolKind:
		return cBool
	case protoreflect.EnumKind:
		return cEnum
	case protoreflect.FloatKind:
		return cFloat
	case protoreflect.DoubleKind:
		return cDouble
	case protoreflect.StringKind:
		return cString
	}
	return cInvalid
}

// wrappers are the google.protobuf wrapper messages that read as nullable
// scalars (BytesValue is not: there is no BYTES column type).
var wrappers = map[protoreflect.FullName]conv{
	"google.protobuf.DoubleValue": cDouble,
	"google.protobuf.FloatValue":  cFloat,
	"google.protobuf.Int64Value":  cInt64,
	"google.protobuf.UInt64Value": cUint64,
	"google.protobuf.Int32Value":  cInt32,
	"google.protobuf.UInt32Value": cUint32,
	"google.protobuf.BoolValue":   cBool,
	"google.protobuf.StringValue": cString,
}

const timestampName = "google.protobuf.Timestamp"

// binding ties a schema column to its message field.
type binding struct {
	col     int // schema column
	field   protoreflect.FieldDescriptor
	kind    arrowcol.Kind
	conv    conv // of the value; for a wrapper, of its field 1
	wrapped bool // the field is a google.protobuf.*Value wrapper
}

// wire is the wire type of the field itself.
func (b *binding) wire() protowire.Type {
	if b.wrapped {
		return protowire.BytesType
	}
	return b.conv.wire()
}

// CheckSchema reports whether every column of schema can be read from (and
// written to) a field of md: each column must name a field (exactly, or
// else case-insensitively) whose type maps to the column's (see the
// package documentation). Fields no column names are ignored.
func CheckSchema(schema *arrow.Schema, md protoreflect.MessageDescriptor) error {
	_, err := bind(schema, md)
	return err
}

func bind(schema *arrow.Schema, md protoreflect.MessageDescriptor) ([]binding, error) {
	bs := make([]binding, schema.NumFields())
	used := make(map[protoreflect.FieldNumber]string, schema.NumFields())
	for c, f := range schema.Fields() {
		k := arrowcol.KindOf(f.Type)
		if k == arrowcol.Invalid || k == arrowcol.TimestampUs {
			return nil, fmt.Errorf("protobuf format: column %q: type %s is not supported", f.Name, f.Type)
		}
		fd, err := fieldByName(md, f.Name)
		if err != nil {
			return nil, err
		}
		if prev, ok := used[fd.Number()]; ok {
			return nil, fmt.Errorf("protobuf format: columns %q and %q both name field %q of %s", prev, f.Name, fd.Name(), md.FullName())
		}
		used[fd.Number()] = f.Name
		b := binding{col: c, field: fd, kind: k}
		if err := b.resolve(f); err != nil {
			return nil, err
		}
		bs[c] = b
	}
	return bs, nil
}

// fieldByName finds the field a column names: by exact name, else by the
// only field whose name matches case-insensitively.
func fieldByName(md protoreflect.MessageDescriptor, name string) (protoreflect.FieldDescriptor, error) {
	fields := md.Fields()
	if fd := fields.ByName(protoreflect.Name(name)); fd != nil {
		return fd, nil
	}
	var found protoreflect.FieldDescriptor
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if strings.EqualFold(string(fd.Name()), name) {
			if found != nil {
				return nil, fmt.Errorf("protobuf format: column %q matches fields %q and %q of %s; rename the column to one of them exactly", name, found.Name(), fd.Name(), md.FullName())
			}
			found = fd
		}
	}
	if found == nil {
		return nil, fmt.Errorf("protobuf format: column %q: message %s has no field of that name", name, md.FullName())
	}
	return found, nil
}

// resolve works out how b's field reads into column f, or why it cannot.
func (b *binding) resolve(f arrow.Field) error {
	fd := b.field
	bad := func(format string, args ...any) error {
		return fmt.Errorf("protobuf format: column %q: field %q: %s", f.Name, fd.Name(), fmt.Sprintf(format, args...))
	}
	switch {
	case fd.IsMap():
		return bad("map fields are not supported (no MAP column type)")
	case fd.IsList():
		return bad("repeated fields are not supported (no ARRAY column type)")
	}
	switch fd.Kind() {
	case protoreflect.GroupKind:
		return bad("groups are not supported")
	case protoreflect.BytesKind:
		return bad("bytes fields are not supported (no BYTES column type)")
	case protoreflect.MessageKind:
		name := fd.Message().FullName()
		if name == timestampName {
			b.conv = cTimestamp
		} else if c, ok := wrappers[name]; ok {
			b.conv, b.wrapped = c, true
		} else {
			return bad("nested message %s is not supported (no ROW column type)", name)
		}
	default:
		b.conv = scalarConv(fd.Kind())
	}
	ok := false
	c := b.conv
	switch b.kind {
	case arrowcol.Int8, arrowcol.Int16, arrowcol.Int32, arrowcol.Int64, arrowcol.Date:
		ok = c.isInt()
	case arrowcol.TimestampMs:
		ok = c == cTimestamp || c.isInt() && c.is64()
	case arrowcol.Float64:
		ok = c == cDouble || c == cFloat
	case arrowcol.Float32:
		ok = c == cFloat
	case arrowcol.Bool:
		ok = c == cBool
	case arrowcol.String:
		ok = c == cString || c == cEnum
	case arrowcol.Decimal:
		ok = c == cString
	}
	if !ok {
		return bad("its type %s cannot be read as %s", fieldTypeName(fd), f.Type)
	}
	return nil
}

// fieldTypeName is the field's type as the .proto file spells it.
func fieldTypeName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return "enum " + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}
