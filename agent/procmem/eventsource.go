package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// EventSource is one perf event source (PMU) of
// /sys/bus/event_source/devices: software, tracepoint, cpu, cpu_core,
// ibs_op, ... Type is the perf_event_attr.type of its events.
type EventSource struct {
	Name string
	Type uint32
}

// EventSources lists /sys/bus/event_source/devices/*/type, sorted by name.
// A sysfs without that directory gives none and no error: the caller then
// knows of no PMU, which is what a VM without one shows anyway.
func (f FS) EventSources() ([]EventSource, error) {
	dir := filepath.Join(f.Sys, "bus", "event_source", "devices")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list event sources: %w", err)
	}
	var out []EventSource
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "type"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read event source %s: %w", e.Name(), err)
		}
		typ, err := parseEventType(b)
		if err != nil {
			return nil, fmt.Errorf("read event source %s: %w", e.Name(), err)
		}
		out = append(out, EventSource{Name: e.Name(), Type: typ})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// parseEventType parses an event source's type file: a decimal number.
func parseEventType(b []byte) (uint32, error) {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parse event type: %w", err)
	}
	return uint32(n), nil
}
