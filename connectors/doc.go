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
	b.WriteString(conformanceDoc)
	return b.String()
}

// conformanceDoc closes the reference page: the contract every connector
// is tested against.
const conformanceDoc = `## The conformance suite

Every exactly-once sink and every checkpointed source runs one contract
test, package ` + "`connectors/conformance`" + `. It drives the ` + "`clink`" + ` binary
as a user would (` + "`clink run --checkpoint-dir`" + `, killed and started
again) and reads back what the target system committed with that system's
own client; an independent recomputation decides whether it is right (for
the sensor workload, ` + "`examples/sensors/verify`" + `, which recomputes every
window from the workload's definition; ` + "`-partial`" + ` checks what a job
committed so far).

- ` + "`conformance.RunSinks(t, env, sinks...)`" + `: the workload streams into the dev
  broker (` + "`clink kafka serve`" + `, its own process) while the job writing the
  query's output into the sinks is killed at each two-phase point of a
  checkpoint — before the pre-commit, after it (staged, checkpoint not
  complete), after the manifest (checkpoint complete, not committed
  outside) and after the external commit — deterministically, by the
  ledger's test hook ` + "`CLINK_TEST_KILL_AT=<point>:<n>`" + ` ([checkpoints.md](checkpoints.md#sigkill-test-hook)),
  once at a random moment after a checkpoint, and restored at the same
  parallelism, at 1 → 3 and 3 → 1. After each kill the committed output
  holds nothing wrong and nothing twice; after the last run, every row
  exactly once.
- ` + "`conformance.RunSource(t, env, source)`" + `: the source's table read into the
  exactly-once file sink, stopped at a checkpoint, restored at the same
  parallelism, rescaled 3 → 1 and 1 → 3; the output is checked by the
  adapter's recomputation or against an uninterrupted run's.

A connector's test calls it with a small adapter: the table's ` + "`WITH`" + `
options against its test server, and how to read back what is committed
(` + "`conformance.Sink`" + `: ` + "`With`" + `, ` + "`Env`" + `, ` + "`Committed`" + `, ` + "`After`" + ` for the system's own
invariants; ` + "`conformance.Source`" + `: ` + "`Columns`" + `, ` + "`With`" + `, ` + "`Query`" + `, ` + "`Bounded`" + `,
` + "`Check`" + `). The runs are in ` + "`cmd/clink/conformance_test.go`" + ` (one binary):

| connector | runs |
|---|---|
| ` + "`file`" + ` sink | RunSinks (part files read from disk) |
| ` + "`kafka`" + ` sink (exactly_once) | RunSinks (a ` + "`read_committed`" + ` consumer) |
| ` + "`postgres`" + ` sink (exactly_once) | RunSinks (psql; no window twice) |
| ` + "`file`" + ` Parquet sink on S3, GCS, Azure | RunSinks, one job for MinIO, fake-gcs-server and Azurite (each store's client lists and reads every object) |
| ` + "`iceberg`" + ` sink | RunSinks (iceberg-go scan; one snapshot per checkpoint and subtask) |
| ` + "`file`" + ` source | RunSource (the sensor workload in four files) |
| ` + "`kafka`" + ` source | RunSource (the sensor workload streamed) |
| ` + "`nexmark`" + ` source | RunSource (windowed bids against an uninterrupted run) |
`

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
