package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// FormatVersion is the snapshot layout this package writes and the only one
// it reads (docs/state-format.md).
const FormatVersion = 1

// FormatVersionIncremental is the manifest version of a checkpoint with
// delta parts: a reader of version 1 would take a delta for the whole
// state, so it must refuse the manifest. Part files stay version 1 (a
// delta's <tombstone> slot stops older readers).
const FormatVersionIncremental = 2

// DefaultMaxParallelism is the default number of key groups.
const DefaultMaxParallelism = 128

// maxMaxParallelism bounds max_parallelism (Flink's limit too).
const maxMaxParallelism = 32768

// The fixed leading columns of every part, in this order.
const (
	ColSlot        = "slot"
	ColKeyGroup    = "key_group"
	ColKey         = "key"
	ColWindowStart = "window_start"
	ColWindowEnd   = "window_end"
	numFixed       = 5
)

// RawKeyGroup is the key_group of <raw> rows (operator-wide state).
const RawKeyGroup = -1

// Schema metadata keys of a part file.
const (
	MetaFormatVersion  = "clink.format_version"
	MetaOperator       = "clink.operator"
	MetaSubtask        = "clink.subtask"
	MetaCheckpointID   = "clink.checkpoint_id"
	MetaMaxParallelism = "clink.max_parallelism"
	MetaSlots          = "clink.slots"
	// MetaDelta is "true" in a delta part of an incremental checkpoint
	// (docs/state-format.md#incremental-checkpoints).
	MetaDelta = "clink.delta"
)

// TombstoneSlot is the slot of a delta part's deletions: a row deletes,
// from the parts before it in its chain, the rows of slot
// tombstone_slot that match its key_group (-1: any), key (null: any) and
// window (null: any).
const (
	TombstoneSlot   = "<tombstone>"
	ColTombstoneFor = "tombstone_slot"
)

