package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The agent's CPU policies (Config.CPUPolicy).
const (
	// CPUBatch runs every thread of the agent under SCHED_BATCH: the same
	// fair share of CPU as before, but a thread that wakes up does not
	// preempt the thread running on its core; it waits for that thread's
	// slice to end or for an idle core. The agent wakes each time a hook
	// sends frames (every 20 ms at most while Spark works), and nothing it
	// does is urgent to a millisecond: the frames wait in the socket and
	// the fault events in the kernel's ring.
	CPUBatch = "batch"
	// CPUNormal leaves the agent's threads as they were started.
	CPUNormal = "normal"
)

// setCPUPolicy puts every thread of this process that runs under
// SCHED_NORMAL under policy (CPUBatch; CPUNormal does nothing), keeping
// its nice value; a policy the agent was started with (chrt) stays. Linux keeps
// the policy per thread and a new thread inherits its creator's, so once
// every thread has it, the threads the Go runtime starts later have it
// too; the thread list is read again until it shows no thread not yet
// set.
func setCPUPolicy(policy string) error {
	if policy != CPUBatch {
		return nil
	}
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("cpu policy: %w", err)
		}
		set := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid] = true
			set++
			if err := setThreadPolicy(tid, unix.SCHED_BATCH); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("cpu policy %s for thread %d: %w", policy, tid, err)
			}
		}
		if set == 0 {
			return nil
		}
	}
}

func setThreadPolicy(tid int, policy uint32) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if a.Policy != unix.SCHED_NORMAL {
		return nil
	}
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: policy, Nice: a.Nice}, 0)
}
