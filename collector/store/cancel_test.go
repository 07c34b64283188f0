package store_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// otherNode is storetest.Sample(seq) from a second machine.
func otherNode(seq uint64) *stratav1.Batch {
	b := storetest.Sample(seq)
	b.NodeName = "node-b"
	return b
}

// TestAppendCancelledWhileStoring is the wedge of issue 8 as a Push stream
// meets it: Appends whose context ends at a random moment while the batch
// is being stored, each followed by another machine's batch. Every batch
// of the other machine must be stored, and each cancelled one must be
// stored exactly once or not at all — its replay says which. Before the
// fix, a COMMIT interrupted by the cancelled context went through but
// reported the context's error, the batch-id counter was not advanced, and
// every later batch failed with a duplicate batch_id.
func TestAppendCancelledWhileStoring(t *testing.T) {
	s := storetest.Open(t)
	const rounds = 300
	stored := 0
	for i := range uint64(rounds) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(3000))*time.Microsecond)
		_, cerr := s.Append(ctx, storetest.Sample(i+1))
		cancel()
		if _, err := s.Append(context.Background(), otherNode(i+1)); err != nil {
			t.Fatalf("round %d: after an append that ended with %v, another node's batch: %v", i, cerr, err)
		}
		res, err := s.Append(context.Background(), storetest.Sample(i+1))
		if err != nil {
			t.Fatalf("round %d: replay: %v", i, err)
		}
		if cerr == nil && !res.Duplicate {
			t.Fatalf("round %d: acknowledged batch not found on replay", i)
		}
		stored++
	}
	// Each seq of each node is stored once: 2 × rounds batches.
	if n := len(storetest.Trace(t, s, answer.TraceQuery{AppID: storetest.App})); n != 2*rounds*storetest.SamplePages {
		t.Fatalf("%d pages stored, want %d (every batch once)", n, 2*rounds*storetest.SamplePages)
	}
	t.Logf("%d rounds, each node's batches all stored once", stored)
}

// TestAppendCancelledAtEachStep cancels the caller's context just before
// each step of a write, deterministically. The caller stops waiting, but
// the write, once handed to the writer, completes on its own: the batch is
// stored once (its replay is a duplicate), the next batch of any node is
// stored, and the store reports the write as a success.
func TestAppendCancelledAtEachStep(t *testing.T) {
	var (
		mu       sync.Mutex
		outcomes []error
	)
	s, err := store.Open(context.Background(), store.Options{Dir: t.TempDir(), MemoryLimit: "256MB",
		OnWrite: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			outcomes = append(outcomes, err)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, step := range store.WriteSteps {
		seq := uint64(i + 1)
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		store.SetWriteHook(s, func(at string) error {
			if at == step {
				cancel()
				// The write waits here until Append has returned, so the
				// caller sees ctx end mid-write however slowly it runs; a
				// caller that waits for the write instead gets its outcome
				// once this bound lets the write go on, and fails below.
				select {
				case <-returned:
				case <-time.After(30 * time.Second):
				}
			}
			return nil
		})
		_, err := s.Append(ctx, storetest.Sample(seq))
		close(returned)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("step %s: append = %v, want the caller told context.Canceled", step, err)
		}
		store.SetWriteHook(s, nil) // waits for the cancelled write to finish
		if res := storetest.MustAppend(t, s, otherNode(seq)); res.Duplicate {
			t.Fatalf("step %s: other node's batch reported duplicate", step)
		}
		if res := storetest.MustAppend(t, s, storetest.Sample(seq)); !res.Duplicate {
			t.Fatalf("step %s: the cancelled batch was not stored; replay = %+v", step, res)
		}
	}
	n := len(store.WriteSteps)
	if got := len(storetest.Trace(t, s, answer.TraceQuery{AppID: storetest.App})); got != 2*n*storetest.SamplePages {
		t.Fatalf("%d pages, want %d", got, 2*n*storetest.SamplePages)
	}
	mu.Lock()
	told := outcomes
	mu.Unlock()
	if len(told) != 3*n {
		t.Fatalf("OnWrite told %d outcomes, want %d", len(told), 3*n)
	}
	for i, err := range told {
		if err != nil {
			t.Fatalf("outcome %d = %v, want nil (every write committed)", i, err)
		}
	}

	// A context that ended before the write was handed over writes nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Append(ctx, storetest.Sample(100)); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with an ended context = %v", err)
	}
	if res := storetest.MustAppend(t, s, storetest.Sample(100)); res.Duplicate {
		t.Fatal("a batch whose caller had gone before it was handed over was stored")
	}
}

// TestAppendFailsAtEachStep makes the database fail each step of a write
// in turn — "committed" is a COMMIT that went through but reported an
// error, the wedge of issue 8. Each time the store reports the failure,
// and the writer goes on: the failed batch is stored only when its COMMIT
// went through, and the next batch takes a fresh batch_id read from the
// table.
func TestAppendFailsAtEachStep(t *testing.T) {
	var (
		mu   sync.Mutex
		last error
	)
	s, err := store.Open(context.Background(), store.Options{Dir: t.TempDir(), MemoryLimit: "256MB",
		OnWrite: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			last = err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wantPages := 0
	for i, step := range store.WriteSteps {
		seq := uint64(i + 1)
		injected := storetest.AppendFailing(t, s, storetest.Sample(seq), step, func(h func(string) error) { store.SetWriteHook(s, h) })
		mu.Lock()
		if !errors.Is(last, injected) {
			t.Fatalf("step %s: OnWrite told %v, want the failure", step, last)
		}
		mu.Unlock()
		storetest.MustAppend(t, s, otherNode(seq))
		mu.Lock()
		if last != nil {
			t.Fatalf("step %s: OnWrite told %v after a stored batch, want nil", step, last)
		}
		mu.Unlock()
		res := storetest.MustAppend(t, s, storetest.Sample(seq))
		if committed := step == "committed"; res.Duplicate != committed {
			t.Fatalf("step %s: replay duplicate = %v, want %v", step, res.Duplicate, committed)
		}
		wantPages += 2 * storetest.SamplePages
	}
	if got := len(storetest.Trace(t, s, answer.TraceQuery{AppID: storetest.App})); got != wantPages {
		t.Fatalf("%d pages, want %d", got, wantPages)
	}
}
