package loadgen

import (
	"os"
	"strconv"
	"strings"
)

// RSSKiB returns the resident set of process pid in KiB from
// /proc/PID/status: the current one (VmRSS), or the peak (VmHWM) when
// peak is set; 0 when unreadable.
func RSSKiB(pid int, peak bool) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	field := "VmRSS:"
	if peak {
		field = "VmHWM:"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
