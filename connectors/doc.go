package connectors

import (
	"fmt"
	"strings"
)

// Markdown renders the reference page of the given connectors: one section
// per connector with its options table. docs/connectors.md is generated
// from it (`make generate`), and a test keeps the page current.
func Markdown(r *Registry) string {
	var b strings.Builder
	b.WriteString("# Connectors\n\n")
	b.WriteString("<!-- Generated from the connectors' option specs by `make generate`; do not edit. -->\n\n")
	b.WriteString("A table names its connector in `WITH ('connector' = '...')`. Options are\n")
	b.WriteString("checked against the connector's spec when the table is created: an unknown\n")
	b.WriteString("option is an error with a \"did you mean\" hint, and values are type-checked.\n\n")
	for _, name := range r.Names() {
		f, _ := r.Lookup(name)
		s := f.Spec()
		roles := []string{}
		if s.Source {
			roles = append(roles, "source")
		}
		if s.Sink {
			roles = append(roles, "sink")
		}
		fmt.Fprintf(&b, "## `%s` (%s)\n\n%s\n\n", s.Name, strings.Join(roles, ", "), s.Description)
		b.WriteString("| option | type | default | description | example |\n|---|---|---|---|---|\n")
		for _, o := range s.Options {
			typ := o.Type.String()
			if o.Type == Enum {
				typ = strings.Join(quoteAll(o.Values), " \\| ")
			}
			def := o.Default
			if o.Required {
				def = "required"
			}
			if def == "" {
				def = "—"
			} else if !o.Required {
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` |\n", o.Name, typ, def, o.Description, o.Example)
		}
		b.WriteString("\n")
	}
	return b.String()
}
