package store

import "context"

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
