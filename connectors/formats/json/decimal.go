package json

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// decimal parses the DECIMAL value at line[i] (a JSON number, or a string
// holding one) into col.
func (d *Decoder) decimal(col *column, line []byte, i int) (int, *RecordError) {
	var v decimal128.Num
	var end int
	if line[i] == '"' {
		s, e, buf, err := decodeString(line, i, d.buf)
		d.buf = buf
		if err != nil {
			return 0, err
		}
		end = e
		n, ne, ok := arrowcol.ScanDecimal(s, 0)
		if !ok || ne != len(s) {
			return 0, fieldError(col, i, "expected a number, found "+shown(line[i:end]))
		}
		if v, ok = n.ToDecimal(s, col.prec, col.scale); !ok {
			return 0, d.decimalRangeError(col, line, i, end)
		}
	} else {
		c := line[i]
		if c != '-' && (c < '0' || c > '9') {
			return d.typeError(col, line, i, "a number")
		}
		n, e, ok := arrowcol.ScanDecimal(line, i)
		if !ok {
			_, _, err := scanNumber(line, i)
			if err == nil { // cannot happen: both follow the JSON grammar
				err = syntaxError(line, i, "")
			}
			return 0, err
		}
		end = e
		if v, ok = n.ToDecimal(line, col.prec, col.scale); !ok {
			return 0, d.decimalRangeError(col, line, i, end)
		}
	}
	col.PutDecimal(d.n, v)
	d.isSet(col)
	return end, nil
}

func (d *Decoder) decimalRangeError(col *column, line []byte, i, end int) *RecordError {
	return fieldError(col, i, fmt.Sprintf("%s does not fit DECIMAL(%d, %d)", shown(line[i:end]), col.prec, col.scale))
}
