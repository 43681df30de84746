package kernels

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DATE_FORMAT(ts, format) → VARCHAR, as Flink: ts formatted with a Java
// date-time pattern. Flink formats with java.time's DateTimeFormatter, so
// its rules are followed where they differ from SimpleDateFormat: S is the
// fraction of the second (S tenths, SSS milliseconds, more S pad with
// zeros), y is the year of era, and a field letter repeated more often
// than DateTimeFormatter allows is an error. The pattern is split by the
// same code as TO_TIMESTAMP's (scCompileTsPattern); a constant pattern is
// compiled once, when the call is bound. Timestamps are UTC: the civil
// fields come from scCivil (once per distinct day in a row of equal days),
// and each value is written straight into the output buffer: no
// allocation per row.

// scFormatLetters are the pattern letters DATE_FORMAT formats.
const scFormatLetters = "yMdDEaHhKkmsS"

// scFormatMaxWidth is the most repetitions DateTimeFormatter allows per
// letter (y: any).
var scFormatMaxWidth = map[byte]int{
	'M': 5, 'd': 2, 'D': 3, 'E': 5, 'a': 1, 'H': 2, 'h': 2, 'K': 2, 'k': 2, 'm': 2, 's': 2, 'S': 9,
}

var (
	scMonthNames = [12]string{"January", "February", "March", "April", "May", "June",
		"July", "August", "September", "October", "November", "December"}
	scDayNames = [7]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

// scDateFormat is a compiled DATE_FORMAT pattern.
type scDateFormat struct {
	fields scTsFormat
	// maxLen bounds the bytes one value formats to, so a row is written
	// straight into the output buffer after one reserve.
	maxLen int
	// dateOnly: no field reads the time of day, so rows of the same day
	// (most rows of a stream) format alike.
	dateOnly bool
}

// scCompileDateFormat compiles a DATE_FORMAT pattern. Besides the letters
// it refuses DateTimeFormatter's reserved characters ([ ] { } #) outside
// quotes, which SimpleDateFormat would print but DateTimeFormatter reads
// as optional sections.
func scCompileDateFormat(f string) (*scDateFormat, error) {
	fields, err := scCompileTsPattern(f, scFormatLetters)
	if err != nil {
		return nil, err
	}
	out := &scDateFormat{fields: fields, dateOnly: true}
	for _, fl := range fields {
		if fl.letter == 0 {
			if !fl.quoted && strings.ContainsAny(fl.text, "[]{}#") {
				return nil, fmt.Errorf("format '%s': '%s' is reserved (optional sections are not supported); put it in quotes to print it", f, fl.text)
			}
			out.maxLen += len(fl.text)
			continue
		}
		if mx, ok := scFormatMaxWidth[fl.letter]; ok && fl.width > mx {
			return nil, fmt.Errorf("format '%s': too many pattern letters '%s' (at most %d)", f, strings.Repeat(string(fl.letter), fl.width), mx)
		}
		out.dateOnly = out.dateOnly && strings.IndexByte("yMdDE", fl.letter) >= 0
		switch fl.letter {
		case 'y':
			out.maxLen += max(fl.width, 19) + 1 // a sign and an int64's digits
		case 'M', 'E':
			out.maxLen += max(fl.width, len("September"))
		default:
			out.maxLen += max(fl.width, 3)
		}
	}
	return out, nil
}

// scAppendPadded appends v (>= 0) in decimal, zero-padded to width digits.
func scAppendPadded(dst []byte, v int64, width int) []byte {
	if v < 100 && width <= 2 {
		if v >= 10 || width == 2 {
			return append(dst, byte('0'+v/10), byte('0'+v%10))
		}
		return append(dst, byte('0'+v))
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	for k := len(tmp) - i; k < width; k++ {
		dst = append(dst, '0')
	}
	return append(dst, tmp[i:]...)
}

// scAppendName appends a month or day name as the letter's width asks:
// 1-3 (E) or 3 (M) the short form, 4 the full name, 5 the first letter.
func scAppendName(dst []byte, name string, width int) []byte {
	switch {
	case width == 4:
		return append(dst, name...)
	case width == 5:
		return append(dst, name[0])
	}
	return append(dst, name[:3]...)
}

// scCivilCache remembers the civil date of the last day formatted: a
// stream's timestamps mostly fall on the day before them.
type scCivilCache struct {
	days int64
	y    int64
	m, d int
	ok   bool
}

func (c *scCivilCache) get(days int64) (int64, int, int) {
	if !c.ok || c.days != days {
		c.y, c.m, c.d = scCivil(days)
		c.days, c.ok = days, true
	}
	return c.y, c.m, c.d
}

// format appends the epoch-ms timestamp ms formatted with f (at most
// f.maxLen bytes).
func (f *scDateFormat) format(dst []byte, ms int64, cc *scCivilCache) []byte {
	days := scFloorDiv(ms, scMsPerDay)
	tod := ms - days*scMsPerDay
	hour := tod / 3_600_000
	for k := range f.fields {
		fl := &f.fields[k]
		switch fl.letter {
		case 0:
			dst = append(dst, fl.text...)
		case 'y':
			y, _, _ := cc.get(days)
			yoe := y // year of era: 1 BC is year 0
			if yoe <= 0 {
				yoe = 1 - yoe
			}
			switch {
			case fl.width == 2:
				dst = scAppendPadded(dst, yoe%100, 2)
			case fl.width >= 4 && fl.width < 19 && yoe >= scTen(fl.width):
				dst = scAppendPadded(append(dst, '+'), yoe, fl.width)
			default:
				dst = scAppendPadded(dst, yoe, fl.width)
			}
		case 'M':
			_, m, _ := cc.get(days)
			if fl.width >= 3 {
				dst = scAppendName(dst, scMonthNames[m-1], fl.width)
			} else {
				dst = scAppendPadded(dst, int64(m), fl.width)
			}
		case 'd':
			_, _, d := cc.get(days)
			dst = scAppendPadded(dst, int64(d), fl.width)
		case 'D':
			y, _, _ := cc.get(days)
			dst = scAppendPadded(dst, days-scDaysFromCivil(y, 1, 1)+1, fl.width)
		case 'E':
			dst = scAppendName(dst, scDayNames[scISOWeekday(days)-1], fl.width)
		case 'a':
			if hour < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case 'H':
			dst = scAppendPadded(dst, hour, fl.width)
		case 'k':
			if hour == 0 {
				dst = scAppendPadded(dst, 24, fl.width)
			} else {
				dst = scAppendPadded(dst, hour, fl.width)
			}
		case 'K':
			dst = scAppendPadded(dst, hour%12, fl.width)
		case 'h':
			if h := hour % 12; h == 0 {
				dst = scAppendPadded(dst, 12, fl.width)
			} else {
				dst = scAppendPadded(dst, h, fl.width)
			}
		case 'm':
			dst = scAppendPadded(dst, tod/60_000%60, fl.width)
		case 's':
			dst = scAppendPadded(dst, tod/1000%60, fl.width)
		case 'S':
			// Fraction digits: the milliseconds' first width digits, or
			// all three followed by zeros.
			frac := tod % 1000
			if fl.width <= 3 {
				dst = scAppendPadded(dst, frac/scTen(3-fl.width), fl.width)
			} else {
				dst = scAppendPadded(dst, frac, 3)
				for k := 3; k < fl.width; k++ {
					dst = append(dst, '0')
				}
			}
		}
	}
	return dst
}

func scTen(n int) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// bindDateFormat is DATE_FORMAT(ts, format) → VARCHAR. ts is a TIMESTAMP(3)
// or, as in Flink, a VARCHAR read like CAST(s AS TIMESTAMP(3)) (text that
// does not parse gives NULL). A constant format is checked and compiled
// here; a column of formats is compiled per distinct value, and a bad one
// fails the batch.
func bindDateFormat(args []Expr) (Expr, error) {
	tk, fk := scKindOf(args[0].Type()), scKindOf(args[1].Type())
	if tk != skTimestamp && tk != skString && tk != skNull || fk != skString && fk != skNull {
		err := scSigError("date_format", args)
		if tk.isInt() {
			err = fmt.Errorf("%w: the first argument is a TIMESTAMP(3) or a VARCHAR (an epoch in milliseconds is TO_TIMESTAMP_LTZ(x, 3))", err)
		}
		return nil, err
	}
	var format *scDateFormat
	est := 24
	if l, ok := scIsLiteral(args[1]); ok && !l.null {
		f, err := scCompileDateFormat(l.s)
		if err != nil {
			return nil, fmt.Errorf("function date_format: %w", err)
		}
		format, est = f, len(f.format(nil, 0, &scCivilCache{}))
	}
	constFormat := format != nil
	isText := tk == skString
	return scBindStrict("date_format", scVarchar, args, !constFormat, func(c *scCall) (arrow.Array, error) {
		var ts scNumArg[int64]
		var text, formats scStrArg
		if isText {
			text = c.str(0)
		} else {
			ts = scCallNum[int64](c, 0)
		}
		if !constFormat {
			formats = c.str(1)
		}
		f := format
		var lastFmt []byte
		var ferr error
		var cc scCivilCache
		var dayFmt *scDateFormat
		var day int64
		var dayText []byte
		out := scStrLoop(c, scVarchar, (est+1)*len(c.rows), func(w *scStrWriter, i int) {
			if ferr != nil {
				return
			}
			var ms int64
			if isText {
				v, ok := scParseTimestamp(strings.TrimSpace(unsafeString(text.at(i))))
				if !ok {
					c.setNull(i)
					return
				}
				ms = v
			} else {
				ms = ts.at(i)
			}
			if !constFormat {
				if fs := formats.at(i); f == nil || string(fs) != string(lastFmt) {
					nf, err := scCompileDateFormat(string(fs))
					if err != nil {
						ferr = err
						return
					}
					f, lastFmt = nf, fs
				}
			}
			if !f.dateOnly {
				w.n += len(f.format(w.reserve(f.maxLen), ms, &cc))
				return
			}
			// The day's text again, or a new day's formatted and kept.
			if days := scFloorDiv(ms, scMsPerDay); f == dayFmt && days == day {
				w.appendBytes(dayText)
			} else {
				out := f.format(w.reserve(f.maxLen), ms, &cc)
				w.n += len(out)
				dayFmt, day, dayText = f, days, append(dayText[:0], out...)
			}
		})
		if ferr != nil {
			out.Release()
			return nil, fmt.Errorf("function date_format: %w", ferr)
		}
		return out, nil
	})
}
