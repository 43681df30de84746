package checkpoint

import (
	"fmt"
	"sort"
	"strings"
)

// Signature says what shapes an operator's state: its kind and, per kind,
// the group key, the window, the aggregates, the join keys and sides, the
// table and connector of a source or sink. Two operators of one name
// whose signatures are equal can restore each other's state; options that
// do not shape state (a watermark lag, brokers, batch sizes) are not in
// it. Values are readable, for the messages of a refused restore.
type Signature map[string]string

// Kind is the signature's "kind" entry: "source", "sink" or the
// operator's kind (window_aggregate, join, ...).
func (s Signature) Kind() string { return s["kind"] }

// OperatorInfo is one stateful operator of the job, as the manifest lists
// it (operators in docs/state-format.md).
type OperatorInfo struct {
	Operator  string    `json:"operator"`
	Signature Signature `json:"signature"`
}

// Match is what happens to one operator's state on a restore.
type Match int

const (
	// Restored: the checkpoint has the operator with the same signature.
	Restored Match = iota
	// New: the job's operator is not in the checkpoint; it starts fresh
	// (a source per its startup options).
	New
	// Dropped: the checkpoint's operator is not in the job.
	Dropped
	// Incompatible: one name, another signature; the state cannot be
	// restored.
	Incompatible
)

func (m Match) String() string {
	switch m {
	case Restored:
		return "restored"
	case New:
		return "new"
	case Dropped:
		return "dropped"
	case Incompatible:
		return "incompatible"
	}
	return fmt.Sprintf("Match(%d)", int(m))
}

// OperatorMatch is one line of a restore's report.
type OperatorMatch struct {
	Operator string
	Kind     string
	Match    Match
	// Reason says why an operator is incompatible, or what dropping it
	// loses.
	Reason string
	// Refused is true when this operator alone refuses the restore
	// (incompatible, or dropped state that needs allowNonRestoredState).
	Refused bool
}

// Compare matches the operators a checkpoint lists with those of the job
// about to restore it, by name: the job's operators first, in its order,
// then the checkpoint's that the job does not have. Dropped state refuses
// the restore unless allowNonRestored, except a source's (its reading was
// removed from the job: the offsets serve no one).
func Compare(saved, job []OperatorInfo, allowNonRestored bool) []OperatorMatch {
	old := make(map[string]Signature, len(saved))
	for _, o := range saved {
		old[o.Operator] = o.Signature
	}
	var out []OperatorMatch
	in := map[string]bool{}
	for _, o := range job {
		in[o.Operator] = true
		m := OperatorMatch{Operator: o.Operator, Kind: o.Signature.Kind()}
		s, ok := old[o.Operator]
		if ok && s.Kind() == "sink" && o.Signature["delivery"] != "" {
			if _, has := s["delivery"]; !has {
				// An earlier build's sink signature names no delivery:
				// compare without it rather than refuse every such
				// checkpoint.
				s = withDelivery(s, o.Signature["delivery"])
			}
		}
		switch {
		case !ok:
			m.Match = New
		case equal(s, o.Signature):
			m.Match = Restored
		default:
			m.Match, m.Refused, m.Reason = Incompatible, true, diff(s, o.Signature)
		}
		out = append(out, m)
	}
	for _, o := range saved {
		if in[o.Operator] {
			continue
		}
		m := OperatorMatch{Operator: o.Operator, Kind: o.Signature.Kind(), Match: Dropped}
		switch {
		case m.Kind == "source":
			m.Reason = "the job no longer reads it"
		case m.Kind == "sink":
			m.Reason = "the job no longer writes it; transactions it staged are not committed"
			m.Refused = !allowNonRestored
		default:
			m.Reason = "the job no longer has it; its state is lost"
			m.Refused = !allowNonRestored
		}
		out = append(out, m)
	}
	return out
}

// Refusal is the error that refuses a restore with these matches of
// checkpoint id, or nil when it is accepted.
func Refusal(id uint64, ms []OperatorMatch) error {
	var why []string
	dropped := false
	for _, m := range ms {
		if !m.Refused {
			continue
		}
		why = append(why, fmt.Sprintf("%s: %s (%s)", m.Operator, m.Reason, m.Match))
		dropped = dropped || m.Match == Dropped
	}
	if len(why) == 0 {
		return nil
	}
	hint := "start with --fresh, or give the SQL that wrote it"
	if dropped {
		hint = "--allow-non-restored-state drops the state of operators the job no longer has; or start with --fresh"
	}
	return fmt.Errorf("checkpoint %d cannot be restored into this job: %s; %s", id, strings.Join(why, "; "), hint)
}

// withDelivery is s with the delivery entry d.
func withDelivery(s Signature, d string) Signature {
	out := make(Signature, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["delivery"] = d
	return out
}

func equal(a, b Signature) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// diff says how signature b differs from a, entry by entry.
func diff(a, b Signature) string {
	if a.Kind() != b.Kind() {
		return fmt.Sprintf("it was a %s, it is a %s now", a.Kind(), b.Kind())
	}
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v, ok1 := a[k]
		w, ok2 := b[k]
		switch {
		case !ok1:
			out = append(out, fmt.Sprintf("the %s %s is new", k, w))
		case !ok2:
			out = append(out, fmt.Sprintf("the %s %s is gone", k, v))
		case v != w:
			out = append(out, fmt.Sprintf("the %s changed from %s to %s", k, v, w))
		}
	}
	return strings.Join(out, ", ")
}
