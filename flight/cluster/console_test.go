package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds headless Chromium (Debian's package, installed by
// .ci/install-deps.sh): CLINK_CHROMIUM, else chromium or
// chromium-browser on PATH. Without it the test skips, or fails when
// CLINK_REQUIRE_CHROMIUM=1 (make test).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CLINK_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CLINK_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no headless Chromium (apt-get install chromium; CLINK_REQUIRE_CHROMIUM=1)")
	}
	t.Skip("no headless Chromium (apt-get install chromium)")
	return ""
}

// TestConsoleBrowser loads the web console in headless Chromium driven by
// chromedp against a Coordinator with a token and a Worker running a
// checkpointed streaming job: /ui/ sends the browser to the sign-in
// page; a wrong token is refused; with the token the console lists the
// running job and the Worker, and the job's page shows its operators and
// a completed checkpoint, refreshing by itself. Screenshots go to the
// test's directory (CLINK_CONSOLE_SCREENSHOT=FILE also writes the job's
// page there: docs/console.png).
func TestConsoleBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 20000)
	tc := startCluster(t, 1, 2, CoordinatorConfig{Token: "s3cret", CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 200 * time.Millisecond})
	resp, err := tc.c.Submit(&SubmitRequest{Name: "sensors", Plan: plan, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	id := string(resp.Job)
	waitCheckpoint(t, tc.c, id, 1)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1400, 1000))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, without a timeout
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	base := "http://" + tc.c.HTTPAddr()
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	shot := func(name string) []byte {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(60))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), buf, 0o644)
		return buf
	}

	// Without a session: the sign-in page; a wrong token is refused.
	do(chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#token"))
	if url, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.HasSuffix(url, "/ui/login") {
		t.Fatalf("without a session /ui/ went to %s (%v)", url, err)
	}
	do(chromedp.SendKeys("#token", "wrong"), chromedp.Click("#signin"), chromedp.WaitNotPresent("#token"))
	if body := text("body"); !strings.Contains(body, "wrong token") {
		t.Fatalf("a wrong token: %q", body)
	}
	// Signed in: the jobs and the Worker.
	do(chromedp.Navigate(base+"/ui/login"), chromedp.WaitVisible("#token"), chromedp.SendKeys("#token", "s3cret"), chromedp.Click("#signin"),
		chromedp.WaitVisible(`#jobs tbody tr[data-id="`+id+`"]`), chromedp.WaitVisible("#workers tbody tr"))
	if body := text("#jobs"); !strings.Contains(body, "sensors") || !strings.Contains(body, "RUNNING") {
		t.Fatalf("jobs table: %q", body)
	}
	if workers := text("#workers"); !strings.Contains(workers, "w1") {
		t.Fatalf("workers table: %q", workers)
	}
	shot("jobs.jpg")
	// The job's page: its graph, operators and a completed checkpoint.
	do(chromedp.Click(`#jobs tbody tr[data-id="`+id+`"]`), chromedp.WaitVisible("#operators tbody tr"), chromedp.WaitVisible("#checkpoints tbody tr"),
		chromedp.Sleep(2*time.Second)) // a second poll: records/s
	if ops := text("#operators"); !strings.Contains(ops, "window_aggregate") || !strings.Contains(ops, "source_t") {
		t.Fatalf("operators table: %q", ops)
	}
	if cks := text("#checkpoints"); !strings.Contains(cks, "COMPLETED") {
		t.Fatalf("checkpoints table: %q", cks)
	}
	if graph := text("#graph"); !strings.Contains(graph, "records/s") {
		t.Errorf("graph without rates: %q", graph)
	}
	img := shot("job.jpg")
	if out := os.Getenv("CLINK_CONSOLE_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
}
