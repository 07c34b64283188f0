package spool_test

import (
	"fmt"
	"os"

	"github.com/stratatrace/strata/agent/spool"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The two ends of the spool: the annotator appends, the streamer reads
// what follows the last ack and acknowledges what the collector stored.
// Acks live in memory: after a restart every batch of a segment not yet
// deleted is pending again, and the collector acks a resent one as a
// duplicate.
func Example() {
	dir, err := os.MkdirTemp("", "spool")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	sp, err := spool.Open(dir, spool.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, node := range []string{"a", "b"} {
		if err := sp.Append(&stratav1.Batch{NodeName: node}); err != nil {
			fmt.Println(err) // the volume or MaxBytes is full: the batch is not durable
		}
	}
	first, _ := sp.Next(0)
	fmt.Println("sent", first.GetNodeName())
	_ = sp.Ack(first.GetSeq()) // the collector stored it
	sp.Close()

	sp, _ = spool.Open(dir, spool.Options{}) // after a restart
	defer sp.Close()
	next, _ := sp.Next(sp.Acked())
	fmt.Println("pending", sp.Stats().Pending, "resend", next.GetNodeName())
	// Output:
	// sent a
	// pending 2 resend a
}
