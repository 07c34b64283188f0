package fetcher

import (
	"bytes"
	"encoding/json"
)

// Hadoop writes job histories with Avro's JSON encoding, in which a value of
// a union type ["null","string"] is either null or {"string": "…"}. Some
// writers (Hadoop 0.23, 2.0) emit the bare value instead. The types below
// accept all three spellings.

// avroString is a string that may arrive bare, null, or wrapped as
// {"string": "…"}.
type avroString string

func (s *avroString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || b[0] == 'n':
		*s = ""
		return nil
	case b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = avroString(v)
		return nil
	case b[0] == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		for _, v := range m {
			return s.UnmarshalJSON(v)
		}
		*s = ""
		return nil
	default:
		// numbers or booleans where a string was expected: keep the text.
		*s = avroString(b)
		return nil
	}
}

// avroInts is an int array that may arrive bare, null, or wrapped as
// {"array": […]}.
type avroInts []int64

func (a *avroInts) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || b[0] == 'n':
		*a = nil
		return nil
	case b[0] == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		for _, v := range m {
			return a.UnmarshalJSON(v)
		}
		*a = nil
		return nil
	}
	var v []int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*a = v
	return nil
}

// jhCounters is Hadoop's JhCounters record: named groups of named counts.
// It may be wrapped in a union object keyed by the record's class name.
type jhCounters struct {
	Name   string           `json:"name"`
	Groups []jhCounterGroup `json:"groups"`
	// present is true once a counters record (possibly empty) was decoded.
	present bool
}

type jhCounterGroup struct {
	Name   string `json:"name"`
	Counts []struct {
		Name  string `json:"name"`
		Value int64  `json:"value"`
	} `json:"counts"`
}

func (c *jhCounters) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == 'n' {
		*c = jhCounters{}
		return nil
	}
	type plain jhCounters
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.Groups == nil && p.Name == "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		if len(m) == 1 {
			for _, v := range m {
				return c.UnmarshalJSON(v)
			}
		}
	}
	*c = jhCounters(p)
	c.present = true
	return nil
}

// flatten returns the counters by name, the first group in input order
// winning on duplicate names; nil when no counters record was present.
func (c *jhCounters) flatten() map[string]int64 {
	if c == nil || !c.present {
		return nil
	}
	n := 0
	for _, g := range c.Groups {
		n += len(g.Counts)
	}
	m := make(map[string]int64, n)
	for _, g := range c.Groups {
		for _, k := range g.Counts {
			if _, dup := m[k.Name]; !dup {
				m[k.Name] = k.Value
			}
		}
	}
	return m
}
