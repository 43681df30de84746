package nexmark

import (
	"strings"
	"testing"

	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// TestDailyAcrossMidnight runs the daily statistics (q15, q16, q17) on a
// stream that crosses midnight UTC, so every query has groups of two
// days, against their hand loops.
func TestDailyAcrossMidnight(t *testing.T) {
	base := int64(gen.DefaultBaseTime + 86_400_000 - 20_000) // 20 s before the next midnight
	src := Source{Events: 75_000, Seed: 3, Rate: checkRate, BaseTime: base}
	for _, name := range []string{"q15", "q16", "q17"} {
		q, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			out := &Out{Collect: true}
			FeedGenerator(q.New(out), q, gen.Config{Seed: src.Seed, Rate: src.Rate, BaseTime: base}, src.Events)
			want := handRows(out)
			days := map[string]bool{}
			for _, r := range want {
				for _, f := range []string{"2026-01-01", "2026-01-02"} {
					if strings.Contains(r, f) {
						days[f] = true
					}
				}
			}
			if len(days) != 2 {
				t.Fatalf("the stream should cover two days, the hand loop's rows cover %v", days)
			}
			compare(t, engineRows(t, q, runEngine(t, src.Script(q, "print"), 1)), want)
		})
	}
}
