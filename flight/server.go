package flight

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/flight/tlsconf"
)

// ActionFunc handles one Flight action: the request body in, the result
// body out.
type ActionFunc func(ctx context.Context, body []byte) ([]byte, error)

// Server is a process's Arrow Flight endpoint: shuffle streams arrive by
// DoPut and are handed to the edges Accept registered; control calls are
// DoAction, dispatched by name.
type Server struct {
	flight.BaseFlightServer
	srv     flight.Server
	token   string
	actions map[string]ActionFunc

	mu      sync.Mutex
	inbound map[EdgeKey]*inbound
	waiters map[EdgeKey]chan struct{}
}

type inbound struct {
	ctx context.Context
	c   chan<- engine.Message
}

// AcceptWait is how long a shuffle stream waits for its edge to be
// registered (the receiving Worker deploys its subtasks a moment later
// than the sending one, or never when the attempt was replaced).
var AcceptWait = 30 * time.Second

// Option configures NewServer and Dial.
type Option func(*options)

type options struct {
	tls *tlsconf.Config
}

// WithTLS makes NewServer serve mutual TLS (a client without a
// certificate signed by the CA is refused at the handshake) and Dial
// connect with it (verifying the server, presenting this process's
// certificate). A nil c is no TLS.
func WithTLS(c *tlsconf.Config) Option { return func(o *options) { o.tls = c } }

// TLSOf is the configuration WithTLS gave in opts, or nil.
func TLSOf(opts ...Option) *tlsconf.Config {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o.tls
}

// NewServer listens on addr ("127.0.0.1:0" picks a port). With a token,
// every call must carry it as a bearer token; with WithTLS, it serves
// mutual TLS only.
func NewServer(addr, token string, o ...Option) (*Server, error) {
	s := &Server{token: token, actions: map[string]ActionFunc{}, inbound: map[EdgeKey]*inbound{}, waiters: map[EdgeKey]chan struct{}{}}
	s.srv = flight.NewServerWithMiddleware(nil, ServerOptions(token, o...)...)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.srv.InitListener(lis)
	s.srv.RegisterFlightService(s)
	return s, nil
}

// Handle registers an action.
func (s *Server) Handle(name string, f ActionFunc) { s.actions[name] = f }

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.srv.Addr().String() }

// Serve serves until Shutdown.
func (s *Server) Serve() error { return s.srv.Serve() }

// Shutdown stops the server.
func (s *Server) Shutdown() { s.srv.Shutdown() }

// ServerOptions are the gRPC options of a Flight server as NewServer
// makes it: with a token, every call must carry it as a bearer token;
// with WithTLS, mutual TLS only. Another Flight service of the process
// (the Coordinator's Flight SQL endpoint) serves with them.
func ServerOptions(token string, o ...Option) []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(256 << 20)}
	if tc := TLSOf(o...); tc != nil {
		opts = append(opts, grpc.Creds(&tlsCreds{TransportCredentials: credentials.NewTLS(tc.Server("h2")), tc: tc}))
	}
	if token != "" {
		a := bearer(token)
		opts = append(opts, grpc.UnaryInterceptor(a.unary), grpc.StreamInterceptor(a.stream))
	}
	return opts
}

// bearer checks a call's bearer token.
type bearer string

func (b bearer) authorized(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if subtle.ConstantTimeCompare([]byte(v), []byte("Bearer "+string(b))) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "missing or wrong bearer token (CLINK_AUTH_TOKEN)")
}

func (b bearer) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := b.authorized(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (b bearer) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := b.authorized(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// DoAction runs a registered action.
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	f, ok := s.actions[a.Type]
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown action %q", a.Type)
	}
	out, err := f(stream.Context(), a.Body)
	if err != nil {
		return status.Error(codes.Unknown, err.Error())
	}
	return stream.Send(&flight.Result{Body: out})
}

// Accept registers the receiving end of an edge: the messages of its
// stream go into c until ctx ends.
func (s *Server) Accept(ctx context.Context, key EdgeKey, c chan<- engine.Message) {
	s.mu.Lock()
	s.inbound[key] = &inbound{ctx: ctx, c: c}
	if w, ok := s.waiters[key]; ok {
		close(w)
		delete(s.waiters, key)
	}
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		if in, ok := s.inbound[key]; ok && in.ctx == ctx {
			delete(s.inbound, key)
		}
		s.mu.Unlock()
	}()
}

