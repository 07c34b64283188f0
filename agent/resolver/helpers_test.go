package resolver

import (
	"bytes"
	"errors"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// containsState reports whether /proc/PID/stat shows state s.
func containsState(stat []byte, s byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == s
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