var fixedFields = []arrow.Field{
	{Name: ColSlot, Type: arrow.BinaryTypes.String, Nullable: false},
	{Name: ColKeyGroup, Type: arrow.PrimitiveTypes.Int32, Nullable: false},
	{Name: ColKey, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColWindowStart, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColWindowEnd, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}

// Slot declares one state of an operator and the value columns its rows
// use. A part holds the rows of all its operator's slots; its value columns
// are the union of the slots' value columns (a name declared by several
// slots is one shared column and must have the same type in each). In a row
// of slot s, every value column that s does not declare is null.
type Slot struct {
	// Name is what the slot column holds, e.g. "window_agg" or
	// "source_offsets". Names starting with '<' are reserved.
	Name string `json:"name"`
	// Raw marks operator-wide state that is not keyed (source offsets per
	// partition, watermarks): its rows have key_group -1, a null key and no
	// window. Keyed rows have key_group in [0, max_parallelism) and a key.
	Raw bool `json:"raw,omitempty"`
	// Values are the slot's value columns. They are always nullable; the
	// Nullable flag given here is ignored.
	Values []arrow.Field `json:"-"`
}

// slotMeta is a Slot as recorded in the clink.slots schema metadata.
type slotMeta struct {
	Name   string   `json:"name"`
	Raw    bool     `json:"raw,omitempty"`
	Values []string `json:"values"`
}

// layout is a validated slot declaration: the part's value columns and, per
// slot, which value columns must be null in its rows.
type layout struct {
	delta   bool // a delta part: its last slot is TombstoneSlot
	slots   []Slot
	values  []arrow.Field  // value columns in schema order (after the fixed ones)
	index   map[string]int // slot name -> index in slots
	foreign [][]int        // per slot: schema column indices that must be null
}

func newLayout(slots []Slot) (*layout, error) { return newLayoutOf(slots, false) }

// newDeltaLayout is the layout of a delta part: slots and the tombstones.
func newDeltaLayout(slots []Slot) (*layout, error) {
	return newLayoutOf(append(slices.Clone(slots), tombstoneSlot), true)
}

var tombstoneSlot = Slot{Name: TombstoneSlot, Values: []arrow.Field{{Name: ColTombstoneFor, Type: arrow.BinaryTypes.String}}}

func newLayoutOf(slots []Slot, delta bool) (*layout, error) {
	if len(slots) == 0 {
		return nil, errors.New("no slots declared")
	}
	l := &layout{delta: delta, slots: make([]Slot, len(slots)), index: make(map[string]int, len(slots))}
	colOf := map[string]int{} // value column name -> index in l.values
	folded := map[string]string{}
	for _, f := range fixedFields {
		folded[strings.ToLower(f.Name)] = f.Name
	}
	member := make([]map[int]bool, len(slots))
	for i, s := range slots {
		if delta && i == len(slots)-1 {
			if s.Name != TombstoneSlot {
				return nil, fmt.Errorf("delta part: last slot is %q, want %q", s.Name, TombstoneSlot)
			}
		} else if err := checkSlotName(s.Name); err != nil {
			return nil, err
		}
		if _, dup := l.index[s.Name]; dup {
			return nil, fmt.Errorf("slot %q declared twice", s.Name)
		}
		l.index[s.Name] = i
		member[i] = map[int]bool{}
		vals := make([]arrow.Field, len(s.Values))
		for j, f := range s.Values {
			f.Nullable = true
			f.Metadata = arrow.Metadata{}
			vals[j] = f
			if f.Name == "" || !utf8.ValidString(f.Name) {
				return nil, fmt.Errorf("slot %q: value column %d: name must be non-empty UTF-8", s.Name, j)
			}
			if err := checkValueType(f.Type, 0); err != nil {
				return nil, fmt.Errorf("slot %q: value column %q: %w", s.Name, f.Name, err)
			}
			if c, ok := colOf[f.Name]; ok {
				if !arrow.TypeEqual(l.values[c].Type, f.Type) {
					return nil, fmt.Errorf("slot %q: value column %q is %s, another slot declares it %s", s.Name, f.Name, f.Type, l.values[c].Type)
				}
				if member[i][c] {
					return nil, fmt.Errorf("slot %q: value column %q declared twice", s.Name, f.Name)
				}
				member[i][c] = true
				continue
			}
			// Parquet readers such as DuckDB fold column names' case.
			if other, ok := folded[strings.ToLower(f.Name)]; ok {
				return nil, fmt.Errorf("slot %q: value column %q clashes with column %q (names are compared case-insensitively)", s.Name, f.Name, other)
			}
			folded[strings.ToLower(f.Name)] = f.Name
			colOf[f.Name] = len(l.values)
			member[i][len(l.values)] = true
			l.values = append(l.values, f)
		}
		l.slots[i] = Slot{Name: s.Name, Raw: s.Raw, Values: vals}
	}
	l.foreign = make([][]int, len(slots))
	for i := range slots {
		for c := range l.values {
			if !member[i][c] {
				l.foreign[i] = append(l.foreign[i], numFixed+c)
			}
		}
	}
	return l, nil
}

func checkSlotName(name string) error {
	switch {
	case name == "":
		return errors.New("slot name is empty")
	case !utf8.ValidString(name):
		return fmt.Errorf("slot name %q is not UTF-8", name)
	case strings.HasPrefix(name, "<"):
		return fmt.Errorf("slot name %q: names starting with '<' are reserved", name)
	}
	return nil
}

// checkValueType admits the types that survive export to Parquet and read
// back in DuckDB without Clink code: no unions, dictionaries, views,
// extension or interval types.
func checkValueType(dt arrow.DataType, depth int) error {
	if depth > 8 {
		return errors.New("type nested deeper than 8 levels")
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType,
		*arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type,
		*arrow.Float32Type, *arrow.Float64Type,
		*arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType,
		*arrow.FixedSizeBinaryType, *arrow.Date32Type, *arrow.TimestampType:
		return nil
	case *arrow.Decimal128Type:
		if dt.Precision < 1 || dt.Precision > 38 {
			return fmt.Errorf("decimal precision %d out of [1, 38]", dt.Precision)
		}
		return nil
	case *arrow.ListType:
		return checkValueType(dt.Elem(), depth+1)
	case *arrow.LargeListType:
		return checkValueType(dt.Elem(), depth+1)
	case *arrow.StructType:
		if dt.NumFields() == 0 {
			return errors.New("struct with no fields")
		}
		for _, f := range dt.Fields() {
			if err := checkValueType(f.Type, depth+1); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		return nil
	case *arrow.MapType:
		if err := checkValueType(dt.KeyType(), depth+1); err != nil {
			return err
		}
		return checkValueType(dt.ItemType(), depth+1)
	}
	return fmt.Errorf("type %s is not allowed in state files", dt)
}

// Schema returns the part schema for slots without file metadata: the fixed
// columns followed by the union of the slots' value columns. Operators may
// build state records against it before a checkpoint starts; PartWriter
// accepts them (it compares fields, not metadata).
func Schema(slots []Slot) (*arrow.Schema, error) {
	l, err := newLayout(slots)
	if err != nil {
		return nil, err
	}
	return l.schema(nil), nil
}

func (l *layout) schema(md *arrow.Metadata) *arrow.Schema {
	fields := make([]arrow.Field, 0, numFixed+len(l.values))
	fields = append(fields, fixedFields...)
	fields = append(fields, l.values...)
	return arrow.NewSchema(fields, md)
}

// partMeta is what a part's schema metadata says about it.
type partMeta struct {
	operator       string
	subtask        int
	checkpointID   uint64
	maxParallelism int
	delta          bool
}

func (l *layout) fileSchema(pm partMeta) *arrow.Schema {
	sm := make([]slotMeta, len(l.slots))
	for i, s := range l.slots {
		names := make([]string, len(s.Values))
		for j, f := range s.Values {
			names[j] = f.Name
		}
		sm[i] = slotMeta{Name: s.Name, Raw: s.Raw, Values: names}
	}
	js, _ := json.Marshal(sm) // strings and bools only: cannot fail
	keys := []string{MetaFormatVersion, MetaOperator, MetaSubtask, MetaCheckpointID, MetaMaxParallelism, MetaSlots}
	vals := []string{strconv.Itoa(FormatVersion), pm.operator, strconv.Itoa(pm.subtask),
		strconv.FormatUint(pm.checkpointID, 10), strconv.Itoa(pm.maxParallelism), string(js)}
	if pm.delta {
		keys, vals = append(keys, MetaDelta), append(vals, "true")
	}
	md := arrow.NewMetadata(keys, vals)
	return l.schema(&md)
}

// parseSchema checks a part file's schema and metadata against format
// version 1 and rebuilds its layout. Errors are plain; the caller adds the
// file name.
func parseSchema(sc *arrow.Schema) (*layout, partMeta, error) {
	var pm partMeta
	md := sc.Metadata()
	get := func(key string) (string, error) {
		i := md.FindKey(key)
		if i < 0 {
			return "", fmt.Errorf("schema metadata lacks %s", key)
		}
		return md.Values()[i], nil
	}
	v, err := get(MetaFormatVersion)
	if err != nil {
		return nil, pm, err
	}
	if v != strconv.Itoa(FormatVersion) {
		return nil, pm, &versionError{got: v}
	}
	if pm.operator, err = get(MetaOperator); err != nil {
		return nil, pm, err
	}
	if err := checkOperatorName(pm.operator); err != nil {
		return nil, pm, fmt.Errorf("%s: %w", MetaOperator, err)
	}
	s, err := get(MetaSubtask)
	if err != nil {
		return nil, pm, err
	}
	if pm.subtask, err = strconv.Atoi(s); err != nil || pm.subtask < 0 {
		return nil, pm, fmt.Errorf("%s %q is not a subtask index", MetaSubtask, s)
	}
	if s, err = get(MetaCheckpointID); err != nil {
		return nil, pm, err
	}
	if pm.checkpointID, err = strconv.ParseUint(s, 10, 64); err != nil || pm.checkpointID == 0 {
		return nil, pm, fmt.Errorf("%s %q is not a checkpoint id", MetaCheckpointID, s)
	}
	if s, err = get(MetaMaxParallelism); err != nil {
		return nil, pm, err
	}
	if pm.maxParallelism, err = strconv.Atoi(s); err != nil || pm.maxParallelism < 1 || pm.maxParallelism > maxMaxParallelism {
		return nil, pm, fmt.Errorf("%s %q is not in [1, %d]", MetaMaxParallelism, s, maxMaxParallelism)
	}
	if s, err = get(MetaSlots); err != nil {
		return nil, pm, err
	}
	var sm []slotMeta
	if err := json.Unmarshal([]byte(s), &sm); err != nil {
		return nil, pm, fmt.Errorf("%s is not valid JSON: %v", MetaSlots, err)
	}

	fields := sc.Fields()
	if len(fields) < numFixed {
		return nil, pm, fmt.Errorf("schema has %d columns, want at least the %d fixed ones", len(fields), numFixed)
	}
	for i, want := range fixedFields {
		if got := fields[i]; got.Name != want.Name || !arrow.TypeEqual(got.Type, want.Type) || got.Nullable != want.Nullable {
			return nil, pm, fmt.Errorf("column %d is %s, want %s", i, fieldString(got), fieldString(want))
		}
	}
	byName := make(map[string]arrow.Field, len(fields)-numFixed)
	for _, f := range fields[numFixed:] {
		byName[f.Name] = f
	}
	slots := make([]Slot, len(sm))
	for i, m := range sm {
		slots[i] = Slot{Name: m.Name, Raw: m.Raw, Values: make([]arrow.Field, len(m.Values))}
		for j, name := range m.Values {
			f, ok := byName[name]
			if !ok {
				return nil, pm, fmt.Errorf("slot %q names value column %q, which the schema lacks", m.Name, name)
			}
			slots[i].Values[j] = f
		}
	}
	if i := md.FindKey(MetaDelta); i >= 0 {
		if md.Values()[i] != "true" {
			return nil, pm, fmt.Errorf("%s %q: want \"true\" or no key", MetaDelta, md.Values()[i])
		}
		pm.delta = true
	}
	l, err := newLayoutOf(slots, pm.delta)
	if err != nil {
		return nil, pm, fmt.Errorf("%s: %w", MetaSlots, err)
	}
	if got := fields[numFixed:]; len(got) != len(l.values) {
		return nil, pm, fmt.Errorf("schema has %d value columns, %s declares %d", len(got), MetaSlots, len(l.values))
	} else {
		for i, f := range got {
			w := l.values[i]
			if f.Name != w.Name || !arrow.TypeEqual(f.Type, w.Type) || !f.Nullable {
				return nil, pm, fmt.Errorf("value column %d is %s, want %s (nullable)", numFixed+i, fieldString(f), fieldString(w))
			}
		}
	}
	return l, pm, nil
}

type versionError struct{ got string }

func (e *versionError) Error() string {
	return fmt.Sprintf("unsupported format version %q (this build reads version %d)", e.got, FormatVersion)
}

func fieldString(f arrow.Field) string {
	n := "not null"
	if f.Nullable {
		n = "nullable"
	}
	return fmt.Sprintf("%q %s %s", f.Name, f.Type, n)
}

// checkOperatorName keeps operator names usable as file names.
func checkOperatorName(op string) error {
	if op == "" || len(op) > 128 {
		return fmt.Errorf("operator name %q must have 1 to 128 characters", op)
	}
	for i := 0; i < len(op); i++ {
		c := op[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' && i > 0
		if !ok {
			return fmt.Errorf("operator name %q: only letters, digits, '_', '-' and (not first) '.' are allowed", op)
		}
	}
	return nil
}

// checkRecord enforces the row invariants of docs/state-format.md on one
// record whose fields match l's schema. It reports the first bad row.
// Records that hold (every record an operator writes) are checked run of
// slot by run over the raw buffers; a record that fails that is checked
// again row by row, to name its first bad row.
func (l *layout) checkRecord(rec arrow.RecordBatch, maxParallelism int) error {
	if l.recordHolds(rec, maxParallelism) {
		return nil
	}
	return l.checkRows(rec, maxParallelism)
}

// validIn counts the valid (non-null) values of a in rows [start, end),
// from its validity bitmap (not NullN, which caches its count in the
// array: a write, racing with other readers of a shared batch).
func validIn(a arrow.Array, start, end int) int {
	bm := a.NullBitmapBytes()
	if bm == nil {
		if a.DataType().ID() == arrow.NULL {
			return 0
		}
		return end - start
	}
	return bitutil.CountSetBits(bm, a.Data().Offset()+start, end-start)
}

// recordHolds is checkRows' fast path: whether every row of rec holds,
// decided per run of one slot with tight loops over the key groups and
// windows and bitmap counts for nulls. False means "check row by row",
// not necessarily a bad row.
func (l *layout) recordHolds(rec arrow.RecordBatch, maxParallelism int) bool {
	slot, ok1 := rec.Column(0).(*array.String)
	kg, ok2 := rec.Column(1).(*array.Int32)
	key, ok3 := rec.Column(2).(*array.String)
	ws, ok4 := rec.Column(3).(*array.Int64)
	we, ok5 := rec.Column(4).(*array.Int64)
	n := int(rec.NumRows())
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || validIn(slot, 0, n) != n || validIn(kg, 0, n) != n {
		return false
	}
	kgv := kg.Int32Values()
	wsv, wev := ws.Int64Values(), we.Int64Values()
	for start := 0; start < n; {
		name := slot.Value(start)
		si, ok := l.index[name]
		if !ok {
			return false
		}
		end := start + 1
		for end < n && slot.Value(end) == name {
			end++
		}
		lo, hi := int32(0), int32(maxParallelism-1)
		switch {
		case l.delta && si == len(l.slots)-1: // tombstones
			lo = RawKeyGroup
		case l.slots[si].Raw:
			lo, hi = RawKeyGroup, RawKeyGroup
			if validIn(key, start, end) != 0 || validIn(ws, start, end) != 0 {
				return false
			}
		default:
			if validIn(key, start, end) != end-start {
				return false
			}
		}
		for _, g := range kgv[start:end] {
			if g < lo || g > hi {
				return false
			}
		}
		switch wsValid, weValid := validIn(ws, start, end), validIn(we, start, end); {
		case wsValid == 0 && weValid == 0:
		case wsValid == end-start && weValid == end-start:
			we := wev[start:end]
			for i, s := range wsv[start:end] {
				if s >= we[i] {
					return false
				}
			}
		default: // windowed and unwindowed rows mixed
			sb, eb := ws.NullBitmapBytes(), we.NullBitmapBytes()
			so, eo := ws.Data().Offset(), we.Data().Offset()
			for i := start; i < end; i++ {
				sv, ev := sb == nil || bitutil.BitIsSet(sb, so+i), eb == nil || bitutil.BitIsSet(eb, eo+i)
				if sv != ev || sv && wsv[i] >= wev[i] {
					return false
				}
			}
		}
		for _, c := range l.foreign[si] {
			if validIn(rec.Column(c), start, end) != 0 {
				return false
			}
		}
		start = end
	}
	return true
}

// checkRows is checkRecord row by row.
func (l *layout) checkRows(rec arrow.RecordBatch, maxParallelism int) error {
	slot, ok1 := rec.Column(0).(*array.String)
	kg, ok2 := rec.Column(1).(*array.Int32)
	key, ok3 := rec.Column(2).(*array.String)
	ws, ok4 := rec.Column(3).(*array.Int64)
	we, ok5 := rec.Column(4).(*array.Int64)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return errors.New("fixed columns have the wrong array types")
	}
	n := int(rec.NumRows())
	lastName, lastSI := "", -1 // rows of one slot come in runs
	for i := 0; i < n; i++ {
		if slot.IsNull(i) || kg.IsNull(i) {
			return fmt.Errorf("row %d: slot and key_group must not be null", i)
		}
		name := slot.Value(i)
		si := lastSI
		if si < 0 || name != lastName {
			var ok bool
			if si, ok = l.index[name]; !ok {
				return fmt.Errorf("row %d: slot %q is not declared in %s", i, name, MetaSlots)
			}
			lastName, lastSI = name, si
		}
		g := kg.Value(i)
		wNull := ws.IsNull(i)
		if wNull != we.IsNull(i) {
			return fmt.Errorf("row %d (slot %q): window_start and window_end must be both null or both set", i, name)
		}
		if !wNull && ws.Value(i) >= we.Value(i) {
			return fmt.Errorf("row %d (slot %q): window [%d, %d) is empty", i, name, ws.Value(i), we.Value(i))
		}
		if l.delta && si == len(l.slots)-1 {
			if g < RawKeyGroup || int(g) >= maxParallelism {
				return fmt.Errorf("row %d (tombstone): key_group %d out of [-1, %d)", i, g, maxParallelism)
			}
		} else if l.slots[si].Raw {
			if g != RawKeyGroup || !key.IsNull(i) || !wNull {
				return fmt.Errorf("row %d: <raw> slot %q needs key_group -1, a null key and no window (got key_group %d)", i, name, g)
			}
		} else {
			if g < 0 || int(g) >= maxParallelism {
				return fmt.Errorf("row %d (slot %q): key_group %d out of [0, %d)", i, name, g, maxParallelism)
			}
			if key.IsNull(i) {
				return fmt.Errorf("row %d (slot %q): keyed row has a null key", i, name)
			}
		}
		for _, c := range l.foreign[si] {
			if rec.Column(c).IsValid(i) {
				return fmt.Errorf("row %d (slot %q): column %q belongs to other slots and must be null", i, name, rec.Schema().Field(c).Name)
			}
		}
	}
	return nil
}
