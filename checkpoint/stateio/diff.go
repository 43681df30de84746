package stateio

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/checkpoint"
)

// SlotDiff is how one slot of one operator changed between two
// checkpoints.
type SlotDiff struct {
	Operator, Slot string
	Added          []Entry // rows only in the second checkpoint
	Removed        []Entry // rows only in the first
	Changed        []Change
}

// Entry is a state entry: its identity and its values, both rendered.
type Entry struct {
	// ID is the key and window as Cat prints them ("[\"a\"] [0,60000)"),
	// or for a <raw> row "<raw>" and what identifies it ("<raw> partition=0",
	// "<raw> subtask=0").
	ID string
	// Values are the non-null value columns as name=value (without a raw
	// row's identifying column); rows sharing an ID (a slot may keep
	// several per key and window) are sorted and joined by " | ".
	Values string
}

// Change is an entry whose values differ.
type Change struct {
	ID       string
	Old, New string
}

// Diff compares the state of two checkpoints per operator and slot. A
// keyed row is identified by (operator, slot, key, window); subtasks do not
// matter, so state moved by a rescale is not a change. A <raw> row is
// identified by its slot's first value column when the slot declares
// several (e.g. partition), except in a slot with at most one row per part
// in both checkpoints (operator-wide state such as a watermark), whose
// rows are identified by subtask. Slots appear in the result sorted by
// operator and slot, also when nothing changed.
func Diff(a, b *checkpoint.Checkpoint, sel Selection) ([]SlotDiff, error) {
	ea, err := entries(a, sel)
	if err != nil {
		return nil, err
	}
	eb, err := entries(b, sel)
	if err != nil {
		return nil, err
	}
	if sel.Slot != "" && len(ea) == 0 && len(eb) == 0 {
		// Neither has the slot: say which slots there are.
		return nil, Each(a, sel, func(*checkpoint.Part) error { return nil })
	}
	keys := map[[2]string]bool{}
	for k := range ea {
		keys[k] = true
	}
	for k := range eb {
		keys[k] = true
	}
	var out []SlotDiff
	for k := range keys {
		d := SlotDiff{Operator: k[0], Slot: k[1]}
		singleton := ea[k].maxPerPart() <= 1 && eb[k].maxPerPart() <= 1
		old, cur := ea[k].ids(singleton), eb[k].ids(singleton)
		for id, v := range cur {
			if o, ok := old[id]; !ok {
				d.Added = append(d.Added, Entry{id, join(v)})
			} else if ov, nv := join(o), join(v); ov != nv {
				d.Changed = append(d.Changed, Change{id, ov, nv})
			}
		}
		for id, v := range old {
			if _, ok := cur[id]; !ok {
				d.Removed = append(d.Removed, Entry{id, join(v)})
			}
		}
		byID := func(x, y Entry) int { return strings.Compare(x.ID, y.ID) }
		slices.SortFunc(d.Added, byID)
		slices.SortFunc(d.Removed, byID)
		slices.SortFunc(d.Changed, func(x, y Change) int { return strings.Compare(x.ID, y.ID) })
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y SlotDiff) int {
		if c := strings.Compare(x.Operator, y.Operator); c != 0 {
			return c
		}
		return strings.Compare(x.Slot, y.Slot)
	})
	return out, nil
}

func join(vals []string) string {
	slices.Sort(vals)
	return strings.Join(vals, " | ")
}

// slotRows are the rows of one slot of one operator in one checkpoint.
type slotRows struct {
	keyed   map[string][]string // identity -> values of the rows with it
	raw     []rawRow
	perPart map[int]int // subtask -> number of raw rows
}

// rawRow is a <raw> row, rendered both ways it can be identified.
type rawRow struct {
	subtask     int
	first, rest string // first value column and the others (name=value)
	all         string // every value column
}

