package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// startServer serves a registry on a loopback port and returns its URL.
func startServer(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

func srClient(t *testing.T, url string, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// wantCode fails unless err is a registry error with the given code.
func wantCode(t *testing.T, err error, code int, contains string) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want error %d, got %v", code, err)
	}
	if re.ErrorCode != code || !strings.Contains(re.Message, contains) {
		t.Fatalf("want error %d containing %q, got %d %q (HTTP %d)", code, contains, re.ErrorCode, re.Message, re.StatusCode)
	}
}

func avroSchema(text string) sr.Schema { return sr.Schema{Schema: text} }

func TestServerRegisterLookupVersions(t *testing.T) {
	ctx := context.Background()
	_, url := startServer(t, Options{})
	cl := srClient(t, url)

	id1, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV1), -1, -1)
	if err != nil || id1 != 1 {
		t.Fatalf("register: %d %v", id1, err)
	}
	// Same schema again, even spelled differently: same id, no new version.
	again, err := cl.RegisterSchema(ctx, "users-value", avroSchema(" "+userV1+"\n"), -1, -1)
	if err != nil || again != id1 {
		t.Fatalf("re-register: %d %v", again, err)
	}
	// A second subject with the same schema shares the id.
	other, err := cl.CreateSchema(ctx, "audit-value", avroSchema(userV1))
	if err != nil || other.ID != id1 || other.Version != 1 || other.Subject != "audit-value" {
		t.Fatalf("second subject: %+v %v", other, err)
	}
	// BACKWARD (default) refuses a field added without default...
	_, err = cl.RegisterSchema(ctx, "users-value", avroSchema(userV2NoDefault), -1, -1)
	wantCode(t, err, 409, "email")
	// ...and accepts one with a default.
	id2, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV2Default), -1, -1)
	if err != nil || id2 != 2 {
		t.Fatalf("v2: %d %v", id2, err)
	}

	versions, err := cl.SubjectVersions(ctx, "users-value")
	if err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("versions: %v %v", versions, err)
	}
	latest, err := cl.SchemaByVersion(ctx, "users-value", -1)
	if err != nil || latest.Version != 2 || latest.ID != 2 || latest.Schema.Schema != userV2Default || latest.Type != sr.TypeAvro {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	text, err := cl.SchemaTextByVersion(ctx, "users-value", 1)
	if err != nil || text != userV1 {
		t.Fatalf("raw version: %q %v", text, err)
	}
	byID, err := cl.SchemaByID(ctx, 2)
	if err != nil || byID.Schema != userV2Default {
		t.Fatalf("by id: %+v %v", byID, err)
	}
	raw, err := cl.SchemaTextByID(ctx, 1)
	if err != nil || raw != userV1 {
		t.Fatalf("raw by id: %q %v", raw, err)
	}
	found, err := cl.LookupSchema(ctx, "users-value", avroSchema(userV1))
	if err != nil || found.ID != 1 || found.Version != 1 {
		t.Fatalf("lookup: %+v %v", found, err)
	}
	_, err = cl.LookupSchema(ctx, "users-value", avroSchema(userV3NoID))
	wantCode(t, err, 40403, "not found")
	_, err = cl.LookupSchema(ctx, "nobody", avroSchema(userV1))
	wantCode(t, err, 40401, `"nobody"`)
	subjects, err := cl.Subjects(ctx)
	if err != nil || !slices.Equal(subjects, []string{"audit-value", "users-value"}) {
		t.Fatalf("subjects: %v %v", subjects, err)
	}
	usages, err := cl.SchemaVersionsByID(ctx, 1)
	if err != nil || len(usages) != 2 {
		t.Fatalf("usages: %v %v", usages, err)
	}
	types, err := cl.SupportedTypes(ctx)
	if err != nil || !slices.Equal(types, []sr.SchemaType{sr.TypeAvro, sr.TypeProtobuf}) {
		t.Fatalf("types: %v %v", types, err)
	}

	_, err = cl.SchemaByID(ctx, 99)
	wantCode(t, err, 40403, "99")
	_, err = cl.SchemaByVersion(ctx, "users-value", 7)
	wantCode(t, err, 40402, "7")
	_, err = cl.SchemaByVersion(ctx, "nobody", 1)
	wantCode(t, err, 40401, "nobody")
	_, err = cl.RegisterSchema(ctx, "bad", avroSchema(`{"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]}`), -1, -1)
	wantCode(t, err, 42201, "invalid AVRO schema")
	_, err = cl.RegisterSchema(ctx, "bad", sr.Schema{Schema: `{}`, Type: sr.TypeJSON}, -1, -1)
	wantCode(t, err, 42201, "JSON Schema is not supported")
	_, err = cl.RegisterSchema(ctx, "bad", sr.Schema{Schema: userV1, References: []sr.SchemaReference{{Name: "x", Subject: "y", Version: 1}}}, -1, -1)
	wantCode(t, err, 42201, "references are not supported")
}

