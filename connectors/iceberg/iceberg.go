package iceberg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	ib "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/iceberg/spec"
	"github.com/clink-dev/clink/engine"
)

// Connector is the 'iceberg' connector: the options of package spec and
// the sink of this package.
type Connector struct{}

var _ connectors.SinkFactory = Connector{}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec.Spec() }

// NewSink opens the table's sink.
func (Connector) NewSink(t *connectors.Table) (engine.Sink, error) { return NewSink(t) }

// NewSink opens an 'iceberg' table for writing. It checks the options but
// does no I/O (a cluster plans jobs in processes that do not run them):
// the catalog is opened, and the table created, on first use. Exactly
// once with checkpoints (TxSink, the default); with 'delivery_guarantee' =
// 'at_least_once' or 'none', Sink.
func NewSink(t *connectors.Table) (engine.Sink, error) {
	cfg, err := newConfig(t)
	if err != nil {
		return nil, err
	}
	w := &writer{cfg: cfg, subtask: t.Runtime.Subtask, parallelism: max(t.Runtime.Parallelism, 1),
		schema: t.Schema, mem: t.Runtime.Mem, ctx: context.Background()}
	if w.mem == nil {
		w.mem = memory.DefaultAllocator
	}
	if dg := t.Options["delivery_guarantee"]; dg == "" || dg == "exactly_once" {
		return TxSink{w}, nil
	}
	return Sink{w}, nil
}

// config is a table's checked options. Secrets stay env:// references
// until the catalog is opened (the planning process may not have them).
type config struct {
	clinkTable string
	catType    string // "sql" or "rest"
	uri        string // the catalog URI as given (may hold a password)
	catName    string
	password   string // catalog_password, maybe env://VAR
	warehouse  string // a URI: file:///abs or s3://bucket/prefix; "" for rest without one
	ns         table.Identifier
	name       string
	create     bool
	sinkID     string
	fileTag    string // the data files' name prefix: clink-<8 hex of sha256(sinkID)>
	targetSize int64
	interval   time.Duration
	codec      compress.Compression
	// io are iceberg-go's file IO properties (s3.*), secrets unresolved.
	io        map[string]string
	restToken string
	restCred  string
}

// ident is the Iceberg table's identifier.
func (c *config) ident() table.Identifier {
	return append(append(table.Identifier{}, c.ns...), c.name)
}

// String names the table and its catalog in errors, without secrets.
func (c *config) String() string {
	return fmt.Sprintf("%s in %s catalog %s (%s)", strings.Join(c.ident(), "."), c.catType, c.catName, redact(c.uri))
}

func (c *config) errorf(format string, args ...any) error {
	return fmt.Errorf("iceberg sink '%s' (table %s): %w", c.clinkTable, c, fmt.Errorf(format, args...))
}

var codecs = map[string]compress.Compression{
	"zstd":   compress.Codecs.Zstd,
	"snappy": compress.Codecs.Snappy,
	"gzip":   compress.Codecs.Gzip,
	"none":   compress.Codecs.Uncompressed,
}

