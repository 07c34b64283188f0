package procmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrBadCPUInfo marks a /proc/cpuinfo without the vendor, family and model
// of its first processor.
var ErrBadCPUInfo = errors.New("malformed cpuinfo")

// CPUModel identifies a CPU as /proc/cpuinfo does on x86.
type CPUModel struct {
	Vendor string // vendor_id: GenuineIntel, AuthenticAMD
	Family int    // cpu family
	Model  int    // model
}

// CPUModel reads the first processor's vendor_id, cpu family and model
// from /proc/cpuinfo. Other architectures (no vendor_id line) are
// ErrBadCPUInfo.
func (f FS) CPUModel() (CPUModel, error) {
	b, err := os.ReadFile(f.procPath("cpuinfo"))
	if err != nil {
		return CPUModel{}, fmt.Errorf("read cpuinfo: %w", err)
	}
	return parseCPUInfo(b)
}

// parseCPUInfo takes the first "vendor_id", "cpu family" and "model" lines
// ("key\t: value"); every processor repeats them.
func parseCPUInfo(b []byte) (CPUModel, error) {
	var m CPUModel
	var vendor, family, model bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() && !(vendor && family && model) {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		var err error
		switch {
		case k == "vendor_id" && !vendor:
			m.Vendor, vendor = v, true
		case k == "cpu family" && !family:
			m.Family, err = strconv.Atoi(v)
			family = true
		case k == "model" && !model:
			m.Model, err = strconv.Atoi(v)
			model = true
		}
		if err != nil {
			return CPUModel{}, fmt.Errorf("parse cpuinfo: %s: %w: %w", k, ErrBadCPUInfo, err)
		}
	}
	if !(vendor && family && model) {
		return CPUModel{}, fmt.Errorf("parse cpuinfo: vendor, family or model missing: %w", ErrBadCPUInfo)
	}
	return m, nil
}
