package heuristics

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// params is what a heuristic's parameter struct must be: a struct that
// embeds Common inline.
type params interface{ common() Common }

// def declares one heuristic, in the heuristic's own file and nowhere
// else: its YAML key, display name, place in the results, default
// parameters and how to build it from them. Parameter structs tag each
// field with its YAML key, a help text and a check: Thresholds fields say
// check:"asc" or check:"desc", sizes that must be positive
// check:"positive". The configuration, its validation, the defaults
// document (DefaultsYAML) and the engine all read the registry; nothing
// spells a heuristic's key a second time.
type def[P params] struct {
	Key  string   // YAML section, e.g. "mapper_skew"
	Name string   // display name, e.g. "Mapper Skew"; its docs/heuristics.md heading
	Type job.Type // application type it applies to; "" for a cross-layer heuristic
	// Order is the heuristic's place in a job's results: Dr. Elephant's
	// shipped order for MapReduce (101…) and Spark (201…), then the
	// cross-layer heuristics (301…).
	Order    int
	Defaults P
	// Build makes a job heuristic (Type set); BuildTrace a cross-layer one.
	Build      func(p P, c *Config) Heuristic
	BuildTrace func(p P) TraceHeuristic
}

// of returns the heuristic's parameters in c.
func (d def[P]) of(c *Config) P { return c.params[d.Key].(P) }

// entry is a registered def with its parameter type erased.
type entry struct {
	key, name  string
	typ        job.Type
	order      int
	defaults   any
	build      func(p any, c *Config) Heuristic
	buildTrace func(p any) TraceHeuristic
}

func (e entry) common(c *Config) Common { return c.params[e.key].(params).common() }

func (e entry) defaultEnabled() bool { return e.defaults.(params).common().enabled() }

// registry holds every heuristic in result order. Each heuristic file
// registers itself in init; the registry is the package's only
// package-level state and is never written after init.
var registry []entry

// register adds d to the registry and returns it, so its file can keep
// the def to read its parameters (d.of). A duplicate key, name or order,
// an application type without Build, or a parameter field without a check
// its type needs is a programming error and panics at init.
func register[P params](d def[P]) def[P] {
	if d.Key == "" || d.Name == "" || (d.Build == nil) == (d.BuildTrace == nil) || (d.Build != nil) != (d.Type != "") {
		panic(fmt.Sprintf("heuristics: %q: want a key, a name, and Build with a Type or BuildTrace without", d.Key))
	}
	t := reflect.TypeOf(d.Defaults)
	if t.Kind() != reflect.Struct {
		panic("heuristics: " + d.Key + ": parameters must be a struct")
	}
	if t != reflect.TypeOf(Common{}) {
		checkTags(d.Key, t)
	}
	for _, r := range registry {
		if r.key == d.Key || r.name == d.Name || r.order == d.Order {
			panic(fmt.Sprintf("heuristics: %s collides with %s (key, name or order %d)", d.Key, r.key, d.Order))
		}
	}
	e := entry{key: d.Key, name: d.Name, typ: d.Type, order: d.Order, defaults: d.Defaults}
	if d.Build != nil {
		e.build = func(p any, c *Config) Heuristic { return d.Build(p.(P), c) }
	}
	if d.BuildTrace != nil {
		e.buildTrace = func(p any) TraceHeuristic { return d.BuildTrace(p.(P)) }
	}
	registry = append(registry, e)
	slices.SortStableFunc(registry, func(a, b entry) int { return a.order - b.order })
	return d
}

// lookup returns the registered heuristic with YAML key key.
func lookup(key string) (entry, bool) {
	for _, e := range registry {
		if e.key == key {
			return e, true
		}
	}
	return entry{}, false
}

// anchor is the docs/heuristics.md anchor of a heading: lower case, spaces
// to hyphens, other punctuation dropped ("Shuffle & Sort" → shuffle--sort).
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}