// lookup waits up to AcceptWait for key's registration.
func (s *Server) lookup(ctx context.Context, key EdgeKey) (*inbound, error) {
	deadline := time.NewTimer(AcceptWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		in, ok := s.inbound[key]
		var w chan struct{}
		if !ok {
			if w, ok = s.waiters[key]; !ok {
				w = make(chan struct{})
				s.waiters[key] = w
			}
		}
		s.mu.Unlock()
		if in != nil {
			return in, nil
		}
		select {
		case <-w:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			s.mu.Lock()
			if s.waiters[key] == w {
				delete(s.waiters, key)
			}
			s.mu.Unlock()
			return nil, status.Errorf(codes.NotFound, "shuffle %s: no such edge here (attempt replaced or not deployed)", key)
		}
	}
}

// DoPut receives one shuffle stream.
func (s *Server) DoPut(stream flight.FlightService_DoPutServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.FlightDescriptor == nil {
		return status.Error(codes.InvalidArgument, "shuffle stream without a descriptor")
	}
	key, err := parseKey(first.FlightDescriptor.Path)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	in, err := s.lookup(stream.Context(), key)
	if err != nil {
		return err
	}
	deliver := func(m engine.Message) error {
		select {
		case in.c <- m:
			return nil
		case <-in.ctx.Done():
			if m.Batch != nil {
				m.Batch.Release()
			}
			return fmt.Errorf("shuffle %s: the receiving attempt stopped", key)
		case <-stream.Context().Done():
			if m.Batch != nil {
				m.Batch.Release()
			}
			return stream.Context().Err()
		}
	}
	if err := receive(stream, deliver); err != nil {
		return status.Errorf(codes.Aborted, "shuffle %s: %v", key, err)
	}
	return nil
}

// tokenCreds adds the bearer token to every call.
type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}
func (tokenCreds) RequireTransportSecurity() bool { return false }

// Dial connects a Flight client to addr, with the bearer token when set,
// over mutual TLS with WithTLS. A call that fails at the TLS handshake
// says so (its code stays Unavailable).
// Its Close may run while other goroutines call through it: their calls
// fail (codes.Canceled). (arrow-go's own Close clears the client's
// service, so a call racing with it dereferences nil.)
func Dial(addr, token string, o ...Option) (flight.Client, error) {
	conn, err := grpc.NewClient(addr, DialOptions(token, o...)...)
	if err != nil {
		return nil, err
	}
	return &client{Client: flight.NewClientFromConn(conn, nil), conn: conn}, nil
}

// DialOptions are the gRPC options Dial connects with: the bearer token
// on every call, mutual TLS with WithTLS, and errors that explain a TLS
// mismatch. A Flight SQL client (clink sql) dials with them.
func DialOptions(token string, o ...Option) []grpc.DialOption {
	tc := TLSOf(o...)
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if tc != nil {
		creds = &tlsCreds{TransportCredentials: credentials.NewTLS(tc.Client("")), tc: tc}
	}
	ex := explainer{tls: tc != nil}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20)),
		grpc.WithChainUnaryInterceptor(ex.unary), grpc.WithChainStreamInterceptor(ex.stream)}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(tokenCreds(token)))
	}
	return opts
}

// tlsCreds are gRPC's TLS credentials made afresh from the current
// files for each client handshake (so a long-lived client follows a new
// CA as well as a new certificate), and logging refused server
// handshakes.
type tlsCreds struct {
	credentials.TransportCredentials
	tc *tlsconf.Config
	// refused limits the log of refused handshakes to a line per remote
	// host per refusedEvery (a clear-text Worker retries twice a second).
	mu      sync.Mutex
	refused map[string]time.Time
}

const refusedEvery = time.Minute

// ClientHandshake also waits, under TLS 1.3, for the server's first
// bytes (gRPC servers send their settings at once): a 1.3 server checks
// the client's certificate after the client's side of the handshake
// completed, so its refusal (an alert) would otherwise surface as a
// broken pipe on the first write.
func (c *tlsCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := credentials.NewTLS(c.tc.Client("")).ClientHandshake(ctx, authority, raw)
	if err != nil {
		return nil, nil, err
	}
	if ti, ok := info.(credentials.TLSInfo); !ok || ti.State.Version != tls.VersionTLS13 {
		return conn, info, nil
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(20 * time.Second)
	}
	conn.SetReadDeadline(deadline)
	buf := make([]byte, 1)
	n, err := conn.Read(buf)
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("TLS handshake with %s: %w", authority, err)
	}
	return &peekedConn{Conn: conn, buf: buf[:n]}, info, nil
}

