package json

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// refDecode is the row-at-a-time reference: encoding/json validates the
// line and splits it into ordered keys and raw values; each value is then
// converted by the documented rules with encoding/json, math/big and time.
// It renders the row as rows() does.
func refDecode(schema *arrow.Schema, line []byte) (string, error) {
	if len(bytes.Trim(line, " \t\r\n")) == 0 {
		return "", errors.New("empty line")
	}
	if !stdjson.Valid(line) {
		return "", errors.New("invalid JSON")
	}
	dec := stdjson.NewDecoder(bytes.NewReader(line))
	if tok, _ := dec.Token(); tok != stdjson.Delim('{') {
		return "", errors.New("not an object")
	}
	cells := make([]string, schema.NumFields())
	for c := range cells {
		cells[c] = "null"
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		key := tok.(string)
		var raw stdjson.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", err
		}
		c := refMatch(schema, key)
		if c < 0 {
			continue
		}
		v, err := refValue(schema.Field(c).Type, raw)
		if err != nil {
			return "", fmt.Errorf("field %q: %w", schema.Field(c).Name, err)
		}
		cells[c] = v
	}
	return strings.Join(cells, " | "), nil
}

func refMatch(schema *arrow.Schema, key string) int {
	for c, f := range schema.Fields() {
		if f.Name == key {
			return c
		}
	}
	for c, f := range schema.Fields() {
		if strings.EqualFold(f.Name, key) {
			return c
		}
	}
	return -1
}

var refTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)?$`)

func refValue(t arrow.DataType, raw []byte) (string, error) {
	if string(raw) == "null" {
		return "null", nil
	}
	isNum := raw[0] == '-' || ('0' <= raw[0] && raw[0] <= '9')
	switch t.ID() {
	case arrow.STRING:
		if raw[0] != '"' {
			return "", errors.New("not a string")
		}
		if !utf8.Valid(raw) {
			return "", errors.New("invalid UTF-8") // encoding/json would replace it
		}
		var s string
		if err := stdjson.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return strconv.Quote(s), nil
	case arrow.BOOL:
		if raw[0] != 't' && raw[0] != 'f' {
			return "", errors.New("not a bool")
		}
		var b bool
		err := stdjson.Unmarshal(raw, &b)
		return strconv.FormatBool(b), err
	case arrow.FLOAT64:
		if !isNum {
			return "", errors.New("not a number")
		}
		var f float64
		err := stdjson.Unmarshal(raw, &f)
		return strconv.FormatFloat(f, 'g', -1, 64) + signOf(math.Signbit(f)), err
	case arrow.FLOAT32:
		if !isNum {
			return "", errors.New("not a number")
		}
		var f float32
		err := stdjson.Unmarshal(raw, &f)
		return strconv.FormatFloat(float64(f), 'g', -1, 32) + signOf(math.Signbit(float64(f))), err
	case arrow.TIMESTAMP:
		if raw[0] == '"' {
			var s string
			if err := stdjson.Unmarshal(raw, &s); err != nil {
				return "", err
			}
			if !refTimestamp.MatchString(s) {
				return "", errors.New("not a timestamp")
			}
			s = strings.Replace(s, " ", "T", 1)
			layout := "2006-01-02T15:04:05Z07:00"
			if !strings.HasSuffix(s, "Z") && !strings.ContainsAny(s[19:], "+-") {
				layout = "2006-01-02T15:04:05"
			}
			tm, err := time.Parse(layout, s)
			if err != nil {
				return "", err
			}
			return strconv.FormatInt(tm.UnixMilli(), 10), nil
		}
		return refInt(raw, math.MinInt64, math.MaxInt64)
	case arrow.DECIMAL128:
		return refDecimal(t.(*arrow.Decimal128Type), raw)
	case arrow.INT8:
		return refInt(raw, math.MinInt8, math.MaxInt8)
	case arrow.INT16:
		return refInt(raw, math.MinInt16, math.MaxInt16)
	case arrow.INT32:
		return refInt(raw, math.MinInt32, math.MaxInt32)
	case arrow.INT64:
		return refInt(raw, math.MinInt64, math.MaxInt64)
	}
	panic(t)
}

// refInt converts a JSON number whose exact value is an integer.
func refInt(raw []byte, lo, hi int64) (string, error) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return "", errors.New("not a number")
	}
	s := string(raw)
	// big.Rat would compute 10^exp; settle huge exponents first.
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[k+1:], "+"))
		if err != nil || e > 400 || e < -400 {
			zero := strings.Trim(s[:k], "-0.") == ""
			switch {
			case zero:
				return "0", nil
			case (err == nil && e > 0) || (err != nil && s[k+1] != '-'):
				return "", errors.New("out of range")
			default:
				return "", errors.New("not an integer")
			}
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", errors.New("bad number")
	}
	if !r.IsInt() {
		return "", errors.New("not an integer")
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() < lo || n.Int64() > hi {
		return "", errors.New("out of range")
	}
	return n.String(), nil
}

var refJSONNumber = regexp.MustCompile(`^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$`)

// refDecimal converts a JSON number, or a string holding one, to a
// DECIMAL(p, s) with math/big: the exact value times 10^s, rounded half
// away from zero, must be below 10^p. It renders the value as
// decimal128.Num.ToString does.
func refDecimal(t *arrow.Decimal128Type, raw []byte) (string, error) {
	s := string(raw)
	if raw[0] == '"' {
		if err := stdjson.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		if !refJSONNumber.MatchString(s) {
			return "", errors.New("not a number")
		}
	} else if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return "", errors.New("not a number")
	}
	zero := strings.Trim(strings.SplitN(strings.ToLower(s), "e", 2)[0], "-0.") == ""
	if zero {
		return refDecimalText(new(big.Int), t.Scale), nil
	}
	// big.Rat would compute 10^exp; settle exponents far beyond the
	// mantissa's length first.
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[k+1:], "+"))
		if lim := k + 100; err != nil || e > lim || e < -lim {
			if (err == nil && e > 0) || (err != nil && s[k+1] != '-') {
				return "", errors.New("does not fit")
			}
			return refDecimalText(new(big.Int), t.Scale), nil
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", errors.New("bad number")
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
	num := new(big.Int).Abs(r.Num())
	q, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if q.Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)) >= 0 {
		return "", errors.New("does not fit")
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return refDecimalText(q, t.Scale), nil
}

// refDecimalText writes an unscaled value with scale fraction digits.
func refDecimalText(v *big.Int, scale int32) string {
	digits := new(big.Int).Abs(v).String()
	if pad := int(scale) + 1 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	if scale > 0 {
		digits = digits[:len(digits)-int(scale)] + "." + digits[len(digits)-int(scale):]
	}
	if v.Sign() < 0 {
		digits = "-" + digits
	}
	return digits
}

var refSchema = schemaOf(field("sensor_id", tString), field("ts", tTS), field("temp_c", tF64),
	field("i8", tInt8), field("i16", tInt16), field("i32", tInt32), field("f32", tF32),
	field("ok", tBool), field("Name", tString), field("name", tString), field("amt", tDec10x3))

// lineGen generates JSON lines around refSchema: mostly well-formed, with
// wrong types, unknown nested fields, escapes, duplicates, odd spacing and
// occasional corruption.
type lineGen struct{ r *rand.Rand }

func (g lineGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g lineGen) ws() string {
	if g.r.IntN(4) == 0 {
		return g.pick(" ", "\t", "  ", "\r\n ", "")
	}
	return ""
}

func (g lineGen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	for n := g.r.IntN(20); n > 0; n-- {
		switch g.r.IntN(12) {
		case 0:
			b.WriteString(g.pick(`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`))
		case 1:
			fmt.Fprintf(&b, `\u%04x`, g.r.IntN(0x10000))
		case 2:
			b.WriteString(g.pick("é", "✓", "😀", "\xff", "\xc3", "\u2028", "<&>", "\x7f"))
		case 3:
			b.WriteString(g.pick(`\ud83d\ude00`, `\ud83d`, `\ude00`))
		default:
			b.WriteByte(byte('a' + g.r.IntN(26)))
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (g lineGen) num() string {
	switch g.r.IntN(10) {
	case 0:
		return strconv.FormatInt(g.r.Int64(), 10)
	case 1:
		return strconv.FormatInt(int64(g.r.Int32N(1000))-500, 10)
	case 2:
		return strconv.FormatFloat(g.r.NormFloat64()*1e3, 'g', -1, 64)
	case 3:
		return strconv.FormatFloat(math.Float64frombits(g.r.Uint64()), 'g', -1, 64)
	case 4:
		return g.pick("0", "-0", "3.0", "1e2", "1E-2", "-1.5e+3", "127", "128", "-129", "32768", "2147483648",
			"9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e400", "1e-400",
			"123456789012345678901234567890", "0.1", "2.5e-324", "4.9e-324", "1.7976931348623159e308")
	case 5:
		return fmt.Sprintf("%d.%d", g.r.IntN(100), g.r.IntN(100))
	case 6:
		return fmt.Sprintf("%de%d", g.r.IntN(100), g.r.IntN(40)-20)
	default:
		return fmt.Sprintf("%d.%d", g.r.IntN(50)-10, g.r.IntN(10))
	}
}

// decimal returns a number for a DECIMAL(10, 3) column: mostly in range,
// with rounding ties, exponents, long mantissas and overflow.
func (g lineGen) decimal() string {
	switch g.r.IntN(8) {
	case 0:
		return g.num()
	case 1:
		return g.pick("0.0005", "-0.0005", "0.0004999", "0.00049999999999999999999999", "0.00050000000000000000000001",
			"9999999.999", "9999999.9994999", "9999999.9995", "-9999999.9995", "10000000", "1e7", "-1e7", "9.9999999994e6",
			"123456789.5", "-0", "-0.0", "-0.0004", "0e99999999999999", "1e-99999999999", "1e99999999999",
			"12345678901234567890123e-16", "1234567.12345678901234567890123", "0.000000000000000000000000000001e27",
			"99999999999999999999999999999999999999999", "1E2", "1e+2", "25e-4", "-25e-4", "5e-4", "4.5e-4", "0.10", "-7")
	case 2:
		return fmt.Sprintf("%d.%0*d", g.r.IntN(2e7)-1e7, 1+g.r.IntN(6), g.r.IntN(1e6))
	case 3:
		return fmt.Sprintf("%de%d", g.r.Int64N(1e12)-5e11, g.r.IntN(30)-20)
	}
	return fmt.Sprintf("%d.%03d", g.r.IntN(2e4)-1e4, g.r.IntN(1000))
}

func (g lineGen) nested(depth int) string {
	if depth > 3 {
		return g.scalar()
	}
	switch g.r.IntN(3) {
	case 0:
		var parts []string
		for n := g.r.IntN(4); n > 0; n-- {
			parts = append(parts, g.ws()+g.str()+g.ws()+":"+g.ws()+g.nested(depth+1))
		}
		return "{" + strings.Join(parts, ",") + g.ws() + "}"
	case 1:
		var parts []string
		for n := g.r.IntN(4); n > 0; n-- {
			parts = append(parts, g.ws()+g.nested(depth+1)+g.ws())
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return g.scalar()
}

func (g lineGen) scalar() string {
	switch g.r.IntN(5) {
	case 0:
		return g.str()
	case 1:
		return g.pick("true", "false", "null")
	case 2:
		return g.pick(`"2026-03-01 08:00:00"`, `"2026-03-01T08:00:00.123+01:00"`, `"2026-03-01T08:00:00Z"`,
			`"2024-02-29 23:59:59.9"`, `"2023-02-29 00:00:00"`, `"1969-12-31T23:59:59.999999-00:30"`, `"2026-03-01"`)
	}
	return g.num()
}

// field returns a key and a value: mostly a schema column with a value of
// its type, sometimes anything.
func (g lineGen) field() (string, string) {
	if g.r.IntN(6) == 0 {
		k := g.pick(`"extra"`, `"nested"`, `"SENSOR_ID"`, `"Temperature"`, `"NAME"`, `"te\u006dperature"`, `"ſensor_id"`, `""`)
		return k, g.any()
	}
	f := refSchema.Field(g.r.IntN(refSchema.NumFields()))
	k := `"` + f.Name + `"`
	if g.r.IntN(5) == 0 {
		return k, g.any()
	}
	switch f.Type.ID() {
	case arrow.STRING:
		return k, g.str()
	case arrow.BOOL:
		return k, g.pick("true", "false")
	case arrow.FLOAT32, arrow.FLOAT64:
		return k, g.num()
	case arrow.DECIMAL128:
		switch g.r.IntN(6) {
		case 0:
			return k, `"` + g.decimal() + `"`
		case 1:
			return k, g.pick(`"\u0031.5"`, `" 1"`, `"1 "`, `"+1"`, `".5"`, `"1."`, `""`, `"01"`, `"abc"`, `"1e"`, `"-"`, `"1e400"`)
		}
		return k, g.decimal()
	case arrow.TIMESTAMP:
		if g.r.IntN(2) == 0 {
			return k, strconv.FormatInt(g.r.Int64N(1<<45)-1<<44, 10)
		}
		return k, g.scalar()
	default: // integers
		switch g.r.IntN(4) {
		case 0:
			return k, g.num()
		case 1:
			return k, fmt.Sprintf("%d.0", g.r.IntN(200)-100)
		}
		return k, strconv.Itoa(g.r.IntN(200) - 100)
	}
}

func (g lineGen) any() string {
	if g.r.IntN(3) == 0 {
		return g.nested(0)
	}
	return g.scalar()
}

func (g lineGen) line() string {
	var parts []string
	for n := g.r.IntN(8); n > 0; n-- {
		k, v := g.field()
		parts = append(parts, g.ws()+k+g.ws()+":"+g.ws()+v+g.ws())
	}
	l := g.ws() + "{" + strings.Join(parts, ",") + "}" + g.ws()
	if len(parts) == 0 {
		l = g.ws() + "{" + g.ws() + "}" + g.ws()
	}
	switch g.r.IntN(12) {
	case 0: // cut short
		l = l[:g.r.IntN(len(l)+1)]
	case 1: // one byte replaced
		b := []byte(l)
		b[g.r.IntN(len(b))] = g.pick(`"`, `}`, `{`, `,`, `:`, `\`, "x", "0", "\x00", "]")[0]
		l = string(b)
	case 2: // trailing data
		l += g.pick("x", "{}", ",", "1")
	}
	return l
}

