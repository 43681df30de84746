package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses
	"github.com/apache/iceberg-go/table"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", the PostgreSQL connector's driver
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/iceberg/spec"
)

// openCatalog opens the table's catalog with the secrets read from the
// environment. No error names a secret.
func openCatalog(ctx context.Context, c *config) (catalog.Catalog, error) {
	props, err := c.ioProps()
	if err != nil {
		return nil, err
	}
	if c.catType == "rest" {
		opts := []rest.Option{rest.WithAdditionalProps(props)}
		if c.warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(c.warehouse))
		}
		if c.restToken != "" {
			tok, err := connectors.Secret("rest.token", c.restToken)
			if err != nil {
				return nil, err
			}
			opts = append(opts, rest.WithOAuthToken(tok))
		}
		if c.restCred != "" {
			cred, err := connectors.Secret("rest.credential", c.restCred)
			if err != nil {
				return nil, err
			}
			opts = append(opts, rest.WithCredential(cred))
		}
		cat, err := rest.NewCatalog(ctx, c.catName, c.uri, opts...)
		if err != nil {
			return nil, fmt.Errorf("opening the REST catalog: %w", err)
		}
		return cat, nil
	}
	driver, dialect, dsn, err := spec.SQLSource(c.uri)
	if err != nil {
		return nil, err
	}
	if driver == "sqlite" {
		// Concurrent writers (subtasks, processes) wait for each other
		// instead of failing; WAL lets readers go on meanwhile.
		dsn = "file:" + (&url.URL{Path: dsn}).EscapedPath() + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)"
	} else if c.password != "" {
		pw, err := connectors.Secret("catalog_password", c.password)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("catalog_uri is not a URL")
		}
		name := ""
		if u.User != nil {
			name = u.User.Username()
		}
		u.User = url.UserPassword(name, pw)
		dsn = u.String()
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the catalog database: %w", scrub(err, dsn))
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the catalog database: %w", scrub(err, dsn))
	}
	props["warehouse"] = c.warehouse
	cat, err := sqlcat.NewCatalog(c.catName, db, sqlcat.SupportedDialect(dialect), props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the catalog: %w", scrub(err, dsn))
	}
	return cat, nil
}

// scrub replaces the DSN (which may hold a password) in err's text.
func scrub(err error, dsn string) error {
	if err == nil || !strings.Contains(err.Error(), dsn) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), dsn, redact(dsn)))
}

// closeCatalog releases the catalog's connections.
func closeCatalog(cat catalog.Catalog) error {
	if c, ok := cat.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// loadTable loads the table, creating the namespace and the table (typed
// from schema, unpartitioned, format version 2) when missing and allowed.
// Subtasks and processes may race to create it: the loser loads it.
func loadTable(ctx context.Context, cat catalog.Catalog, c *config, schema *ib.Schema) (*table.Table, error) {
	ident := c.ident()
	tbl, err := cat.LoadTable(ctx, ident)
	if err == nil || !errors.Is(err, catalog.ErrNoSuchTable) {
		return tbl, err
	}
	if !c.create {
		return nil, fmt.Errorf("the table does not exist (and 'create_table' is false): %w", err)
	}
	ns := table.Identifier(c.ns)
	ok, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !ok {
		err := cat.CreateNamespace(ctx, ns, nil)
		if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("creating namespace %s: %w", strings.Join(ns, "."), err)
		}
	}
	tbl, err = cat.CreateTable(ctx, ident, schema, catalog.WithProperties(ib.Properties{
		table.PropertyFormatVersion: "2",
		"comment":                   "written by Clink (connector 'iceberg', sink " + c.sinkID + ")",
	}))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return cat.LoadTable(ctx, ident)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the table: %w", err)
	}
	return tbl, nil
}
