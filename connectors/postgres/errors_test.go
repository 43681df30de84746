package postgres

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/postgres/pgtest"
	"github.com/clink-dev/clink/vector"
)

var errSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// A job whose table does not fit fails when the sink opens, with an
// error naming the server, database, table and column.
func TestOpenErrors(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, `CREATE TABLE narrow (id integer, name text);
		CREATE TABLE missing_col (id bigint);
		CREATE TABLE strict (id bigint, name text, must text NOT NULL);
		CREATE TABLE nokey (id bigint, name text);
		CREATE TABLE partial (id bigint, name text);
		CREATE UNIQUE INDEX ON partial (id) WHERE id > 0;
		CREATE TABLE gen (id bigint, name text GENERATED ALWAYS AS ('x') STORED);
		CREATE TABLE ident (id bigint GENERATED ALWAYS AS IDENTITY, name text);
		CREATE TABLE serial (seq bigint GENERATED ALWAYS AS IDENTITY, id bigint, name text, at timestamptz NOT NULL DEFAULT now());
		CREATE VIEW v AS SELECT 1::bigint AS id, 'x'::text AS name;
		CREATE SCHEMA other;
		CREATE TABLE other.t (id bigint, name text);
		CREATE ROLE reader LOGIN PASSWORD 'reader-pw';
		CREATE TABLE ro (id bigint, name text);
		GRANT SELECT ON ro TO reader;
		CREATE TABLE small (id bigint, name numeric(5,2))`)
	where := "at " + srv.Addr() + "/" + db
	for _, tc := range []struct {
		name  string
		opts  []string
		wants []string
	}{
		{"absent", nil, []string{"table absent does not exist in " + srv.Addr() + "/" + db, "schemas searched: public", "create it first"}},
		{"x", []string{"table", "other.absent"}, []string{"table other.absent does not exist in " + srv.Addr() + "/" + db}},
		{"narrow", nil, []string{"table public.narrow " + where + " does not fit the Clink table narrow", "column id: it is integer in PostgreSQL, but BIGINT in Clink, which needs bigint or numeric"}},
		{"missing_col", nil, []string{"it has no column name (the Clink column name VARCHAR; its columns are id)"}},
		{"strict", nil, []string{"column must is NOT NULL without a default, and the Clink table has no column must"}},
		{"gen", nil, []string{"column name is a generated column"}},
		{"ident", nil, []string{"column id is GENERATED ALWAYS AS IDENTITY, which cannot be written"}},
		{"v", nil, []string{"table public.v " + where + " is a view"}},
		{"small", nil, []string{"column name: it is numeric(5,2) in PostgreSQL, but VARCHAR in Clink"}},
		{"nokey", []string{"mode", "upsert", "primary_key", "id"}, []string{"table public.nokey " + where + " has no primary key or unique index on (id), which upsert mode needs", `ALTER TABLE "public"."nokey" ADD PRIMARY KEY ("id")`}},
		{"partial", []string{"mode", "upsert", "primary_key", "id"}, []string{"has no primary key or unique index on (id)"}},
	} {
		_, err := openSink(t, url, tc.name, errSchema, tc.opts...)
		if err == nil {
			t.Errorf("%s: opened", tc.name)
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\nwant %q", tc.name, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "postgres sink '"+tc.name+"': ") {
			t.Errorf("%s: error does not name the sink: %v", tc.name, err)
		}
	}
	// A table of another schema, named with it; columns the Clink table
	// lacks that fill themselves.
	for _, tb := range []string{"other.t", "serial"} {
		if _, err := openSink(t, url, "whatever", errSchema, "table", tb); err != nil {
			t.Error(err)
		}
	}
	// A user who may not write.
	ro := strings.Replace(url, pgtest.User+":"+pgtest.Password, "reader:reader-pw", 1)
	_, err := openSink(t, ro, "ro", errSchema)
	if err == nil || !strings.Contains(err.Error(), "user reader may not INSERT table public.ro") {
		t.Errorf("privileges: %v", err)
	}
	_, err = openSink(t, ro, "ro", errSchema, "mode", "upsert", "primary_key", "id")
	if err == nil || !strings.Contains(err.Error(), "GRANT INSERT, UPDATE, DELETE ON \"public\".\"ro\" TO \"reader\"") {
		t.Errorf("privileges (upsert): %v", err)
	}
}