// checkAgainstReference appends line to d and compares the outcome with
// refDecode. d must be empty; it is left empty.
func checkAgainstReference(t *testing.T, d *Decoder, line []byte) {
	t.Helper()
	want, refErr := refDecode(refSchema, line)
	err := d.Append(line)
	if err != nil {
		var re *RecordError
		if !errors.As(err, &re) {
			t.Fatalf("%q: error %v is not a *RecordError", line, err)
		}
		if d.Len() != 0 {
			t.Fatalf("%q: rejected, but Len is %d", line, d.Len())
		}
	}
	switch {
	case err != nil && refErr == nil:
		t.Fatalf("%q: decoder: %v; reference accepts: %s", line, err, want)
	case err == nil && refErr != nil:
		t.Fatalf("%q: decoder accepts, reference: %v", line, refErr)
	case err != nil:
		return
	}
	rec := d.Flush()
	defer rec.Release()
	if verr := validate(rec); verr != nil {
		t.Fatalf("%q: %v", line, verr)
	}
	if got := rows(rec); len(got) != 1 || got[0] != want {
		t.Fatalf("%q:\n got %v\nwant %s", line, got, want)
	}
}

func TestDecodeMatchesReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(refSchema, mem, Options{})
	defer d.Release()
	g := lineGen{rand.New(rand.NewPCG(7, 11))}
	n := 100000
	if testing.Short() {
		n = 20000
	}
	accepted := 0
	for range n {
		line := []byte(g.line())
		checkAgainstReference(t, d, line)
		if _, err := refDecode(refSchema, line); err == nil {
			accepted++
		}
	}
	// The generator must exercise both outcomes.
	if accepted < n/10 || accepted > n*9/10 {
		t.Errorf("%d of %d lines accepted", accepted, n)
	}
}

// TestDecodeBatchMatchesReference decodes generated lines into batches of
// random sizes and compares every row with the reference.
func TestDecodeBatchMatchesReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(refSchema, mem, Options{})
	defer d.Release()
	r := rand.New(rand.NewPCG(3, 5))
	g := lineGen{r}
	for _, size := range []int{1, 7, 1024, 1 + r.IntN(3000)} {
		var want []string
		for len(want) < size {
			line := []byte(g.line())
			w, refErr := refDecode(refSchema, line)
			err := d.Append(line)
			if (err == nil) != (refErr == nil) {
				t.Fatalf("%q: decoder %v, reference %v", line, err, refErr)
			}
			if err == nil {
				want = append(want, w)
			}
		}
		rec := d.Flush()
		if err := validate(rec); err != nil {
			t.Fatal(err)
		}
		got := rows(rec)
		rec.Release()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("batch of %d differs", size)
		}
	}
}
