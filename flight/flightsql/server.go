package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// JobHeader is the call metadata that also declares table 'state' as the
// named job's state (clink state-query --job N).
const JobHeader = "clink-job"

// Server is the Flight SQL endpoint over a Catalog.
type Server struct {
	afsql.BaseServer
	cat Catalog
	srv flight.Server

	mu       sync.Mutex
	prepared map[string]handle
}

// handle is what a ticket or prepared statement carries: the statement
// and the job whose state is 'state'.
type handle struct {
	Query string `json:"q"`
	Job   string `json:"job,omitempty"`
}

// NewServer listens on addr with the gRPC options opts (the bearer token
// and TLS of the Coordinator's Flight server: cflight.ServerOptions).
func NewServer(addr string, cat Catalog, version string, opts ...grpc.ServerOption) (*Server, error) {
	s := &Server{cat: cat, prepared: map[string]handle{}}
	s.Alloc = memory.DefaultAllocator
	for id, v := range map[afsql.SqlInfo]any{
		afsql.SqlInfoFlightSqlServerName:         "Clink",
		afsql.SqlInfoFlightSqlServerVersion:      version,
		afsql.SqlInfoFlightSqlServerArrowVersion: "18",
		afsql.SqlInfoFlightSqlServerReadOnly:     true,
		afsql.SqlInfoFlightSqlServerSql:          true,
		afsql.SqlInfoFlightSqlServerSubstrait:    false,
		afsql.SqlInfoFlightSqlServerTransaction:  int32(0), // none
		afsql.SqlInfoFlightSqlServerCancel:       false,
		afsql.SqlInfoIdentifierQuoteChar:         "`",
	} {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.srv = flight.NewServerWithMiddleware(nil, opts...)
	s.srv.InitListener(lis)
	s.srv.RegisterFlightService(afsql.NewFlightServer(s))
	return s, nil
}

// Addr is where the endpoint listens.
func (s *Server) Addr() string { return s.srv.Addr().String() }

// Serve serves until Shutdown.
func (s *Server) Serve() error { return s.srv.Serve() }

// Shutdown stops the server.
func (s *Server) Shutdown() { s.srv.Shutdown() }

func jobOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(JobHeader); len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

// check plans h without running it: an error in the statement is
// InvalidArgument with its line and column. It returns the result schema.
func (s *Server) check(h handle) (*arrow.Schema, error) {
	q, err := prepare(s.cat, h.Query, h.Job, s.Alloc)
	if err != nil {
		return nil, grpcErr(err)
	}
	defer q.release()
	if _, err := q.compile(); err != nil {
		return nil, grpcErr(err)
	}
	return q.schema, nil
}

func grpcErr(err error) error {
	var qe *queryError
	if errors.As(err, &qe) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

// execute plans and runs h; its result streams on the channel.
func (s *Server) execute(ctx context.Context, h handle) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	q, err := prepare(s.cat, h.Query, h.Job, s.Alloc)
	if err != nil {
		return nil, nil, grpcErr(err)
	}
	job, err := q.compile()
	if err != nil {
		q.release()
		return nil, nil, grpcErr(err)
	}
	recs := make(chan arrow.RecordBatch)
	out := make(chan flight.StreamChunk)
	ctx, cancel := context.WithCancel(ctx)
	var runErr error
	go func() {
		defer close(recs)
		runErr = q.run(ctx, job, recs)
	}()
	go func() {
		defer close(out)
		defer cancel()
		defer q.release()
		for r := range recs {
			select {
			case out <- flight.StreamChunk{Data: r}:
			case <-ctx.Done():
				r.Release()
			}
		}
		if runErr != nil && ctx.Err() == nil {
			select {
			case out <- flight.StreamChunk{Err: status.Error(codes.Unknown, runErr.Error())}:
			case <-ctx.Done():
			}
		}
	}()
	return q.schema, out, nil
}

func newHandle() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func encode(h handle) []byte {
	b, _ := json.Marshal(h)
	return b
}

// GetFlightInfoStatement checks the statement and hands back a ticket
// carrying it; DoGet runs it.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd afsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	h := handle{Query: cmd.GetQuery(), Job: jobOf(ctx)}
	schema, err := s.check(h)
	if err != nil {
		return nil, err
	}
	tkt, err := afsql.CreateStatementQueryTicket(encode(h))
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		FlightDescriptor: desc, Schema: flight.SerializeSchema(schema, s.Alloc), TotalRecords: -1, TotalBytes: -1}, nil
}

