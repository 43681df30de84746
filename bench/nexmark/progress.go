package nexmark

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress draws one line of progress on a terminal (nothing otherwise):
// a bar when the total is known, else the elapsed time.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	label string
	start time.Time
	width int
}

// NewProgress draws on w only if it is a terminal.
func NewProgress(w io.Writer) *Progress {
	on := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &Progress{w: w, on: on}
}

// Step starts a new line of progress.
func (p *Progress) Step(label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	p.label, p.start = label, time.Now()
}

// Set draws done of total (total 0: only the elapsed time).
func (p *Progress) Set(done, total int64) {
	if p == nil || !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	el := time.Since(p.start).Seconds()
	var line string
	if total > 0 {
		frac := min(float64(done)/float64(total), 1)
		const bar = 30
		n := int(frac * bar)
		line = fmt.Sprintf("%s [%s%s] %3.0f%% %.1f s", p.label, strings.Repeat("#", n), strings.Repeat(".", bar-n), frac*100, el)
	} else {
		line = fmt.Sprintf("%s ... %.1f s", p.label, el)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(p.width-len(line), 0)))
	p.width = len(line)
}

// Done clears the line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *Progress) clearLocked() {
	if p.on && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// Tick calls f every 200 ms until the returned function is called.
func (p *Progress) Tick(f func()) (stop func()) {
	if p == nil || !p.on {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		progressLoop(done, f)
	}()
	return func() { close(done); wg.Wait() }
}

func progressLoop(stop <-chan struct{}, f func()) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}
