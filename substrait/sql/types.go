package sql

import (
	"math"
	"strconv"
)

// typeBases maps every accepted type keyword to its normalized base.
var typeBases = map[string]string{
	"BIGINT": TypeBigint, "INT8": TypeBigint,
	"INT": TypeInt, "INTEGER": TypeInt,
	"SMALLINT": TypeSmallint, "TINYINT": TypeTinyint,
	"DOUBLE": TypeDouble, "FLOAT8": TypeDouble,
	"FLOAT": TypeFloat, "REAL": TypeFloat,
	"VARCHAR": TypeVarchar, "STRING": TypeVarchar, "TEXT": TypeVarchar, "CHAR": TypeVarchar,
	"BOOLEAN": TypeBoolean, "BOOL": TypeBoolean,
	"TIMESTAMP": TypeTimestamp, "TIMESTAMP_LTZ": TypeTimestampLTZ,
	"DECIMAL": TypeDecimal, "NUMERIC": TypeDecimal, "DEC": TypeDecimal,
	"DATE": TypeDate,
}

// typeNames lists the spellings offered by "did you mean", in the order
// ties are broken.
var typeNames = []string{
	"BIGINT", "INT", "INTEGER", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT",
	"REAL", "VARCHAR", "STRING", "TEXT", "CHAR", "BOOLEAN", "BOOL",
	"TIMESTAMP", "TIMESTAMP_LTZ", "DECIMAL", "NUMERIC", "DATE", "INT8", "FLOAT8",
}

// unsupportedTypes are Flink types Clink does not implement yet; naming
// them gives a clearer error than "unknown type".
var unsupportedTypes = setOf("BINARY", "VARBINARY", "BYTES", "TIME", "INTERVAL",
	"ARRAY", "MAP", "MULTISET", "ROW", "RAW", "STRUCTURED")

// parseType parses a type name and normalizes it (see TypeName).
func (p *parser) parseType() (TypeName, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return TypeName{}, p.errExpected("type name")
	}
	base, ok := typeBases[t.kw]
	if !ok {
		if unsupportedTypes[t.kw] {
			return TypeName{}, p.errorf(t.pos, "unsupported type '%s'", t.text)
		}
		if s := suggest(t.text, typeNames); s != "" {
			return TypeName{}, p.errorf(t.pos, "unknown type '%s' (did you mean %s?)", t.text, s)
		}
		return TypeName{}, p.errorf(t.pos, "unknown type '%s'", t.text)
	}
	p.next()
	tn := TypeName{Base: base, Pos: t.pos}
	var err error
	switch base {
	case TypeDouble:
		if t.kw == "DOUBLE" {
			p.acceptKw("PRECISION")
		}
	case TypeVarchar:
		if t.kw == "VARCHAR" || t.kw == "CHAR" {
			err = p.parseTypeParams(&tn, "length", 1, math.MaxInt32, false)
		}
	case TypeTimestamp, TypeTimestampLTZ:
		if err = p.parseTypeParams(&tn, "precision", 0, 9, false); err != nil {
			return TypeName{}, err
		}
		if base == TypeTimestamp && p.isKw("WITH") && isKw(p.peekAt(1), "LOCAL") {
			p.next()
			p.next()
			_, err = p.expectKw("TIME", "ZONE")
			tn.Base = TypeTimestampLTZ
		} else if base == TypeTimestamp && p.acceptKw("WITHOUT") {
			_, err = p.expectKw("TIME", "ZONE")
		}
	case TypeDecimal:
		err = p.parseTypeParams(&tn, "precision", 1, 38, true)
	}
	if err != nil {
		return TypeName{}, err
	}
	if t := p.peek(); isOp(t, "(") && !tn.HasPrecision {
		return TypeName{}, p.errorf(t.pos, "type %s takes no parameters", tn.Base)
	}
	return tn, nil
}

// parseTypeParams parses an optional "(n)" or, with scale, "(p[, s])" and
// checks the ranges.
func (p *parser) parseTypeParams(tn *TypeName, what string, lo, hi int, scale bool) error {
	if !p.acceptOp("(") {
		return nil
	}
	n, err := p.parseTypeInt(tn.Base, what, lo, hi)
	if err != nil {
		return err
	}
	tn.Precision, tn.HasPrecision = n, true
	if scale && p.acceptOp(",") {
		if tn.Scale, err = p.parseTypeInt(tn.Base, "scale", 0, n); err != nil {
			return err
		}
	}
	_, err = p.expectOp(")")
	return err
}

func (p *parser) parseTypeInt(base, what string, lo, hi int) (int, error) {
	t := p.peek()
	if t.kind != tokInt {
		return 0, p.errExpected("integer " + what)
	}
	n, err := strconv.Atoi(t.text)
	if err != nil || n < lo || n > hi {
		return 0, p.errorf(t.pos, "%s %s must be between %d and %d", base, what, lo, hi)
	}
	p.next()
	return n, nil
}
