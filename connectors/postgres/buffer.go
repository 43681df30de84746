package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clink-dev/clink/vector"
)

// copyHeader starts a binary COPY stream: the signature, no flags, no
// header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// buffer holds the rows waiting to be sent, already in PostgreSQL's binary
// format. In append mode they are COPY tuples. In upsert mode it keeps the
// last change of each key (a changelog's later row for a key replaces the
// earlier one: +I/+U set the row, -D deletes it, -U is skipped), so that a
// statement never touches a key twice, which ON CONFLICT DO UPDATE
// refuses.
type buffer struct {
	tg     *target
	upsert bool

	copy []byte // append: header and tuples
	rows int    // append: tuples in copy

	arena   []byte         // upsert: the changes' encoded fields
	byKey   map[string]int // upsert: key -> index in changes
	changes []change
	starts  []int  // scratch: field offsets of a row
	key     []byte // scratch
}

// change is one key's latest change: its fields in arena[off:end].
type change struct {
	off, end int
	del      bool
}

func newBuffer(tg *target, upsert bool) *buffer {
	b := &buffer{tg: tg, upsert: upsert, byKey: map[string]int{}, starts: make([]int, len(tg.cols)+1)}
	b.reset()
	return b
}

// len is the number of rows (append) or keys (upsert) waiting.
func (b *buffer) len() int {
	if b.upsert {
		return len(b.changes)
	}
	return b.rows
}

func (b *buffer) reset() {
	b.copy = append(b.copy[:0], copyHeader...)
	b.rows = 0
	b.arena = b.arena[:0]
	clear(b.byKey)
	b.changes = b.changes[:0]
}

