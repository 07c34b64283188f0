package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/stratatrace/strata/collector/store"
)

// retain applies the configured retention at once and then every
// RetentionInterval until ctx ends; without a bound it returns at once. A
// failed pass is logged and tried again at the next interval.
func retain(ctx context.Context, st store.Retainer, c Config, log *slog.Logger) {
	r := store.Retention{MaxAge: time.Duration(c.RetentionMaxAge), MaxBytes: c.RetentionMaxBytes}
	if r.MaxAge <= 0 && r.MaxBytes <= 0 {
		return
	}
	log = log.With("component", "retention")
	log.Info("retention on", "max_age", r.MaxAge, "max_bytes", r.MaxBytes, "interval", time.Duration(c.RetentionInterval))
	t := time.NewTicker(time.Duration(c.RetentionInterval))
	defer t.Stop()
	for {
		res, err := st.Retain(ctx, r)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("retention pass failed", "error", err)
		case res.KeptOverSize:
			log.Warn("the newest day of traces alone is over the size bound; kept", "bytes", res.BytesAfter, "max_bytes", r.MaxBytes)
		case res.Dropped > 0:
			log.Info("retention dropped traces", "dropped", res.Dropped, "bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
