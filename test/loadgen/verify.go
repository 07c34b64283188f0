package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Check is what Verify found in the store.
type Check struct {
	// Records per machine the store returned, and those it should hold
	// (acknowledged batches × records per batch).
	Got, Want map[string]uint64
	// Lost and Duplicated count records missing and records returned
	// more than once (same machine and time), over every machine.
	Lost, Duplicated uint64
}

// OK reports a store holding exactly what was acknowledged.
func (c Check) OK() bool { return c.Lost == 0 && c.Duplicated == 0 }

func (c Check) String() string {
	return fmt.Sprintf("%d records lost, %d duplicated", c.Lost, c.Duplicated)
}

// Verify reads every record of r's application through the query service
// of the collector at addr and compares it with what the agents were told
// is stored. Each record of a run has its own time, so a record stored
// twice shows as a repeated (machine, time). creds are the query client's
// credentials; none: plain TCP without authentication.
func Verify(ctx context.Context, addr string, r Result, creds ...grpc.DialOption) (Check, error) {
	c := Check{Got: map[string]uint64{}, Want: map[string]uint64{}}
	cc, err := grpc.NewClient(addr, credentials(creds)...)
	if err != nil {
		return c, fmt.Errorf("verify: dial %s: %w", addr, err)
	}
	defer cc.Close()
	stream, err := stratav1.NewQueryServiceClient(cc).Records(ctx, &stratav1.RecordsRequest{AppId: r.App})
	if err != nil {
		return c, fmt.Errorf("verify: records: %w", err)
	}
	type key struct {
		node string
		t    int64
	}
	seen := map[key]bool{}
	for {
		row, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c, fmt.Errorf("verify: records: %w", err)
		}
		k := key{row.GetNodeName(), row.GetTimeUnixNano()}
		if seen[k] {
			c.Duplicated++
			continue
		}
		seen[k] = true
		c.Got[k.node]++
	}
	for node, batches := range r.PerNode {
		want := batches * uint64(r.RecordsPerBatch)
		c.Want[node] = want
		if got := c.Got[node]; got < want {
			c.Lost += want - got
		}
	}
	return c, nil
}
