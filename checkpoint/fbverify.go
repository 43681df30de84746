package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// arrow-go trusts the flatbuffers of an IPC file: a corrupt vector length
// becomes a make() of billions of elements (a fatal out-of-memory, which no
// recover catches), and a wrapped-around offset can make a field its own
// child (unbounded recursion). verifyIPC walks the footer and every record
// batch header first, the way arrow-go's accessors will (same uint32
// arithmetic), and rejects what would make them allocate or recurse beyond
// the size of the file. Other out-of-range reads merely panic, and
// DecodePart recovers those.

const fbMaxDepth = 64

type fbKind uint8

const (
	fbTable     fbKind = iota // a table (or union value) reference
	fbString                  // a string (byte vector)
	fbTableVec                // a vector of table references
	fbScalarVec               // a vector of structs or scalars of size elem
	fbUnion                   // a union value; its type is field idx-1
)

type fbField struct {
	idx   int // field index in the table (vtable slot)
	kind  fbKind
	table *fbDesc              // for fbTable, fbTableVec
	elem  int                  // for fbScalarVec
	union func(t byte) *fbDesc // for fbUnion: nil means "not allowed"
}

// fbDesc lists the reference fields of a table type; scalar fields need no
// checking.
type fbDesc struct {
	name   string
	fields []fbField
}

var fbFooter, fbMessage *fbDesc

func init() {
	keyValue := &fbDesc{name: "KeyValue", fields: []fbField{{idx: 0, kind: fbString}, {idx: 1, kind: fbString}}}
	scalars := func(name string) *fbDesc { return &fbDesc{name: name} }
	timestamp := &fbDesc{name: "Timestamp", fields: []fbField{{idx: 1, kind: fbString}}}
	union := &fbDesc{name: "Union", fields: []fbField{{idx: 1, kind: fbScalarVec, elem: 4}}}
	typeTable := func(t byte) *fbDesc {
		switch t {
		case 0:
			return nil
		case 10:
			return timestamp
		case 14:
			return union
		}
		return scalars("Type")
	}
	dictEnc := &fbDesc{name: "DictionaryEncoding", fields: []fbField{{idx: 1, kind: fbTable, table: scalars("Int")}}}
	field := &fbDesc{name: "Field"}
	field.fields = []fbField{
		{idx: 0, kind: fbString},
		{idx: 3, kind: fbUnion, union: typeTable},
		{idx: 4, kind: fbTable, table: dictEnc},
		{idx: 5, kind: fbTableVec, table: field},
		{idx: 6, kind: fbTableVec, table: keyValue},
	}
	schema := &fbDesc{name: "Schema", fields: []fbField{
		{idx: 1, kind: fbTableVec, table: field},
		{idx: 2, kind: fbTableVec, table: keyValue},
		{idx: 3, kind: fbScalarVec, elem: 8},
	}}
	fbFooter = &fbDesc{name: "Footer", fields: []fbField{
		{idx: 1, kind: fbTable, table: schema},
		{idx: 2, kind: fbScalarVec, elem: 24},
		{idx: 3, kind: fbScalarVec, elem: 24},
		{idx: 4, kind: fbTableVec, table: keyValue},
	}}
	recordBatch := &fbDesc{name: "RecordBatch", fields: []fbField{
		{idx: 1, kind: fbScalarVec, elem: 16},
		{idx: 2, kind: fbScalarVec, elem: 16},
		{idx: 3, kind: fbTable, table: scalars("BodyCompression")},
		{idx: 4, kind: fbScalarVec, elem: 8},
	}}
	fbMessage = &fbDesc{name: "Message", fields: []fbField{
		{idx: 2, kind: fbUnion, union: func(t byte) *fbDesc {
			if t == 3 {
				return recordBatch
			}
			return nil
		}},
		{idx: 4, kind: fbTableVec, table: keyValue},
	}}
}

type fbVerifier struct {
	buf    []byte
	budget *int64 // shared by all flatbuffers of one file
}

var errFBBounds = errors.New("flatbuffer offset out of range")

func (v *fbVerifier) u32(pos uint32) (uint32, error) {
	if uint64(pos)+4 > uint64(len(v.buf)) {
		return 0, errFBBounds
	}
	return binary.LittleEndian.Uint32(v.buf[pos:]), nil
}

func (v *fbVerifier) u16(pos uint32) (uint16, error) {
	if uint64(pos)+2 > uint64(len(v.buf)) {
		return 0, errFBBounds
	}
	return binary.LittleEndian.Uint16(v.buf[pos:]), nil
}

func (v *fbVerifier) charge(n uint64) error {
	if n > uint64(*v.budget) {
		return errors.New("flatbuffer metadata larger than the file can hold")
	}
	*v.budget -= int64(n)
	return nil
}

// fieldOffset mirrors flatbuffers.Table.Offset: the field's offset within
// the table at pos, 0 when absent.
func (v *fbVerifier) fieldOffset(pos uint32, idx int) (uint32, error) {
	so, err := v.u32(pos)
	if err != nil {
		return 0, err
	}
	vt := uint32(int32(pos) - int32(so))
	vsize, err := v.u16(vt)
	if err != nil {
		return 0, err
	}
	vo := uint16(4 + 2*idx)
	if vo >= vsize {
		return 0, nil
	}
	o, err := v.u16(vt + uint32(vo))
	return uint32(o), err
}

// indirect mirrors flatbuffers.Table.Indirect.
func (v *fbVerifier) indirect(off uint32) (uint32, error) {
	u, err := v.u32(off)
	if err != nil {
		return 0, err
	}
	target := off + u
	if uint64(target) >= uint64(len(v.buf)) {
		return 0, errFBBounds
	}
	return target, nil
}