// GetSchemaStatement plans the statement for its result schema.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd afsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	schema, err := s.check(handle{Query: cmd.GetQuery(), Job: jobOf(ctx)})
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.Alloc)}, nil
}

// DoGetStatement runs the ticket's statement.
func (s *Server) DoGetStatement(ctx context.Context, cmd afsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var h handle
	if err := json.Unmarshal(cmd.GetStatementHandle(), &h); err != nil {
		return nil, nil, status.Error(codes.InvalidArgument, "malformed ticket")
	}
	return s.execute(ctx, h)
}

// CreatePreparedStatement checks the statement and keeps it until
// ClosePreparedStatement; it has no parameters.
func (s *Server) CreatePreparedStatement(ctx context.Context, req afsql.ActionCreatePreparedStatementRequest) (afsql.ActionCreatePreparedStatementResult, error) {
	h := handle{Query: req.GetQuery(), Job: jobOf(ctx)}
	schema, err := s.check(h)
	if err != nil {
		return afsql.ActionCreatePreparedStatementResult{}, err
	}
	id := newHandle()
	s.mu.Lock()
	s.prepared[id] = h
	s.mu.Unlock()
	update := false
	return afsql.ActionCreatePreparedStatementResult{Handle: []byte(id), DatasetSchema: schema, IsUpdate: &update}, nil
}

// ClosePreparedStatement forgets a prepared statement.
func (s *Server) ClosePreparedStatement(_ context.Context, req afsql.ActionClosePreparedStatementRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.prepared, string(req.GetPreparedStatementHandle()))
	return nil
}

func (s *Server) preparedOf(cmd afsql.PreparedStatementQuery) (handle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.prepared[string(cmd.GetPreparedStatementHandle())]
	if !ok {
		return h, status.Error(codes.InvalidArgument, "no such prepared statement (closed, or prepared on another Coordinator)")
	}
	return h, nil
}

// GetFlightInfoPreparedStatement hands back a ticket for the statement.
func (s *Server) GetFlightInfoPreparedStatement(_ context.Context, cmd afsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if _, err := s.preparedOf(cmd); err != nil {
		return nil, err
	}
	return &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc, TotalRecords: -1, TotalBytes: -1}, nil
}

// DoGetPreparedStatement runs the prepared statement (anew: the tables are
// those of the moment it runs).
func (s *Server) DoGetPreparedStatement(ctx context.Context, cmd afsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	h, err := s.preparedOf(cmd)
	if err != nil {
		return nil, nil, err
	}
	return s.execute(ctx, h)
}

func (s *Server) infoFor(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc, Schema: flight.SerializeSchema(schema, s.Alloc), TotalRecords: -1, TotalBytes: -1}
}

// A table the endpoint lists: its schema (db_schema_name) and name.
type listed struct {
	schema, name, kind string
	arrow              *arrow.Schema
}

