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
		b.WriteString("## ")
		writeSpec(&b, f.Spec(), "###")
		fmt.Fprintf(&b, "Page of its own: [connectors/%s.md](connectors/%s.md).\n\n", name, name)
	}
	return b.String()
}

// Pages renders one page per connector (docs/connectors/<name>.md): its
// description, its delivery guarantee and its options; more links a page
// that says more (relative to docs/connectors/), when there is one.
func Pages(r *Registry, more map[string]string) map[string]string {
	out := map[string]string{}
	for _, name := range r.Names() {
		f, _ := r.Lookup(name)
		var b strings.Builder
		b.WriteString("# ")
		writeSpec(&b, f.Spec(), "##")
		b.WriteString("<!-- Generated from the connector's option spec by `make generate`; do not edit. -->\n\n")
		if m, ok := more[name]; ok {
			fmt.Fprintf(&b, "More: [%s](%s). All connectors: [connectors.md](../connectors.md).\n", strings.TrimPrefix(m, "../"), m)
		} else {
			b.WriteString("All connectors: [connectors.md](../connectors.md).\n")
		}
		out[name] = b.String()
	}
	return out
}

// writeSpec writes a connector's title line (after the caller's heading
// marks), description, guarantee and options table.
func writeSpec(b *strings.Builder, s *Spec, sub string) {
	roles := []string{}
	if s.Source {
		roles = append(roles, "source")
	}
	if s.Sink {
		roles = append(roles, "sink")
	}
	fmt.Fprintf(b, "`%s` (%s)\n\n%s\n\n", s.Name, strings.Join(roles, ", "), s.Description)
	guarantee := s.Guarantee
	if guarantee == "" {
		guarantee = "not stated"
	}
	fmt.Fprintf(b, "%s Delivery guarantee\n\n%s\n\n%s Options\n\n", sub, guarantee, sub)
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
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | `%s` |\n", o.Name, typ, def, desc, o.Example)
	}
	b.WriteString("\n")
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
