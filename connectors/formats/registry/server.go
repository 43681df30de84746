package registry

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxBodyBytes caps request bodies unless Options.MaxBodyBytes says
// otherwise.
const DefaultMaxBodyBytes = 1 << 20

// ContentType is the Schema Registry's media type; requests may also send
// application/json.
const ContentType = "application/vnd.schemaregistry.v1+json"

// Options configure a dev Schema Registry.
type Options struct {
	// DataDir, when set, keeps the registry in DataDir/schema-registry.json,
	// rewritten atomically after every change, so a restarted registry
	// keeps its ids. Empty: memory only.
	DataDir string
	// Users, when set, maps user names to passwords; every request must
	// then carry HTTP basic auth for one of them (401 otherwise).
	Users map[string]string
	// MaxBodyBytes caps a request body (413 beyond it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// AllowInsecure lets Serve listen on a non-loopback address without
	// Users. By default it refuses, as every Clink server does.
	AllowInsecure bool
	// Logger receives one line per change; nil discards.
	Logger *slog.Logger
}

// Server is a development Schema Registry speaking Confluent's REST API.
// See the package documentation for what it implements.
type Server struct {
	opts    Options
	file    string // "" without DataDir
	log     *slog.Logger
	handler http.Handler
	http    *http.Server

	mu    sync.Mutex
	st    *state
	saved []byte // the data file's content, to roll back a failed write
}

