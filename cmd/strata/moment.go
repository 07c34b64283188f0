package main

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc/metadata"

	"github.com/stratatrace/strata/collector/query"
)

// momentFlag is --at: the moment of an application's life a command
// shows (`strata trace`, `strata numa`), as query.ParseMoment reads it.
// The requests have no field for it: it travels to the collector as the
// call's metadata (query.AtMetadata), and the collector says which moment
// it showed in the response header (query.MomentMetadata).
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

// ask returns ctx carrying the moment asked for, if one is.
func (m *momentFlag) ask(ctx context.Context) context.Context {
	if !m.set {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, query.AtMetadata, m.v)
}

// say prints to stderr which moment the collector showed, from the
// response header md, when one was asked for.
func (m *momentFlag) say(stderr io.Writer, cmd string, md metadata.MD) {
	if !m.set {
		return
	}
	if says := md.Get(query.MomentMetadata); len(says) > 0 {
		fmt.Fprintf(stderr, "strata %s: showing %s\n", cmd, says[0])
	}
}
