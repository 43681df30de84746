package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/kernels"
)

// tableName is a table as the 'table' option names it: schema may be ""
// (the search path decides).
type tableName struct {
	schema, name string
}

// sql is the name as SQL text, quoted.
func (n tableName) sql() string {
	if n.schema == "" {
		return quoteIdent(n.name)
	}
	return quoteIdent(n.schema) + "." + quoteIdent(n.name)
}

func (n tableName) String() string {
	if n.schema == "" {
		return n.name
	}
	return n.schema + "." + n.name
}

// parseTableName reads `name` or `schema.name`; an unquoted part is folded
// to lower case as PostgreSQL does, a double-quoted one is kept ("" is a
// quote inside it).
func parseTableName(s string) (tableName, error) {
	var parts []string
	i := 0
	s = strings.TrimSpace(s)
	for {
		var part string
		if i < len(s) && s[i] == '"' {
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return tableName{}, fmt.Errorf("'%s' has an unclosed quote", s)
			}
			part = b.String()
		} else {
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '"' {
				j++
			}
			part = strings.ToLower(strings.TrimSpace(s[i:j]))
			i = j
		}
		if part == "" {
			return tableName{}, fmt.Errorf("'%s' is not a table name (name or schema.name)", s)
		}
		parts = append(parts, part)
		if i == len(s) {
			break
		}
		if s[i] != '.' {
			return tableName{}, fmt.Errorf("'%s' is not a table name (name or schema.name)", s)
		}
		i++
	}
	switch len(parts) {
	case 1:
		return tableName{name: parts[0]}, nil
	case 2:
		return tableName{schema: parts[0], name: parts[1]}, nil
	}
	return tableName{}, fmt.Errorf("'%s' is not a table name (name or schema.name; the database is set by 'database' or 'url')", s)
}

// target is the resolved PostgreSQL table and how to write it.
type target struct {
	table  tableName // schema-qualified, as resolved
	where  string    // "table schema.name at host:port/database", for errors
	cols   []column  // in Clink column order
	keys   []int     // indexes into cols of the primary key (upsert)
	copy   string    // COPY ... FROM STDIN (FORMAT binary)
	upsert string    // INSERT ... SELECT * FROM unnest($1, ...) ON CONFLICT ...
	delete string    // DELETE ... USING unnest(...)
}

// pgColumn is a column as pg_attribute describes it.
type pgColumn struct {
	name      string
	pgType    string
	base      uint32 // the type, or a domain's base type
	array     uint32 // base's array type
	typmod    int32
	notNull   bool
	hasDef    bool
	generated bool
	identity  string // attidentity: "" none, "a" always, "d" by default
}

// resolve finds the table the options name and maps the Clink columns
// onto its columns (pg_catalog gives the type OIDs and modifiers the
// binary encoding needs; information_schema does not).
func resolve(ctx context.Context, conn *pgx.Conn, c *config, t *connectors.Table) (*target, error) {
	var oid uint32
	var schema, name string
	var kind string
	err := conn.QueryRow(ctx, `SELECT c.oid, n.nspname, c.relname, c.relkind::text
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1)`, c.table.sql()).Scan(&oid, &schema, &name, &kind)
	if err == pgx.ErrNoRows {
		msg := fmt.Sprintf("table %s does not exist in %s", c.table, c)
		if c.table.schema == "" {
			var path []string
			if conn.QueryRow(ctx, "SELECT current_schemas(false)").Scan(&path) == nil {
				msg += fmt.Sprintf(" (schemas searched: %s)", strings.Join(path, ", "))
			}
		}
		return nil, fmt.Errorf("%s; create it first (the sink does not create tables)", msg)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up table %s in %s: %w", c.table, c, err)
	}
	tg := &target{table: tableName{schema: schema, name: name}}
	tg.where = fmt.Sprintf("table %s at %s", tg.table, c)
	switch kind {
	case "r", "p":
	default:
		what := map[string]string{"v": "a view", "m": "a materialized view", "f": "a foreign table", "S": "a sequence", "i": "an index", "c": "a composite type"}[kind]
		if what == "" {
			what = "not a table"
		}
		return nil, fmt.Errorf("%s is %s; the sink writes tables", tg.where, what)
	}
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod),
			CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END,
			COALESCE(bt.typarray, 0), CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END,
			a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), a.atthasdef, a.attgenerated <> '', a.attidentity::text
		FROM pg_catalog.pg_attribute a
		JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_catalog.pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", tg.where, err)
	}
	var pcs []pgColumn
	for rows.Next() {
		var p pgColumn
		if err := rows.Scan(&p.name, &p.pgType, &p.base, &p.array, &p.typmod, &p.notNull, &p.hasDef, &p.generated, &p.identity); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the columns of %s: %w", tg.where, err)
		}
		pcs = append(pcs, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", tg.where, err)
	}
	if err := tg.mapColumns(t, pcs); err != nil {
		return nil, err
	}
	if err := tg.checkPrivileges(ctx, conn, oid, c.upsert); err != nil {
		return nil, err
	}
	if c.upsert {
		if err := tg.setKey(ctx, conn, oid, t, c.key); err != nil {
			return nil, err
		}
	}
	tg.statements()
	return tg, nil
}

