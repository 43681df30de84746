package nexmark

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Markers delimit the generated part of docs/performance.md.
const (
	BeginMarker = "<!-- nexmark:begin -->"
	EndMarker   = "<!-- nexmark:end -->"
)

func short(v float64) string {
	switch {
	case v == 0:
		return "—"
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// FormatText prints the results as a table for the terminal.
func FormatText(w io.Writer, results []Result) {
	if len(results) == 0 {
		return
	}
	r0 := results[0]
	fmt.Fprintf(w, "nexmark: %d events (%s), event time %d events/s, %s, %s\n\n", r0.Stream, r0.Mode, r0.Rate, r0.Machine, r0.Go)
	fmt.Fprintf(w, "%-5s %12s %14s %14s %7s %10s %10s %8s %10s %9s %16s %10s\n", "query", "events read", "engine ev/CPU-s", "hand ev/CPU-s", "ratio",
		"target", "Clink C++", "vs C++", "CPU s/M ev", "RSS MB", "p50/p99 ms", "B/entry")
	for _, r := range results {
		lat := "—"
		if r.Latency != nil && r.Latency.Rows > 0 {
			lat = fmt.Sprintf("%.0f/%.0f", r.Latency.P50MS, r.Latency.P99MS)
		}
		st := "—"
		if r.State != nil && r.State.Entries > 0 {
			st = fmt.Sprintf("%.1f", r.State.BytesPerEntry)
		}
		fmt.Fprintf(w, "%-5s %12d %14.0f %14.0f %6.2fx %10s %10s %8s %10.3f %9.1f %16s %10s\n", r.Query, r.Engine.Events, r.Engine.EventsPerCPUSec,
			r.Hand.EventsPerCPUSec, r.Ratio, short(r.Target), short(r.ClinkCPP), ratio(r.Engine.EventsPerCPUSec, r.ClinkCPP),
			r.Engine.CPUPerMillion, r.Engine.PeakRSSMB, lat, st)
	}
}

// Markdown renders the results as the generated part of
// docs/performance.md: a table and a bar chart.
func Markdown(results []Result) string {
	var b strings.Builder
	if len(results) == 0 {
		return ""
	}
	r0 := results[0]
	fmt.Fprintf(&b, "Measured %s on %s, %s: a stream of %d events (event time %d events/s), mode **%s**, engine at parallelism 1. "+
		"Events are the rows of the tables a query reads; per CPU-second is per second of user + system CPU of the engine process (rusage).\n\n",
		r0.Date, r0.Machine, r0.Go, r0.Stream, r0.Rate, r0.Mode)
	b.WriteString("| query | events read | engine events per CPU-s | hand loop | engine / hand | target | Clink C++ | engine / C++ | CPU s per M events | events/s (wall) | peak RSS | latency p50 / p99 | state B per entry |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		lat := "—"
		if r.Latency != nil && r.Latency.Rows > 0 {
			lat = fmt.Sprintf("%.0f / %.0f ms", r.Latency.P50MS, r.Latency.P99MS)
		}
		st := "—"
		if r.State != nil && r.State.Entries > 0 {
			st = fmt.Sprintf("%.0f (%s entries)", r.State.BytesPerEntry, short(float64(r.State.Entries)))
		}
		target := short(r.Target)
		if r.Target > 0 {
			mark := "not met"
			if r.Engine.EventsPerCPUSec >= r.Target {
				mark = "met"
			}
			target += " (" + mark + ")"
		}
		name := r.Query
		if r.Adapted != "" {
			name += "*"
		}
		fmt.Fprintf(&b, "| %s | %s | **%s** | %s | %.2f× | %s | %s | %s | %.3f | %s | %.0f MB | %s | %s |\n", name, short(float64(r.Engine.Events)),
			short(r.Engine.EventsPerCPUSec), short(r.Hand.EventsPerCPUSec), r.Ratio, target, short(r.ClinkCPP), ratio(r.Engine.EventsPerCPUSec, r.ClinkCPP),
			r.Engine.CPUPerMillion, short(r.Engine.EventsPerSecond), r.Engine.PeakRSSMB, lat, st)
	}
	b.WriteString("\n\\* adapted to Clink's SQL (see [nexmark.md](nexmark.md#queries)). Latency: paced generator")
	for _, r := range results {
		if r.Latency != nil {
			fmt.Fprintf(&b, " at %d events/s for %d s", r.Latency.Rate, r.Latency.Seconds)
			break
		}
	}
	b.WriteString(", arrival of a result row minus the moment its last input was due (window end + watermark lag for windows).\n\n")
	b.WriteString(Chart(results))
	return b.String()
}

// Chart is a text bar chart of events per CPU-second: engine, hand loop,
// target and Clink C++ per query.
func Chart(results []Result) string {
	var top float64
	for _, r := range results {
		top = max(top, r.Engine.EventsPerCPUSec, r.Hand.EventsPerCPUSec, r.Target, r.ClinkCPP)
	}
	if top == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("```\nevents per CPU-second (█ engine, ▒ hand loop, ░ Clink C++, | target)\n")
	const width = 50
	bar := func(v float64, c string, target float64) string {
		n := int(v / top * width)
		s := []rune(strings.Repeat(c, n) + strings.Repeat(" ", width-n))
		if target > 0 {
			t := min(int(target/top*width), width-1)
			if s[t] == ' ' {
				s[t] = '|'
			} else {
				s[t] = '┃'
			}
		}
		return string(s)
	}
	for _, r := range results {
		fmt.Fprintf(&b, "%-4s %s %s\n", r.Query, bar(r.Engine.EventsPerCPUSec, "█", r.Target), short(r.Engine.EventsPerCPUSec))
		fmt.Fprintf(&b, "     %s %s\n", bar(r.Hand.EventsPerCPUSec, "▒", r.Target), short(r.Hand.EventsPerCPUSec))
		if r.ClinkCPP > 0 {
			fmt.Fprintf(&b, "     %s %s\n", bar(r.ClinkCPP, "░", r.Target), short(r.ClinkCPP))
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// RenderDoc replaces the text between the markers in path with the
// results.
func RenderDoc(path string, results []Result) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, BeginMarker), strings.Index(s, EndMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, BeginMarker, EndMarker)
	}
	out := s[:i+len(BeginMarker)] + "\n" + Markdown(results) + s[j:]
	return os.WriteFile(path, []byte(out), 0o644)
}
