package stateio

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/clink-dev/clink/checkpoint"
)

// CatOptions configure Cat.
type CatOptions struct {
	Selection
	// JSON prints one JSON object per row and nothing else, instead of the
	// manifest summary and a table.
	JSON bool
	// Limit stops after this many rows; 0 prints all.
	Limit int
}

// errLimit ends the row loop when the limit is reached.
var errLimit = fmt.Errorf("limit reached")

// Cat prints a checkpoint: the manifest summary (id, job, creation time,
// max parallelism, parts with their rows and bytes) and then one line per
// state row: operator, subtask, slot, key group, the key as written (a
// JSON array) or <raw>, the window as [start,end) and the row's non-null
// value columns as name=value. With opts.JSON every row is a JSON object
// with the columns slot, key_group, key, window_start, window_end,
// operator, subtask and the non-null value columns, one per line.
func Cat(w io.Writer, c *checkpoint.Checkpoint, opts CatOptions) error {
	parts, err := opts.Parts(c)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	if !opts.JSON {
		summary(bw, c, parts)
	}
	n := 0
	var line []byte
	err = Each(c, opts.Selection, func(p *checkpoint.Part) error {
		// Table rows align within a part; parts are read one at a time.
		var tw *tabwriter.Writer
		if !opts.JSON {
			tw = tabwriter.NewWriter(bw, 0, 8, 2, ' ', 0)
			defer tw.Flush()
			io.WriteString(bw, "\n")
			io.WriteString(tw, rowHeader)
		}
		vals := valueCols(p)
		for _, rec := range p.Records {
			err := eachRow(rec, opts.Slot, func(r row) error {
				if opts.Limit > 0 && n >= opts.Limit {
					return errLimit
				}
				n++
				if opts.JSON {
					line = jsonRow(line[:0], p, r, vals)
					_, err := bw.Write(line)
					return err
				}
				line = tableRow(line[:0], p, r, vals)
				_, err := tw.Write(line)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == errLimit {
		if !opts.JSON {
			fmt.Fprintf(bw, "\n(stopped after %d rows: --limit)\n", opts.Limit)
		}
		err = nil
	} else if err == nil && !opts.JSON {
		fmt.Fprintf(bw, "\n(%d rows)\n", n)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func summary(w io.Writer, c *checkpoint.Checkpoint, parts []checkpoint.PartInfo) {
	m := c.Manifest
	fmt.Fprintf(w, "checkpoint %d  %s\n", c.ID, c.Path)
	fmt.Fprintf(w, "job %q  created %s  max_parallelism %d\n", m.Job, m.Created.UTC().Format(time.RFC3339Nano), m.MaxParallelism)
	if m.Fingerprint != "" {
		fmt.Fprintf(w, "fingerprint %s\n", m.Fingerprint)
	}
	if len(m.Properties) > 0 {
		keys := make([]string, 0, len(m.Properties))
		for k := range m.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "property %s = %s\n", k, m.Properties[k])
		}
	}
	var rows, bytes int64
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "part\trows\tbytes\n")
	for _, p := range parts {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", p.File, p.Rows, p.Bytes)
		rows += p.Rows
		bytes += p.Bytes
	}
	fmt.Fprintf(tw, "%d parts\t%d\t%d\n", len(parts), rows, bytes)
	tw.Flush()
}

// tableRow renders one row for Cat's table, tab-separated.
func tableRow(dst []byte, p *checkpoint.Part, r row, vals []int) []byte {
	dst = append(dst, p.Operator...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(p.Subtask), 10)
	dst = append(dst, '\t')
	dst = append(dst, r.slot()...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.keyGroup()), 10)
	dst = append(dst, '\t')
	if k, ok := r.key(); ok {
		dst = append(dst, k...)
	} else {
		dst = append(dst, "<raw>"...)
	}
	dst = append(dst, '\t')
	if s, e, ok := r.window(); ok {
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, s, 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, e, 10)
		dst = append(dst, ')')
	} else {
		dst = append(dst, '-')
	}
	dst = append(dst, '\t')
	first := true
	for _, c := range vals {
		col := r.rec.Column(c)
		if col.IsNull(r.i) {
			continue
		}
		if !first {
			dst = append(dst, ' ')
		}
		first = false
		dst = append(dst, p.Schema.Field(c).Name...)
		dst = append(dst, '=')
		dst = appendValue(dst, col, r.i)
	}
	return append(dst, '\n')
}

// jsonRow renders one row as a JSON object on its own line.
func jsonRow(dst []byte, p *checkpoint.Part, r row, vals []int) []byte {
	dst = append(dst, `{"slot":`...)
	dst = appendString(dst, r.slot())
	dst = append(dst, `,"key_group":`...)
	dst = strconv.AppendInt(dst, int64(r.keyGroup()), 10)
	dst = append(dst, `,"key":`...)
	if k, ok := r.key(); ok {
		dst = appendString(dst, k)
	} else {
		dst = append(dst, "null"...)
	}
	if s, e, ok := r.window(); ok {
		dst = append(dst, `,"window_start":`...)
		dst = strconv.AppendInt(dst, s, 10)
		dst = append(dst, `,"window_end":`...)
		dst = strconv.AppendInt(dst, e, 10)
	} else {
		dst = append(dst, `,"window_start":null,"window_end":null`...)
	}
	dst = append(dst, `,"operator":`...)
	dst = appendString(dst, p.Operator)
	dst = append(dst, `,"subtask":`...)
	dst = strconv.AppendInt(dst, int64(p.Subtask), 10)
	for _, c := range vals {
		col := r.rec.Column(c)
		if col.IsNull(r.i) {
			continue
		}
		dst = append(dst, ',')
		dst = appendString(dst, p.Schema.Field(c).Name)
		dst = append(dst, ':')
		dst = appendValue(dst, col, r.i)
	}
	return append(dst, '}', '\n')
}

// rowHeader heads the table of each part's rows.
const rowHeader = "operator\tsubtask\tslot\tkey_group\tkey\twindow\tvalues\n"