func TestServerConfigAndCompatibility(t *testing.T) {
	ctx := context.Background()
	_, url := startServer(t, Options{})
	cl := srClient(t, url)

	global := cl.Compatibility(ctx)
	if global[0].Err != nil || global[0].Level != sr.CompatBackward {
		t.Fatalf("global: %+v", global[0])
	}
	got := cl.Compatibility(ctx, "users-value")
	wantCode(t, got[0].Err, 40408, "users-value")

	if _, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV1), -1, -1); err != nil {
		t.Fatal(err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "users-value", -1, avroSchema(userV2NoDefault))
	if err != nil || res.Is || len(res.Messages) == 0 || !strings.Contains(res.Messages[0], "email") {
		t.Fatalf("check: %+v %v", res, err)
	}
	res, err = cl.CheckCompatibility(ctx, "users-value", 1, avroSchema(userV2Default))
	if err != nil || !res.Is {
		t.Fatalf("check default: %+v %v", res, err)
	}
	res, err = cl.CheckCompatibility(ctx, "users-value", -2, avroSchema(userV2NoDefault))
	if err != nil || res.Is || res.Messages != nil {
		t.Fatalf("check all, not verbose: %+v %v", res, err)
	}
	_, err = cl.CheckCompatibility(ctx, "users-value", 5, avroSchema(userV2Default))
	wantCode(t, err, 40402, "5")
	_, err = cl.CheckCompatibility(ctx, "nobody", -1, avroSchema(userV2Default))
	wantCode(t, err, 40401, "nobody")

	// FORWARD: adding a field without default is fine, dropping a field
	// old readers need is not.
	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatForward}, "users-value")
	if set[0].Err != nil || set[0].Level != sr.CompatForward {
		t.Fatalf("set: %+v", set[0])
	}
	got = cl.Compatibility(ctx, "users-value")
	if got[0].Err != nil || got[0].Level != sr.CompatForward {
		t.Fatalf("subject level: %+v", got[0])
	}
	if _, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV2NoDefault), -1, -1); err != nil {
		t.Fatalf("forward v2: %v", err)
	}
	_, err = cl.RegisterSchema(ctx, "users-value", avroSchema(userV3NoID), -1, -1)
	wantCode(t, err, 409, "version 2 cannot read data written with the new schema")

	// FULL: needs both.
	cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "people")
	if _, err := cl.RegisterSchema(ctx, "people", avroSchema(userV1), -1, -1); err != nil {
		t.Fatal(err)
	}
	_, err = cl.RegisterSchema(ctx, "people", avroSchema(userV2NoDefault), -1, -1)
	wantCode(t, err, 409, "compatibility FULL")
	if _, err := cl.RegisterSchema(ctx, "people", avroSchema(userV2Default), -1, -1); err != nil {
		t.Fatalf("full with default: %v", err)
	}

	// NONE: anything, even another type.
	set = cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone})
	if set[0].Err != nil {
		t.Fatal(set[0].Err)
	}
	if _, err := cl.RegisterSchema(ctx, "free", avroSchema(userV1), -1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RegisterSchema(ctx, "free", avroSchema(`"string"`), -1, -1); err != nil {
		t.Fatalf("NONE: %v", err)
	}
	// Resetting the subject falls back to the global level.
	reset := cl.ResetCompatibility(ctx, "people")
	if reset[0].Err != nil || reset[0].Level != sr.CompatFull {
		t.Fatalf("reset: %+v", reset[0])
	}
	got = cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), "people")
	if got[0].Err != nil || got[0].Level != sr.CompatNone {
		t.Fatalf("default to global: %+v", got[0])
	}
	// Bad level.
	set = cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatibilityLevel(99)})
	if set[0].Err == nil {
		t.Fatal("level 99 accepted")
	}
}

const protoOrderV2 = `syntax = "proto3";
package clink.test;
message Order {
  int64 id = 1;
  string product = 2; // renamed: same number, same wire type
  int64 quantity = 6;
}
`

