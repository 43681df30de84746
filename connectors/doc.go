package connectors

import (
	"fmt"
	"sort"
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
	if len(r.aliases) > 0 {
		b.WriteString("Flink's connector and option names are accepted as aliases: ")
		var parts []string
		for _, a := range sortedKeys(r.aliases) {
			parts = append(parts, "`"+a+"` for `"+r.aliases[a]+"`")
		}
		b.WriteString(strings.Join(parts, ", ") + "; option aliases are listed with each option.\n\n")
	}
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
			desc := o.Description
			if len(o.Aliases) > 0 {
				desc += " (Flink: " + strings.Join(quoteTicks(o.Aliases), ", ")
				var vals []string
				for _, v := range sortedKeys(o.ValueAliases) {
					vals = append(vals, "`"+v+"` = `"+o.ValueAliases[v]+"`")
				}
				if len(vals) > 0 {
					desc += "; " + strings.Join(vals, ", ")
				}
				desc += ")"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` |\n", o.Name, typ, def, desc, o.Example)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func quoteTicks(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = "`" + s + "`"
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
