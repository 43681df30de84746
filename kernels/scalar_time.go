package kernels

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// TIMESTAMP(3) functions. A timestamp is epoch milliseconds, UTC; calendar
// fields come from integer civil-date arithmetic (Howard Hinnant's
// days_from_civil / civil_from_days), not time.Time, so a batch costs a
// few integer operations per row and no allocation.

const scMsPerDay = 86_400_000

func scFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func scFloorMod(a, b int64) int64 { return a - scFloorDiv(a, b)*b }

// scCivil is the proleptic Gregorian date of a day number (days since
// 1970-01-01).
func scCivil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := scFloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// scDaysFromCivil is the day number of y-m-d.
func scDaysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := scFloorDiv(y, 400)
	yoe := y - era*400
	mp := int64(m + 9)
	if m > 2 {
		mp = int64(m - 3)
	}
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func scIsLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func scDaysIn(y int64, m int) int {
	switch m {
	case 2:
		if scIsLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// scISOWeekday is 1 (Monday) .. 7 (Sunday); 1970-01-01 was a Thursday.
func scISOWeekday(days int64) int { return int(scFloorMod(days+3, 7)) + 1 }

// scISOWeek is the ISO-8601 week number (weeks start on Monday; week 1
// holds the year's first Thursday).
func scISOWeek(days int64) int {
	wd := scISOWeekday(days)
	thursday := days - int64(wd) + 4 // the Thursday of this ISO week
	y, _, _ := scCivil(thursday)
	return int((thursday-scDaysFromCivil(y, 1, 1))/7) + 1
}

// scAppendTimestamp formats epoch ms as Flink prints a TIMESTAMP(3):
// yyyy-MM-dd HH:mm:ss.SSS.
func scAppendTimestamp(dst []byte, ms int64) []byte {
	days := scFloorDiv(ms, scMsPerDay)
	rem := int(ms - days*scMsPerDay)
	y, m, d := scCivil(days)
	if y >= 0 && y <= 9999 {
		dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	} else {
		if y < 0 {
			dst = append(dst, '-')
			y = -y
		}
		for p := int64(1000); p > 1 && y < p; p /= 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, y, 10)
	}
	two := func(v int) { dst = append(dst, byte('0'+v/10), byte('0'+v%10)) }
	dst = append(dst, '-')
	two(m)
	dst = append(dst, '-')
	two(d)
	dst = append(dst, ' ')
	two(rem / 3_600_000)
	dst = append(dst, ':')
	two(rem / 60_000 % 60)
	dst = append(dst, ':')
	two(rem / 1000 % 60)
	f := rem % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// scTimestampMs is y-m-d h:mi:s.ms as epoch ms, after validating the fields.
func scTimestampMs(y int64, m, d, h, mi, s, ms int) (int64, bool) {
	if m < 1 || m > 12 || d < 1 || d > scDaysIn(y, m) || h > 23 || mi > 59 || s > 59 || y < -290000 || y > 290000 {
		return 0, false
	}
	return scDaysFromCivil(y, m, d)*scMsPerDay + int64(h)*3_600_000 + int64(mi)*60_000 + int64(s)*1000 + int64(ms), true
}

// scParseTimestamp reads the text forms CAST and TO_TIMESTAMP accept by
// default: yyyy-M-d, optionally followed by ' ' or 'T' and H:m, H:m:s or
// H:m:s.fraction (1 to 9 digits, truncated to milliseconds). Fields after the
// year take 1 or 2 digits. No allocation.
func scParseTimestamp(t string) (int64, bool) {
	p := 0
	num := func(minD, maxD int) (int, bool) {
		v, k := 0, 0
		for p < len(t) && k < maxD && t[p] >= '0' && t[p] <= '9' {
			v = v*10 + int(t[p]-'0')
			p++
			k++
		}
		return v, k >= minD
	}
	lit := func(c byte) bool {
		if p < len(t) && t[p] == c {
			p++
			return true
		}
		return false
	}
	neg := lit('-')
	y, ok := num(4, 4)
	if !ok || !lit('-') {
		return 0, false
	}
	m, ok1 := num(1, 2)
	ok2 := lit('-')
	d, ok3 := num(1, 2)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	yy := int64(y)
	if neg {
		yy = -yy
	}
	var h, mi, s, ms int
	if p < len(t) {
		if !lit(' ') && !lit('T') {
			return 0, false
		}
		var okh, okm bool
		h, okh = num(1, 2)
		okc := lit(':')
		mi, okm = num(1, 2)
		if !okh || !okc || !okm {
			return 0, false
		}
		if lit(':') {
			if s, ok = num(1, 2); !ok {
				return 0, false
			}
			if lit('.') {
				k := 0
				for p < len(t) && t[p] >= '0' && t[p] <= '9' {
					if k < 3 {
						ms = ms*10 + int(t[p]-'0')
					}
					k++
					p++
				}
				if k == 0 || k > 9 {
					return 0, false
				}
				for ; k < 3; k++ {
					ms *= 10
				}
			}
		}
		if p != len(t) {
			return 0, false
		}
	}
	return scTimestampMs(yy, m, d, h, mi, s, ms)
}

// ---------------------------------------------------------------------------
// EXTRACT, DATE_TRUNC units

type scTimeUnit uint8

const (
	tuInvalid scTimeUnit = iota
	tuYear
	tuQuarter
	tuMonth
	tuWeek
	tuDay
	tuDayOfWeek // 1 = Sunday .. 7 = Saturday
	tuISODow    // 1 = Monday .. 7 = Sunday
	tuDayOfYear
	tuHour
	tuMinute
	tuSecond
	tuMillisecond
	tuEpoch
)

var scTimeUnits = map[string]scTimeUnit{
	"YEAR": tuYear, "QUARTER": tuQuarter, "MONTH": tuMonth, "WEEK": tuWeek, "DAY": tuDay,
	"DAYOFWEEK": tuDayOfWeek, "DOW": tuDayOfWeek, "ISODOW": tuISODow, "DAYOFYEAR": tuDayOfYear, "DOY": tuDayOfYear,
	"HOUR": tuHour, "MINUTE": tuMinute, "SECOND": tuSecond, "MILLISECOND": tuMillisecond, "EPOCH": tuEpoch,
}

const scExtractUnits = "YEAR, QUARTER, MONTH, WEEK, DAY, DAYOFWEEK (DOW), ISODOW, DAYOFYEAR (DOY), HOUR, MINUTE, SECOND, MILLISECOND, EPOCH"
const scTruncUnits = "YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND"

func scParseUnit(s string, trunc bool) scTimeUnit {
	u := scTimeUnits[strings.ToUpper(strings.TrimSpace(s))]
	if trunc && (u == tuDayOfWeek || u == tuISODow || u == tuDayOfYear || u == tuEpoch) {
		return tuInvalid
	}
	return u
}

// scExtract1 is one field of a timestamp.
func scExtract1(u scTimeUnit, ms int64) int64 {
	days := scFloorDiv(ms, scMsPerDay)
	tod := ms - days*scMsPerDay
	switch u {
	case tuHour:
		return tod / 3_600_000
	case tuMinute:
		return tod / 60_000 % 60
	case tuSecond:
		return tod / 1000 % 60
	case tuMillisecond:
		return tod % 1000
	case tuEpoch:
		return scFloorDiv(ms, 1000)
	case tuDayOfWeek:
		return int64(scISOWeekday(days)%7) + 1
	case tuISODow:
		return int64(scISOWeekday(days))
	case tuWeek:
		return int64(scISOWeek(days))
	}
	y, m, d := scCivil(days)
	switch u {
	case tuYear:
		return y
	case tuQuarter:
		return int64(m-1)/3 + 1
	case tuMonth:
		return int64(m)
	case tuDay:
		return int64(d)
	case tuDayOfYear:
		return days - scDaysFromCivil(y, 1, 1) + 1
	}
	return 0
}

// scTrunc1 truncates a timestamp to the start of its unit.
func scTrunc1(u scTimeUnit, ms int64) int64 {
	switch u {
	case tuMillisecond:
		return ms
	case tuSecond:
		return scFloorDiv(ms, 1000) * 1000
	case tuMinute:
		return scFloorDiv(ms, 60_000) * 60_000
	case tuHour:
		return scFloorDiv(ms, 3_600_000) * 3_600_000
	}
	days := scFloorDiv(ms, scMsPerDay)
	switch u {
	case tuDay:
		return days * scMsPerDay
	case tuWeek:
		return (days - int64(scISOWeekday(days)) + 1) * scMsPerDay
	}
	y, m, _ := scCivil(days)
	switch u {
	case tuMonth:
	case tuQuarter:
		m = (m-1)/3*3 + 1
	default: // year
		m = 1
	}
	return scDaysFromCivil(y, m, 1) * scMsPerDay
}

// bindTimeUnitFunc is extract(unit, ts) → BIGINT and date_trunc(unit, ts) →
// TIMESTAMP(3). The unit is a VARCHAR, normally a literal (checked here);
// a column of units is read per row.
func bindTimeUnitFunc(name string, trunc bool) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		uk, tk := scKindOf(args[0].Type()), scKindOf(args[1].Type())
		if uk != skString && uk != skNull || tk != skTimestamp && tk != skNull {
			return nil, scSigError(name, args)
		}
		valid := scExtractUnits
		if trunc {
			valid = scTruncUnits
		}
		var unit scTimeUnit
		if l, ok := scIsLiteral(args[0]); ok && !l.null {
			if unit = scParseUnit(l.s, trunc); unit == tuInvalid {
				return nil, fmt.Errorf("function %s: unknown unit '%s' (one of %s)", name, l.s, valid)
			}
		}
		rt := arrow.DataType(scTypeOf(skInt64))
		if trunc {
			rt = scTypeOf(skTimestamp)
			if tk == skTimestamp {
				rt = args[1].Type()
			}
		}
		return scBindStrict(name, rt, args, unit == tuInvalid, func(c *scCall) (arrow.Array, error) {
			ts := scCallNum[int64](c, 1)
			buf, o := scAllocValues[int64](c.mem, c.n)
			if unit != tuInvalid {
				if trunc {
					for _, i := range c.rows {
						o[i] = scTrunc1(unit, ts.at(int(i)))
					}
				} else {
					for _, i := range c.rows {
						o[i] = scExtract1(unit, ts.at(int(i)))
					}
				}
				return c.result(rt, buf), nil
			}
			units := c.str(0)
			var last []byte
			u := tuInvalid
			for _, i := range c.rows {
				if s := units.at(int(i)); u == tuInvalid || string(s) != string(last) {
					if u = scParseUnit(string(s), trunc); u == tuInvalid {
						buf.Release()
						return nil, fmt.Errorf("function %s: unknown unit '%s' (one of %s)", name, s, valid)
					}
					last = s
				}
				if trunc {
					o[i] = scTrunc1(u, ts.at(int(i)))
				} else {
					o[i] = scExtract1(u, ts.at(int(i)))
				}
			}
			return c.result(rt, buf), nil
		})
	}
}

