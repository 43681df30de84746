package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/singleflight"
)

// DefaultTimeout bounds one request of a Client unless ClientOptions
// says otherwise.
const DefaultTimeout = 10 * time.Second

// ErrUnknownID is wrapped by SchemaByID's error when the registry has no
// schema under the id: for a source, the record is bad (or from another
// registry).
var ErrUnknownID = errors.New("schema id not found in the registry")

// ClientOptions configure a Client.
type ClientOptions struct {
	User, Password string        // HTTP basic auth when User is set
	TLS            *tls.Config   // for https URLs; nil uses the system roots
	Timeout        time.Duration // per request; 0 means DefaultTimeout
}

// Schema is a registered schema.
type Schema struct {
	ID         int
	Type       SchemaType
	Text       string
	References []Reference
}

// Reference is a schema reference (the Client passes them through; the
// dev server refuses them).
type Reference struct {
	Name    string
	Subject string
	Version int
}

// SubjectSchema is a schema as one version of a subject.
type SubjectSchema struct {
	Subject string
	Version int
	Schema
}

// Client talks to a Confluent-compatible Schema Registry through
// franz-go's sr.Client, caching what cannot change: a schema by id, and
// the id a (subject, schema) pair was registered under. It is safe for
// concurrent use.
type Client struct {
	url string
	sr  *sr.Client

	mu         sync.RWMutex
	byID       map[int]Schema
	registered map[regKey]int
	fetch      singleflight.Group
}

type regKey struct {
	subject string
	key     string // canonical(schema)
}

// NewClient returns a client of the registry at rawURL (http or https).
func NewClient(rawURL string, opts ClientOptions) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("schema registry url %q: want http://host:port or https://host:port", rawURL)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	base := strings.TrimRight(rawURL, "/")
	srOpts := []sr.ClientOpt{
		sr.URLs(base),
		sr.HTTPClient(&http.Client{Timeout: opts.Timeout}),
		sr.UserAgent("clink"),
	}
	if opts.User != "" {
		srOpts = append(srOpts, sr.BasicAuth(opts.User, opts.Password))
	}
	if opts.TLS != nil {
		srOpts = append(srOpts, sr.DialTLSConfig(opts.TLS))
	}
	cl, err := sr.NewClient(srOpts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", base, err)
	}
	return &Client{url: base, sr: cl, byID: map[int]Schema{}, registered: map[regKey]int{}}, nil
}

// URL is the registry's base URL.
func (c *Client) URL() string { return c.url }

func (c *Client) errorf(format string, args ...any) error {
	return fmt.Errorf("schema registry %s: "+format, append([]any{c.url}, args...)...)
}

func hasCode(err error, codes ...int) bool {
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	for _, c := range codes {
		if re.ErrorCode == c {
			return true
		}
	}
	return false
}

