package server

import (
	"log/slog"
	"os"

	"github.com/stratatrace/strata/profiling"
)

// startProfiling starts continuous profiling when --pyroscope-server is
// set (nil profiler otherwise; its Stop does nothing).
func startProfiling(c Config, log *slog.Logger) (*profiling.Profiler, error) {
	host, _ := os.Hostname()
	return profiling.Start(profiling.Config{Server: c.PyroscopeServer, App: "strata-collector",
		Tags: map[string]string{"host": host}, Logger: log})
}
