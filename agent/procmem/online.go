package procmem

import (
	"fmt"
	"os"
	"path/filepath"
)

// OnlineCPUs reads /sys/devices/system/cpu/online: the CPUs online now, in
// increasing order. CPUs come and go with hotplug (and in VMs whose vCPUs
// are added at run time), so callers that open something per CPU poll it.
func (f FS) OnlineCPUs() ([]int, error) {
	raw, err := os.ReadFile(filepath.Join(f.Sys, "devices", "system", "cpu", "online"))
	if err != nil {
		return nil, fmt.Errorf("read online cpus: %w", err)
	}
	cpus, err := parseCPUList(raw)
	if err != nil {
		return nil, fmt.Errorf("parse online cpus: %w", err)
	}
	return cpus, nil
}
