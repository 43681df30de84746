// Package iceberg exports checkpoint state to Apache Iceberg tables: one
// table clink.<operator> per operator in a SQL catalog (SQLite or
// PostgreSQL), one append snapshot per export, the checkpoint named in the
// snapshot summary. It is apart from stateio so that iceberg-go and its
// SQL drivers are linked only where Iceberg is wanted.
package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
)

// Namespace is the namespace of the tables Export writes:
// clink.<operator>.
const Namespace = "clink"

// Options configure Export.
type Options struct {
	stateio.Selection
	// Dir holds the default catalog, Dir/catalog.db, and the warehouse
	// (data and metadata files), Dir/warehouse.
	Dir string
	// Catalog is the SQL catalog: "sqlite://PATH" or a PostgreSQL URL
	// ("postgres://USER:PASSWORD@HOST/DB"); "" is sqlite://<Dir>/catalog.db.
	Catalog string
	// Mem allocates; nil is memory.DefaultAllocator.
	Mem memory.Allocator
}

// ColCheckpointID is the column Export adds to every row: the checkpoint
// it comes from, so that one checkpoint's rows are a filter away
// (WHERE clink_checkpoint_id = 42) although every export appends.
const ColCheckpointID = "clink_checkpoint_id"

// Snapshot summary properties of an Iceberg export: which checkpoint the
// snapshot's rows come from.
const (
	PropCheckpointID = "clink.checkpoint_id"
	PropJob          = "clink.job"
	PropCreated      = "clink.checkpoint_created"
	PropFingerprint  = "clink.fingerprint"
)

// Export appends each selected operator's rows to the table
// clink.<operator> as one new snapshot, creating the table on first use
// and widening its schema (union by name) when the operator's state gained
// columns. Value types Iceberg lacks are converted: small and unsigned
// integers widened (UBIGINT to DECIMAL(20, 0)), timestamps to
// microseconds (a zoned one in UTC).
func Export(ctx context.Context, c *checkpoint.Checkpoint, opts Options) ([]stateio.Exported, error) {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("export iceberg: no output directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("export iceberg: %w", err)
	}
	cat, err := openCatalog(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	ns := table.Identifier{Namespace}
	if ok, err := cat.CheckNamespaceExists(ctx, ns); err != nil {
		return nil, fmt.Errorf("export iceberg: %w", err)
	} else if !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("export iceberg: namespace %s: %w", Namespace, err)
		}
	}
	props := ib.Properties{
		PropCheckpointID: strconv.FormatUint(c.ID, 10),
		PropJob:          c.Manifest.Job,
		PropCreated:      c.Manifest.Created.UTC().Format(time.RFC3339Nano),
	}
	if c.Manifest.Fingerprint != "" {
		props[PropFingerprint] = c.Manifest.Fingerprint
	}

	var out []stateio.Exported
	var op string
	var first *checkpoint.Part // the operator's first part, for errors
	var schema *arrow.Schema   // the operator's Iceberg-ready schema
	var recs []arrow.RecordBatch
	flush := func() error {
		if op == "" {
			return nil
		}
		defer func() { release(recs); recs = nil }()
		n, err := appendTable(ctx, cat, op, schema, recs, props)
		if err != nil {
			return fmt.Errorf("export iceberg: table %s.%s: %w", Namespace, op, err)
		}
		out = append(out, stateio.Exported{Path: Namespace + "." + op, Rows: n})
		return nil
	}
	err = stateio.Each(c, opts.Selection, func(p *checkpoint.Part) error {
		if p.Operator != op {
			if err := flush(); err != nil {
				return err
			}
			op, first = p.Operator, p
			s, err := icebergSchema(p.Schema)
			if err != nil {
				return fmt.Errorf("export iceberg: %s: %w", p.Path, err)
			}
			schema = s
		} else if !sameFields(p.Schema, first.Schema) {
			return fmt.Errorf("export iceberg: %s has other columns than %s; export the operator's parts as Parquet instead", p.Path, first.Path)
		}
		sel, err := stateio.SelectRows(opts.Mem, p, opts.Slot)
		if err != nil {
			return err
		}
		for _, r := range sel {
			cr, err := castRecord(ctx, opts.Mem, r, schema, c.ID)
			r.Release()
			if err != nil {
				release(recs)
				return fmt.Errorf("export iceberg: %s: %w", p.Path, err)
			}
			recs = append(recs, cr)
		}
		return ctx.Err()
	})
	if err != nil {
		release(recs)
		return out, err
	}
	return out, flush()
}

