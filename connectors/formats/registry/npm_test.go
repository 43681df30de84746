package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// npmFixture is testdata/npm: a package.json and package-lock.json for
// kafkajs' @kafkajs/confluent-schema-registry, and sr.js, which uses it.
const npmFixture = "testdata/npm"

// npmModules installs the fixture's locked dependencies once per lock
// file into the user cache dir ($XDG_CACHE_HOME or ~/.cache on Linux) and
// returns their node_modules. Without node and npm, or when the install
// fails (no network), the test is skipped, unless CLINK_REQUIRE_NPM=1
// makes that a failure.
func npmModules(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CLINK_REQUIRE_NPM") == "1" {
			t.Fatalf(format+" (CLINK_REQUIRE_NPM=1)", args...)
		}
		t.Skipf(format+"; set CLINK_REQUIRE_NPM=1 to make this a failure", args...)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable("%s not found on PATH: the interop test with an npm Schema Registry client needs node and npm", tool)
		}
	}
	lock, err := os.ReadFile(filepath.Join(npmFixture, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(npmFixture, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		unavailable("no user cache dir for npm modules: %v", err)
	}
	sum := sha256.Sum256(append(pkg, lock...))
	dir := filepath.Join(cache, "clink", "registry-npm", hex.EncodeToString(sum[:8]))
	modules := filepath.Join(dir, "node_modules")
	marker := filepath.Join(modules, "@kafkajs", "confluent-schema-registry", "package.json")
	if _, err := os.Stat(marker); err == nil {
		return modules
	}
	// Install into a fresh directory and rename it into place, so that a
	// concurrent or interrupted run never sees half an install.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("npm ci of %s failed: %v\n%s", npmFixture, err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		return modules // a concurrent run installed it meanwhile
	}
	os.RemoveAll(dir) // a stale, incomplete one
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return modules
}

// node runs sr.js with the installed modules and decodes its JSON line.
func node(t *testing.T, modules string, into any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(npmFixture, "sr.js")}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "NODE_NO_WARNINGS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sr.js %s: %v\n%s", args[0], err, stderr.String())
	}
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("node sr.js %s printed %q: %v", args[0], out, err)
	}
}

type person struct {
	ID   int64  `avro:"id" json:"id"`
	Name string `avro:"name" json:"name"`
}

// TestNPMClient runs kafkajs' Schema Registry client against the dev
// registry (with basic auth): it registers Avro and Protobuf schemas and
// writes a record in the Confluent wire format, which Go decodes; then Go
// writes one, which kafkajs decodes.
func TestNPMClient(t *testing.T) {
	modules := npmModules(t)
	ctx := context.Background()
	_, url := startServer(t, Options{Users: map[string]string{"interop": "pw"}})

	var enc struct {
		AvroID, AgainID, LatestID, ProtoID int
		Record                             string
	}
	node(t, modules, &enc, "encode", url, "interop", "pw")
	if enc.AvroID == 0 || enc.AgainID != enc.AvroID || enc.LatestID != enc.AvroID || enc.ProtoID == enc.AvroID {
		t.Fatalf("ids from kafkajs: %+v", enc)
	}

	c, err := NewClient(url, ClientOptions{User: "interop", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := hex.DecodeString(enc.Record)
	if err != nil {
		t.Fatal(err)
	}
	id, payload, err := ParseHeader(rec)
	if err != nil || id != enc.AvroID {
		t.Fatalf("header of kafkajs' record: id %d, %v", id, err)
	}
	s, err := c.SchemaByID(ctx, id)
	if err != nil || s.Type != Avro {
		t.Fatalf("schema %d: %+v %v", id, s, err)
	}
	schema, err := avro.Parse(s.Text)
	if err != nil {
		t.Fatal(err)
	}
	var got person
	if err := avro.Unmarshal(schema, payload, &got); err != nil || got != (person{42, "ada"}) {
		t.Fatalf("kafkajs' record decodes to %+v, %v", got, err)
	}
	ps, err := c.SchemaByID(ctx, enc.ProtoID)
	if err != nil || ps.Type != Protobuf || !strings.Contains(ps.Text, "message Order") {
		t.Fatalf("protobuf schema %d: %+v %v", enc.ProtoID, ps, err)
	}
	// kafkajs set the subject's level on first registration.
	if l, err := c.Level(ctx, "interop-value"); err != nil || l != Backward {
		t.Fatalf("level: %v %v", l, err)
	}

	body, err := avro.Marshal(schema, person{7, "grace"})
	if err != nil {
		t.Fatal(err)
	}
	var dec person
	node(t, modules, &dec, "decode", url, "interop", "pw", hex.EncodeToString(append(AppendHeader(nil, id), body...)))
	if dec != (person{7, "grace"}) {
		t.Fatalf("kafkajs decodes Go's record to %+v", dec)
	}
}
