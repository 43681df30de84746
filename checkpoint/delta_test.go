package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var deltaSlots = []Slot{
	{Name: "agg", Values: []arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}},
	{Name: "kv", Values: []arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}},
	{Name: "op", Raw: true, Values: []arrow.Field{{Name: "wm", Type: arrow.PrimitiveTypes.Int64}}},
}

// deltaModel is the state a chain must read back as: keyed rows by
// identity ("agg|key|window" or "kv|key"), the raw watermark.
type deltaModel struct {
	rows  map[string]int64
	wm    int64
	dirty map[string]bool // identities written since the last checkpoint
	gone  []int64         // agg windows deleted since
	goneK []string        // kv keys deleted since
}

func (m *deltaModel) step(r *rand.Rand) {
	for range 1 + r.IntN(30) {
		k := fmt.Sprintf("k%02d", r.IntN(40))
		switch x := r.IntN(20); {
		case x < 12:
			id := fmt.Sprintf("agg|%s|%d", k, r.IntN(5))
			m.rows[id] = r.Int64N(1000)
			m.dirty[id] = true
		case x < 17:
			id := "kv|" + k
			m.rows[id] = r.Int64N(1000)
			m.dirty[id] = true
		case x < 19:
			id := "kv|" + k
			delete(m.rows, id)
			m.goneK = append(m.goneK, k)
		default:
			w := r.Int64N(5)
			for id := range m.rows {
				if strings.HasPrefix(id, "agg|") && strings.HasSuffix(id, fmt.Sprintf("|%d", w)) {
					delete(m.rows, id)
				}
			}
			m.gone = append(m.gone, w)
		}
	}
	m.wm = r.Int64N(1 << 40)
}

// write writes the model's rows (all, or with delta those written since
// the last checkpoint and its deletions) into p.
func (m *deltaModel) write(t *testing.T, p *PartWriter, delta bool) {
	t.Helper()
	b := NewRowBuilder(memory.DefaultAllocator, p.Schema())
	defer b.Release()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range m.rows {
			if !delta || m.dirty[id] {
				if !yield(id) {
					return
				}
			}
		}
	})
	for _, id := range ids {
		f := strings.Split(id, "|")
		if f[0] == "agg" {
			var w int64
			fmt.Sscan(f[2], &w)
			b.Windowed("agg", int32(len(f[1])%128), f[1], w*10, w*10+10)
		} else {
			b.Keyed("kv", int32(len(f[1])%128), f[1])
		}
		b.Value("v").(*array.Int64Builder).Append(m.rows[id])
	}
	b.Raw("op")
	b.Value("wm").(*array.Int64Builder).Append(m.wm)
	rec, err := b.NewRecord()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		t.Fatal(err)
	}
	if delta {
		var starts, ends []int64
		for _, w := range m.gone {
			starts, ends = append(starts, w*10), append(ends, w*10+10)
		}
		if err := p.WriteTombstones(Tombstones{Slot: "agg", Starts: starts, Ends: ends}); err != nil {
			t.Fatal(err)
		}
		kgs := make([]int32, len(m.goneK))
		for i, k := range m.goneK {
			kgs[i] = int32(len(k) % 128)
		}
		if err := p.WriteTombstones(Tombstones{Slot: "kv", KeyGroups: kgs, Keys: m.goneK}); err != nil {
			t.Fatal(err)
		}
	}
	m.dirty, m.gone, m.goneK = map[string]bool{}, nil, nil
}

// readModel renders a part's rows as the model's identities.
func readModel(t *testing.T, p *Part) (map[string]int64, []int64) {
	t.Helper()
	rows := map[string]int64{}
	var wms []int64
	for _, rec := range p.Records {
		if !rec.Schema().Equal(p.Schema) {
			t.Fatalf("record schema %s, part schema %s", rec.Schema(), p.Schema)
		}
		slot := rec.Column(0).(*array.String)
		key := rec.Column(2).(*array.String)
		ws := rec.Column(3).(*array.Int64)
		v := Column(rec, "v").(*array.Int64)
		wm := Column(rec, "wm").(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			switch slot.Value(i) {
			case "agg":
				rows[fmt.Sprintf("agg|%s|%d", key.Value(i), ws.Value(i)/10)] = v.Value(i)
			case "kv":
				rows["kv|"+key.Value(i)] = v.Value(i)
			case "op":
				wms = append(wms, wm.Value(i))
			default:
				t.Fatalf("row of slot %q", slot.Value(i))
			}
		}
	}
	return rows, wms
}

