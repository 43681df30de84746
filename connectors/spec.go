// Package connectors holds the source/sink contracts shared by every
// connector: typed option specs that validate a table's WITH (...) clause
// and document themselves, and the registry the planner looks them up in.
package connectors

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// OptionType is the type of an option's value.
type OptionType uint8

const (
	String OptionType = iota
	Int
	Bool
	Enum
)

func (t OptionType) String() string {
	switch t {
	case Int:
		return "integer"
	case Bool:
		return "boolean"
	case Enum:
		return "enum"
	}
	return "string"
}

// Option declares one WITH option.
type Option struct {
	Name        string
	Type        OptionType
	Default     string // "" = no default
	Required    bool
	Values      []string // for Enum
	Description string
	Example     string
	// Secret options accept env://VAR and are never printed.
	Secret bool
	// Aliases are other keys accepted for this option, e.g. Flink's
	// 'properties.bootstrap.servers' for 'brokers'.
	Aliases []string
	// ValueAliases map other accepted values to canonical ones, e.g.
	// Flink's 'earliest-offset' to 'earliest'.
	ValueAliases map[string]string
}

// Spec is a connector's typed description.
type Spec struct {
	Name        string
	Description string
	// Guarantee states what the connector delivers under checkpoints (the
	// sink's delivery guarantee, the source's replay), for its page.
	Guarantee string
	Source    bool
	Sink      bool
	Options   []Option
}

// OptionError is a problem with one option; the planner attaches the
// option's position in the SQL text.
type OptionError struct {
	Key string
	Msg string
}

func (e *OptionError) Error() string { return e.Msg }

// Options are validated option values, defaults filled in.
type Options map[string]string

// Int returns an integer option (validated already).
func (o Options) Int(name string) int64 {
	v, _ := strconv.ParseInt(o[name], 10, 64)
	return v
}

// Bool returns a boolean option.
func (o Options) Bool(name string) bool { return strings.EqualFold(o[name], "true") }

// Secret returns option key's value, reading env://VAR from the
// environment: where the source or sink runs, never when a plan is
// checked. The value never appears in an error.
func (o Options) Secret(key string) (string, error) { return Secret(key, o[key]) }

// Secret resolves v, the value of option key, as Options.Secret does.
func Secret(key, v string) (string, error) {
	name, ok := strings.CutPrefix(v, "env://")
	if !ok {
		return v, nil
	}
	val, set := os.LookupEnv(name)
	if !set || name == "" {
		return "", &OptionError{Key: key, Msg: fmt.Sprintf("option '%s': environment variable %s is not set", key, name)}
	}
	return val, nil
}

// Has reports whether the option is set (or has a default).
func (o Options) Has(name string) bool { _, ok := o[name]; return ok }

// IsAlias reports whether key is an alias of option name.
func (s *Spec) IsAlias(key, name string) bool {
	for _, o := range s.Options {
		if o.Name == name {
			for _, a := range o.Aliases {
				if a == key {
					return true
				}
			}
		}
	}
	return false
}

// Validate checks opts against the spec: unknown keys (with a "did you
// mean" hint), types, enum values, required options. Keys compare
// case-sensitively as in Flink. It returns the options with defaults.
func (s *Spec) Validate(opts map[string]string) (Options, error) {
	byName := make(map[string]*Option, len(s.Options))
	alias := map[string]string{}
	for i := range s.Options {
		byName[s.Options[i].Name] = &s.Options[i]
		for _, a := range s.Options[i].Aliases {
			alias[a] = s.Options[i].Name
		}
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := Options{}
	for _, k := range keys {
		v := opts[k]
		if canon, ok := alias[k]; ok {
			if _, dup := opts[canon]; dup {
				return nil, &OptionError{Key: k, Msg: fmt.Sprintf("options '%s' and '%s' say the same thing; give one", k, canon)}
			}
			o := byName[canon]
			if mapped, ok := o.ValueAliases[v]; ok {
				v = mapped
			}
			if err := o.check(v); err != nil {
				return nil, &OptionError{Key: k, Msg: fmt.Sprintf("option '%s' (%s): %v", k, canon, err)}
			}
			out[canon] = v
			continue
		}
		o, ok := byName[k]
		if !ok {
			msg := fmt.Sprintf("connector '%s' has no option '%s'", s.Name, k)
			if hint := s.closest(k); hint != "" {
				msg += fmt.Sprintf(" (did you mean '%s'?)", hint)
			}
			return nil, &OptionError{Key: k, Msg: msg}
		}
		if mapped, ok := o.ValueAliases[v]; ok {
			v = mapped
		}
		if err := o.check(v); err != nil {
			return nil, &OptionError{Key: k, Msg: fmt.Sprintf("option '%s': %v", k, err)}
		}
		out[k] = v
	}
	for _, o := range s.Options {
		if _, ok := out[o.Name]; ok {
			continue
		}
		if o.Required {
			msg := fmt.Sprintf("connector '%s' needs option '%s'", s.Name, o.Name)
			if o.Example != "" {
				msg += fmt.Sprintf(", e.g. '%s' = '%s'", o.Name, o.Example)
			}
			return nil, &OptionError{Msg: msg}
		}
		if o.Default != "" {
			out[o.Name] = o.Default
		}
	}
	return out, nil
}

func (o *Option) check(v string) error {
	switch o.Type {
	case Int:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return fmt.Errorf("'%s' is not an integer", v)
		}
	case Bool:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return fmt.Errorf("'%s' is not true or false", v)
		}
	case Enum:
		for _, e := range o.Values {
			if e == v {
				return nil
			}
		}
		return fmt.Errorf("'%s' is not one of %s", v, strings.Join(quoteAll(o.Values), ", "))
	}
	return nil
}

func quoteAll(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = "'" + s + "'"
	}
	return out
}

func (s *Spec) closest(k string) string {
	best, bestD := "", 4
	for _, o := range s.Options {
		d := Distance(strings.ToLower(k), strings.ToLower(o.Name))
		if d < bestD || (d == bestD && best != "" && o.Name < best) {
			best, bestD = o.Name, d
		}
	}
	if bestD > len(k)/2+1 {
		return ""
	}
	return best
}

// Distance is the Levenshtein edit distance, for "did you mean" hints.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