// peekedConn replays the bytes ClientHandshake read.
type peekedConn struct {
	net.Conn
	buf []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *tlsCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		host, _, _ := net.SplitHostPort(raw.RemoteAddr().String())
		c.mu.Lock()
		last, ok := c.refused[host]
		if !ok || time.Since(last) >= refusedEvery {
			if c.refused == nil {
				c.refused = map[string]time.Time{}
			}
			c.refused[host] = time.Now()
			ok = false
		}
		c.mu.Unlock()
		if !ok {
			c.tc.Logf("flight: TLS handshake from %s refused: %v (logged once a minute per host)", raw.RemoteAddr(), err)
		}
	}
	return conn, info, err
}

func (c *tlsCreds) Clone() credentials.TransportCredentials {
	return &tlsCreds{TransportCredentials: c.TransportCredentials.Clone(), tc: c.tc}
}

// explainer rewrites the transport errors of a failed TLS handshake (or
// of a clear-text call to a TLS server) to say what they are: gRPC's own
// ("connection error: desc = ... remote error: tls: certificate
// required") reads like a network fault.
type explainer struct{ tls bool }

func (e explainer) explain(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	msg := st.Message()
	switch {
	case e.tls && (strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") || strings.Contains(msg, "certificate")):
		return status.Errorf(codes.Unavailable, "TLS handshake failed, a certificate problem (check --tls-cert, --tls-key and --tls-ca: both sides' certificates must be signed by the CA, and the server's must name the address dialed, or give --tls-server-name): %s", msg)
	case !e.tls && (strings.Contains(msg, "server preface") || strings.Contains(msg, "frame too large") || strings.Contains(msg, "tls:")):
		return status.Errorf(codes.Unavailable, "%s (does the server require TLS? give --tls-cert, --tls-key and --tls-ca)", msg)
	}
	return err
}

func (e explainer) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return e.explain(invoker(ctx, method, req, reply, cc, opts...))
}

func (e explainer) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, e.explain(err)
	}
	return explainedStream{s, e}, nil
}

type explainedStream struct {
	grpc.ClientStream
	e explainer
}

func (s explainedStream) SendMsg(m any) error { return s.e.explain(s.ClientStream.SendMsg(m)) }
func (s explainedStream) RecvMsg(m any) error { return s.e.explain(s.ClientStream.RecvMsg(m)) }

// TLSError reports whether err is a failed TLS handshake (as Dial's
// calls report it).
func TLSError(err error) bool {
	return status.Code(err) == codes.Unavailable && strings.HasPrefix(status.Convert(err).Message(), "TLS handshake failed")
}

// client is a flight.Client whose Close only closes its connection.
type client struct {
	flight.Client
	conn *grpc.ClientConn
}

func (c *client) Close() error { return c.conn.Close() }

// Unreachable reports whether err says the server could not be reached
// (its process is gone or not listening).
func Unreachable(err error) bool {
	return status.Code(err) == codes.Unavailable
}

// TimedOut reports whether err is a call that ran out of time (its
// context's deadline, or the server's DeadlineExceeded).
func TimedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// NotFlight reports whether err says an HTTP server that is not gRPC
// answered (the Coordinator's HTTPS API speaks HTTP/2 too, and answers a
// Flight call 404).
func NotFlight(err error) bool {
	return status.Code(err) == codes.Unimplemented && strings.Contains(status.Convert(err).Message(), "unexpected HTTP status code")
}

// Call runs action name on the server behind cl and returns its result.
// An error of the action itself comes back as its message; a transport
// error keeps its gRPC status (see Unreachable).
func Call(ctx context.Context, cl flight.Client, name string, body []byte) ([]byte, error) {
	stream, err := cl.DoAction(ctx, &flight.Action{Type: name, Body: body})
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		r, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if st, ok := status.FromError(err); ok && st.Code() == codes.Unknown {
				return nil, errors.New(st.Message()) // the action's own error
			}
			return nil, err
		}
		out = r.Body
	}
}
