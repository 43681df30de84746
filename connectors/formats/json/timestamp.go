package json

import "time"

// parseTimestamp reads 'YYYY-MM-DD HH:MM:SS[.fffffffff]' (naive, taken as
// UTC) or RFC 3339 ('YYYY-MM-DDTHH:MM:SS[.fffffffff](Z|±HH:MM)') and returns
// epoch milliseconds, truncating sub-millisecond digits. Either separator
// may go with or without a zone.
func parseTimestamp(s []byte) (int64, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
		s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	h, ok4 := digits(s[11:13])
	mi, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	i := 19
	var ms int64
	if i < len(s) && s[i] == '.' {
		i++
		k := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			if i-k < 3 {
				ms = ms*10 + int64(s[i]-'0')
			}
			i++
		}
		if n := i - k; n == 0 || n > 9 {
			return 0, false
		} else if n == 1 {
			ms *= 100
		} else if n == 2 {
			ms *= 10
		}
	}
	var off int64
	if i < len(s) {
		switch s[i] {
		case 'Z':
			i++
		case '+', '-':
			if len(s)-i != 6 || s[i+3] != ':' {
				return 0, false
			}
			oh, ok1 := digits(s[i+1 : i+3])
			om, ok2 := digits(s[i+4 : i+6])
			if !ok1 || !ok2 || oh > 23 || om > 59 {
				return 0, false
			}
			off = oh*3600 + om*60
			if s[i] == '-' {
				off = -off
			}
			i += 6
		}
		if i != len(s) {
			return 0, false
		}
	}
	secs := daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + sec - off
	return secs*1000 + ms, true
}

func digits(b []byte) (int64, bool) {
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// tsLayout is Flink's SQL timestamp format, which output rows use.
const tsLayout = "2006-01-02 15:04:05.000"

// appendDate writes days since the epoch as "YYYY-MM-DD".
func appendDate(dst []byte, days int64) []byte {
	y, mo, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		return time.Unix(days*86400, 0).UTC().AppendFormat(dst, "2006-01-02")
	}
	var b [10]byte
	put4(b[0:4], y)
	b[4] = '-'
	put2(b[5:7], mo)
	b[7] = '-'
	put2(b[8:10], d)
	return append(dst, b[:]...)
}

// appendTimestamp writes epoch ms as "YYYY-MM-DD HH:MM:SS.fff" in UTC.
func appendTimestamp(dst []byte, ms int64) []byte {
	secs := floorDiv(ms, 1000)
	frac := ms - secs*1000
	days := floorDiv(secs, 86400)
	sod := secs - days*86400
	y, mo, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		return time.UnixMilli(ms).UTC().AppendFormat(dst, tsLayout)
	}
	var b [23]byte
	put4(b[0:4], y)
	b[4] = '-'
	put2(b[5:7], mo)
	b[7] = '-'
	put2(b[8:10], d)
	b[10] = ' '
	put2(b[11:13], sod/3600)
	b[13] = ':'
	put2(b[14:16], sod/60%60)
	b[16] = ':'
	put2(b[17:19], sod%60)
	b[19] = '.'
	b[20] = byte('0' + frac/100)
	b[21] = byte('0' + frac/10%10)
	b[22] = byte('0' + frac%10)
	return append(dst, b[:]...)
}

func put2(b []byte, v int64) {
	b[0] = byte('0' + v/10)
	b[1] = byte('0' + v%10)
}

func put4(b []byte, v int64) {
	put2(b[0:2], v/100)
	put2(b[2:4], v%100)
}
