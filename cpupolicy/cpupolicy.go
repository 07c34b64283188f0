package cpupolicy

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Set puts every SCHED_NORMAL thread of this process under SCHED_BATCH
// when batch is true, and raises every SCHED_NORMAL or SCHED_BATCH thread's
// nice value to nice where it is lower.
//
// Set reads the thread list, setting each thread it has not yet seen,
// until quietReads readings in a row, settle apart, each list the same
// threads as the one before (so all of them set). One reading is not
// enough: a thread being cloned while Set runs copied its creator's old
// policy and is listed only once the clone completes, and a reading taken
// while other threads exit can miss a live one. After maxReads readings
// Set returns with the threads it has set.
func Set(batch bool, nice int) error {
	if nice < -20 || nice > 19 {
		return fmt.Errorf("cpu policy: nice %d, want -20 to 19", nice)
	}
	policy := uint32(unix.SCHED_NORMAL)
	if batch {
		policy = unix.SCHED_BATCH
	}
	done := map[int]bool{}
	var last []int
	for quiet, reads := 0, 0; quiet < quietReads && reads < maxReads; reads++ {
		tids, err := threads()
		if err != nil {
			return fmt.Errorf("cpu policy: %w", err)
		}
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			done[tid] = true
			if err := setThread(tid, policy, int32(nice)); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("cpu policy of thread %d: %w", tid, err)
			}
		}
		if slices.Equal(tids, last) { // so none was new: all set
			quiet++
			time.Sleep(settle)
		} else {
			quiet = 0
		}
		last = tids
	}
	return nil
}

const (
	quietReads = 3                // readings in a row that must agree
	settle     = time.Millisecond // between them
	maxReads   = 1000             // a process whose threads never settle
)

// threads lists the ids of this process's threads (/proc/self/task), in
// ascending order.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}

func setThread(tid int, policy uint32, nice int32) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil // started under another policy (chrt): kept
	}
	p, n := a.Policy, max(a.Nice, nice)
	if p == unix.SCHED_NORMAL {
		p = policy
	}
	if p == a.Policy && n == a.Nice {
		return nil
	}
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: p, Nice: n}, 0)
}
