package history

import (
	"context"
	"testing"

	"github.com/stratatrace/strata/test/gen"
)

// ledger holds the claims of two pollers as a store would: the first
// claim on a job wins, and a claim is decided once the poll that made it
// has ended (the store's settle time, collapsed to one poll).
type ledger struct {
	owner   map[string]string
	decided map[string]bool
}

type claimer struct {
	l  *ledger
	me string
}

func (c claimer) JobClaims(context.Context) (map[string]Claim, error) {
	out := map[string]Claim{}
	for id, o := range c.l.owner {
		out[id] = Claim{Mine: o == c.me, Decided: c.l.decided[id]}
	}
	for id := range c.l.owner {
		c.l.decided[id] = true // decided from the next read on
	}
	return out, nil
}

func (c claimer) ClaimJobs(_ context.Context, ids []string) error {
	for _, id := range ids {
		if _, ok := c.l.owner[id]; !ok {
			c.l.owner[id] = c.me
		}
	}
	return nil
}

// Two pollers of one directory share a sink and a claim ledger: each job
// is claimed, waits while its claim is undecided, and is analysed by its
// winner alone; the loser counts it known once the winner stored it.
func TestPollerClaims(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		if _, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_000" + string(rune('1'+i)), Maps: 3, Seed: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	l := &ledger{owner: map[string]string{}, decided: map[string]bool{}}
	sink := &memSink{}
	a, err := New(Config{Sources: []string{dir}, Logger: quiet(), Claims: claimer{l, "a"}}, engine(t), sink)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(Config{Sources: []string{dir}, Logger: quiet(), Claims: claimer{l, "b"}}, engine(t), sink)
	poll := func(p *Poller, want Stats) {
		t.Helper()
		if got, err := p.Poll(context.Background()); err != nil || got != want {
			t.Fatalf("poll = %+v %v, want %+v", got, err, want)
		}
	}
	poll(a, Stats{Units: 3, Claimed: 3}) // a claims all three
	poll(b, Stats{Units: 3, Claimed: 3}) // a's claims are not decided for b yet
	poll(a, Stats{Units: 3, Analyzed: 3})
	poll(b, Stats{Units: 3, Known: 3})
	poll(b, Stats{Skipped: 3})
	if sink.puts != 3 {
		t.Fatalf("%d analyses stored, want one per job", sink.puts)
	}
	for id, o := range l.owner {
		if o != "a" {
			t.Errorf("%s owned by %s", id, o)
		}
	}
}