// openCatalog opens the SQL catalog named by opts.Catalog, its tables
// created on first use, with the warehouse in <Dir>/warehouse.
func openCatalog(ctx context.Context, opts Options) (*sqlcat.Catalog, error) {
	uri := opts.Catalog
	if uri == "" {
		uri = "sqlite://" + filepath.Join(opts.Dir, "catalog.db")
	}
	var driver, dsn string
	var dialect sqlcat.SupportedDialect
	switch {
	case strings.HasPrefix(uri, "sqlite://"):
		driver, dialect, dsn = "sqlite", sqlcat.SQLite, strings.TrimPrefix(uri, "sqlite://")
		if dsn == "" {
			return nil, fmt.Errorf("export iceberg: catalog %q names no database file (sqlite://PATH)", uri)
		}
		// Concurrent writers wait for each other instead of failing.
		dsn = "file:" + (&url.URL{Path: dsn}).EscapedPath() + "?_pragma=busy_timeout(10000)"
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		driver, dialect, dsn = "pgx", sqlcat.Postgres, uri
	default:
		return nil, fmt.Errorf("export iceberg: catalog %q: give sqlite://PATH or postgres://USER@HOST/DB", redacted(uri))
	}
	warehouse, err := filepath.Abs(filepath.Join(opts.Dir, "warehouse"))
	if err != nil {
		return nil, fmt.Errorf("export iceberg: %w", err)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("export iceberg: catalog %s: %w", redacted(uri), err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("export iceberg: catalog %s: %w", redacted(uri), err)
	}
	cat, err := sqlcat.NewCatalog(Namespace, db, dialect, ib.Properties{
		"warehouse": (&url.URL{Scheme: "file", Path: warehouse}).String(),
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("export iceberg: catalog %s: %w", redacted(uri), err)
	}
	return cat, nil
}

// appendTable commits recs to clink.<op> as one append snapshot.
func appendTable(ctx context.Context, cat *sqlcat.Catalog, op string, schema *arrow.Schema, recs []arrow.RecordBatch, props ib.Properties) (int64, error) {
	ident := table.Identifier{Namespace, op}
	want, err := table.ArrowSchemaToIcebergWithFreshIDs(schema, false)
	if err != nil {
		return 0, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		tbl, err = cat.CreateTable(ctx, ident, want, catalog.WithProperties(ib.Properties{
			"comment": "Clink operator state (docs/state-format.md); one snapshot per clink state-export",
		}))
		if err != nil {
			return 0, err
		}
	case err != nil:
		return 0, err
	}
	txn := tbl.NewTransaction()
	if !containsAll(tbl.Schema(), want) {
		if err := txn.UpdateSchema(true, false).UnionByNameWith(want).Commit(); err != nil {
			return 0, fmt.Errorf("widening the table's schema to the checkpoint's columns: %w", err)
		}
	}
	meta, err := txn.StagedTable()
	if err != nil {
		return 0, err
	}
	target, err := table.SchemaToArrowSchema(meta.Schema(), nil, false, false)
	if err != nil {
		return 0, err
	}
	var rows int64
	full := make([]arrow.RecordBatch, 0, len(recs))
	defer func() { release(full) }()
	for _, r := range recs {
		rows += r.NumRows()
		full = append(full, padRecord(r, target))
	}
	rdr, err := array.NewRecordReader(target, full)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	if err := txn.Append(ctx, rdr, props); err != nil {
		return 0, err
	}
	if _, err := txn.Commit(ctx); err != nil {
		return 0, err
	}
	return rows, nil
}

// containsAll reports whether every column of want is in have.
func containsAll(have, want *ib.Schema) bool {
	for _, f := range want.Fields() {
		g, ok := have.FindFieldByName(f.Name)
		if !ok || !g.Type.Equals(f.Type) {
			return false
		}
	}
	return true
}

// padRecord returns rec with target's columns: its own by name, null
// columns for those it lacks (columns a newer or older state did not
// have).
func padRecord(rec arrow.RecordBatch, target *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, target.NumFields())
	for i, f := range target.Fields() {
		if idx := rec.Schema().FieldIndices(f.Name); len(idx) > 0 {
			cols[i] = rec.Column(idx[0])
			cols[i].Retain()
			continue
		}
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, int(rec.NumRows()))
	}
	out := array.NewRecordBatch(target, cols, rec.NumRows())
	release(cols)
	return out
}

