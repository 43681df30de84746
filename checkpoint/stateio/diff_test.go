package stateio

import (
	"bytes"
	"testing"
)

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	a := writeCheckpoint(t, dir, 1, baseState())
	st := baseState()
	st.agg[0][0].cnt = 11                                                                      // changed
	st.agg[0] = st.agg[0][:1]                                                                  // removed: [60000,120000)
	st.agg[1] = append(st.agg[1], aggRow{100, `["sensor-03"]`, 0, 60000, 1, 1, 1772352000000}) // added
	st.offsets[1] = 1000                                                                       // changed
	st.wm++                                                                                    // changed
	b := writeCheckpoint(t, dir, 2, st)

	diffs, err := Diff(a, b, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WriteDiff(&out, diffs, true)
	want := `source/source_offsets: +0 -0 ~1
  ~ <raw> partition=1  offset=977 -> offset=1000
source/watermark: +0 -0 ~1
  ~ <raw> subtask=0  watermark=1772352057000 -> watermark=1772352057001
window_agg/tags: +0 -0 ~0
window_agg/window_agg: +1 -1 ~1
  + ["sensor-03"] [0,60000)  sum_amount=0.01 cnt=1 last_seen="2026-03-01 08:00:00.000"
  - ["sensor-01"] [60000,120000)  sum_amount=1.00 cnt=1 last_seen="2026-03-01 08:01:00.000"
  ~ ["sensor-01"] [0,60000)  sum_amount=215.40 cnt=10 last_seen="2026-03-01 08:00:00.123" -> sum_amount=215.40 cnt=11 last_seen="2026-03-01 08:00:00.123"
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	// No change against itself; a rescale (rows in other subtasks) is none either.
	st = baseState()
	st.agg[0], st.agg[1] = st.agg[1], st.agg[0]
	c := writeCheckpoint(t, dir, 3, st)
	diffs, err = Diff(a, c, Selection{Operator: "window_agg", Slot: "window_agg"})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	WriteDiff(&out, diffs, true)
	if want := "window_agg/window_agg: +0 -0 ~0\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if _, err := Diff(a, c, Selection{Slot: "nope"}); err == nil {
		t.Error("an unknown slot is no error")
	}
}