// ---------------------------------------------------------------------------
// TO_TIMESTAMP(text [, format])

// scTsField is one element of a compiled date-time format.
type scTsField struct {
	letter byte   // a pattern letter ('y', 'M', 'd', ...); 0 for literal text
	width  int    // the letter's repeat count
	fixed  bool   // parse exactly width digits (an adjacent numeric field follows)
	quoted bool   // literal text written in quotes
	text   string // literal text
}

// scTsFormat is a compiled Java-style date-time pattern: letters repeated
// (yyyy, MM, ...), 'quoted text' (a doubled quote is a quote), and any
// other character literal. TO_TIMESTAMP parses with it, DATE_FORMAT
// formats with it (scalar_dateformat.go).
type scTsFormat []scTsField

// scParseLetters are the pattern letters TO_TIMESTAMP parses: yyyy (yy:
// 2000-2099), MM/M, dd/d, HH/H, mm/m, ss/s, S.. (fraction digits).
const scParseLetters = "yMdHmsS"

func scCompileTsFormat(f string) (scTsFormat, error) { return scCompileTsPattern(f, scParseLetters) }

// scCompileTsPattern splits a pattern into fields, accepting the pattern
// letters in letters.
func scCompileTsPattern(f, letters string) (scTsFormat, error) {
	var out scTsFormat
	for i := 0; i < len(f); {
		c := f[i]
		switch {
		case c == '\'':
			j := i + 1
			var sb strings.Builder
			for {
				if j >= len(f) {
					return nil, fmt.Errorf("format '%s': unterminated quote", f)
				}
				if f[j] == '\'' {
					if j+1 < len(f) && f[j+1] == '\'' {
						sb.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(f[j])
				j++
			}
			if j == i+1 { // '' is a quote
				sb.WriteByte('\'')
			}
			out = append(out, scTsField{text: sb.String(), quoted: true})
			i = j + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(f) && f[j] == c {
				j++
			}
			if !strings.ContainsRune(letters, rune(c)) {
				return nil, fmt.Errorf("format '%s': pattern letter '%c' is not supported (%s)", f, c, strings.Join(strings.Split(letters, ""), " "))
			}
			out = append(out, scTsField{letter: c, width: j - i})
			i = j
		default:
			_, sz := utf8.DecodeRuneInString(f[i:])
			out = append(out, scTsField{text: f[i : i+sz]})
			i += sz
		}
	}
	for k := range out {
		if out[k].letter != 0 && k+1 < len(out) && out[k+1].letter != 0 {
			out[k].fixed = true
		}
	}
	return out, nil
}

// parse reads t with the format; false if it does not match exactly.
func (f scTsFormat) parse(t []byte) (int64, bool) {
	y, m, d, h, mi, s, ms := int64(1970), 1, 1, 0, 0, 0, 0
	p := 0
	for _, fl := range f {
		if fl.letter == 0 {
			if len(t)-p < len(fl.text) || string(t[p:p+len(fl.text)]) != fl.text {
				return 0, false
			}
			p += len(fl.text)
			continue
		}
		minD, maxD := fl.width, fl.width
		switch {
		case fl.letter == 'S' || fl.fixed:
		case fl.letter == 'y' && fl.width != 2:
			maxD = 9
		case fl.width == 1:
			maxD = 2
		}
		v, k := 0, 0
		for p < len(t) && k < maxD && t[p] >= '0' && t[p] <= '9' {
			v = v*10 + int(t[p]-'0')
			p++
			k++
		}
		if k < minD {
			return 0, false
		}
		switch fl.letter {
		case 'y':
			y = int64(v)
			if fl.width == 2 {
				y += 2000
			}
		case 'M':
			m = v
		case 'd':
			d = v
		case 'H':
			h = v
		case 'm':
			mi = v
		case 's':
			s = v
		case 'S':
			for ; k < 3; k++ {
				v *= 10
			}
			for ; k > 3; k-- {
				v /= 10
			}
			ms = v
		}
	}
	if p != len(t) {
		return 0, false
	}
	return scTimestampMs(y, m, d, h, mi, s, ms)
}

// bindToTimestamp is TO_TIMESTAMP(text [, format]) → TIMESTAMP(3), UTC. Text
// that does not match gives NULL, as in Flink. Without a format, the text
// forms of CAST(... AS TIMESTAMP(3)) are accepted.
func bindToTimestamp(args []Expr) (Expr, error) {
	for _, a := range args {
		if k := scKindOf(a.Type()); k != skString && k != skNull {
			return nil, scSigError("to_timestamp", args)
		}
	}
	rt := scTypeOf(skTimestamp)
	var format scTsFormat
	constFormat := len(args) == 1
	if len(args) == 2 {
		if l, ok := scIsLiteral(args[1]); ok && !l.null {
			f, err := scCompileTsFormat(l.s)
			if err != nil {
				return nil, fmt.Errorf("function to_timestamp: %w", err)
			}
			format, constFormat = f, true
		}
	}
	return scBindStrict("to_timestamp", rt, args, !constFormat, func(c *scCall) (arrow.Array, error) {
		text := c.str(0)
		buf, o := scAllocValues[int64](c.mem, c.n)
		var formats scStrArg
		if !constFormat {
			formats = c.str(1)
		}
		var lastFmt []byte
		f := format
		for _, i := range c.rows {
			s := text.at(int(i))
			var v int64
			var ok bool
			switch {
			case len(args) == 1:
				v, ok = scParseTimestamp(strings.TrimSpace(unsafeString(s)))
			default:
				if !constFormat {
					if fs := formats.at(int(i)); f == nil || string(fs) != string(lastFmt) {
						nf, err := scCompileTsFormat(string(fs))
						if err != nil {
							buf.Release()
							return nil, fmt.Errorf("function to_timestamp: %w", err)
						}
						f, lastFmt = nf, fs
					}
				}
				v, ok = f.parse(s)
			}
			if !ok {
				c.setNull(int(i))
				continue
			}
			o[i] = v
		}
		return c.result(rt, buf), nil
	})
}

// bindToTimestampLtz is TO_TIMESTAMP_LTZ(epoch [, precision]): an integer
// epoch in seconds (precision 0) or milliseconds (3, the default) as a
// TIMESTAMP(3), UTC.
func bindToTimestampLtz(args []Expr) (Expr, error) {
	if k := scKindOf(args[0].Type()); !k.isInt() && k != skNull {
		return nil, scSigError("to_timestamp_ltz", args)
	}
	n, err := scCoerce(args[0], skInt64, scTypeOf(skInt64))
	if err != nil {
		return nil, err
	}
	ops := append([]Expr{n}, args[1:]...)
	mul := int64(1)
	if len(args) == 2 {
		l, ok := scIsLiteral(args[1])
		if !ok || l.null || !scKindOf(l.typ).isInt() || l.i != 0 && l.i != 3 {
			return nil, fmt.Errorf("function to_timestamp_ltz: the precision must be the constant 0 (seconds) or 3 (milliseconds)")
		}
		if l.i == 0 {
			mul = 1000
		}
	}
	rt := scTypeOf(skTimestamp)
	return scBindStrict("to_timestamp_ltz", rt, ops, false, func(c *scCall) (arrow.Array, error) {
		x := scCallNum[int64](c, 0)
		buf, o := scAllocValues[int64](c.mem, c.n)
		for _, i := range c.rows {
			o[i] = x.at(int(i)) * mul
		}
		return c.result(rt, buf), nil
	})
}
