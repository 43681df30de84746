package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cjson "github.com/clink-dev/clink/connectors/formats/json"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/flight/flightsql"
	"github.com/clink-dev/clink/vector"
)

// clink sql is a Flight SQL client of the Coordinator's endpoint
// (docs/flightsql.md).

func cmdSQL(args []string) int {
	fs := newFlagSet("sql", `--coordinator HOST:PORT [-e "SELECT ..."] [--output table|json] [--job N]`)
	var cf coordinatorFlags
	cf.register(fs, "127.0.0.1:8081", "the Coordinator: its HTTP API (8081), its Flight address (6123) or its Flight SQL address (--flight-sql-addr)")
	exec := fs.String("e", "", "run these statements (separated by ;) and exit; without it, read statements ending in ; from standard input")
	output := fs.String("output", "table", "table (aligned columns) or json (one object per row, as clink run prints)")
	job := fs.String("job", "", "also name this job's state table 'state' (as clink state-query --job)")
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	if *output != "table" && *output != "json" {
		return fail("sql", &usageError{fmt.Sprintf("--output must be table or json, not %q", *output)})
	}
	addr, err := cf.address(fs)
	switch {
	case err != nil:
		return fail("sql", &usageError{err.Error()})
	case addr == "":
		return fail("sql", &usageError{"give the Coordinator's Flight SQL address: --coordinator HOST:PORT (the Coordinator logs it: flight sql ...)"})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := dialSQL(addr, cf.opts)
	if err != nil {
		return fail("sql", err)
	}
	defer cl.Close()
	if *job != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, flightsql.JobHeader, *job)
	}
	if *exec != "" {
		for _, q := range splitStatements(*exec) {
			if err := runSQL(ctx, cl, q, *output == "json", os.Stdout); err != nil {
				return fail("sql", err)
			}
		}
		return 0
	}
	return interactive(ctx, cl, *output == "json", os.Stdin, os.Stdout, os.Stderr)
}

// dialSQL connects to the Flight SQL endpoint of the Coordinator at addr:
// its HTTP API's address (8081), its Flight address (6123) or the Flight
// SQL address itself (cluster.FlightSQLAddrOf).
func dialSQL(addr string, opts []cflight.Option) (*afsql.Client, error) {
	token := os.Getenv("CLINK_AUTH_TOKEN")
	sqlAddr, err := cluster.FlightSQLAddrOf(context.Background(), addr, token, opts...)
	if err != nil {
		return nil, err
	}
	return afsql.NewClient(sqlAddr, nil, nil, cflight.DialOptions(token, opts...)...)
}

// interactive reads statements ending in ';' and prints each one's
// result; an error is printed and the next statement read.
func interactive(ctx context.Context, cl *afsql.Client, asJSON bool, in io.Reader, out, errw io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 16<<20)
	var pending strings.Builder
	prompt := func() {
		if pending.Len() == 0 {
			fmt.Fprint(errw, "clink> ")
		} else {
			fmt.Fprint(errw, "    -> ")
		}
	}
	code := 0
	prompt()
	for sc.Scan() {
		pending.WriteString(sc.Text())
		pending.WriteByte('\n')
		stmts := splitStatements(pending.String())
		complete := strings.HasSuffix(strings.TrimSpace(pending.String()), ";")
		if complete {
			pending.Reset()
		} else if len(stmts) > 0 {
			// The last one goes on on the next line.
			last := stmts[len(stmts)-1]
			stmts = stmts[:len(stmts)-1]
			pending.Reset()
			pending.WriteString(last)
			pending.WriteByte('\n')
		}
		for _, q := range stmts {
			if err := runSQL(ctx, cl, q, asJSON, out); err != nil {
				fmt.Fprintln(errw, "error:", err)
				code = 1
			}
		}
		if ctx.Err() != nil {
			return 1
		}
		prompt()
	}
	fmt.Fprintln(errw)
	if q := strings.TrimSpace(pending.String()); q != "" {
		if err := runSQL(ctx, cl, q, asJSON, out); err != nil {
			fmt.Fprintln(errw, "error:", err)
			code = 1
		}
	}
	return code
}

// splitStatements splits text at the semicolons outside quotes and
// comments, dropping empty statements.
func splitStatements(text string) []string {
	var out []string
	start := 0
	var quote rune
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"' || r == '`':
			quote = r
		case r == '-' && strings.HasPrefix(text[i:], "--"):
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				n = j
			} else {
				n = len(text) - i
			}
		case r == ';':
			add(text[start:i])
			start = i + 1
		}
		i += n
	}
	add(text[start:])
	return out
}

// runSQL runs one statement and prints its rows.
func runSQL(ctx context.Context, cl *afsql.Client, q string, asJSON bool, w io.Writer) error {
	info, err := cl.Execute(ctx, q)
	if err != nil {
		return sqlErr(err)
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	var tbl *textTable
	for _, ep := range info.Endpoint {
		r, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return sqlErr(err)
		}
		if tbl == nil && !asJSON {
			tbl = newTextTable(r.Schema())
		}
		var buf []byte
		for r.Next() {
			rec := r.RecordBatch()
			if asJSON {
				buf = cjson.AppendBatch(buf[:0], &vector.Batch{Rec: rec})
				bw.Write(buf)
			} else {
				tbl.add(rec)
			}
		}
		err = r.Err()
		r.Release()
		if err != nil {
			return sqlErr(err)
		}
	}
	if tbl != nil {
		tbl.write(bw)
	}
	return nil
}

// sqlErr is the server's message without gRPC's decoration (it holds the
// line, column and a caret under the statement).
func sqlErr(err error) error {
	if st, ok := status.FromError(err); ok {
		return errors.New(st.Message())
	}
	return err
}

// textTable collects rows and prints them as aligned columns.
type textTable struct {
	head []string
	rows [][]string
}

func newTextTable(s *arrow.Schema) *textTable {
	t := &textTable{}
	for _, f := range s.Fields() {
		t.head = append(t.head, f.Name)
	}
	return t
}

func (t *textTable) add(rec arrow.RecordBatch) {
	for i := 0; i < int(rec.NumRows()); i++ {
		row := make([]string, rec.NumCols())
		for c := range row {
			col := rec.Column(c)
			switch {
			case col.IsNull(i):
				row[c] = "NULL"
			case col.DataType().ID() == arrow.STRING:
				row[c] = col.ValueStr(i)
			default:
				// Numbers as JSON writes them (shortest round-trip).
				v, _ := json.Marshal(col.GetOneForMarshal(i))
				row[c] = strings.Trim(string(v), `"`)
			}
		}
		t.rows = append(t.rows, row)
	}
}

func (t *textTable) write(w io.Writer) {
	width := make([]int, len(t.head))
	for c, h := range t.head {
		width[c] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for c, v := range r {
			width[c] = max(width[c], utf8.RuneCountInString(v))
		}
	}
	line := func(cells []string) {
		for c, v := range cells {
			if c > 0 {
				fmt.Fprint(w, "  ")
			}
			if c == len(cells)-1 {
				fmt.Fprint(w, v)
			} else {
				fmt.Fprint(w, v+strings.Repeat(" ", width[c]-utf8.RuneCountInString(v)))
			}
		}
		fmt.Fprintln(w)
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for c := range sep {
		sep[c] = strings.Repeat("-", width[c])
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	n := "rows"
	if len(t.rows) == 1 {
		n = "row"
	}
	fmt.Fprintf(w, "(%d %s)\n", len(t.rows), n)
}
