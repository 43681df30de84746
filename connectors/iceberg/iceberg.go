package iceberg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

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

var _ connectors.SinkValidator = Connector{}

// ValidateSink makes NewSink's checks; they need no I/O (the catalog is
// opened, and the secrets read, on first use).
func (Connector) ValidateSink(t *connectors.Table) error {
	_, err := newConfig(t)
	return err
}

// newConfig checks the options (spec.Parse) and adds what needs the
// Iceberg library: the codec, the file IO properties.
func newConfig(t *connectors.Table) (*config, error) {
	o := t.Options
	sc, err := spec.Parse(t)
	if err != nil {
		return nil, err
	}
	c := &config{clinkTable: t.Name, catType: sc.CatalogType, uri: sc.URI, catName: sc.CatalogName, password: sc.Password,
		warehouse: sc.Warehouse, ns: sc.Namespace, name: sc.Table, create: sc.Create, sinkID: sc.SinkID, fileTag: fileTagOf(sc.SinkID),
		targetSize: sc.TargetSize, interval: sc.CommitInterval, io: map[string]string{}, restToken: sc.RESTToken, restCred: sc.RESTCredential}
	codec, ok := codecs[sc.Compression]
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
			s, err := connectors.Secret(opt, v)
			if err != nil {
				return nil, err
			}
			v = s
		}
		p[k] = v
	}
	return p, nil
}

// redact hides a password in a URL.
func redact(uri string) string { return spec.Redact(uri) }

var _ connectors.Lineage = Connector{}

// Dataset names the table by catalog and table (spec.Dataset).
func (Connector) Dataset(t *connectors.Table) (string, string, error) { return spec.Dataset(t) }
