package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/stratatrace/strata/collector/store/ddl"
)

// Retain applies r (see retain) to the day partitions of the retained
// tables (records, runs, workloads, process_memory, heat, batch_apps, batches,
// job_claims), a day of receipt in the server's time zone: MaxAge drops
// the days wholly before now-MaxAge, and the size is the database's active
// parts. A dropped day goes from every retained table at once, so a
// batch's rows and its commit rows leave together. In the cluster layout
// the drops run ON CLUSTER on the local tables, and the size is what the
// server the collector talks to holds: a bound per server, which sharding
// by machine keeps even.
func (s *ClickHouse) Retain(ctx context.Context, r Retention) (RetainResult, error) {
	if s.closed() {
		return RetainResult{}, fmt.Errorf("retain: %w", ErrClosed)
	}
	res, err := retain(ctx, s, r, s.now())
	if res.Dropped > 0 {
		s.log.Info("retention dropped days of traces", "days", res.Dropped, "bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter)
	}
	return res, err
}

func (s *ClickHouse) traceBytes(ctx context.Context) (int64, error) {
	_, total, err := s.partitions(ctx)
	return total, err
}

// dropBefore drops the days wholly before cutoff's day on the server.
func (s *ClickHouse) dropBefore(ctx context.Context, cutoff time.Time) (int, error) {
	days, _, err := s.partitions(ctx)
	if err != nil {
		return 0, err
	}
	var cut uint32
	q := "SELECT " + rowSelect + ", toYYYYMMDD(toDateTime(" + strconv.FormatInt(cutoff.Unix(), 10) + "))"
	if err := s.c.query(ctx, q, func(rr *rowReader) { cut = rr.u32() }); err != nil {
		return 0, fmt.Errorf("server date: %w", err)
	}
	n := 0
	for ; n < len(days) && days[n].id < strconv.FormatUint(uint64(cut), 10); n++ {
		if err := s.dropDay(ctx, days[n].id); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *ClickHouse) dropOldestDay(ctx context.Context) (dropped, held int, err error) {
	days, _, err := s.partitions(ctx)
	if err != nil || len(days) < 2 {
		return 0, len(days), err
	}
	return 1, len(days), s.dropDay(ctx, days[0].id)
}

// dayPart is one day partition of the retained tables and the bytes its
// parts take.
type dayPart struct {
	id    string // YYYYMMDD
	bytes int64
}

// partitions lists the retained tables' day partitions, oldest first, and
// the bytes of every active part in the database.
func (s *ClickHouse) partitions(ctx context.Context) ([]dayPart, int64, error) {
	l := s.layout()
	retained := map[string]bool{}
	for _, t := range ddl.Tables {
		if t.Retained {
			retained[l.Local(t.Name)] = true
		}
	}
	byDay := map[string]int64{}
	var total int64
	q := "SELECT " + rowSelect + ", table, partition_id, sum(bytes_on_disk) FROM system.parts WHERE database = " +
		quote(s.opts.Database) + " AND active GROUP BY table, partition_id"
	err := s.c.query(ctx, q, func(r *rowReader) {
		table, id, bytes := r.str(), r.str(), int64(r.u64())
		total += bytes
		if retained[table] {
			byDay[id] += bytes
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list partitions: %w", err)
	}
	days := make([]dayPart, 0, len(byDay))
	for id, b := range byDay {
		days = append(days, dayPart{id, b})
	}
	sort.Slice(days, func(i, j int) bool { return days[i].id < days[j].id })
	return days, total, nil
}

// dropDay drops partition id from every retained table.
func (s *ClickHouse) dropDay(ctx context.Context, id string) error {
	l := s.layout()
	for _, t := range ddl.Tables {
		if !t.Retained {
			continue
		}
		stmt := "ALTER TABLE " + s.opts.Database + "." + l.Local(t.Name) + l.On() + " DROP PARTITION ID " + quote(id)
		if err := s.c.exec(ctx, stmt); err != nil {
			return fmt.Errorf("retain: drop %s of %s: %w", id, t.Name, err)
		}
	}
	return nil
}
