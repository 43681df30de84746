package checkpoint

import "testing"

// A sink signature of an earlier build names no delivery: it restores
// into the same sink rather than being refused, and a changed delivery
// is incompatible.
func TestCompareSinkDelivery(t *testing.T) {
	old := []OperatorInfo{{Operator: "sink_o", Signature: Signature{"kind": "sink", "table": "o", "connector": "file"}}}
	job := []OperatorInfo{{Operator: "sink_o", Signature: Signature{"kind": "sink", "table": "o", "connector": "file", "delivery": "exactly_once (staged per checkpoint)"}}}
	if m := Compare(old, job, false); m[0].Match != Restored {
		t.Fatalf("earlier build's sink: %+v", m)
	}
	direct := []OperatorInfo{{Operator: "sink_o", Signature: Signature{"kind": "sink", "table": "o", "connector": "file", "delivery": "at_least_once (written directly)"}}}
	m := Compare(job, direct, true)
	if m[0].Match != Incompatible || !m[0].Refused || m[0].Reason != "the delivery changed from exactly_once (staged per checkpoint) to at_least_once (written directly)" {
		t.Fatalf("changed delivery: %+v", m)
	}
}
