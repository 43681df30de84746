package protobuf

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// MessageFor derives a proto3 message named name (optionally qualified
// with a package, "pkg.Name") from the columns of schema, for a sink that
// registers a schema when the user gave none. Fields are numbered from 1
// in column order and named as the columns, which must be valid protobuf
// identifiers. The mapping is:
//
//	BIGINT       int64
//	INT          int32
//	SMALLINT     int32
//	TINYINT      int32
//	DOUBLE       double
//	FLOAT        float
//	VARCHAR      string
//	BOOLEAN      bool
//	TIMESTAMP(3) google.protobuf.Timestamp
//	DATE         int32 (days since 1970-01-01)
//	DECIMAL(p,s) string (plain decimal text with s fraction digits)
//
// A nullable column becomes an 'optional' field, so NULL (field absent)
// and zero stay apart; a NOT NULL column becomes a plain proto3 field.
// TIMESTAMP becomes the well-known Timestamp message rather than int64
// milliseconds because other consumers (protoc-generated code, Flink,
// schema-registry tooling) understand it as a point in time; being a
// message, it has presence without 'optional'.
func MessageFor(schema *arrow.Schema, name string) (string, error) {
	pkg, msg := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		pkg, msg = name[:i], name[i+1:]
		for _, p := range strings.Split(pkg, ".") {
			if !isIdent(p) {
				return "", fmt.Errorf("protobuf format: message name %q: %q is not a valid package name", name, pkg)
			}
		}
	}
	if !isIdent(msg) {
		return "", fmt.Errorf("protobuf format: message name %q is not a valid identifier", name)
	}
	var body strings.Builder
	usesTimestamp := false
	seen := map[string]string{}
	for c, f := range schema.Fields() {
		if !isIdent(f.Name) {
			return "", fmt.Errorf("protobuf format: column %q is not a valid protobuf field name (letters, digits and '_', not starting with a digit)", f.Name)
		}
		if prev, ok := seen[strings.ToLower(f.Name)]; ok {
			return "", fmt.Errorf("protobuf format: columns %q and %q differ only in case", prev, f.Name)
		}
		seen[strings.ToLower(f.Name)] = f.Name
		var typ string
		switch arrowcol.KindOf(f.Type) {
		case arrowcol.Int64:
			typ = "int64"
		case arrowcol.Int32, arrowcol.Int16, arrowcol.Int8, arrowcol.Date:
			typ = "int32"
		case arrowcol.Float64:
			typ = "double"
		case arrowcol.Float32:
			typ = "float"
		case arrowcol.String, arrowcol.Decimal:
			typ = "string"
		case arrowcol.Bool:
			typ = "bool"
		case arrowcol.TimestampMs:
			typ = timestampName
			usesTimestamp = true
		default:
			return "", fmt.Errorf("protobuf format: column %q: type %s is not supported", f.Name, f.Type)
		}
		label := ""
		if f.Nullable && typ != timestampName {
			label = "optional "
		}
		fmt.Fprintf(&body, "  %s%s %s = %d;\n", label, typ, f.Name, c+1)
	}
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n\n")
	if pkg != "" {
		fmt.Fprintf(&b, "package %s;\n\n", pkg)
	}
	if usesTimestamp {
		b.WriteString("import \"google/protobuf/timestamp.proto\";\n\n")
	}
	fmt.Fprintf(&b, "message %s {\n%s}\n", msg, body.String())
	return b.String(), nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
