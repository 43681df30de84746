package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The protocol option's values.
const (
	protoAuto   = "auto"
	protoHTTP   = "http"
	protoNative = "native"
)

// probeTimeout bounds each of the two probes 'auto' makes at submission.
const probeTimeout = 5 * time.Second

// detect finds the protocol the configured port speaks: 'auto' asks GET
// /ping (ClickHouse's HTTP interface answers "Ok."), then tries the native
// protocol's handshake. It returns the native connection when that is the
// answer, and an error naming the address when neither answers.
func detect(c *config) (string, *nativeClient, error) {
	switch c.protocol {
	case protoHTTP:
		return protoHTTP, nil, nil
	case protoNative:
		nc, err := openNative(c)
		if err != nil {
			return "", nil, fmt.Errorf("%s: the native protocol's handshake failed (protocol = 'native'): %w", c.addr, err)
		}
		return protoNative, nc, nil
	}
	httpErr := pingHTTP(c)
	if httpErr == nil {
		return protoHTTP, nil, nil
	}
	nc, err := openNative(c)
	var ex *ch.Exception
	if errors.As(err, &ex) {
		// The server answered the handshake (e.g. a wrong password).
		return "", nil, fmt.Errorf("%s (native protocol): %w", c.addr, err)
	}
	if err != nil {
		return "", nil, fmt.Errorf("%s answers neither ClickHouse's HTTP interface (GET /ping: %v) nor its native protocol (%v); "+
			"check 'host' and 'port' (ClickHouse listens for HTTP on its http_port, 8123 by default, and for the native protocol on its tcp_port, 9000 by default)",
			c.addr, httpErr, err)
	}
	return protoNative, nc, nil
}

// pingHTTP is nil when GET /ping answers 200 "Ok.".
func pingHTTP(c *config) error {
	cl := &http.Client{Timeout: min(c.timeout, probeTimeout)}
	resp, err := cl.Get("http://" + c.addr + "/ping")
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err // the URL is in the caller's message already
		}
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != "Ok." {
		return fmt.Errorf("HTTP %d %q", resp.StatusCode, message(b))
	}
	return nil
}

// nativeClient is a connection pool to one server over the native
// protocol (clickhouse-go).
type nativeClient struct {
	cfg     *config
	conn    driver.Conn
	version string // the server's, e.g. 18.16.1
}

// openNative connects and completes the handshake, so that a port that is
// not ClickHouse's native one fails here.
func openNative(c *config) (*nativeClient, error) {
	conn, err := ch.Open(&ch.Options{
		Addr:        []string{c.addr},
		Auth:        ch.Auth{Database: c.database, Username: c.user, Password: c.password},
		DialTimeout: min(c.timeout, probeTimeout),
		ReadTimeout: c.timeout,
		Compression: &ch.Compression{Method: ch.CompressionLZ4},
	})
	if err != nil {
		return nil, err
	}
	v, err := conn.ServerVersion()
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &nativeClient{cfg: c, conn: conn, version: fmt.Sprintf("%d.%d.%d", v.Version.Major, v.Version.Minor, v.Version.Patch)}, nil
}

// describe reads the table's columns, as the HTTP client's describe does.
func (nc *nativeClient) describe(ctx context.Context) ([]column, error) {
	rows, err := nc.conn.Query(ctx, "DESCRIBE TABLE "+nc.cfg.qualified())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		f := make([]string, len(rows.Columns()))
		ptrs := make([]any, len(f))
		for i := range f {
			ptrs[i] = &f[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("DESCRIBE TABLE: %w", err)
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("unexpected DESCRIBE TABLE answer of %d columns", len(f))
		}
		col := column{name: f[0], typ: f[1]}
		if len(f) > 2 {
			col.kind = f[2]
		}
		cols = append(cols, col)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("DESCRIBE TABLE returned no columns")
	}
	return cols, nil
}

// insert sends one INSERT of the rows in part (one value slice per
// column). A failure to connect or a lost connection is retried up to
// max_retries times with backoff, as over HTTP; an exception of the server
// is returned at once.
func (nc *nativeClient) insert(ctx context.Context, query string, part [][]any) error {
	pause := retryBackoff
	for attempt := 0; ; attempt++ {
		err := nc.once(ctx, query, part)
		if err == nil || !retryableNative(err) || attempt >= nc.cfg.retries || ctx.Err() != nil {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return fmt.Errorf("%w (retrying after: %w)", ctx.Err(), err)
		}
		pause = min(2*pause, maxBackoff)
	}
}

func (nc *nativeClient) once(ctx context.Context, query string, part [][]any) error {
	ctx, cancel := context.WithTimeout(ctx, nc.cfg.timeout)
	defer cancel()
	b, err := nc.conn.PrepareBatch(ctx, query)
	if err != nil {
		return err
	}
	for c, vals := range part {
		col := b.Column(c)
		for _, v := range vals {
			if err := col.AppendRow(v); err != nil {
				_ = b.Abort()
				return err
			}
		}
	}
	return b.Send()
}

// retryableNative is true for everything but an exception the server
// sent (a missing table, a wrong password, a value it refuses) and a
// value clickhouse-go could not convert.
func retryableNative(err error) bool {
	var ex *ch.Exception
	var conv *chcolumn.ColumnConverterError
	return !errors.As(err, &ex) && !errors.As(err, &conv)
}