const protoOrderV1 = `syntax = "proto3";
package clink.test;
message Order {
  int64 id = 1;
  string item = 2;
}
`

func TestServerProtobuf(t *testing.T) {
	ctx := context.Background()
	_, url := startServer(t, Options{})
	cl := srClient(t, url)

	p := func(text string) sr.Schema { return sr.Schema{Schema: text, Type: sr.TypeProtobuf} }
	id, err := cl.RegisterSchema(ctx, "orders-value", p(protoOrderV1), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.SchemaByID(ctx, id)
	if err != nil || got.Type != sr.TypeProtobuf || got.Schema != protoOrderV1 {
		t.Fatalf("by id: %+v %v", got, err)
	}
	// Only comments differ: same id.
	again, err := cl.RegisterSchema(ctx, "orders-value", p("// orders\n"+protoOrderV1), -1, -1)
	if err != nil || again != id {
		t.Fatalf("same proto: %d %v", again, err)
	}
	_, err = cl.RegisterSchema(ctx, "orders-value", p(strings.Replace(protoOrderV1, "string item", "double item", 1)), -1, -1)
	wantCode(t, err, 409, "changes type from string to double")
	id2, err := cl.RegisterSchema(ctx, "orders-value", p(protoOrderV2), -1, -1)
	if err != nil || id2 == id {
		t.Fatalf("v2: %d %v", id2, err)
	}
	// An Avro schema cannot follow a Protobuf one under BACKWARD.
	_, err = cl.RegisterSchema(ctx, "orders-value", avroSchema(userV1), -1, -1)
	wantCode(t, err, 409, "the new schema is AVRO, version 2 is PROTOBUF")
	_, err = cl.RegisterSchema(ctx, "orders-value", p("message {"), -1, -1)
	wantCode(t, err, 42201, "invalid PROTOBUF schema")
}

func TestServerDelete(t *testing.T) {
	ctx := context.Background()
	_, url := startServer(t, Options{})
	cl := srClient(t, url)
	for _, s := range []string{userV1, userV2Default} {
		if _, err := cl.RegisterSchema(ctx, "users-value", avroSchema(s), -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	// Permanent before soft is refused.
	wantCode(t, cl.DeleteSchema(ctx, "users-value", 2, sr.HardDelete), 40407, "not deleted first")
	if err := cl.DeleteSchema(ctx, "users-value", -1, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	wantCode(t, cl.DeleteSchema(ctx, "users-value", 2, sr.SoftDelete), 40406, "soft deleted")
	versions, _ := cl.SubjectVersions(ctx, "users-value")
	if !slices.Equal(versions, []int{1}) {
		t.Fatalf("after soft delete: %v", versions)
	}
	versions, _ = cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), "users-value")
	if !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("deleted=true: %v", versions)
	}
	// The id still resolves (records in topics still carry it).
	if _, err := cl.SchemaByID(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteSchema(ctx, "users-value", 2, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	_, err := cl.SchemaByID(ctx, 2)
	wantCode(t, err, 40403, "2")

	_, err = cl.DeleteSubject(ctx, "users-value", sr.HardDelete)
	wantCode(t, err, 40405, "not deleted first")
	deleted, err := cl.DeleteSubject(ctx, "users-value", sr.SoftDelete)
	if err != nil || !slices.Equal(deleted, []int{1}) {
		t.Fatalf("soft delete subject: %v %v", deleted, err)
	}
	_, err = cl.DeleteSubject(ctx, "users-value", sr.SoftDelete)
	wantCode(t, err, 40404, "soft deleted")
	if subjects, _ := cl.Subjects(ctx); len(subjects) != 0 {
		t.Fatalf("subjects after delete: %v", subjects)
	}
	// Registering into a soft-deleted subject continues its versions.
	if _, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV3NoID), -1, -1); err != nil {
		t.Fatal(err)
	}
	if v, _ := cl.SubjectVersions(ctx, "users-value"); !slices.Equal(v, []int{3}) {
		t.Fatalf("versions after re-register: %v", v)
	}
	if _, err := cl.DeleteSubject(ctx, "users-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, "users-value", sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	_, err = cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), "users-value")
	wantCode(t, err, 40401, "users-value")
	// Ids are never reused.
	id, err := cl.RegisterSchema(ctx, "users-value", avroSchema(`"string"`), -1, -1)
	if err != nil || id != 4 {
		t.Fatalf("id after deletes: %d %v", id, err)
	}
}

func TestServerPersistence(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s1, err := NewServer(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	h := s1.Handler()
	post := func(h http.Handler, path, body string) *httpResult {
		return do(h, "POST", path, body, nil)
	}
	if r := post(h, "/subjects/a/versions", `{"schema":`+quote(userV1)+`}`); r.status != 200 {
		t.Fatal(r.body)
	}
	if r := post(h, "/subjects/b/versions", `{"schema":`+quote(protoOrderV1)+`,"schemaType":"PROTOBUF"}`); r.status != 200 {
		t.Fatal(r.body)
	}
	if r := do(h, "PUT", "/config/a", `{"compatibility":"FULL"}`, nil); r.status != 200 {
		t.Fatal(r.body)
	}
	if fi, err := os.Stat(filepath.Join(dir, DataFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("data file: %v %v", fi, err)
	}

	// A restarted registry keeps ids, versions, config, and the next id.
	_, url := startServer(t, Options{DataDir: dir})
	cl := srClient(t, url)
	got, err := cl.SchemaByID(ctx, 2)
	if err != nil || got.Type != sr.TypeProtobuf {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	if id, err := cl.RegisterSchema(ctx, "c", avroSchema(userV1), -1, -1); err != nil || id != 1 {
		t.Fatalf("shared id after restart: %d %v", id, err)
	}
	if id, err := cl.RegisterSchema(ctx, "c", avroSchema(userV2Default), -1, -1); err != nil || id != 3 {
		t.Fatalf("next id after restart: %d %v", id, err)
	}
	if c := cl.Compatibility(ctx, "a"); c[0].Err != nil || c[0].Level != sr.CompatFull {
		t.Fatalf("config after restart: %+v", c[0])
	}

	// A corrupt file is an error naming it, not an empty registry.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, DataFile), []byte("{"), 0o600)
	if _, err := NewServer(Options{DataDir: bad}); err == nil || !strings.Contains(err.Error(), DataFile) {
		t.Fatalf("corrupt file: %v", err)
	}
}

func TestServerAuth(t *testing.T) {
	ctx := context.Background()
	_, url := startServer(t, Options{Users: map[string]string{"alice": "s3cret"}})
	_, err := srClient(t, url).Subjects(ctx)
	wantCode(t, err, 401, "basic auth")
	_, err = srClient(t, url, sr.BasicAuth("alice", "wrong")).Subjects(ctx)
	wantCode(t, err, 401, "basic auth")
	_, err = srClient(t, url, sr.BasicAuth("bob", "s3cret")).Subjects(ctx)
	wantCode(t, err, 401, "basic auth")
	if _, err := srClient(t, url, sr.BasicAuth("alice", "s3cret")).Subjects(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestServerRefusesOpenBindWithoutAuth(t *testing.T) {
	s, err := NewServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	if err := s.Serve(ln); err == nil || !strings.Contains(err.Error(), "without basic auth") {
		t.Fatalf("Serve on 0.0.0.0: %v", err)
	}
}

type httpResult struct {
	status int
	body   string
	ctype  string
}

func do(h http.Handler, method, path, body string, hdr http.Header) *httpResult {
	req, _ := http.NewRequest(method, "http://registry"+path, strings.NewReader(body))
	if body == "" {
		req.Body = http.NoBody
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := &recorder{header: http.Header{}, status: 200}
	h.ServeHTTP(rec, req)
	return &httpResult{rec.status, rec.body.String(), rec.header.Get("Content-Type")}
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func errorBody(t *testing.T, r *httpResult) (int, string) {
	t.Helper()
	var e struct {
		Code int    `json:"error_code"`
		Msg  string `json:"message"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e.Code, e.Msg
}

func TestServerRequestErrors(t *testing.T) {
	s, url := startServer(t, Options{MaxBodyBytes: 1 << 10})
	h := s.Handler()
	if r := do(h, "POST", "/subjects/ints/versions", `{"schema":"\"int\""}`, nil); r.status != 200 {
		t.Fatal(r.body)
	}
	for _, c := range []struct {
		method, path, body string
		ctype              string
		status, code       int
		msg                string
	}{
		{"POST", "/subjects/a/versions", `{"schema":` + quote(strings.Repeat(" ", 2000)+userV1) + `}`, "", 413, 413, "larger than 1024 bytes"},
		{"POST", "/subjects/a/versions", `{"schema": `, "", 400, 400, "not valid JSON"},
		{"POST", "/subjects/a/versions", `{"schema": 5}`, "", 400, 400, "not valid JSON"},
		{"POST", "/subjects/a/versions", ``, "", 400, 400, "empty"},
		{"POST", "/subjects/a/versions", `{}`, "", 422, 42201, "empty schema"},
		{"POST", "/subjects/a/versions", `{"schema":"{}"}`, "", 422, 42201, "invalid AVRO"},
		{"POST", "/subjects/a/versions", `{"schema":"\"int\"","schemaType":"XML"}`, "", 422, 42201, "XML"},
		{"POST", "/subjects/a/versions", `{"schema":"\"int\""}`, "text/html", 415, 415, "text/html"},
		{"POST", "/subjects/a/versions", `{"schema":"\"int\"","id":7}`, "", 422, 42201, "explicit id"},
		{"PUT", "/config", `{"compatibility":"SIDEWAYS"}`, "", 422, 42203, "SIDEWAYS"},
		{"GET", "/subjects/ints/versions/zero", ``, "", 422, 42202, "zero"},
		{"GET", "/schemas/ids/abc", ``, "", 404, 40403, "abc"},
		{"GET", "/nothing/here", ``, "", 404, 404, "no endpoint GET /nothing/here"},
	} {
		hdr := http.Header{}
		if c.ctype != "" {
			hdr.Set("Content-Type", c.ctype)
		} else {
			hdr.Set("Content-Type", "application/json")
		}
		r := do(h, c.method, c.path, c.body, hdr)
		code, msg := errorBody(t, r)
		if r.status != c.status || code != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("%s %s %.40q: got %d %d %q, want %d %d ~%q", c.method, c.path, c.body, r.status, code, msg, c.status, c.code, c.msg)
		}
		if r.ctype != ContentType {
			t.Errorf("%s %s: content type %q", c.method, c.path, r.ctype)
		}
	}
	// Over the network too (MaxBytesReader closes the connection).
	big := `{"schema":` + quote(strings.Repeat("x", 4000)) + `}`
	resp, err := http.Post(url+"/subjects/a/versions", ContentType, strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), "larger than") {
		t.Fatalf("network 413: %d %s", resp.StatusCode, b)
	}
}

func TestServerSubjectWithSlash(t *testing.T) {
	ctx := context.Background()
	_, url := startServer(t, Options{})
	cl := srClient(t, url)
	if _, err := cl.RegisterSchema(ctx, "team/users-value", avroSchema(userV1), -1, -1); err != nil {
		t.Fatal(err)
	}
	got, err := cl.SchemaByVersion(ctx, "team/users-value", 1)
	if err != nil || got.Subject != "team/users-value" {
		t.Fatalf("%+v %v", got, err)
	}
	if subjects, _ := cl.Subjects(ctx); !slices.Equal(subjects, []string{"team/users-value"}) {
		t.Fatalf("subjects %v", subjects)
	}
}

// A change that cannot be written is not made.
func TestServerPersistFailureRollsBack(t *testing.T) {
	dir := t.TempDir()
	s, err := NewServer(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if r := do(h, "POST", "/subjects/a/versions", `{"schema":`+quote(userV1)+`}`, nil); r.status != 200 {
		t.Fatal(r.body)
	}
	// Make the rename over the data file fail: a non-empty directory
	// takes its place.
	file := filepath.Join(dir, DataFile)
	os.Remove(file)
	os.MkdirAll(filepath.Join(file, "x"), 0o700)
	r := do(h, "POST", "/subjects/b/versions", `{"schema":`+quote(userV2Default)+`}`, nil)
	if code, msg := errorBody(t, r); r.status != 500 || code != 50001 || !strings.Contains(msg, "not made") {
		t.Fatalf("write failure: %d %d %q", r.status, code, msg)
	}
	if r := do(h, "GET", "/subjects", "", nil); r.body != `["a"]`+"\n" {
		t.Fatalf("subjects after failed write: %s", r.body)
	}
	if r := do(h, "GET", "/schemas/ids/2", "", nil); r.status != 404 {
		t.Fatalf("id 2 after failed write: %d %s", r.status, r.body)
	}
	os.RemoveAll(file)
	// The id the failed write would have taken is free again.
	if r := do(h, "POST", "/subjects/b/versions", `{"schema":`+quote(userV2Default)+`}`, nil); r.body != `{"id":2}`+"\n" {
		t.Fatalf("after recovery: %s", r.body)
	}
}