func newConfig(t *connectors.Table) (*config, error) {
	o := t.Options
	c := &config{clinkTable: t.Name, catType: orDefault(o["catalog_type"], "sql"), uri: strings.TrimSpace(o["catalog_uri"]),
		catName: orDefault(o["catalog_name"], "clink"), password: o["catalog_password"], create: !o.Has("create_table") || o.Bool("create_table"),
		io: map[string]string{}, restToken: o["rest.token"], restCred: o["rest.credential"]}
	if c.uri == "" {
		return nil, &connectors.OptionError{Key: "catalog_uri", Msg: fmt.Sprintf("sink '%s': option 'catalog_uri' is empty: give the catalog, e.g. 'sqlite:///var/lib/lake/catalog.db'", t.Name)}
	}
	if c.catType == "sql" {
		if _, _, _, err := sqlSource(c.uri); err != nil {
			return nil, err
		}
	} else if u, err := url.Parse(c.uri); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, &connectors.OptionError{Key: "catalog_uri", Msg: fmt.Sprintf("option 'catalog_uri': a REST catalog's URI is http:// or https://, not '%s'", redact(c.uri))}
	}
	for _, k := range []string{"catalog_name", "namespace"} {
		if strings.TrimSpace(o[k]) == "" && o.Has(k) {
			return nil, &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s' is empty", k)}
		}
	}
	for _, part := range strings.Split(orDefault(o["namespace"], "default"), ".") {
		if part == "" {
			return nil, &connectors.OptionError{Key: "namespace", Msg: fmt.Sprintf("option 'namespace': '%s' has an empty level", o["namespace"])}
		}
		c.ns = append(c.ns, part)
	}
	c.name = orDefault(o["table"], t.Name)
	if strings.ContainsAny(c.name, "./") {
		return nil, &connectors.OptionError{Key: "table", Msg: fmt.Sprintf("option 'table': '%s' is not a table name (give the namespace in 'namespace')", c.name)}
	}
	wh, err := warehouseURI(o["warehouse"])
	if err != nil {
		return nil, err
	}
	if wh == "" && c.catType == "sql" {
		return nil, &connectors.OptionError{Key: "warehouse", Msg: fmt.Sprintf("sink '%s': the SQL catalog needs option 'warehouse', where new tables go (a directory or s3://bucket/prefix)", t.Name)}
	}
	c.warehouse = wh
	c.sinkID = orDefault(strings.TrimSpace(o["sink_id"]), t.Name)
	c.fileTag = fileTagOf(c.sinkID)
	if c.targetSize, err = parseSize("target_file_size", orDefault(o["target_file_size"], "128MB")); err != nil {
		return nil, err
	}
	ms := o.Int("commit_interval_ms")
	if !o.Has("commit_interval_ms") {
		ms = 60000
	}
	if ms < 1 {
		return nil, &connectors.OptionError{Key: "commit_interval_ms", Msg: fmt.Sprintf("option 'commit_interval_ms': %d is not positive", ms)}
	}
	c.interval = time.Duration(ms) * time.Millisecond
	codec, ok := codecs[orDefault(o["parquet.compression"], "zstd")]
	if !ok {
		return nil, &connectors.OptionError{Key: "parquet.compression", Msg: fmt.Sprintf("option 'parquet.compression': unknown codec '%s'", o["parquet.compression"])}
	}
	c.codec = codec
	for opt, prop := range map[string]string{"s3.endpoint": iceio.S3EndpointURL, "s3.region": iceio.S3Region,
		"s3.access_key": iceio.S3AccessKeyID, "s3.secret_key": iceio.S3SecretAccessKey, "s3.session_token": iceio.S3SessionToken} {
		if v := o[opt]; v != "" {
			c.io[prop] = v
		}
	}
	if c.io[iceio.S3EndpointURL] != "" && c.io[iceio.S3Region] == "" {
		// S3-compatible servers (MinIO) ignore the region, the S3 client
		// needs one.
		c.io[iceio.S3Region] = "us-east-1"
	}
	if v, ok := o["s3.path_style"]; ok {
		c.io[iceio.S3ForceVirtualAddressing] = strconv.FormatBool(!strings.EqualFold(v, "true"))
	}
	for _, k := range []string{"catalog_password", "s3.access_key", "s3.secret_key", "s3.session_token", "rest.token", "rest.credential"} {
		if v := o[k]; strings.HasPrefix(v, "env://") && strings.TrimPrefix(v, "env://") == "" {
			return nil, &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s': env:// names no variable", k)}
		}
	}
	return c, nil
}

// fileTagOf is the name prefix of a sink's data files:
// clink-<first 8 hex digits of the sink id's SHA-256>.
func fileTagOf(sinkID string) string {
	sum := sha256.Sum256([]byte(sinkID))
	return "clink-" + hex.EncodeToString(sum[:4])
}