// ids maps each row to its identity. A raw slot whose parts hold at most
// one row each, in both checkpoints, is operator-wide state per subtask (a
// watermark, a sequence number): its rows are identified by subtask.
// Other raw rows are identified by their first value column (a partition)
// when the slot declares several.
func (s *slotRows) ids(singleton bool) map[string][]string {
	if s == nil {
		return map[string][]string{}
	}
	out := s.keyed
	for _, r := range s.raw {
		switch {
		case singleton:
			id := "<raw> subtask=" + strconv.Itoa(r.subtask)
			out[id] = append(out[id], r.all)
		case r.first != "":
			id := "<raw> " + r.first
			out[id] = append(out[id], r.rest)
		default:
			out["<raw>"] = append(out["<raw>"], r.all)
		}
	}
	return out
}

func (s *slotRows) maxPerPart() int {
	m := 0
	if s != nil {
		for _, n := range s.perPart {
			m = max(m, n)
		}
	}
	return m
}

// entries reads every selected row of c, per (operator, slot).
func entries(c *checkpoint.Checkpoint, sel Selection) (map[[2]string]*slotRows, error) {
	out := map[[2]string]*slotRows{}
	var buf []byte
	err := each(c, sel, false, func(p *checkpoint.Part) error {
		col := map[string]int{}
		for i, f := range p.Schema.Fields() {
			col[f.Name] = i
		}
		for _, s := range p.Slots { // a declared slot is listed also without rows
			if k := [2]string{p.Operator, s.Name}; (sel.Slot == "" || sel.Slot == s.Name) && out[k] == nil {
				out[k] = &slotRows{keyed: map[string][]string{}, perPart: map[int]int{}}
			}
		}
		values := func(vals []arrow.Field, r row) string {
			buf = buf[:0]
			for _, v := range vals {
				a := r.rec.Column(col[v.Name])
				if a.IsNull(r.i) {
					continue
				}
				if len(buf) > 0 {
					buf = append(buf, ' ')
				}
				buf = appendNamed(buf, v.Name, a, r.i)
			}
			return string(buf)
		}
		for _, rec := range p.Records {
			err := eachRow(rec, sel.Slot, func(r row) error {
				slot := r.slot()
				decl, _ := slotOf(p, slot)
				sr := out[[2]string{p.Operator, slot}]
				key, keyed := r.key()
				if !keyed {
					rr := rawRow{subtask: p.Subtask, all: values(decl.Values, r)}
					if len(decl.Values) > 1 {
						rr.first = values(decl.Values[:1], r)
						rr.rest = values(decl.Values[1:], r)
					}
					sr.raw = append(sr.raw, rr)
					sr.perPart[p.Subtask]++
					return nil
				}
				buf = append(buf[:0], key...)
				if s, e, ok := r.window(); ok {
					buf = append(buf, " ["...)
					buf = strconv.AppendInt(buf, s, 10)
					buf = append(buf, ',')
					buf = strconv.AppendInt(buf, e, 10)
					buf = append(buf, ')')
				}
				id := string(buf)
				sr.keyed[id] = append(sr.keyed[id], values(decl.Values, r))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func appendNamed(dst []byte, name string, a arrow.Array, i int) []byte {
	dst = append(dst, name...)
	dst = append(dst, '=')
	return appendValue(dst, a, i)
}

// WriteDiff prints one line per slot, "operator/slot: +added -removed
// ~changed", and with verbose the rows under it: "+ id values",
// "- id values", "~ id old -> new".
func WriteDiff(w io.Writer, diffs []SlotDiff, verbose bool) error {
	for _, d := range diffs {
		if _, err := fmt.Fprintf(w, "%s/%s: +%d -%d ~%d\n", d.Operator, d.Slot, len(d.Added), len(d.Removed), len(d.Changed)); err != nil {
			return err
		}
		if !verbose {
			continue
		}
		for _, e := range d.Added {
			fmt.Fprintf(w, "  + %s  %s\n", e.ID, e.Values)
		}
		for _, e := range d.Removed {
			fmt.Fprintf(w, "  - %s  %s\n", e.ID, e.Values)
		}
		for _, c := range d.Changed {
			if _, err := fmt.Fprintf(w, "  ~ %s  %s -> %s\n", c.ID, c.Old, c.New); err != nil {
				return err
			}
		}
	}
	return nil
}
