package fetcher

import (
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"
)

// Parallel decoding of job histories. Decoding a line is independent of
// every other line; applying it to the job is not. One goroutine reads lines
// into batches, GOMAXPROCS goroutines decode batches, and the caller applies
// them in file order. At most a few batches, and at most inflightBytes of
// lines, are in flight, so memory stays bounded whatever the file size and
// however long its lines.

const (
	batchLines = 1024
	batchBytes = 1 << 20
	// inflightBytes bounds the line bytes read but not yet applied. It
	// exceeds one line's bound by more than a batch, so the reader, whose
	// unsent batch holds under batchBytes, can always take the next line.
	inflightBytes = maxLineBytes + 64<<20
)

// credit counts the line bytes the reader may still read ahead.
type credit struct {
	mu   sync.Mutex
	cond sync.Cond
	left int
	quit bool
}

func newCredit(n int) *credit {
	c := &credit{left: n}
	c.cond.L = &c.mu
	return c
}

// take waits for n bytes of credit; false means the pipeline is stopping.
func (c *credit) take(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.left < n && !c.quit {
		c.cond.Wait()
	}
	c.left -= n
	return !c.quit
}

func (c *credit) give(n int) {
	c.mu.Lock()
	c.left += n
	c.mu.Unlock()
	c.cond.Broadcast()
}

func (c *credit) stop() {
	c.mu.Lock()
	c.quit = true
	c.mu.Unlock()
	c.cond.Broadcast()
}

type jhBatch struct {
	buf   []byte
	ends  []int // end offset of each line in buf
	nums  []int // line number of each line
	final bool  // the batch's last line ended the stream without a newline
	err   error // read error after the batch's lines
	evs   []jhLine
	errs  []error
	done  chan struct{}
}

func (bt *jhBatch) line(i int) []byte {
	start := 0
	if i > 0 {
		start = bt.ends[i-1]
	}
	return bt.buf[start:bt.ends[i]]
}

// parallelJhist decodes the rest of lr's lines in parallel and applies them
// to b in order, with the same truncation and malformed-line rules as the
// sequential loop.
func parallelJhist(lr *lineReader, b *jhBuilder) {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *jhBatch, 2*workers)
	ordered := make(chan *jhBatch, 4*workers)
	quit := make(chan struct{})
	readerDone := make(chan struct{})
	room := newCredit(inflightBytes)
	// Applied batches come back for reuse: their buffers are the bulk of
	// what the pipeline would otherwise allocate.
	free := make(chan *jhBatch, 8*workers)
	newBatch := func() *jhBatch {
		select {
		case bt := <-free:
			bt.buf, bt.ends, bt.nums = bt.buf[:0], bt.ends[:0], bt.nums[:0]
			bt.final, bt.err = false, nil
			bt.done = make(chan struct{})
			return bt
		default:
			return &jhBatch{buf: make([]byte, 0, batchBytes+batchBytes/4), done: make(chan struct{})}
		}
	}

	go func() { // reader
		defer close(readerDone)
		defer close(ordered)
		defer close(work)
		send := func(bt *jhBatch) bool {
			select {
			case work <- bt:
			case <-quit:
				return false
			}
			select {
			case ordered <- bt:
				return true
			case <-quit:
				return false
			}
		}
		bt := newBatch()
		for {
			line, err := lr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					bt.err = err
				}
				send(bt)
				return
			}
			if isBlank(line) {
				continue
			}
			if !room.take(len(line)) {
				return
			}
			bt.buf = append(bt.buf, line...)
			bt.ends = append(bt.ends, len(bt.buf))
			bt.nums = append(bt.nums, lr.n)
			bt.final = lr.last
			if len(bt.ends) >= batchLines || len(bt.buf) >= batchBytes {
				if !send(bt) {
					return
				}
				bt = newBatch()
			}
		}
	}()
	for range workers {
		go func() {
			d := newJhDecoder()
			for bt := range work {
				bt.evs = slices.Grow(bt.evs[:0], len(bt.ends))[:len(bt.ends)]
				bt.errs = slices.Grow(bt.errs[:0], len(bt.ends))[:len(bt.ends)]
				for i := range bt.ends {
					bt.evs[i], bt.errs[i] = decodeJhLine(bt.line(i), d, true)
				}
				close(bt.done)
			}
		}()
	}

	var bad badLines
	defer func() {
		close(quit)
		room.stop()
		<-readerDone      // the reader no longer touches the input when we return
		bad.merge(lr.bad) // lines the reader skipped as too long
		if msg := bad.String(); msg != "" {
			b.warnf("job history: %s", msg)
		}
	}()
	for bt := range ordered {
		<-bt.done
		for i := range bt.evs {
			if err := bt.errs[i]; err != nil {
				if bt.final && i == len(bt.evs)-1 {
					b.warnf("job history truncated at line %d: %v", bt.nums[i], err)
					return
				}
				bad.note(bt.nums[i], err)
				continue
			}
			if !b.applyLine(&bt.evs[i]) {
				return // over the memory budget: finish reports it
			}
			bt.evs[i] = jhLine{}
		}
		clear(bt.errs)
		room.give(len(bt.buf))
		if cap(bt.buf) <= 2*batchBytes { // keep no buffer a giant line grew
			select {
			case free <- bt:
			default:
			}
		}
		if bt.err != nil {
			last := 0
			if n := len(bt.nums); n > 0 {
				last = bt.nums[n-1]
			}
			b.warnf("job history unreadable after line %d: %v", last, bt.err)
			return
		}
	}
}