// listTables lists the system tables and the state tables of every job
// with a completed checkpoint (their columns only with withSchema, which
// reads the checkpoints' part schemas).
func (s *Server) listTables(withSchema bool) ([]listed, error) {
	var out []listed
	for _, t := range systemTables(s.cat, time.Now()) {
		l := listed{schema: SystemSchema, name: t.name, kind: "SYSTEM TABLE"}
		if withSchema {
			sc, err := s.check(handle{Query: "SELECT * FROM " + t.name})
			if err != nil {
				return nil, err
			}
			l.arrow = sc
		}
		out = append(out, l)
	}
	for _, j := range s.cat.Jobs() {
		if j.StateDir == "" {
			continue
		}
		p, ok, err := pinLatest(j)
		if err != nil || !ok {
			continue
		}
		p.unpin()
		names := append([]string{StateTable}, p.operators...)
		for _, n := range names {
			l := listed{schema: JobSchema(j.ID), name: n, kind: "TABLE"}
			if withSchema {
				table := JobSchema(j.ID) + "." + n
				if n != StateTable {
					table = stateTableName(j.ID, n)
				}
				sc, err := s.check(handle{Query: "SELECT * FROM " + table})
				if err != nil {
					continue // retention outran us; the next listing has it
				}
				l.arrow = sc
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// match is SQL LIKE as Flight SQL filter patterns use it (% and _); a nil
// pattern matches everything.
func match(pattern *string, s string) bool {
	if pattern == nil || *pattern == "" {
		return true
	}
	p := strings.NewReplacer("*", `\*`, "?", `\?`, "[", `\[`, `\`, `\\`, "%", "*", "_", "?").Replace(*pattern)
	ok, _ := path.Match(strings.ToLower(p), strings.ToLower(s))
	return ok
}

// GetFlightInfoSchemas lists the schemas: clink and job_<id>.
func (s *Server) GetFlightInfoSchemas(_ context.Context, _ afsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(desc, schema_ref.DBSchemas), nil
}

func (s *Server) DoGetDBSchemas(_ context.Context, cmd afsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if c := cmd.GetCatalog(); c != nil && *c != "" {
		return s.stream(schema_ref.DBSchemas, nil)
	}
	names := []string{SystemSchema}
	for _, j := range s.cat.Jobs() {
		if j.StateDir != "" {
			names = append(names, JobSchema(j.ID))
		}
	}
	var rows [][]any
	for _, n := range names {
		if match(cmd.GetDBSchemaFilterPattern(), n) {
			rows = append(rows, []any{nil, n})
		}
	}
	return s.stream(schema_ref.DBSchemas, rows)
}

// GetFlightInfoTables lists the tables.
func (s *Server) GetFlightInfoTables(_ context.Context, cmd afsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.infoFor(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.infoFor(desc, schema_ref.Tables), nil
}

func (s *Server) DoGetTables(_ context.Context, cmd afsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	if c := cmd.GetCatalog(); c != nil && *c != "" {
		return s.stream(schema, nil)
	}
	all, err := s.listTables(cmd.GetIncludeSchema())
	if err != nil {
		return nil, nil, err
	}
	types := cmd.GetTableTypes()
	var rows [][]any
	for _, t := range all {
		if !match(cmd.GetDBSchemaFilterPattern(), t.schema) || !match(cmd.GetTableNameFilterPattern(), t.name) {
			continue
		}
		if len(types) > 0 && !containsFold(types, t.kind) {
			continue
		}
		row := []any{nil, t.schema, t.name, t.kind}
		if cmd.GetIncludeSchema() {
			row = append(row, flight.SerializeSchema(t.arrow, s.Alloc))
		}
		rows = append(rows, row)
	}
	return s.stream(schema, rows)
}

// GetFlightInfoTableTypes lists TABLE and SYSTEM TABLE.
func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(desc, schema_ref.TableTypes), nil
}

func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.stream(schema_ref.TableTypes, [][]any{{"SYSTEM TABLE"}, {"TABLE"}})
}

// GetFlightInfoCatalogs: there are no catalogs (catalog_name is null).
func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(desc, schema_ref.Catalogs), nil
}

func (s *Server) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.stream(schema_ref.Catalogs, nil)
}

func containsFold(l []string, s string) bool {
	for _, v := range l {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// stream sends rows (strings, nil and []byte) of schema as one batch.
func (s *Server) stream(schema *arrow.Schema, rows [][]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, schema)
	defer b.Release()
	for _, r := range rows {
		for i, v := range r {
			switch v := v.(type) {
			case nil:
				b.Field(i).AppendNull()
			case string:
				b.Field(i).(*array.StringBuilder).Append(v)
			case []byte:
				b.Field(i).(*array.BinaryBuilder).Append(v)
			}
		}
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return schema, ch, nil
}