// TestDeltaChains writes seeded sequences of full and delta parts and
// checks that every checkpoint reads back as the model's state, also
// after retention removed the older checkpoints' manifests.
func TestDeltaChains(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			store, err := NewStore(t.TempDir(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			m := &deltaModel{rows: map[string]int64{}, dirty: map[string]bool{}}
			var chain []PartInfo
			retain := 1 + r.IntN(2)
			for id := uint64(1); id <= 14; id++ {
				m.step(r)
				w, err := store.Begin(id)
				if err != nil {
					t.Fatal(err)
				}
				delta := len(chain) > 0 && len(chain) < 5 && r.IntN(4) > 0
				var p *PartWriter
				if delta {
					p, err = w.DeltaPart("agg", 0, deltaSlots, chain)
				} else {
					p, err = w.Part("agg", 0, deltaSlots)
				}
				if err != nil {
					t.Fatal(err)
				}
				w.Go(func() error {
					m.write(t, p, delta)
					return p.Close()
				})
				if err := w.Commit(Meta{Job: "t"}); err != nil {
					t.Fatal(err)
				}
				if chain, _ = p.Chain(); len(chain) == 0 {
					t.Fatal("no chain after Close")
				}
				if err := store.Retain(retain); err != nil {
					t.Fatal(err)
				}
				cp, err := store.Open(id)
				if err != nil {
					t.Fatal(err)
				}
				if err := cp.Verify(); err != nil {
					t.Fatal(err)
				}
				part, err := cp.ReadPart("agg", 0)
				if err != nil {
					t.Fatal(err)
				}
				got, wms := readModel(t, part)
				part.Release()
				if len(wms) != 1 || wms[0] != m.wm {
					t.Fatalf("checkpoint %d: raw rows %v, want [%d]", id, wms, m.wm)
				}
				if !mapsEqual(got, m.rows) {
					t.Fatalf("checkpoint %d (delta %t, chain %d): got %v\nwant %v", id, delta, len(chain), got, m.rows)
				}
			}
			// Retention leaves no directory a kept chain does not need.
			latest, _, _ := store.Latest()
			cp, err := store.Open(latest)
			if err != nil {
				t.Fatal(err)
			}
			needed := map[string]bool{}
			for _, f := range cp.Manifest.Files() {
				needed[fmt.Sprintf("chk-%d", f.Checkpoint)] = true
			}
			list, _ := store.List()
			for _, c := range list {
				if c.Complete {
					continue
				}
				if !needed[filepath.Base(c.Path)] {
					t.Errorf("%s kept, no chain needs it", c.Path)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]int64) bool {
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

// TestDeltaErrors: a broken chain is an error naming the file, a delta
// cannot become a savepoint, and a chain part's retention-removed file
// makes DeltaPart refuse (the operator then writes a full part).
func TestDeltaErrors(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &deltaModel{rows: map[string]int64{}, dirty: map[string]bool{}}
	r := rand.New(rand.NewPCG(1, 2))
	var chain []PartInfo
	for id := uint64(1); id <= 2; id++ {
		m.step(r)
		w, _ := store.Begin(id)
		var p *PartWriter
		if id == 1 {
			p, err = w.Part("agg", 0, deltaSlots)
		} else {
			p, err = w.DeltaPart("agg", 0, deltaSlots, chain)
		}
		if err != nil {
			t.Fatal(err)
		}
		m.write(t, p, id > 1)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(Meta{}); err != nil {
			t.Fatal(err)
		}
		chain, _ = p.Chain()
	}
	cp, err := store.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	if !cp.Manifest.Incremental() || cp.Manifest.FormatVersion != FormatVersionIncremental {
		t.Fatalf("manifest: incremental %t, version %d", cp.Manifest.Incremental(), cp.Manifest.FormatVersion)
	}
	// A savepoint of an incremental checkpoint is self-contained: full
	// parts that read as the chain does.
	sp := filepath.Join(t.TempDir(), "sp")
	if err := WriteSavepoint(cp, sp); err != nil {
		t.Fatal(err)
	}
	spc, err := OpenDir(sp)
	if err != nil {
		t.Fatal(err)
	}
	if spc.Manifest.Incremental() || len(spc.Manifest.Files()) != 1 {
		t.Fatalf("savepoint manifest: %+v", spc.Manifest)
	}
	for _, c := range []*Checkpoint{cp, spc} {
		part, err := c.ReadPart("agg", 0)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readModel(t, part)
		part.Release()
		if !mapsEqual(got, m.rows) {
			t.Fatalf("%s: got %v, want %v", c.Path, got, m.rows)
		}
	}
	base := filepath.Join(store.Path(1), "agg-0.arrow")
	data, _ := os.ReadFile(base)
	data[len(data)/2] ^= 0xff
	os.WriteFile(base, data, 0o644)
	if _, err := cp.ReadPart("agg", 0); err == nil || !strings.Contains(err.Error(), base) || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("corrupt chain part: %v", err)
	}
	os.Remove(base)
	if _, err := store.Open(2); err == nil || !strings.Contains(err.Error(), base) {
		t.Fatalf("missing chain part: %v", err)
	}
	w, _ := store.Begin(3)
	if _, err := w.DeltaPart("agg", 0, deltaSlots, chain); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("delta on a removed chain: %v", err)
	}
	w.Abort()
}
