package testenv

import (
	"bytes"
	"sync"
)

// Output keeps what a started process writes (its stdout, stderr or log)
// for assertions and failure messages; the process's copying goroutines
// and the test may use it at once.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
