package main

import (
	"fmt"
	"io"

	"google.golang.org/grpc/metadata"

	"github.com/stratatrace/strata/collector/query"
)

// momentFlag is --at: the moment of an application's life a command
// shows (`strata trace`, `strata numa`), as query.ParseMoment reads it.
// It travels in the request (TraceRequest.at, NumaRequest.at); the
// collector says which moment it showed in the trace's response header
// (query.MomentMetadata) or the numa response.
type momentFlag struct {
	v   string
	set bool
}

// momentUsage is --at's help.
const momentUsage = "show the blocks live at moment `TIME` of the app's life: now, peak (when its RDDs held the most), " +
	"an RFC 3339 time, or +DURATION after its start (+42s); which moment is printed to stderr"

func (m *momentFlag) String() string { return m.v }

func (m *momentFlag) Set(s string) error {
	if _, err := query.ParseMoment(s); err != nil {
		return err
	}
	m.v, m.set = s, true
	return nil
}

// at is the request's at field: the moment asked for, nil when none is.
func (m *momentFlag) at() *string {
	if !m.set {
		return nil
	}
	return &m.v
}

// say prints to stderr which moment the collector showed (words), when
// one was asked for.
func (m *momentFlag) say(stderr io.Writer, cmd, words string) {
	if m.set && words != "" {
		fmt.Fprintf(stderr, "strata %s: showing %s\n", cmd, words)
	}
}

// headerWords is the moment a trace's response header says.
func headerWords(md metadata.MD) string {
	if says := md.Get(query.MomentMetadata); len(says) > 0 {
		return says[0]
	}
	return ""
}
