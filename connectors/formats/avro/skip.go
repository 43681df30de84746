package avro

import (
	"fmt"

	hamba "github.com/hamba/avro/v2"
)

// skipCode is the shape of a writer value that is skipped.
type skipCode uint8

const (
	sNull skipCode = iota
	sBool
	sVarint // int, long
	sEnum
	sFloat
	sDouble
	sBytes // bytes, string
	sFixed
	sUnion
	sRecord
	sArray
	sMap
)

// skipper skips one writer value of a given type without converting it.
type skipper struct {
	code  skipCode
	size  int        // sFixed size; sEnum symbol count
	elems []*skipper // union branches, record fields, array items, map values
	// zero: the value's encoding is always empty (null, or a record of
	// such), so an array of them can claim any count without reading.
	zero bool
}

// maxDepth bounds the nesting of skipped values (recursive schemas).
const maxDepth = 256

func (c *compiler) skipper(t hamba.Schema, depth int) (*skipper, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("schema nested deeper than %d", maxDepth)
	}
	t = deref(t)
	switch t.Type() {
	case hamba.Null:
		return &skipper{code: sNull, zero: true}, nil
	case hamba.Boolean:
		return &skipper{code: sBool}, nil
	case hamba.Int, hamba.Long:
		return &skipper{code: sVarint}, nil
	case hamba.Float:
		return &skipper{code: sFloat}, nil
	case hamba.Double:
		return &skipper{code: sDouble}, nil
	case hamba.String, hamba.Bytes:
		return &skipper{code: sBytes}, nil
	case hamba.Fixed:
		n := t.(*hamba.FixedSchema).Size()
		return &skipper{code: sFixed, size: n, zero: n == 0}, nil
	case hamba.Enum:
		return &skipper{code: sEnum, size: len(t.(*hamba.EnumSchema).Symbols())}, nil
	case hamba.Union:
		s := &skipper{code: sUnion}
		for _, b := range t.(*hamba.UnionSchema).Types() {
			e, err := c.skipper(b, depth+1)
			if err != nil {
				return nil, err
			}
			s.elems = append(s.elems, e)
		}
		return s, nil
	case hamba.Array:
		e, err := c.skipper(t.(*hamba.ArraySchema).Items(), depth+1)
		if err != nil {
			return nil, err
		}
		return &skipper{code: sArray, elems: []*skipper{e}}, nil
	case hamba.Map:
		e, err := c.skipper(t.(*hamba.MapSchema).Values(), depth+1)
		if err != nil {
			return nil, err
		}
		return &skipper{code: sMap, elems: []*skipper{e}}, nil
	case hamba.Record, hamba.Error:
		r := t.(*hamba.RecordSchema)
		if s, ok := c.named[r.FullName()]; ok {
			return s, nil // recursive: the same skipper, being filled in
		}
		s := &skipper{code: sRecord, zero: true}
		c.named[r.FullName()] = s
		for _, f := range r.Fields() {
			e, err := c.skipper(f.Type(), depth+1)
			if err != nil {
				return nil, err
			}
			s.elems = append(s.elems, e)
			s.zero = s.zero && e.zero
		}
		return s, nil
	}
	return nil, fmt.Errorf("unsupported Avro type %s", t.Type())
}

// skip skips the value at b[i] and returns the index after it, or an
// error reason.
func skip(s *skipper, b []byte, i, depth int) (int, string) {
	if depth > maxDepth {
		return i, fmt.Sprintf("value nested deeper than %d", maxDepth)
	}
	switch s.code {
	case sNull:
		return i, ""
	case sBool:
		if i >= len(b) {
			return i, reasonTruncated
		}
		if b[i] > 1 {
			return i, fmt.Sprintf("invalid boolean byte %#02x", b[i])
		}
		return i + 1, ""
	case sVarint:
		_, j := readLong(b, i)
		if j < 0 {
			return i, varintReason(j)
		}
		return j, ""
	case sEnum:
		v, j := readLong(b, i)
		if j < 0 {
			return i, varintReason(j)
		}
		if v < 0 || v >= int64(s.size) {
			return i, fmt.Sprintf("enum index %d out of range (%d symbols)", v, s.size)
		}
		return j, ""
	case sFloat:
		if len(b)-i < 4 {
			return i, reasonTruncated
		}
		return i + 4, ""
	case sDouble:
		if len(b)-i < 8 {
			return i, reasonTruncated
		}
		return i + 8, ""
	case sBytes:
		return skipBytes(b, i)
	case sFixed:
		if len(b)-i < s.size {
			return i, reasonTruncated
		}
		return i + s.size, ""
	case sUnion:
		v, j := readLong(b, i)
		if j < 0 {
			return i, varintReason(j)
		}
		if v < 0 || v >= int64(len(s.elems)) {
			return i, fmt.Sprintf("union branch %d out of range (%d branches)", v, len(s.elems))
		}
		return skip(s.elems[v], b, j, depth+1)
	case sRecord:
		var r string
		for _, e := range s.elems {
			if i, r = skip(e, b, i, depth+1); r != "" {
				return i, r
			}
		}
		return i, ""
	case sArray, sMap:
		e := s.elems[0]
		for {
			n, j := readLong(b, i)
			if j < 0 {
				return i, varintReason(j)
			}
			i = j
			if n == 0 {
				return i, ""
			}
			if n < 0 {
				// A negative count is followed by the block's size in
				// bytes, which lets the block be skipped whole.
				size, j := readLong(b, i)
				if j < 0 {
					return i, varintReason(j)
				}
				if size < 0 || size > int64(len(b)-j) {
					return i, reasonTruncated
				}
				i = j + int(size)
				continue
			}
			if s.code == sArray && e.zero {
				continue
			}
			// Every item takes a byte at least (a map key's length).
			if n > int64(len(b)-i) {
				return i, reasonTruncated
			}
			var r string
			for ; n > 0; n-- {
				if s.code == sMap {
					if i, r = skipBytes(b, i); r != "" {
						return i, r
					}
				}
				if i, r = skip(e, b, i, depth+1); r != "" {
					return i, r
				}
			}
		}
	}
	panic("unreachable")
}

func skipBytes(b []byte, i int) (int, string) {
	n, j := readLong(b, i)
	if j < 0 {
		return i, varintReason(j)
	}
	if n < 0 {
		return i, fmt.Sprintf("negative length %d", n)
	}
	if n > int64(len(b)-j) {
		return i, reasonTruncated
	}
	return j + int(n), ""
}

const reasonTruncated = "record truncated"

func varintReason(j int) string {
	if j == errTruncated {
		return reasonTruncated
	}
	return "invalid varint (longer than 10 bytes)"
}
