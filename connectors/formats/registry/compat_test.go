package registry

import (
	"errors"
	"strings"
	"testing"
)

const (
	userV1 = `{"type":"record","name":"User","namespace":"clink","fields":[{"name":"id","type":"long"}]}`
	// v2 adds a field without a default: new readers cannot read v1 data.
	userV2NoDefault = `{"type":"record","name":"User","namespace":"clink","fields":[{"name":"id","type":"long"},{"name":"email","type":"string"}]}`
	// v2 adds a field with a default: both directions work.
	userV2Default = `{"type":"record","name":"User","namespace":"clink","fields":[{"name":"id","type":"long"},{"name":"email","type":"string","default":""}]}`
	// v3 drops id (no default in v1): old readers cannot read it.
	userV3NoID = `{"type":"record","name":"User","namespace":"clink","fields":[{"name":"email","type":"string","default":""}]}`
)

func TestCheckAvro(t *testing.T) {
	for _, c := range []struct {
		level Level
		new   string
		olds  []string
		ok    bool
		want  string
	}{
		{Backward, userV2NoDefault, []string{userV1}, false, "email"},
		{Backward, userV2Default, []string{userV1}, true, ""},
		{Forward, userV2NoDefault, []string{userV1}, true, ""},
		{Forward, userV3NoID, []string{userV2Default}, false, "old schema 1 of 1 cannot read"},
		{Backward, userV3NoID, []string{userV2Default}, true, ""},
		{Full, userV2Default, []string{userV1}, true, ""},
		{Full, userV2NoDefault, []string{userV1}, false, "the new schema cannot read"},
		{None, userV3NoID, []string{userV1}, true, ""},
		// Non-transitive levels check the latest old schema only: v2
		// without a default cannot read v1 data, but can read v2's.
		{Forward, userV2Default, []string{userV3NoID, userV1}, true, ""},
		{ForwardTransitive, userV2Default, []string{userV3NoID, userV1}, true, ""},
		{BackwardTransitive, userV2NoDefault, []string{userV1, userV2Default}, false, "old schema 1 of 2"},
		{Backward, userV2NoDefault, []string{userV1, userV2Default}, true, ""},
		{Backward, `{"type":"string"}`, []string{`{"type":"int"}`}, false, ""},
		{Backward, `"long"`, []string{`"int"`}, true, ""}, // promotion
	} {
		err := Check(c.level, Avro, c.new, c.olds)
		if c.ok != (err == nil) {
			t.Errorf("%s %s after %v: err %v, want ok=%v", c.level, c.new, c.olds, err, c.ok)
			continue
		}
		var ie *IncompatibleError
		if err != nil && (!errors.As(err, &ie) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: error %v does not contain %q", c.level, err, c.want)
		}
	}
}

func TestCheckInvalid(t *testing.T) {
	var ie *InvalidSchemaError
	if err := Check(Backward, Avro, `{"type":"record"`, nil); !errors.As(err, &ie) {
		t.Fatalf("bad avro: %v", err)
	}
	if err := Check(Backward, Protobuf, `message {`, nil); !errors.As(err, &ie) {
		t.Fatalf("bad proto: %v", err)
	}
	if err := Check(Backward, JSON, `{}`, nil); !errors.As(err, &ie) || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("json: %v", err)
	}
	if err := Check("SIDEWAYS", Avro, userV1, nil); err == nil || !strings.Contains(err.Error(), "SIDEWAYS") {
		t.Fatalf("bad level: %v", err)
	}
}

