package txn

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/checkpoint"
)

// Lineage is where one subtask's transaction ids continue after a
// checkpoint. Sinks whose system names its transactions (Kafka
// transactional ids, PostgreSQL global ids) record it beside the staged
// transactions, so that a restore knows which ids a crashed run may have
// used after the cut and rolls those back.
type Lineage struct {
	Subtask int
	Prefix  string
	Next    int64
}

// Lineages is the codec of a sink's state slot "next": one Lineage row
// per subtask. Its Slots, Append and Read serve a sink's Extra.
type Lineages struct {
	rows Rows[Lineage]
}

// NewLineages names the prefix column as the sink's state format has it.
func NewLineages(prefixColumn string) *Lineages {
	return &Lineages{rows: Rows[Lineage]{Columns: []Column[Lineage]{
		Int("subtask", func(l *Lineage) *int { return &l.Subtask }),
		String(prefixColumn, func(l *Lineage) *string { return &l.Prefix }),
		Int64("next_seq", func(l *Lineage) *int64 { return &l.Next }),
	}}}
}

// Slots is the slot of the rows.
func (ls *Lineages) Slots() []checkpoint.Slot { return []checkpoint.Slot{ls.rows.Slot("next")} }

// Append writes this subtask's row.
func (ls *Lineages) Append(b *checkpoint.RowBuilder, l Lineage) {
	b.Raw("next")
	ls.rows.Append(b, &l)
}

// Read appends a restored row of slot "next" to lines (rows of other
// slots are left alone).
func (ls *Lineages) Read(lines []Lineage, p *checkpoint.Part, slot string, rec arrow.RecordBatch, i int) ([]Lineage, error) {
	if slot != "next" {
		return lines, nil
	}
	l, _, err := ls.rows.Read(p, rec, i)
	if err != nil {
		return lines, fmt.Errorf("%s: next row: %w", p.Path, err)
	}
	return append(lines, *l), nil
}
