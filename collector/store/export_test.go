package store

import (
	"context"

	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// WriteSteps are the steps of an Append at which SetWriteHook's hook runs,
// in order.
var WriteSteps = []string{"lookup", "begin", "rows", "key", "node", "commit", "committed"}

// SetWriteHook makes the writer call hook before each step of every later
// write; nil removes it.
func SetWriteHook(s *DuckDB, hook func(step string) error) {
	if err := s.submit(context.Background(), func(w *writer) error {
		w.hook = hook
		return nil
	}); err != nil {
		panic(err)
	}
}

// AppendUnchecked stores b as Append does, but without ValidateBatch: the
// store a collector that validated less may have left behind.
func AppendUnchecked(s *DuckDB, b *stratav1.Batch) error {
	return s.submit(context.Background(), func(w *writer) error {
		_, err := w.append(b)
		return err
	})
}

// ExpandStored expands run as Trace does once it is stored: its PFN steps
// encoded as the runs table keeps them, then expandRun.
func ExpandStored(run *stratav1.PageRun, pageSize uint32, fn func(stratav1.Page) bool) error {
	stored := proto.Clone(run).(*stratav1.PageRun)
	stored.PfnDeltas = nil
	return expandRun(stored, encodeDeltas(run.GetPfnDeltas()), pageSize, fn)
}

// DropPhysMaps forgets the cached PFN indexes, so the next PhysMap builds
// its index again.
func DropPhysMaps(s *DuckDB) {
	s.physMaps.mu.Lock()
	s.physMaps.entries = nil
	s.physMaps.mu.Unlock()
}
