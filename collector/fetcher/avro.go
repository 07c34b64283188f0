package fetcher

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/stratatrace/strata/collector/job"
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
	case b[0] == '"' && len(b) >= 2 && bytes.IndexByte(b, '\\') < 0:
		*s = avroString(b[1 : len(b)-1]) // no escapes: the bytes are the string
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
		*s = ""
		if len(m) == 1 { // a union has exactly one branch
			for _, v := range m {
				return s.UnmarshalJSON(v)
			}
		}
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
		*a = nil
		if len(m) == 1 {
			for _, v := range m {
				return a.UnmarshalJSON(v)
			}
		}
		return nil
	}
	if v, ok := parseIntArray(b); ok {
		*a = v
		return nil
	}
	var v []int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*a = v
	return nil
}

// parseIntArray parses a JSON array of plain integers ("[1, -2,3]")
// without reflection; ok is false for anything else.
func parseIntArray(b []byte) ([]int64, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	out := make([]int64, 0, 12)
	body := b[1 : len(b)-1]
	if len(bytes.TrimSpace(body)) == 0 {
		return out, true
	}
	for len(body) > 0 {
		i := bytes.IndexByte(body, ',')
		tok := body
		if i >= 0 {
			tok, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(tok)), 10, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// jhCounters is Hadoop's JhCounters record: named groups of named counts.
// Strict Avro-JSON writers wrap a nullable record as {"<record class>":
// {…}}; the Wrapped field catches that spelling, so decoding needs no custom
// unmarshaller (which would scan the largest part of every line twice more).
type jhCounters struct {
	Name    string           `json:"name"`
	Groups  []jhCounterGroup `json:"groups"`
	Wrapped *jhCounters      `json:"org.apache.hadoop.mapreduce.jobhistory.JhCounters"`

	// flat is filled by the hand-written decoder, which flattens while it
	// scans instead of keeping Counts.
	flat job.Counters
}

type jhCounterGroup struct {
	Name   string    `json:"name"`
	Counts []jhCount `json:"counts"`
}

type jhCount struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// flatten returns the counters by name, the first group in input order
// winning on duplicate names; nil when no counters record was present.
func (c *jhCounters) flatten() job.Counters {
	if c != nil && c.Wrapped != nil {
		return c.Wrapped.flatten()
	}
	if c == nil || (c.Groups == nil && c.Name == "") {
		return nil
	}
	if c.flat != nil {
		return c.flat
	}
	n := 0
	for _, g := range c.Groups {
		n += len(g.Counts)
	}
	m := make(job.Counters, n)
	for _, g := range c.Groups {
		for _, k := range g.Counts {
			if _, dup := m[k.Name]; !dup {
				m[k.Name] = k.Value
			}
		}
	}
	return m
}