// add encodes the batch's live rows. On an error (a value PostgreSQL's
// type cannot hold) nothing of the row is kept; the error names the column.
func (b *buffer) add(batch *vector.Batch) error {
	for k := 0; k < batch.Len(); k++ {
		i := k
		if batch.Sel != nil {
			i = int(batch.Sel[k])
		}
		kind := vector.Insert
		if batch.Kinds != nil {
			kind = batch.Kinds[i]
		}
		var err error
		if b.upsert {
			err = b.addChange(batch, i, kind)
		} else {
			err = b.addTuple(batch, i, kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *buffer) addTuple(batch *vector.Batch, i int, kind vector.RowKind) error {
	if kind != vector.Insert {
		// The planner gives append mode no changelog.
		return fmt.Errorf("append mode cannot write a changelog row (%s); use 'mode' = 'upsert'", kind)
	}
	at := len(b.copy)
	b.copy = binary.BigEndian.AppendUint16(b.copy, uint16(len(b.tg.cols)))
	for c := range b.tg.cols {
		var err error
		if b.copy, err = b.tg.cols[c].appendField(b.copy, batch.Column(c), i); err != nil {
			b.copy = b.copy[:at]
			return fmt.Errorf("column %s: %w", b.tg.cols[c].name, err)
		}
	}
	b.rows++
	return nil
}

func (b *buffer) addChange(batch *vector.Batch, i int, kind vector.RowKind) error {
	if kind == vector.UpdateBefore {
		return nil // the +U that follows replaces the row
	}
	at := len(b.arena)
	for c := range b.tg.cols {
		b.starts[c] = len(b.arena)
		var err error
		if b.arena, err = b.tg.cols[c].appendField(b.arena, batch.Column(c), i); err != nil {
			b.arena = b.arena[:at]
			return fmt.Errorf("column %s: %w", b.tg.cols[c].name, err)
		}
	}
	b.starts[len(b.tg.cols)] = len(b.arena)
	b.key = b.key[:0]
	for _, c := range b.tg.keys {
		f := b.arena[b.starts[c]:b.starts[c+1]]
		if binary.BigEndian.Uint32(f) == math.MaxUint32 {
			b.arena = b.arena[:at]
			return fmt.Errorf("primary key column %s is NULL", b.tg.cols[c].name)
		}
		b.key = append(b.key, f...)
	}
	ch := change{off: at, end: len(b.arena), del: kind == vector.Delete}
	if idx, ok := b.byKey[string(b.key)]; ok {
		b.changes[idx] = ch
	} else {
		b.byKey[string(b.key)] = len(b.changes)
		b.changes = append(b.changes, ch)
	}
	return nil
}

// send writes the buffered rows with pc and empties the buffer; it
// returns the rows (append) or changes (upsert) sent. An upsert flush is
// two statements: the caller runs it in a transaction.
func (b *buffer) send(ctx context.Context, pc *pgconn.PgConn) (int, error) {
	n := b.len()
	if n == 0 {
		return 0, nil
	}
	if b.upsert {
		if err := b.sendChanges(ctx, pc); err != nil {
			return 0, err
		}
	} else {
		b.copy = binary.BigEndian.AppendUint16(b.copy, math.MaxUint16) // trailer: -1
		if _, err := pc.CopyFrom(ctx, bytes.NewReader(b.copy), b.tg.copy); err != nil {
			return 0, b.tg.writeErr(n, err)
		}
	}
	b.reset()
	return n, nil
}

// sendChanges runs one INSERT ... ON CONFLICT over the upserted keys and
// one DELETE over the deleted ones, each with one array parameter per
// column in PostgreSQL's binary array format, whose elements are the
// fields as buffered.
func (b *buffer) sendChanges(ctx context.Context, pc *pgconn.PgConn) error {
	cols := b.tg.cols
	ups := make([][]byte, len(cols))
	dels := make([][]byte, len(b.tg.keys))
	upNull := make([]bool, len(cols))
	nUp, nDel := 0, 0
	for c := range ups {
		ups[c] = make([]byte, 20, 20+len(b.arena)/len(cols)+64)
	}
	for j := range dels {
		dels[j] = make([]byte, 20, 64)
	}
	keyPos := make([]int, len(cols)) // column -> its place in the key
	for j, c := range b.tg.keys {
		keyPos[c] = j
	}
	for _, ch := range b.changes {
		pos := ch.off
		for c := range cols {
			l := int32(binary.BigEndian.Uint32(b.arena[pos:]))
			end := pos + 4 + max(int(l), 0)
			if !ch.del {
				ups[c] = append(ups[c], b.arena[pos:end]...)
				upNull[c] = upNull[c] || l < 0
			} else if cols[c].key {
				dels[keyPos[c]] = append(dels[keyPos[c]], b.arena[pos:end]...)
			}
			pos = end
		}
		if ch.del {
			nDel++
		} else {
			nUp++
		}
	}
	if nDel > 0 {
		oids := make([]uint32, len(dels))
		for j, c := range b.tg.keys {
			arrayHeader(dels[j], cols[c].oid, nDel, false)
			oids[j] = cols[c].array
		}
		if _, err := pc.ExecParams(ctx, b.tg.delete, dels, oids, binaryFormats(len(dels)), nil).Close(); err != nil {
			return b.tg.writeErr(nDel, fmt.Errorf("delete: %w", err))
		}
	}
	if nUp > 0 {
		oids := make([]uint32, len(cols))
		for c := range cols {
			arrayHeader(ups[c], cols[c].oid, nUp, upNull[c])
			oids[c] = cols[c].array
		}
		if _, err := pc.ExecParams(ctx, b.tg.upsert, ups, oids, binaryFormats(len(ups)), nil).Close(); err != nil {
			return b.tg.writeErr(nUp, fmt.Errorf("upsert: %w", err))
		}
	}
	return nil
}

// arrayHeader fills the 20 bytes before the elements of a one-dimensional
// binary array: dimensions, null flag, element type, length, lower bound.
func arrayHeader(dst []byte, elem uint32, n int, nulls bool) {
	binary.BigEndian.PutUint32(dst[0:], 1)
	flag := uint32(0)
	if nulls {
		flag = 1
	}
	binary.BigEndian.PutUint32(dst[4:], flag)
	binary.BigEndian.PutUint32(dst[8:], elem)
	binary.BigEndian.PutUint32(dst[12:], uint32(n))
	binary.BigEndian.PutUint32(dst[16:], 1)
}

var formats1 = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

func binaryFormats(n int) []int16 {
	if n <= len(formats1) {
		return formats1[:n]
	}
	f := make([]int16, n)
	for i := range f {
		f[i] = 1
	}
	return f
}

// writeErr describes a failed write of n rows: PostgreSQL's message with
// its detail, the column and where it happened.
func (tg *target) writeErr(n int, err error) error {
	return fmt.Errorf("writing %d rows into %s: %s", n, tg.where, describe(err))
}

// describe renders an error, with a PostgreSQL error's detail, hint,
// column and context.
func describe(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	s := err.Error()
	var extra []string
	if pe.ColumnName != "" {
		extra = append(extra, "column "+pe.ColumnName)
	}
	if pe.ConstraintName != "" {
		extra = append(extra, "constraint "+pe.ConstraintName)
	}
	if pe.Detail != "" {
		extra = append(extra, pe.Detail)
	}
	if pe.Where != "" {
		extra = append(extra, strings.ReplaceAll(pe.Where, "\n", "; "))
	}
	if pe.Hint != "" {
		extra = append(extra, "hint: "+pe.Hint)
	}
	if len(extra) > 0 {
		s += ": " + strings.Join(extra, "; ")
	}
	return s
}