// mapColumns pairs each Clink column with the PostgreSQL column of its
// name (exactly, else ignoring case) and checks the types; a PostgreSQL
// column the Clink table lacks must be nullable or have a default.
func (tg *target) mapColumns(t *connectors.Table, pcs []pgColumn) error {
	used := map[string]bool{}
	var problems []string
	var names []string
	for _, p := range pcs {
		names = append(names, p.name)
	}
	for _, f := range t.Schema.Fields() {
		idx := -1
		for i, p := range pcs {
			if p.name == f.Name {
				idx = i
			}
		}
		if idx < 0 {
			n := 0
			for i, p := range pcs {
				if strings.EqualFold(p.name, f.Name) {
					idx, n = i, n+1
				}
			}
			if n > 1 {
				return fmt.Errorf("%s has several columns named %s in different case; name the Clink column exactly", tg.where, f.Name)
			}
		}
		if idx < 0 {
			problems = append(problems, fmt.Sprintf("it has no column %s (the Clink column %s %s; its columns are %s)", f.Name, f.Name, kernels.SQLTypeName(f.Type), strings.Join(names, ", ")))
			continue
		}
		p := pcs[idx]
		used[p.name] = true
		col := column{clink: f.Name, typ: f.Type, name: p.name, pgType: p.pgType, oid: p.base, array: p.array, typmod: p.typmod}
		if p.generated {
			problems = append(problems, fmt.Sprintf("column %s is a generated column, which cannot be written", p.name))
			continue
		}
		if p.identity == "a" {
			problems = append(problems, fmt.Sprintf("column %s is GENERATED ALWAYS AS IDENTITY, which cannot be written (make it GENERATED BY DEFAULT)", p.name))
			continue
		}
		if why := col.checkType(); why != "" {
			problems = append(problems, fmt.Sprintf("column %s: %s", p.name, why))
			continue
		}
		tg.cols = append(tg.cols, col)
	}
	for _, p := range pcs {
		if !used[p.name] && p.notNull && !p.hasDef && !p.generated && p.identity == "" {
			problems = append(problems, fmt.Sprintf("column %s is NOT NULL without a default, and the Clink table has no column %s", p.name, p.name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s does not fit the Clink table %s: %s", tg.where, t.Name, strings.Join(problems, "; "))
	}
	return nil
}

// checkPrivileges refuses a table the user may not write.
func (tg *target) checkPrivileges(ctx context.Context, conn *pgx.Conn, oid uint32, upsert bool) error {
	privs := []string{"INSERT"}
	if upsert {
		privs = append(privs, "UPDATE", "DELETE")
	}
	for _, p := range privs {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT has_table_privilege($1::oid, $2)", oid, p).Scan(&ok); err != nil {
			return fmt.Errorf("checking privileges on %s: %w", tg.where, err)
		}
		if !ok {
			var user string
			_ = conn.QueryRow(ctx, "SELECT current_user").Scan(&user)
			return fmt.Errorf("user %s may not %s %s (GRANT %s ON %s TO %s)", user, p, tg.where, strings.Join(privs, ", "), tg.table.sql(), quoteIdent(user))
		}
	}
	return nil
}

// setKey marks the primary key columns and checks that a unique index
// (a primary key or unique constraint) covers exactly them, as ON
// CONFLICT (key) needs.
func (tg *target) setKey(ctx context.Context, conn *pgx.Conn, oid uint32, t *connectors.Table, key []string) error {
	var pgKey []string
	for _, k := range key {
		found := false
		for i := range tg.cols {
			if tg.cols[i].clink == k {
				tg.cols[i].key = true
				tg.keys = append(tg.keys, i)
				pgKey = append(pgKey, tg.cols[i].name)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("primary key column %s is not a column of %s", k, t.Name)
		}
	}
	rows, err := conn.Query(ctx, `SELECT ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) k
			JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k)
		FROM pg_catalog.pg_index i
		WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL`, oid)
	if err != nil {
		return fmt.Errorf("reading the unique indexes of %s: %w", tg.where, err)
	}
	defer rows.Close()
	want := append([]string(nil), pgKey...)
	sort.Strings(want)
	for rows.Next() {
		var cols []string
		if err := rows.Scan(&cols); err != nil {
			return fmt.Errorf("reading the unique indexes of %s: %w", tg.where, err)
		}
		sort.Strings(cols)
		if strings.Join(cols, "\x00") == strings.Join(want, "\x00") {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the unique indexes of %s: %w", tg.where, err)
	}
	quoted := make([]string, len(pgKey))
	for i, k := range pgKey {
		quoted[i] = quoteIdent(k)
	}
	return fmt.Errorf("%s has no primary key or unique index on (%s), which upsert mode needs (INSERT ... ON CONFLICT); e.g. ALTER TABLE %s ADD PRIMARY KEY (%s)",
		tg.where, strings.Join(pgKey, ", "), tg.table.sql(), strings.Join(quoted, ", "))
}

// statements builds the SQL the sink runs.
func (tg *target) statements() {
	names := make([]string, len(tg.cols))
	params := make([]string, len(tg.cols))
	for i, c := range tg.cols {
		names[i] = quoteIdent(c.name)
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	list := strings.Join(names, ", ")
	tg.copy = "COPY " + tg.table.sql() + " (" + list + ") FROM STDIN (FORMAT binary)"
	if len(tg.keys) == 0 {
		return
	}
	var keyNames, sets, keyParams, match []string
	for _, k := range tg.keys {
		keyNames = append(keyNames, quoteIdent(tg.cols[k].name))
	}
	for _, c := range tg.cols {
		if !c.key {
			sets = append(sets, quoteIdent(c.name)+" = EXCLUDED."+quoteIdent(c.name))
		}
	}
	action := "DO NOTHING"
	if len(sets) > 0 {
		action = "DO UPDATE SET " + strings.Join(sets, ", ")
	}
	// The parameters are arrays, one per column, of the rows' values (the
	// types are given with the parameters, as the arrays of the columns'
	// types).
	tg.upsert = "INSERT INTO " + tg.table.sql() + " (" + list + ") SELECT * FROM unnest(" + strings.Join(params, ", ") + ") ON CONFLICT (" + strings.Join(keyNames, ", ") + ") " + action
	for j, k := range tg.keys {
		keyParams = append(keyParams, fmt.Sprintf("$%d", j+1))
		match = append(match, fmt.Sprintf("t.%s = d.k%d", quoteIdent(tg.cols[k].name), j))
	}
	alias := make([]string, len(tg.keys))
	for j := range alias {
		alias[j] = fmt.Sprintf("k%d", j)
	}
	tg.delete = "DELETE FROM " + tg.table.sql() + " AS t USING unnest(" + strings.Join(keyParams, ", ") + ") AS d(" + strings.Join(alias, ", ") + ") WHERE " + strings.Join(match, " AND ")
}