// icebergSchema is a part's schema with the types Iceberg has: small and
// unsigned integers widened (UBIGINT to DECIMAL(20, 0)), timestamps in
// microseconds, zoned ones in UTC. The fixed columns keep their types; the
// schema metadata is dropped.
func icebergSchema(s *arrow.Schema) (*arrow.Schema, error) {
	fields := make([]arrow.Field, s.NumFields(), s.NumFields()+1)
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, ColCheckpointID) {
			return nil, fmt.Errorf("column %q: the name is taken by the column Iceberg export adds", f.Name)
		}
		t, err := icebergType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	fields = append(fields, arrow.Field{Name: ColCheckpointID, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	return arrow.NewSchema(fields, nil), nil
}

func icebergType(dt arrow.DataType) (arrow.DataType, error) {
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return arrow.PrimitiveTypes.Int32, nil
	case *arrow.Uint32Type:
		return arrow.PrimitiveTypes.Int64, nil
	case *arrow.Uint64Type:
		return &arrow.Decimal128Type{Precision: 20, Scale: 0}, nil
	case *arrow.LargeStringType:
		return arrow.BinaryTypes.String, nil
	case *arrow.LargeBinaryType:
		return arrow.BinaryTypes.Binary, nil
	case *arrow.TimestampType:
		zone := ""
		if t.TimeZone != "" {
			zone = "UTC"
		}
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: zone}, nil
	case *arrow.ListType:
		e, err := icebergType(t.Elem())
		return arrow.ListOf(e), err
	case *arrow.LargeListType:
		e, err := icebergType(t.Elem())
		return arrow.ListOf(e), err
	case *arrow.MapType:
		k, err := icebergType(t.KeyType())
		if err != nil {
			return nil, err
		}
		v, err := icebergType(t.ItemType())
		return arrow.MapOf(k, v), err
	case *arrow.StructType:
		fields := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			ft, err := icebergType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: f.Nullable}
		}
		return arrow.StructOf(fields...), nil
	}
	return dt, nil
}

// castRecord converts rec to schema (same column names, Iceberg types,
// then the checkpoint id). Nanosecond timestamps lose their
// sub-microsecond digits.
func castRecord(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, schema *arrow.Schema, id uint64) (arrow.RecordBatch, error) {
	ctx = compute.WithAllocator(ctx, mem)
	cols := make([]arrow.Array, rec.NumCols()+1)
	for i := range cols[:rec.NumCols()] {
		col, to := rec.Column(i), schema.Field(i).Type
		if arrow.TypeEqual(col.DataType(), to) {
			col.Retain()
			cols[i] = col
			continue
		}
		out, err := compute.CastArray(ctx, col, compute.UnsafeCastOptions(to))
		if err != nil {
			release(cols[:i])
			return nil, fmt.Errorf("column %q: %s to %s: %w", schema.Field(i).Name, col.DataType(), to, err)
		}
		cols[i] = out
	}
	ids := array.NewInt64Builder(mem)
	for i := 0; i < int(rec.NumRows()); i++ {
		ids.Append(int64(id))
	}
	cols[len(cols)-1] = ids.NewArray()
	ids.Release()
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	release(cols)
	return out, nil
}

// sameFields compares two schemas without their metadata.
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

func release[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		x.Release()
	}
}

// redacted hides a password in a catalog URL: errors never name one.
func redacted(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	return u.Redacted()
}