// NewServer builds a registry, loading DataDir's file when there is one.
// It does not listen: call Serve, or mount Handler.
func NewServer(opts Options) (*Server, error) {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s := &Server{opts: opts, log: opts.Logger, st: newState()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.DataDir != "" {
		if err := mkdirPrivate(opts.DataDir); err != nil {
			return nil, fmt.Errorf("schema registry: data dir: %w", err)
		}
		s.file = filepath.Join(opts.DataDir, DataFile)
		st, err := load(s.file)
		if err != nil {
			return nil, fmt.Errorf("schema registry: loading %w", err)
		}
		s.st = st
		if s.saved, err = json.Marshal(st); err != nil {
			return nil, err
		}
	}
	s.handler = s.routes()
	s.http = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Handler is the registry's HTTP handler (auth and body limits included),
// for callers that serve it themselves.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers requests on ln until Close; it returns nil after Close.
// Without Options.Users it refuses a listener that is not on a loopback
// address, unless Options.AllowInsecure.
func (s *Server) Serve(ln net.Listener) error {
	if len(s.opts.Users) == 0 && !s.opts.AllowInsecure && !isLoopback(ln.Addr()) {
		return fmt.Errorf("schema registry: refusing to serve on %s without basic auth: bind 127.0.0.1, set users, or allow insecure", ln.Addr())
	}
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops Serve and closes its connections.
func (s *Server) Close() error { return s.http.Close() }

func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Confluent's error codes.
const (
	codeSubjectNotFound       = 40401
	codeVersionNotFound       = 40402
	codeSchemaNotFound        = 40403
	codeSubjectSoftDeleted    = 40404
	codeSubjectNotSoftDeleted = 40405
	codeVersionSoftDeleted    = 40406
	codeVersionNotSoftDeleted = 40407
	codeSubjectLevelNotSet    = 40408
	codeIncompatible          = 409
	codeInvalidSchema         = 42201
	codeInvalidVersion        = 42202
	codeInvalidCompatibility  = 42203
	codeStoreError            = 50001
	codeBadRequest            = 400
	codeUnauthorized          = 401
	codeNotFound              = 404
	codeBodyTooLarge          = 413
	codeUnsupportedMediaType  = 415
)

// apiError is an error the handlers answer with.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, f handlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			v, err := f(w, r)
			if err != nil {
				writeError(w, err)
				return
			}
			if raw, ok := v.(rawSchema); ok {
				w.Header().Set("Content-Type", ContentType)
				io.WriteString(w, string(raw))
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	h("GET /{$}", func(http.ResponseWriter, *http.Request) (any, error) { return struct{}{}, nil })
	h("GET /schemas", s.getSchemas)
	h("GET /schemas/types", s.getTypes)
	h("GET /schemas/ids/{id}", s.getSchemaByID)
	h("GET /schemas/ids/{id}/schema", s.getRawSchemaByID)
	h("GET /schemas/ids/{id}/versions", s.getVersionsByID)
	h("GET /schemas/ids/{id}/subjects", s.getSubjectsByID)
	h("GET /subjects", s.getSubjects)
	h("POST /subjects/{subject}", s.lookup)
	h("DELETE /subjects/{subject}", s.deleteSubject)
	h("GET /subjects/{subject}/versions", s.getVersions)
	h("POST /subjects/{subject}/versions", s.register)
	h("GET /subjects/{subject}/versions/{version}", s.getVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", s.getRawVersion)
	h("GET /subjects/{subject}/versions/{version}/referencedby", s.getReferencedBy)
	h("DELETE /subjects/{subject}/versions/{version}", s.deleteVersion)
	h("GET /config", s.getConfig)
	h("PUT /config", s.putConfig)
	h("DELETE /config", s.deleteConfig)
	h("GET /config/{subject}", s.getConfig)
	h("PUT /config/{subject}", s.putConfig)
	h("DELETE /config/{subject}", s.deleteConfig)
	h("GET /mode", s.getMode)
	h("GET /mode/{subject}", s.getMode)
	h("POST /compatibility/subjects/{subject}/versions/{version}", s.compatibility)
	h("POST /compatibility/subjects/{subject}/versions", s.compatibility)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.opts.Users) > 0 && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="clink-schema-registry"`)
			writeError(w, errf(http.StatusUnauthorized, codeUnauthorized, "unauthorized: this registry requires HTTP basic auth"))
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			writeError(w, errf(http.StatusNotFound, codeNotFound, "no endpoint %s %s in the Clink dev schema registry", r.Method, r.URL.Path))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			if ct := r.Header.Get("Content-Type"); ct != "" && !acceptedContentType(ct) {
				writeError(w, errf(http.StatusUnsupportedMediaType, codeUnsupportedMediaType, "unsupported Content-Type %q: send %s or application/json", ct, ContentType))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		}
		mux.ServeHTTP(w, r)
	})
}

func acceptedContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case ContentType, "application/vnd.schemaregistry+json", "application/json", "application/octet-stream", "text/plain":
		return true
	}
	return false
}

func (s *Server) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	want, known := s.opts.Users[user]
	// Compare even for unknown users, so timing does not tell them apart.
	eq := subtle.ConstantTimeCompare([]byte(pass), []byte(want)) == 1
	return known && eq
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		fmt.Fprintf(&buf, `{"error_code":50000,"message":%q}`+"\n", err.Error())
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = errf(http.StatusInternalServerError, 50000, "%v", err)
	}
	writeJSON(w, ae.status, struct {
		Code int    `json:"error_code"`
		Msg  string `json:"message"`
	}{ae.code, ae.msg})
}

// decode reads one JSON value from the body into v.
func decode(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	err := d.Decode(v)
	if err == nil && d.More() {
		err = errors.New("data after the JSON value")
	}
	if err == nil {
		return nil
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errf(http.StatusRequestEntityTooLarge, codeBodyTooLarge, "request body larger than %d bytes: the dev schema registry refuses it", mbe.Limit)
	}
	if errors.Is(err, io.EOF) {
		return errf(http.StatusBadRequest, codeBadRequest, "request body is empty: want a JSON object")
	}
	return errf(http.StatusBadRequest, codeBadRequest, "request body is not valid JSON: %v", err)
}

// schemaRequest is the body of register, lookup and compatibility calls.
type schemaRequest struct {
	Schema     string            `json:"schema"`
	SchemaType string            `json:"schemaType"`
	References []json.RawMessage `json:"references"`
	ID         int               `json:"id"`
	Version    int               `json:"version"`
}

// parsed is a validated schemaRequest.
type parsed struct {
	typ  SchemaType
	text string
	key  string
}

func readSchema(r *http.Request) (parsed, error) {
	var req schemaRequest
	if err := decode(r, &req); err != nil {
		return parsed{}, err
	}
	if len(req.References) > 0 {
		return parsed{}, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "schema references are not supported by the Clink dev schema registry: inline referenced types (or, for Protobuf, import only google/protobuf/*.proto)")
	}
	if req.ID > 0 || req.Version > 0 {
		return parsed{}, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "registering with an explicit id or version (import mode) is not supported by the Clink dev schema registry")
	}
	if strings.TrimSpace(req.Schema) == "" {
		return parsed{}, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "empty schema: the request's \"schema\" field is missing or blank")
	}
	typ, err := ParseType(req.SchemaType)
	if err == nil {
		var key string
		if key, err = canonical(typ, req.Schema); err == nil {
			return parsed{typ: typ, text: req.Schema, key: key}, nil
		}
	}
	return parsed{}, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "%v", err)
}

// persist writes the state after a change; on failure it rolls the
// change back and reports a store error.
func (s *Server) persist() error {
	if s.file == "" {
		return nil
	}
	b, err := json.MarshalIndent(s.st, "", "  ")
	if err == nil {
		err = writeAtomic(s.file, b)
	}
	if err != nil {
		if prev, lerr := loadBytes(s.saved); lerr == nil {
			s.st = prev
		}
		return errf(http.StatusInternalServerError, codeStoreError, "schema registry: writing %s: %v (the change was not made)", s.file, err)
	}
	s.saved = b
	return nil
}

func boolParam(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}

// schemaResponse is a schema as the API shows it; Confluent leaves
// schemaType out for AVRO.
type schemaResponse struct {
	Subject    string `json:"subject,omitempty"`
	Version    int    `json:"version,omitempty"`
	ID         int    `json:"id,omitempty"`
	SchemaType string `json:"schemaType,omitempty"`
	Schema     string `json:"schema"`
}

func typeField(t SchemaType) string {
	if t == Avro {
		return ""
	}
	return string(t)
}

// rawSchema is answered as the schema text itself.
type rawSchema string

func (s *Server) response(subj string, v *storedVersion) schemaResponse {
	sc := s.st.Schemas[v.ID]
	return schemaResponse{Subject: subj, Version: v.Version, ID: v.ID, SchemaType: typeField(sc.Type), Schema: sc.Text}
}

func (s *Server) getTypes(http.ResponseWriter, *http.Request) (any, error) {
	return []SchemaType{Avro, Protobuf}, nil
}

func pathID(r *http.Request) (int, error) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 1 {
		return 0, errf(http.StatusNotFound, codeSchemaNotFound, "schema %q not found: ids are positive integers", r.PathValue("id"))
	}
	return id, nil
}

func (s *Server) schemaByID(r *http.Request) (*stored, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	sc := s.st.Schemas[id]
	if sc == nil {
		return nil, 0, errf(http.StatusNotFound, codeSchemaNotFound, "schema %d not found", id)
	}
	return sc, id, nil
}

func (s *Server) getSchemaByID(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, _, err := s.schemaByID(r)
	if err != nil {
		return nil, err
	}
	return schemaResponse{SchemaType: typeField(sc.Type), Schema: sc.Text}, nil
}

func (s *Server) getRawSchemaByID(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, _, err := s.schemaByID(r)
	if err != nil {
		return nil, err
	}
	return rawSchema(sc.Text), nil
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// usages lists the subject versions that use id, by subject then version.
func (s *Server) usages(id int, deleted bool) []subjectVersion {
	out := []subjectVersion{}
	for _, name := range s.st.subjectNames(true) {
		for _, v := range s.st.Subjects[name].live(deleted) {
			if v.ID == id {
				out = append(out, subjectVersion{name, v.Version})
			}
		}
	}
	return out
}

func (s *Server) getVersionsByID(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, id, err := s.schemaByID(r)
	if err != nil {
		return nil, err
	}
	return s.usages(id, boolParam(r, "deleted")), nil
}

func (s *Server) getSubjectsByID(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, id, err := s.schemaByID(r)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, u := range s.usages(id, boolParam(r, "deleted")) {
		if len(names) == 0 || names[len(names)-1] != u.Subject {
			names = append(names, u.Subject)
		}
	}
	return names, nil
}

func (s *Server) getSchemas(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	deleted := boolParam(r, "deleted")
	prefix := r.URL.Query().Get("subjectPrefix")
	out := []schemaResponse{}
	for _, name := range s.st.subjectNames(deleted) {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, v := range s.st.Subjects[name].live(deleted) {
			out = append(out, s.response(name, v))
		}
	}
	return out, nil
}

func (s *Server) getSubjects(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := r.URL.Query().Get("subjectPrefix")
	out := []string{}
	for _, name := range s.st.subjectNames(boolParam(r, "deleted")) {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

// subject finds the subject named in the path, with at least one version
// (soft-deleted ones count when deleted is set).
func (s *Server) subject(r *http.Request, deleted bool) (string, *subject, error) {
	name := r.PathValue("subject")
	sub := s.st.Subjects[name]
	if sub == nil || len(sub.live(deleted)) == 0 {
		return name, nil, errf(http.StatusNotFound, codeSubjectNotFound, "subject %q not found", name)
	}
	return name, sub, nil
}

// version finds the path's version ("latest", -1, or 1..2^31-1).
func (s *Server) version(r *http.Request, name string, sub *subject, deleted bool) (*storedVersion, error) {
	raw := r.PathValue("version")
	vs := sub.live(deleted)
	if raw == "latest" || raw == "-1" {
		return vs[len(vs)-1], nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > 1<<31-1 {
		return nil, errf(http.StatusUnprocessableEntity, codeInvalidVersion, "the specified version %q is not a valid version id: allowed values are between [1, 2^31-1] and the string \"latest\"", raw)
	}
	for _, v := range vs {
		if v.Version == n {
			return v, nil
		}
	}
	return nil, errf(http.StatusNotFound, codeVersionNotFound, "version %d of subject %q not found", n, name)
}

func (s *Server) getVersions(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	deleted := boolParam(r, "deleted")
	_, sub, err := s.subject(r, deleted)
	if err != nil {
		return nil, err
	}
	out := []int{}
	for _, v := range sub.live(deleted) {
		out = append(out, v.Version)
	}
	return out, nil
}

func (s *Server) subjectVersion(r *http.Request) (string, *storedVersion, error) {
	deleted := boolParam(r, "deleted")
	name, sub, err := s.subject(r, deleted)
	if err != nil {
		return name, nil, err
	}
	v, err := s.version(r, name, sub, deleted)
	return name, v, err
}

func (s *Server) getVersion(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, v, err := s.subjectVersion(r)
	if err != nil {
		return nil, err
	}
	return s.response(name, v), nil
}

func (s *Server) getRawVersion(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, v, err := s.subjectVersion(r)
	if err != nil {
		return nil, err
	}
	return rawSchema(s.st.Schemas[v.ID].Text), nil
}

func (s *Server) getReferencedBy(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, _, err := s.subjectVersion(r); err != nil {
		return nil, err
	}
	return []int{}, nil // references are not supported, so nothing refers
}

func (s *Server) lookup(_ http.ResponseWriter, r *http.Request) (any, error) {
	p, err := readSchema(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	deleted := boolParam(r, "deleted")
	name, sub, err := s.subject(r, deleted)
	if err != nil {
		return nil, err
	}
	id, ok := s.st.byKey[p.key]
	if ok {
		for _, v := range sub.live(deleted) {
			if v.ID == id {
				return s.response(name, v), nil
			}
		}
	}
	return nil, errf(http.StatusNotFound, codeSchemaNotFound, "schema not found under subject %q", name)
}

// checkAgainst checks p against only, or else against sub's live
// versions that level names (the latest, or all when transitive), and
// lists why it is incompatible; a version of another schema type is
// incompatible unless level is NONE.
func (s *Server) checkAgainst(level Level, p parsed, sub *subject, only *storedVersion) ([]string, error) {
	var vs []*storedVersion
	if only != nil {
		vs = []*storedVersion{only}
	} else if sub != nil {
		vs = sub.live(false)
		if !level.transitive() && len(vs) > 0 {
			vs = vs[len(vs)-1:]
		}
	}
	var olds []version
	var msgs []string
	for _, v := range vs {
		sc := s.st.Schemas[v.ID]
		if sc.Type != p.typ {
			msgs = append(msgs, fmt.Sprintf("the new schema is %s, version %d is %s", p.typ, v.Version, sc.Type))
			continue
		}
		olds = append(olds, version{label: fmt.Sprintf("version %d", v.Version), text: sc.Text})
	}
	if level == None {
		return nil, nil
	}
	// check applies transitivity itself; vs is already narrowed, so
	// pass a transitive level to keep every entry.
	err := check(transitiveOf(level), p.typ, p.text, olds)
	var ie *IncompatibleError
	switch {
	case errors.As(err, &ie):
		msgs = append(msgs, ie.Messages...)
	case err != nil:
		return nil, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "%v", err)
	}
	return msgs, nil
}

func transitiveOf(l Level) Level {
	switch l {
	case Backward:
		return BackwardTransitive
	case Forward:
		return ForwardTransitive
	case Full:
		return FullTransitive
	}
	return l
}

func (s *Server) register(_ http.ResponseWriter, r *http.Request) (any, error) {
	p, err := readSchema(r)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("subject")
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.st.Subjects[name]
	id, known := s.st.byKey[p.key]
	if known && sub != nil {
		for _, v := range sub.live(false) {
			if v.ID == id {
				return map[string]int{"id": id}, nil
			}
		}
	}
	level := s.st.level(name)
	msgs, err := s.checkAgainst(level, p, sub, nil)
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		return nil, errf(http.StatusConflict, codeIncompatible, "schema being registered is incompatible with an earlier schema for subject %q (compatibility %s): %s", name, level, strings.Join(msgs, "; "))
	}
	if !known {
		id = s.st.NextID
		s.st.NextID++
		s.st.Schemas[id] = &stored{Type: p.typ, Text: p.text, key: p.key}
		s.st.byKey[p.key] = id
	}
	if sub == nil {
		sub = &subject{NextVersion: 1}
		s.st.Subjects[name] = sub
	}
	v := &storedVersion{Version: sub.NextVersion, ID: id}
	sub.NextVersion++
	sub.Versions = append(sub.Versions, v)
	if err := s.persist(); err != nil {
		return nil, err
	}
	s.log.Info("schema registered", "subject", name, "version", v.Version, "id", id, "type", p.typ)
	return map[string]int{"id": id}, nil
}

func (s *Server) deleteSubject(_ http.ResponseWriter, r *http.Request) (any, error) {
	permanent := boolParam(r, "permanent")
	s.mu.Lock()
	defer s.mu.Unlock()
	name, sub, err := s.subject(r, true)
	if err != nil {
		return nil, err
	}
	live := sub.live(false)
	out := []int{}
	if permanent {
		if len(live) > 0 {
			return nil, errf(http.StatusNotFound, codeSubjectNotSoftDeleted, "subject %q was not deleted first before being permanently deleted", name)
		}
		for _, v := range sub.Versions {
			out = append(out, v.Version)
		}
		delete(s.st.Subjects, name)
		s.st.dropUnused()
	} else {
		if len(live) == 0 {
			return nil, errf(http.StatusNotFound, codeSubjectSoftDeleted, "subject %q was soft deleted: set permanent=true to delete permanently", name)
		}
		for _, v := range live {
			v.Deleted = true
			out = append(out, v.Version)
		}
	}
	if err := s.persist(); err != nil {
		return nil, err
	}
	s.log.Info("subject deleted", "subject", name, "permanent", permanent, "versions", out)
	return out, nil
}

func (s *Server) deleteVersion(_ http.ResponseWriter, r *http.Request) (any, error) {
	permanent := boolParam(r, "permanent")
	s.mu.Lock()
	defer s.mu.Unlock()
	// A permanent delete addresses soft-deleted versions; a soft one, live ones.
	name, sub, err := s.subject(r, permanent)
	if err != nil {
		return nil, err
	}
	v, err := s.version(r, name, sub, true)
	if err != nil {
		return nil, err
	}
	if r.PathValue("version") == "latest" || r.PathValue("version") == "-1" {
		vs := sub.live(permanent)
		v = vs[len(vs)-1]
	}
	switch {
	case permanent && !v.Deleted:
		return nil, errf(http.StatusNotFound, codeVersionNotSoftDeleted, "version %d of subject %q was not deleted first before being permanently deleted", v.Version, name)
	case !permanent && v.Deleted:
		return nil, errf(http.StatusNotFound, codeVersionSoftDeleted, "version %d of subject %q was soft deleted: set permanent=true to delete permanently", v.Version, name)
	case permanent:
		i := slicesIndex(sub.Versions, v)
		sub.Versions = append(sub.Versions[:i], sub.Versions[i+1:]...)
		if len(sub.Versions) == 0 {
			delete(s.st.Subjects, name)
		}
		s.st.dropUnused()
	default:
		v.Deleted = true
	}
	if err := s.persist(); err != nil {
		return nil, err
	}
	s.log.Info("schema version deleted", "subject", name, "version", v.Version, "permanent", permanent)
	return v.Version, nil
}

func slicesIndex(vs []*storedVersion, v *storedVersion) int {
	for i, x := range vs {
		if x == v {
			return i
		}
	}
	return -1
}

func (s *Server) getConfig(_ http.ResponseWriter, r *http.Request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := r.PathValue("subject")
	level := s.st.Global
	if name != "" {
		l, ok := s.st.Configs[name]
		switch {
		case ok:
			level = l
		case !boolParam(r, "defaultToGlobal"):
			return nil, errf(http.StatusNotFound, codeSubjectLevelNotSet, "subject %q does not have subject-level compatibility configured", name)
		}
	}
	return map[string]Level{"compatibilityLevel": level}, nil
}

func (s *Server) putConfig(_ http.ResponseWriter, r *http.Request) (any, error) {
	var req struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	level, err := ParseLevel(req.Compatibility)
	if err != nil {
		return nil, errf(http.StatusUnprocessableEntity, codeInvalidCompatibility, "%v", err)
	}
	name := r.PathValue("subject")
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" {
		s.st.Global = level
	} else {
		s.st.Configs[name] = level
	}
	if err := s.persist(); err != nil {
		return nil, err
	}
	s.log.Info("compatibility set", "subject", name, "level", level)
	return map[string]Level{"compatibility": level}, nil
}

func (s *Server) deleteConfig(_ http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("subject")
	s.mu.Lock()
	defer s.mu.Unlock()
	var prev Level
	if name == "" {
		prev, s.st.Global = s.st.Global, DefaultLevel
	} else {
		l, ok := s.st.Configs[name]
		if !ok {
			return nil, errf(http.StatusNotFound, codeSubjectLevelNotSet, "subject %q does not have subject-level compatibility configured", name)
		}
		prev = l
		delete(s.st.Configs, name)
	}
	if err := s.persist(); err != nil {
		return nil, err
	}
	return map[string]Level{"compatibility": prev}, nil
}

func (s *Server) getMode(http.ResponseWriter, *http.Request) (any, error) {
	return map[string]string{"mode": "READWRITE"}, nil
}

func (s *Server) compatibility(_ http.ResponseWriter, r *http.Request) (any, error) {
	p, err := readSchema(r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name := r.PathValue("subject")
	level := s.st.level(name)
	var only *storedVersion
	sub := s.st.Subjects[name]
	if r.PathValue("version") != "" {
		var err error
		if _, sub, err = s.subject(r, false); err != nil {
			return nil, err
		}
		if only, err = s.version(r, name, sub, false); err != nil {
			return nil, err
		}
	}
	msgs, err := s.checkAgainst(level, p, sub, only)
	if err != nil {
		return nil, err
	}
	resp := struct {
		Is       bool     `json:"is_compatible"`
		Messages []string `json:"messages,omitempty"`
	}{Is: len(msgs) == 0}
	if boolParam(r, "verbose") {
		resp.Messages = msgs
	}
	return resp, nil
}