// Connection failures name the server and database and never show the
// password.
func TestConnectErrors(t *testing.T) {
	srv, db, _ := SharedDatabase(t)
	t.Setenv("CLINK_TEST_PG_PASSWORD", "wrong-password-123")
	_, err := openSink(t, "", "t", errSchema, "url", "", "host", "127.0.0.1", "port", strconv.Itoa(srv.Port), "database", db,
		"user", pgtest.User, "password", "env://CLINK_TEST_PG_PASSWORD", "sslmode", "disable")
	if err == nil || !strings.Contains(err.Error(), "give either 'url' or 'host'") {
		t.Errorf("url and host: %v", err)
	}
	open := func(opts ...string) error {
		m := map[string]string{"connector": "postgres"}
		for i := 0; i+1 < len(opts); i += 2 {
			m[opts[i]] = opts[i+1]
		}
		vo, err := spec.Validate(m)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Connector{}.NewSink(tableOf("t", errSchema, vo))
		if err == nil {
			s.Close()
		}
		return err
	}
	err = open("host", "127.0.0.1", "port", strconv.Itoa(srv.Port), "database", db, "user", pgtest.User,
		"password", "env://CLINK_TEST_PG_PASSWORD", "sslmode", "disable")
	if err == nil || !strings.Contains(err.Error(), "postgres sink 't': cannot connect to "+srv.Addr()+"/"+db+" as user "+pgtest.User) ||
		!strings.Contains(err.Error(), "password authentication failed") || strings.Contains(err.Error(), "wrong-password-123") {
		t.Errorf("wrong password: %v", err)
	}
	// A port nobody listens on.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	start := time.Now()
	err = open("url", "postgres://u:secret-in-url@127.0.0.1:"+strconv.Itoa(port)+"/d?sslmode=disable", "connect_timeout_ms", "2000")
	if err == nil || !strings.Contains(err.Error(), "cannot connect to 127.0.0.1:"+strconv.Itoa(port)+"/d as user u") || strings.Contains(err.Error(), "secret-in-url") {
		t.Errorf("closed port: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("connecting to a closed port took %s", time.Since(start))
	}
	// A database that does not exist.
	err = open("url", srv.URL("nodb"))
	if err == nil || !strings.Contains(err.Error(), "cannot connect to "+srv.Addr()+"/nodb") || !strings.Contains(err.Error(), `database "nodb" does not exist`) ||
		strings.Contains(err.Error(), pgtest.Password) {
		t.Errorf("no database: %v", err)
	}
}

// A value PostgreSQL refuses fails the write naming table, column and
// row; a NULL key and a changelog in append mode are refused before.
func TestWriteErrors(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, `CREATE TABLE short (id bigint PRIMARY KEY, name varchar(3));
		CREATE TABLE u (id bigint, name uuid)`)
	mem := memory.NewGoAllocator()
	s := mustSink(t, url, "short", errSchema)
	if err := s.Write(batch(mem, errSchema, [][]any{{int64(1), "abc"}, {int64(2), "abcd"}}, nil)); err != nil {
		t.Fatal(err)
	}
	err := s.Flush()
	if err == nil || !strings.Contains(err.Error(), "postgres sink 'short': writing 2 rows into table public.short at "+srv.Addr()+"/"+db) ||
		!strings.Contains(err.Error(), "value too long for type character varying(3)") || !strings.Contains(err.Error(), "column name") {
		t.Errorf("too long: %v", err)
	}
	if err := s.Write(batch(mem, errSchema, [][]any{{int64(3), "x"}}, nil)); err == nil || !strings.Contains(err.Error(), "value too long") {
		t.Errorf("a failed sink must keep failing: %v", err)
	}
	// In append mode a changelog is refused.
	s = mustSink(t, url, "short", errSchema)
	err = s.Write(batch(mem, errSchema, [][]any{{int64(1), "a"}}, []vector.RowKind{vector.Delete}))
	if err == nil || !strings.Contains(err.Error(), "append mode cannot write a changelog row (-D); use 'mode' = 'upsert'") {
		t.Errorf("changelog: %v", err)
	}
	s = mustSink(t, url, "short", errSchema, "mode", "upsert", "primary_key", "id")
	err = s.Write(batch(mem, errSchema, [][]any{{nil, "a"}}, []vector.RowKind{vector.Insert}))
	if err == nil || !strings.Contains(err.Error(), "primary key column id is NULL") {
		t.Errorf("null key: %v", err)
	}
	s = mustSink(t, url, "u", errSchema)
	err = s.Write(batch(mem, errSchema, [][]any{{int64(1), "not-a-uuid"}}, nil))
	if err == nil || !strings.Contains(err.Error(), "column name: 'not-a-uuid' is not a UUID") {
		t.Errorf("uuid: %v", err)
	}
}

// A partly filled batch goes out batch_interval_ms after its first row
// without a flush.
func TestBatchInterval(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, `CREATE TABLE tick (id bigint, name text)`)
	s := mustSink(t, url, "tick", errSchema, "batch_interval_ms", "50")
	if err := s.Write(batch(memory.NewGoAllocator(), errSchema, [][]any{{int64(1), "a"}, {int64(2), "b"}}, nil)); err != nil {
		t.Fatal(err)
	}
	conn := srv.Connect(t, db)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM tick").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows after 5 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A composite key, given in another case than the columns.
func TestCompositeKey(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, `CREATE TABLE ck (id bigint, name text, PRIMARY KEY (name, id))`)
	mem := memory.NewGoAllocator()
	s := mustSink(t, url, "ck", errSchema, "mode", "upsert", "primary_key", "NAME, Id")
	// Every column is part of the key: ON CONFLICT DO NOTHING.
	rows := [][]any{{int64(1), "a"}, {int64(1), "b"}, {int64(2), "a"}, {int64(1), "a"}, {int64(2), "a"}}
	if err := s.Write(batch(mem, errSchema, rows, []vector.RowKind{vector.Insert, vector.Insert, vector.Insert, vector.Insert, vector.Delete})); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(batch(mem, errSchema, [][]any{{int64(1), "a"}, {int64(3), "c"}}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "ck", query(t, srv.Connect(t, db), "SELECT id, name FROM ck"), []string{"1|a", "1|b", "3|c"})
}
