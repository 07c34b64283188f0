package cpupolicy

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Set puts every SCHED_NORMAL thread of this process under SCHED_BATCH
// when batch is true, and raises every SCHED_NORMAL or SCHED_BATCH thread's
// nice value to nice where it is lower. The thread list is read again until
// it shows no thread not yet set.
func Set(batch bool, nice int) error {
	if nice < -20 || nice > 19 {
		return fmt.Errorf("cpu policy: nice %d, want -20 to 19", nice)
	}
	policy := uint32(unix.SCHED_NORMAL)
	if batch {
		policy = unix.SCHED_BATCH
	}
	done := map[int]bool{}
	for {
		tids, err := threads()
		if err != nil {
			return fmt.Errorf("cpu policy: %w", err)
		}
		set := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			done[tid] = true
			set++
			if err := setThread(tid, policy, int32(nice)); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("cpu policy of thread %d: %w", tid, err)
			}
		}
		if set == 0 {
			return nil
		}
	}
}

// threads lists the ids of this process's threads (/proc/self/task).
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
