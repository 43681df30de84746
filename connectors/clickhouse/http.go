package clickhouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// maxMessage bounds how much of ClickHouse's answer an error quotes.
const maxMessage = 1000

// retryBackoff is the first pause before a retry; it doubles up to
// maxBackoff. Tests shorten it.
var (
	retryBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// client runs queries on one server over HTTP.
type client struct {
	cfg  *config
	http *http.Client
	url  string // http://host:port/
}

func newClient(c *config) *client {
	return &client{cfg: c, http: &http.Client{Timeout: c.timeout}, url: "http://" + c.addr + "/"}
}

// StatusError is a non-200 answer of the server.
type StatusError struct {
	Status  int
	Message string // ClickHouse's message, truncated
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message) }

// do posts body with query as the URL's query parameter and returns the
// answer. Connection failures and HTTP 502/503/504 are retried up to
// max_retries times with backoff; any other non-200 answer is a
// *StatusError at once. The password goes in the Authorization header, so
// no error (url.Error quotes the URL) can show it.
// Cancelling ctx abandons the request and the retries.
func (c *client) do(ctx context.Context, query string, body []byte) ([]byte, error) {
	u := c.url + "?query=" + url.QueryEscape(query)
	pause := retryBackoff
	for attempt := 0; ; attempt++ {
		out, err := c.once(ctx, u, body)
		if err == nil || !retryable(err) || attempt >= c.cfg.retries || ctx.Err() != nil {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return out, err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (retrying after: %w)", ctx.Err(), err)
		}
		pause = min(2*pause, maxBackoff)
	}
}

func (c *client) once(ctx context.Context, u string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(c.cfg.user, c.cfg.password)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = &connError{op: ue.Op, err: ue.Err}
		}
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &connError{op: "read answer", err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Status: resp.StatusCode, Message: message(out)}
	}
	return out, nil
}

// connError is a failure to reach the server or to read its answer: the
// request may be retried.
type connError struct {
	op  string
	err error
}

func (e *connError) Error() string { return strings.ToLower(e.op) + ": " + e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var ce *connError
	if errors.As(err, &ce) {
		return true
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch se.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}

// message is ClickHouse's error text on one line, cut at maxMessage bytes
// (on a rune boundary).
func message(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// quoteIdent quotes a database, table or column name for ClickHouse SQL.
func quoteIdent(s string) string {
	var b strings.Builder
	b.WriteByte('`')
	for i := 0; i < len(s); i++ {
		if s[i] == '`' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('`')
	return b.String()
}

// column is one column of the ClickHouse table.
type column struct {
	name, typ string
	kind      string // DESCRIBE's default_type: "", DEFAULT, MATERIALIZED or ALIAS
}

// describe reads the table's columns (DESCRIBE TABLE, which fails naming
// the table when it does not exist).
func (c *client) describe(ctx context.Context) ([]column, error) {
	out, err := c.do(ctx, "DESCRIBE TABLE "+c.cfg.qualified()+" FORMAT TabSeparated", nil)
	if err != nil {
		return nil, err
	}
	var cols []column
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 2 {
			return nil, fmt.Errorf("unexpected DESCRIBE TABLE answer %q", message([]byte(line)))
		}
		col := column{name: unescapeTSV(f[0]), typ: unescapeTSV(f[1])}
		if len(f) > 2 {
			col.kind = f[2]
		}
		cols = append(cols, col)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("DESCRIBE TABLE returned no columns")
	}
	return cols, nil
}

// unescapeTSV undoes TabSeparated escaping (\t, \n, \\, ...).
func unescapeTSV(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '0':
			b.WriteByte(0)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