// vector returns the start and length of the vector referenced at off,
// checked to lie inside the buffer with elements of size elem.
func (v *fbVerifier) vector(off uint32, elem int) (uint32, uint32, error) {
	x, err := v.indirect(off)
	if err != nil {
		return 0, 0, err
	}
	n, err := v.u32(x)
	if err != nil {
		return 0, 0, err
	}
	start := x + 4
	if uint64(start) < uint64(x) || uint64(start)+uint64(n)*uint64(elem) > uint64(len(v.buf)) {
		return 0, 0, fmt.Errorf("flatbuffer vector of %d elements overruns the buffer", n)
	}
	return start, n, v.charge(uint64(n))
}

func (v *fbVerifier) table(pos uint32, d *fbDesc, depth int) error {
	if depth > fbMaxDepth {
		return fmt.Errorf("flatbuffer nested deeper than %d (cycle?)", fbMaxDepth)
	}
	if err := v.charge(1); err != nil {
		return err
	}
	for _, f := range d.fields {
		o, err := v.fieldOffset(pos, f.idx)
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		if o == 0 {
			continue
		}
		off := pos + o
		switch f.kind {
		case fbTable:
			t, err := v.indirect(off)
			if err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			if err := v.table(t, f.table, depth+1); err != nil {
				return err
			}
		case fbString:
			if _, _, err := v.vector(off, 1); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
		case fbScalarVec:
			if _, _, err := v.vector(off, f.elem); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
		case fbTableVec:
			start, n, err := v.vector(off, 4)
			if err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			for j := uint32(0); j < n; j++ {
				t, err := v.indirect(start + 4*j)
				if err != nil {
					return fmt.Errorf("%s: %w", d.name, err)
				}
				if err := v.table(t, f.table, depth+1); err != nil {
					return err
				}
			}
		case fbUnion:
			to, err := v.fieldOffset(pos, f.idx-1)
			if err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			var typ byte
			if to != 0 {
				if uint64(pos)+uint64(to) >= uint64(len(v.buf)) {
					return fmt.Errorf("%s: %w", d.name, errFBBounds)
				}
				typ = v.buf[pos+to]
			}
			sub := f.union(typ)
			if sub == nil {
				return fmt.Errorf("%s: unexpected union type %d", d.name, typ)
			}
			t, err := v.indirect(off)
			if err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			if err := v.table(t, sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v *fbVerifier) root(d *fbDesc) (uint32, error) {
	r, err := v.u32(0)
	if err != nil {
		return 0, err
	}
	if uint64(r) >= uint64(len(v.buf)) {
		return 0, errFBBounds
	}
	return r, v.table(r, d, 0)
}

// verifyIPC checks the structure of an Arrow IPC file before arrow-go
// parses it: the trailer, the footer flatbuffer, no dictionary batches (the
// state format has none), and each record batch block and its message
// header.
func verifyIPC(data []byte) error {
	n := int64(len(data))
	const magic = "ARROW1"
	if n < 8+4+6 || string(data[:6]) != magic {
		return errors.New("not an Arrow IPC file")
	}
	if !bytes.Equal(data[n-6:], []byte(magic)) {
		return errors.New("no Arrow IPC file trailer (truncated?)")
	}
	flen := int64(int32(binary.LittleEndian.Uint32(data[n-10:])))
	if flen <= 0 || flen > n-10-8 {
		return fmt.Errorf("footer length %d out of range (truncated?)", flen)
	}
	budget := 4*n + 4096
	footer := &fbVerifier{buf: data[n-10-flen : n-10], budget: &budget}
	root, err := footer.root(fbFooter)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	if o, _ := footer.fieldOffset(root, 2); o != 0 {
		if _, nd, _ := footer.vector(root+o, 24); nd > 0 {
			return fmt.Errorf("footer lists %d dictionary batches; state files have none", nd)
		}
	}
	o, _ := footer.fieldOffset(root, 3)
	if o == 0 {
		return nil
	}
	start, nb, err := footer.vector(root+o, 24)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	for i := uint32(0); i < nb; i++ {
		b := footer.buf[start+24*i:]
		off := int64(binary.LittleEndian.Uint64(b))
		meta := int64(int32(binary.LittleEndian.Uint32(b[8:])))
		body := int64(binary.LittleEndian.Uint64(b[16:]))
		if off < 8 || meta < 8 || body < 0 || meta > n || off > n-meta || body > n-off-meta {
			return fmt.Errorf("record batch %d: block (offset %d, metadata %d, body %d) outside the file", i, off, meta, body)
		}
		blk := data[off : off+meta]
		prefix := int64(4)
		if binary.LittleEndian.Uint32(blk) == 0xFFFFFFFF {
			prefix = 8
		}
		msg := &fbVerifier{buf: blk[prefix:], budget: &budget}
		mroot, err := msg.root(fbMessage)
		if err != nil {
			return fmt.Errorf("record batch %d: message header: %w", i, err)
		}
		if bo, _ := msg.fieldOffset(mroot, 3); bo != 0 {
			if uint64(mroot)+uint64(bo)+8 > uint64(len(msg.buf)) {
				return fmt.Errorf("record batch %d: message header: %w", i, errFBBounds)
			}
			if bl := int64(binary.LittleEndian.Uint64(msg.buf[mroot+bo:])); bl != body {
				return fmt.Errorf("record batch %d: body length %d, footer says %d", i, bl, body)
			}
		}
	}
	return nil
}
