package spec

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/clink-dev/clink/connectors"
)

// Config is a table's checked options: every check of an Iceberg table
// that needs neither I/O nor the Iceberg library, which a slim build's
// validator makes as the sink's does. Secrets stay env:// references
// until the catalog is opened (the planning process may not have them).
type Config struct {
	CatalogType string // "sql" or "rest"
	URI         string // the catalog URI as given (may hold a password)
	CatalogName string
	Password    string // catalog_password, maybe env://VAR
	// Warehouse is a URI: file:///abs or s3://bucket/prefix; "" for rest
	// without one.
	Warehouse      string
	Namespace      []string
	Table          string
	Create         bool
	SinkID         string
	TargetSize     int64
	CommitInterval time.Duration
	Compression    string // zstd, snappy, gzip or none
	RESTToken      string
	RESTCredential string
}

// Parse checks the options of an 'iceberg' table without I/O.
func Parse(t *connectors.Table) (*Config, error) {
	o := t.Options
	c := &Config{CatalogType: orDefault(o["catalog_type"], "sql"), URI: strings.TrimSpace(o["catalog_uri"]),
		CatalogName: orDefault(o["catalog_name"], "clink"), Password: o["catalog_password"], Create: !o.Has("create_table") || o.Bool("create_table"),
		RESTToken: o["rest.token"], RESTCredential: o["rest.credential"], Compression: orDefault(o["parquet.compression"], "zstd")}
	if c.URI == "" {
		return nil, &connectors.OptionError{Key: "catalog_uri", Msg: fmt.Sprintf("sink '%s': option 'catalog_uri' is empty: give the catalog, e.g. 'sqlite:///var/lib/lake/catalog.db'", t.Name)}
	}
	if c.CatalogType == "sql" {
		if _, _, _, err := SQLSource(c.URI); err != nil {
			return nil, err
		}
	} else if u, err := url.Parse(c.URI); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, &connectors.OptionError{Key: "catalog_uri", Msg: fmt.Sprintf("option 'catalog_uri': a REST catalog's URI is http:// or https://, not '%s'", Redact(c.URI))}
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
		c.Namespace = append(c.Namespace, part)
	}
	c.Table = orDefault(o["table"], t.Name)
	if strings.ContainsAny(c.Table, "./") {
		return nil, &connectors.OptionError{Key: "table", Msg: fmt.Sprintf("option 'table': '%s' is not a table name (give the namespace in 'namespace')", c.Table)}
	}
	wh, err := warehouseURI(o["warehouse"])
	if err != nil {
		return nil, err
	}
	if wh == "" && c.CatalogType == "sql" {
		return nil, &connectors.OptionError{Key: "warehouse", Msg: fmt.Sprintf("sink '%s': the SQL catalog needs option 'warehouse', where new tables go (a directory or s3://bucket/prefix)", t.Name)}
	}
	c.Warehouse = wh
	c.SinkID = orDefault(strings.TrimSpace(o["sink_id"]), t.Name)
	if c.TargetSize, err = ParseSize("target_file_size", orDefault(o["target_file_size"], "128MB")); err != nil {
		return nil, err
	}
	ms := o.Int("commit_interval_ms")
	if !o.Has("commit_interval_ms") {
		ms = 60000
	}
	if ms < 1 {
		return nil, &connectors.OptionError{Key: "commit_interval_ms", Msg: fmt.Sprintf("option 'commit_interval_ms': %d is not positive", ms)}
	}
	c.CommitInterval = time.Duration(ms) * time.Millisecond
	for _, k := range []string{"catalog_password", "s3.access_key", "s3.secret_key", "s3.session_token", "rest.token", "rest.credential"} {
		if v := o[k]; strings.HasPrefix(v, "env://") && strings.TrimPrefix(v, "env://") == "" {
			return nil, &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s': env:// names no variable", k)}
		}
	}
	return c, nil
}

// warehouseURI turns the 'warehouse' option into a URI: a local directory
// becomes file:///abs/path (made absolute against the working directory;
// nothing is read).
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

// SQLSource reads a SQL catalog URI: the database/sql driver, the
// dialect and the DSN. SQLite: sqlite://PATH, sqlite:PATH, file:PATH or
// a path ending in .db, .sqlite or .sqlite3; PostgreSQL: postgres:// or
// postgresql://.
func SQLSource(uri string) (driver, dialect, dsn string, err error) {
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
		return "", "", "", &connectors.OptionError{Key: "catalog_uri", Msg: fmt.Sprintf("option 'catalog_uri': '%s' is neither a SQLite database (sqlite:///path/catalog.db) nor a PostgreSQL URL (postgres://user@host/db)", Redact(uri))}
	}
	return "sqlite", "sqlite", path, nil
}

// Redact hides a password in a URL.
func Redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	return u.Redacted()
}

// ParseSize reads a byte size: a number, or one with a unit (KB, MB, GB;
// powers of 1024 as in Flink).
func ParseSize(key, v string) (int64, error) {
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
