// Package tutorial_test runs the by-hand walk-through in README.md as
// written, so that the page cannot drift from the commands that work.
package tutorial_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// block is one fenced code block of the README.
type block struct {
	info string // the fence's info string: "sh", "text", "sql", ...
	line int    // the line of its opening fence
	body string
}

// step is an `sh` block and the `text` block after it, if any: the output
// a user should see.
type step struct {
	sh     block
	expect *block
}

func parseBlocks(t *testing.T, path string) []block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var cur *block
	var body strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if info, ok := strings.CutPrefix(trimmed, "```"); ok {
				cur = &block{info: strings.TrimSpace(info), line: n}
				body.Reset()
			}
			continue
		}
		if trimmed == "```" {
			cur.body = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if cur != nil {
		t.Fatalf("%s:%d: code block not closed", path, cur.line)
	}
	return blocks
}

// steps pairs every sh block with the text block that follows it (before
// any other sh block).
func steps(blocks []block) []step {
	var out []step
	for i, b := range blocks {
		if b.info != "sh" {
			continue
		}
		s := step{sh: b}
		for _, n := range blocks[i+1:] {
			if n.info == "sh" {
				break
			}
			if n.info == "text" {
				s.expect = &n
				break
			}
		}
		out = append(out, s)
	}
	return out
}

// matches reports whether every line of want (blank lines and "..." lines
// aside; "…" inside a line matches any text) appears in got, in order,
// whitespace runs counting as one space. It returns the first line not
// found.
func matches(want, got string) (bool, string) {
	var lines []string
	for _, l := range strings.Split(got, "\n") {
		lines = append(lines, squash(l))
	}
	i := 0
	for _, w := range strings.Split(want, "\n") {
		w = squash(w)
		if w == "" || w == "..." || w == "…" {
			continue
		}
		parts := strings.Split(w, "…")
		for k := range parts {
			parts[k] = regexp.QuoteMeta(parts[k])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		found := false
		for ; i < len(lines); i++ {
			if re.MatchString(lines[i]) {
				found, i = true, i+1
				break
			}
		}
		if !found {
			return false, w
		}
	}
	return true, ""
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestREADME runs the README's sh blocks in one bash, in order, from the
// repository root, with HOME in a temporary directory (the walk-through
// works in ~/clink-tutorial), and checks each block's output against the
// text block after it. It uses the walk-through's fixed ports (Kafka
// 9092, ClickHouse 8123 and 9000, Coordinator 6123 and 8081), so it runs
// only when asked: `make demo-tutorial` (CLINK_TUTORIAL=1), which `make
// test` runs after the other demos.
func TestREADME(t *testing.T) {
	if os.Getenv("CLINK_TUTORIAL") != "1" {
		t.Skip("the README walk-through runs with `make demo-tutorial` (CLINK_TUTORIAL=1): about 2 minutes on fixed ports")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	all := steps(parseBlocks(t, "README.md"))
	if len(all) < 10 {
		t.Fatalf("README.md has %d sh blocks; the walk-through has more", len(all))
	}
	out := t.TempDir()
	if keep := os.Getenv("CLINK_TUTORIAL_DIR"); keep != "" {
		out = keep // kept after the test, to look into
	}
	home := filepath.Join(out, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	fmt.Fprintf(&script, "cd %q\n", root)
	notRun := map[int]string{} // step -> the program it needs and this machine lacks
	for i, s := range all {
		body := s.sh.body
		if first, _, _ := strings.Cut(body, "\n"); strings.HasPrefix(first, "# needs: ") {
			prog := strings.TrimSpace(strings.TrimPrefix(first, "# needs: "))
			if _, err := exec.LookPath(prog); err != nil {
				notRun[i] = prog
				body = ":\n"
			}
		}
		fmt.Fprintf(&script, "echo %d >%q\n", i, filepath.Join(out, "step"))
		fmt.Fprintf(&script, "{\n%s} >%q 2>&1 </dev/null\n", body, filepath.Join(out, fmt.Sprintf("%d.out", i)))
	}
	fmt.Fprintf(&script, "echo done >%q\n", filepath.Join(out, "step"))

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The walk-through's background processes share the group: all go
	// when the test ends, whatever happened.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "HOME="+home)
	t.Logf("HOME=%s", home)
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		val, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		cmd.Env = append(cmd.Env, v+"="+strings.TrimSpace(string(val)))
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	runErr := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	last, _ := os.ReadFile(filepath.Join(out, "step"))
	reached := strings.TrimSpace(string(last))
	show := func(i int) string {
		got, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("%d.out", i)))
		return fmt.Sprintf("README.md:%d:\n%s--- its output:\n%s", all[i].sh.line, all[i].sh.body, got)
	}
	if runErr != nil || reached != "done" {
		var i int
		fmt.Sscan(reached, &i)
		logs := ""
		for _, f := range []string{"coordinator.log", "worker.log", "broker.log", "produce.log", "clickhouse/log/server.err.log"} {
			if b, err := os.ReadFile(filepath.Join(home, "clink-tutorial", f)); err == nil {
				logs += fmt.Sprintf("--- %s (end):\n%s\n", f, tail(b, 30))
			}
		}
		t.Fatalf("the walk-through stopped at step %d (%v):\n%s\n%s%s", i+1, runErr, show(i), stderr.String(), logs)
	}
	for i, s := range all {
		if prog, ok := notRun[i]; ok {
			// A skip the test summary lists, never a silent one.
			t.Run(fmt.Sprintf("step%d", i+1), func(t *testing.T) {
				t.Skipf("README.md:%d not run: it needs %s, which is not installed", s.sh.line, prog)
			})
			continue
		}
		if s.expect == nil {
			continue
		}
		got, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("%d.out", i)))
		if ok, missing := matches(s.expect.body, string(got)); !ok {
			t.Errorf("step %d: the output lacks %q (README.md:%d shows it)\n%s", i+1, missing, s.expect.line, show(i))
		}
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestMatches(t *testing.T) {
	got := "a b\njob_id=12\n  x   y\nlast"
	for _, c := range []struct {
		want string
		ok   bool
	}{
		{"a b\n...\nlast", true},
		{"job_id=…\nx y", true},
		{"x y\na b", false},
		{"job_id=1", false},
		{"\n\n", true},
	} {
		if ok, _ := matches(c.want, got); ok != c.ok {
			t.Errorf("matches(%q) = %v, want %v", c.want, ok, c.ok)
		}
	}
}