// ioProps returns iceberg-go's file IO properties with the secrets read.
func (c *config) ioProps() (ib.Properties, error) {
	p := ib.Properties{}
	keys := map[string]string{iceio.S3AccessKeyID: "s3.access_key", iceio.S3SecretAccessKey: "s3.secret_key", iceio.S3SessionToken: "s3.session_token"}
	for k, v := range c.io {
		if opt, ok := keys[k]; ok {
			s, err := secret(opt, v)
			if err != nil {
				return nil, err
			}
			v = s
		}
		p[k] = v
	}
	return p, nil
}

// warehouseURI turns the 'warehouse' option into a URI: a local directory
// becomes file:///abs/path.
func warehouseURI(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		abs, err := filepath.Abs(v)
		if err != nil {
			return "", &connectors.OptionError{Key: "warehouse", Msg: fmt.Sprintf("option 'warehouse': %v", err)}
		}
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
	}
	switch strings.ToLower(scheme) {
	case "file":
		return "file://" + rest, nil
	case "s3", "s3a":
		bucket, _, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return "", &connectors.OptionError{Key: "warehouse", Msg: fmt.Sprintf("option 'warehouse': %s has no bucket (s3://bucket/prefix)", v)}
		}
		return "s3://" + strings.TrimRight(rest, "/"), nil
	}
	return "", &connectors.OptionError{Key: "warehouse", Msg: fmt.Sprintf("option 'warehouse': unknown scheme %s:// (a local directory or s3://bucket/prefix)", scheme)}
}

// sqlSource reads a SQL catalog URI: the database/sql driver, the
// dialect and the DSN. SQLite: sqlite://PATH, sqlite:PATH, file:PATH or
// a path ending in .db, .sqlite or .sqlite3; PostgreSQL: postgres:// or
// postgresql://.
func sqlSource(uri string) (driver, dialect, dsn string, err error) {
	path := ""
	switch {
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return "pgx", "postgres", uri, nil
	case strings.HasPrefix(uri, "sqlite:"):
		path = strings.TrimPrefix(strings.TrimPrefix(uri, "sqlite:"), "//")
	case strings.HasPrefix(uri, "file:"):
		path = strings.TrimPrefix(uri, "file:")
		if strings.HasPrefix(path, "//") {
			path = strings.TrimPrefix(path, "//")
		}
	default:
		switch strings.ToLower(filepath.Ext(uri)) {
		case ".db", ".sqlite", ".sqlite3":
			path = uri
		}
	}
	path, _, _ = strings.Cut(path, "?")
	if path == "" {
		return "", "", "", &connectors.OptionError{Key: "catalog_uri", Msg: fmt.Sprintf("option 'catalog_uri': '%s' is neither a SQLite database (sqlite:///path/catalog.db) nor a PostgreSQL URL (postgres://user@host/db)", redact(uri))}
	}
	return "sqlite", "sqlite", path, nil
}

// redact hides a password in a URL.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	return u.Redacted()
}

// secret returns an option's value, reading env://VAR from the
// environment; the value never appears in an error.
func secret(key, v string) (string, error) {
	name, ok := strings.CutPrefix(v, "env://")
	if !ok {
		return v, nil
	}
	val, set := os.LookupEnv(name)
	if !set || name == "" {
		return "", &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s': environment variable %s is not set", key, name)}
	}
	return val, nil
}

// parseSize reads a byte size: a number, or one with a unit (KB, MB, GB;
// powers of 1024 as in Flink).
func parseSize(key, v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	mult := map[string]int64{"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}[unit]
	if err != nil || mult == 0 || n <= 0 || n > (1<<62)/mult {
		return 0, &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s': '%s' is not a positive size (bytes, or with KB, MB, GB)", key, v)}
	}
	return n * mult, nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