func fromSR(id int, s sr.Schema) Schema {
	out := Schema{ID: id, Type: SchemaType(strings.ToUpper(s.Type.String())), Text: s.Schema}
	for _, r := range s.References {
		out.References = append(out.References, Reference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out
}

func toSR(typ SchemaType, text string) (sr.Schema, error) {
	var t sr.SchemaType
	switch typ {
	case Avro, "":
		t = sr.TypeAvro
	case Protobuf:
		t = sr.TypeProtobuf
	case JSON:
		t = sr.TypeJSON
	default:
		return sr.Schema{}, &InvalidSchemaError{Reason: fmt.Sprintf("unknown schema type %q", typ)}
	}
	return sr.Schema{Schema: text, Type: t}, nil
}

// SchemaByID returns the schema under id, from the cache when it has been
// seen (ids are immutable, so entries never expire). An id the registry
// does not know gives an error wrapping ErrUnknownID that names it.
func (c *Client) SchemaByID(ctx context.Context, id int) (Schema, error) {
	c.mu.RLock()
	s, ok := c.byID[id]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	v, err, _ := c.fetch.Do(fmt.Sprint(id), func() (any, error) {
		got, err := c.sr.SchemaByID(ctx, id)
		if err != nil {
			if hasCode(err, 40403) {
				return nil, c.errorf("schema id %d: %w", id, ErrUnknownID)
			}
			return nil, c.errorf("fetching schema id %d: %w", id, err)
		}
		s := fromSR(id, got)
		c.remember(s)
		return s, nil
	})
	if err != nil {
		return Schema{}, err
	}
	return v.(Schema), nil
}

func (c *Client) remember(s Schema) {
	c.mu.Lock()
	c.byID[s.ID] = s
	c.mu.Unlock()
}

// Latest returns the newest live version of subject.
func (c *Client) Latest(ctx context.Context, subject string) (SubjectSchema, error) {
	got, err := c.sr.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		if hasCode(err, 40401, 40402) {
			return SubjectSchema{}, c.errorf("subject %q has no versions: %w", subject, err)
		}
		return SubjectSchema{}, c.errorf("subject %q: latest version: %w", subject, err)
	}
	s := fromSR(got.ID, got.Schema)
	c.remember(s)
	return SubjectSchema{Subject: subject, Version: got.Version, Schema: s}, nil
}

// Level returns the compatibility level governing subject: its own, or
// else the registry's global one.
func (c *Client) Level(ctx context.Context, subject string) (Level, error) {
	res := c.sr.Compatibility(ctx, subject)[0]
	if hasCode(res.Err, 40408, 40401) {
		res = c.sr.Compatibility(ctx)[0]
	}
	if res.Err != nil {
		return "", c.errorf("subject %q: compatibility level: %w", subject, res.Err)
	}
	l, err := ParseLevel(res.Level.String())
	if err != nil {
		return "", c.errorf("subject %q: %w", subject, err)
	}
	return l, nil
}

// Register returns the id of schema (text of type typ) under subject,
// registering it when it is new. It looks the schema up first, so a
// schema already there is never registered again; before registering it
// checks the schema against the subject's versions under the subject's
// (or the global) compatibility level with Check, so an incompatible
// schema fails here with an *IncompatibleError listing why, whatever the
// registry itself would have said. (When an existing version has schema
// references, which Check cannot resolve, the registry's own check is
// relied on.) Results are cached per (subject, schema).
func (c *Client) Register(ctx context.Context, subject, schema string, typ SchemaType) (int, error) {
	if typ == "" {
		typ = Avro
	}
	key, err := canonical(typ, schema)
	if err != nil {
		return 0, c.errorf("subject %q: %w", subject, err)
	}
	rk := regKey{subject, key}
	c.mu.RLock()
	id, ok := c.registered[rk]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}
	srs, err := toSR(typ, schema)
	if err != nil {
		return 0, c.errorf("subject %q: %w", subject, err)
	}

	found, err := c.sr.LookupSchema(ctx, subject, srs)
	switch {
	case err == nil:
		c.rememberRegistered(rk, found.ID)
		return found.ID, nil
	case !hasCode(err, 40401, 40403):
		return 0, c.errorf("subject %q: looking the schema up: %w", subject, err)
	}

	if err := c.check(ctx, subject, typ, schema); err != nil {
		return 0, err
	}
	id, err = c.sr.RegisterSchema(ctx, subject, srs, -1, -1)
	if err != nil {
		return 0, c.errorf("subject %q: registering: %w", subject, err)
	}
	c.rememberRegistered(rk, id)
	return id, nil
}

// rememberRegistered caches an id for Register. The schema-by-id cache
// is left to SchemaByID: it holds the registry's text, which may be
// spelled differently from ours.
func (c *Client) rememberRegistered(rk regKey, id int) {
	c.mu.Lock()
	c.registered[rk] = id
	c.mu.Unlock()
}

// check runs Check for a new schema of subject against its live versions.
func (c *Client) check(ctx context.Context, subject string, typ SchemaType, schema string) error {
	level, err := c.Level(ctx, subject)
	if err != nil {
		return err
	}
	if level == None {
		return nil
	}
	versions, err := c.sr.Schemas(ctx, subject)
	if err != nil && !hasCode(err, 40401) {
		return c.errorf("subject %q: listing versions: %w", subject, err)
	}
	if !level.transitive() && len(versions) > 1 {
		versions = versions[len(versions)-1:]
	}
	var olds []version
	var msgs []string
	for _, v := range versions {
		if len(v.References) > 0 {
			return nil // see Register
		}
		vt := SchemaType(strings.ToUpper(v.Type.String()))
		if vt != typ {
			msgs = append(msgs, fmt.Sprintf("the new schema is %s, version %d is %s", typ, v.Version, vt))
			continue
		}
		olds = append(olds, version{label: fmt.Sprintf("version %d", v.Version), text: v.Schema.Schema})
	}
	err = check(transitiveOf(level), typ, schema, olds)
	var ie *IncompatibleError
	if errors.As(err, &ie) {
		msgs = append(msgs, ie.Messages...)
	} else if err != nil {
		return c.errorf("subject %q: %w", subject, err)
	}
	if len(msgs) > 0 {
		return c.errorf("subject %q: not registering: %w", subject, &IncompatibleError{Level: level, Messages: msgs})
	}
	return nil
}
