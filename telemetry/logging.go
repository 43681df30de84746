package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Log formats of NewLogger.
const (
	LogText = "text"
	LogJSON = "json"
)

// NewLogger is a process's logger (log/slog) writing to w: format "text"
// (the default: one line per record, `TIME ROLE: job_id=N message`, with
// `warning: ` before the message of a warning: Clink's lines as they
// read before slog, which the tutorial shows; attributes other than
// job_id are left out) or "json" (one JSON object per record: time,
// level, msg, role and every attribute). role names the process in each
// record ("coordinator", "worker w1").
func NewLogger(w io.Writer, format, role string) (*slog.Logger, error) {
	switch format {
	case "", LogText:
		return slog.New(&textHandler{w: w, role: role, mu: &sync.Mutex{}}), nil
	case LogJSON:
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})).With("role", role), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// Line logs a formatted line the way Clink's lines read: a leading
// "warning: " makes it a warning, and a leading "job_id=N " becomes the
// job_id attribute (the text form puts it back in front).
func Line(l *slog.Logger, msg string, attrs ...slog.Attr) {
	if rest, ok := strings.CutPrefix(msg, "job_id="); ok {
		id, m, _ := strings.Cut(rest, " ")
		attrs = append([]slog.Attr{slog.String("job_id", strings.TrimSuffix(id, ":"))}, attrs...)
		msg = m
	}
	level := slog.LevelInfo
	if m, ok := strings.CutPrefix(msg, "warning: "); ok {
		level, msg = slog.LevelWarn, m
	}
	l.LogAttrs(context.Background(), level, msg, attrs...)
}

// textHandler writes Clink's text lines.
type textHandler struct {
	w     io.Writer
	role  string
	attrs []slog.Attr
	mu    *sync.Mutex
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b.WriteString(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteString(" ")
	b.WriteString(h.role)
	b.WriteString(": ")
	job := ""
	collect := func(a slog.Attr) bool {
		if a.Key == "job_id" && job == "" {
			job = a.Value.String()
		}
		return true
	}
	for _, a := range h.attrs {
		collect(a)
	}
	r.Attrs(collect)
	if job != "" {
		b.WriteString("job_id=")
		b.WriteString(job)
		b.WriteString(" ")
	}
	if r.Level >= slog.LevelWarn {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *textHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &textHandler{w: h.w, role: h.role, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...), mu: h.mu}
}

// WithGroup is not used by Clink; groups are flattened.
func (h *textHandler) WithGroup(string) slog.Handler { return h }

// Writer is an io.Writer whose lines (a connector's warnings, written to
// its Runtime.Stderr) become records of l: a leading RFC 3339 time and
// "clink: " are dropped (the record has its own), "warning: " makes a
// warning.
func Writer(l *slog.Logger) io.Writer { return &lineWriter{l: l} }

type lineWriter struct {
	l   *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if sp := strings.IndexByte(line, ' '); sp > 0 {
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", line[:sp]); err == nil {
				line = line[sp+1:]
			}
		}
		line = strings.TrimPrefix(line, "clink: ")
		if line != "" {
			Line(w.l, line)
		}
	}
	return len(p), nil
}