func TestCanonicalAvro(t *testing.T) {
	a, err := canonical(Avro, userV1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := canonical(Avro, "{ \"namespace\": \"clink\", \"type\": \"record\",\n \"name\": \"User\", \"fields\": [ {\"type\":\"long\", \"name\":\"id\"} ] }")
	if a != b {
		t.Fatalf("%s != %s", a, b)
	}
	c, _ := canonical(Avro, userV2Default)
	if a == c {
		t.Fatal("different schemas share a key")
	}
}

const protoV1 = `syntax = "proto3";
package clink.test;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string item = 2;
  google.protobuf.Timestamp at = 3;
  map<string, int32> tags = 4;
  message Line { int32 qty = 1; }
  repeated Line lines = 5;
}
message Other { string x = 1; }
`

func TestCheckProtobuf(t *testing.T) {
	for _, c := range []struct {
		name  string
		level Level
		new   string
		olds  []string
		want  string // "" = compatible
	}{
		{"same", Full, protoV1, []string{protoV1}, ""},
		{"renamed field, comment, added field", Full,
			strings.Replace(strings.Replace(protoV1, "string item = 2;", "// renamed\n  string product = 2;\n  bool gift = 6;", 1), "tags = 4", "labels = 4", 1),
			[]string{protoV1}, ""},
		{"removed optional field", Full, strings.Replace(protoV1, "string item = 2;", "", 1), []string{protoV1}, ""},
		{"int32 to int64", Full, strings.Replace(protoV1, "int32 qty", "int64 qty", 1), []string{protoV1}, ""},
		{"string to bytes", Full, strings.Replace(protoV1, "string item", "bytes item", 1), []string{protoV1}, ""},
		{"type change", Backward, strings.Replace(protoV1, "string item", "double item", 1), []string{protoV1}, "field 2 (item) changes type from string to double"},
		{"message type change", Backward, strings.Replace(protoV1, "google.protobuf.Timestamp at", "Other at", 1), []string{protoV1}, "google.protobuf.Timestamp to clink.test.Other"},
		{"repeated", Backward, strings.Replace(protoV1, "string item", "repeated string item", 1), []string{protoV1}, "singular to repeated"},
		{"message removed", Backward, strings.Replace(protoV1, "message Other { string x = 1; }", "", 1), []string{protoV1}, "message clink.test.Other removed"},
		{"message added is backward-fine", Backward, protoV1, []string{strings.Replace(protoV1, "message Other { string x = 1; }", "", 1)}, ""},
		{"message added is not forward", Forward, protoV1, []string{strings.Replace(protoV1, "message Other { string x = 1; }", "", 1)}, "message clink.test.Other removed"},
		{"package", Backward, strings.Replace(protoV1, "package clink.test;", "package clink.other;", 1), []string{protoV1}, "package changed"},
		{"map value", Backward, strings.Replace(protoV1, "map<string, int32>", "map<string, string>", 1), []string{protoV1}, "map value changes type"},
		{"into existing oneof", Backward,
			`syntax = "proto3"; message M { oneof o { int32 a = 1; int32 b = 2; } }`,
			[]string{`syntax = "proto3"; message M { oneof o { int32 a = 1; } int32 b = 2; }`}, "moved into oneof o"},
		{"one field into new oneof", Backward,
			`syntax = "proto3"; message M { oneof o { int32 a = 1; } }`,
			[]string{`syntax = "proto3"; message M { int32 a = 1; }`}, ""},
		{"required added", Backward,
			`syntax = "proto2"; message M { optional int32 a = 1; required int32 b = 2; }`,
			[]string{`syntax = "proto2"; message M { optional int32 a = 1; }`}, "required field 2 (b) added"},
		{"required removed", Backward,
			`syntax = "proto2"; message M { optional int32 a = 1; }`,
			[]string{`syntax = "proto2"; message M { optional int32 a = 1; required int32 b = 2; }`}, "required field 2 (b) removed"},
		{"made required", Backward,
			`syntax = "proto2"; message M { required int32 a = 1; }`,
			[]string{`syntax = "proto2"; message M { optional int32 a = 1; }`}, "required and not required"},
	} {
		err := Check(c.level, Protobuf, c.new, c.olds)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCanonicalProtobuf(t *testing.T) {
	a, err := canonical(Protobuf, protoV1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := canonical(Protobuf, "// a comment\n"+strings.ReplaceAll(protoV1, "\n", "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("comments and blank lines change the key")
	}
	c, _ := canonical(Protobuf, strings.Replace(protoV1, "item = 2", "item = 7", 1))
	if a == c {
		t.Fatal("different schemas share a key")
	}
}
