package tracer_test

import (
	"fmt"
	"log/slog"

	"github.com/stratatrace/strata/agent/tracer"
)

// The fault wiring's side (agent/faults): one Tracer per agent, blocks
// registered as the JVM hook reports them, counters read in one snapshot,
// sampled events drained.
func Example() {
	t, err := tracer.Load(tracer.Config{
		Logger: slog.Default(),
		OnExit: func(r tracer.ExitReport) { fmt.Println("exited", r.TGID, len(r.Blocks)) },
	})
	if err != nil {
		fmt.Println(err) // tracer.ErrUnsupported, or the verifier's log in the error chain
		return
	}
	defer t.Close()
	const pid, block = 4242, 7
	if err := t.Track(pid); err != nil {
		return
	}
	_ = t.RegisterBlock(pid, block, 0x7f0000000000, 0x7f0000800000)
	go func() {
		for ev := range t.Events() {
			_ = ev // ev.Kind, ev.Addr, ev.BlockID -> a FAULT record
		}
	}()
	snap, _ := t.Snapshot() // every block with its counters
	for _, b := range snap {
		fmt.Println(b.TGID, b.BlockID, b.Read, b.Write, b.Exec, b.Major)
	}
	c, _ := t.FreeBlock(pid, block) // the final counters
	fmt.Println(c.Read, c.Write)
}
