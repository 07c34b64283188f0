package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store/ddl"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// jobVersion hands out increasing versions for PutJob: the collector's
// clock in nanoseconds, bumped past the last one handed out.
type jobVersion struct {
	mu   sync.Mutex
	last uint64
}

func (v *jobVersion) next(now time.Time) uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = max(v.last+1, uint64(now.UnixNano()))
	return v.last
}

// PutJob stores r; of several results for one job id, the one put last
// (highest version) is read.
func (s *ClickHouse) PutJob(ctx context.Context, r *stratav1.JobResult) error {
	if s.closed() {
		return fmt.Errorf("put job: %w", ErrClosed)
	}
	if r.GetJobId() == "" {
		return fmt.Errorf("put job: %w: empty job_id", ErrInvalidQuery)
	}
	blob, err := proto.Marshal(r)
	if err != nil {
		return fmt.Errorf("marshal job %s: %w", r.GetJobId(), err)
	}
	now := s.now()
	var w rowWriter
	w.u32(uint32(now.Unix()))
	w.str(r.GetJobId())
	w.i32(int32(r.GetSeverity()))
	w.i64(r.GetFinishUnixMs())
	w.i64(r.GetAnalyzedUnixMs())
	w.str(r.GetAppId())
	w.bytes(blob)
	w.u64(s.jobVersion.next(now))
	w.str(r.GetUser())
	w.str(r.GetQueue())
	w.str(r.GetType())
	w.i64(r.GetScore())
	err = s.c.insert(ctx, "jobs", ddl.TableByName("jobs").InsertCols(), joinBytes([][]byte{w.b}))
	s.onWrite(err)
	if err != nil {
		return fmt.Errorf("put job %s: %w", r.GetJobId(), err)
	}
	return nil
}

// latestJobsSQL is each job's latest result with the columns SearchJobs
// filters and orders on.
const latestJobsSQL = `SELECT job_id, argMax(severity, version) AS sev, argMax(finish_ms, version) AS fin,
	argMax(user_name, version) AS usr, argMax(queue, version) AS que, argMax(job_type, version) AS typ,
	argMax(app_id, version) AS app, argMax(score, version) AS scr, argMax(result, version) AS res FROM jobs`

// JobClaim is the state of the claims on one job.
type JobClaim struct {
	// Owner is the winning claim's collector: the earliest live claim
	// by the server's clock, ties broken by the smaller token.
	Owner string
	// Decided: the winning claim is older than ClaimSettle, so every
	// claim that could have beaten it is visible, and the winner no
	// longer changes until its lease ends.
	Decided bool
}

// Owner is the name this store claims jobs under.
func (s *ClickHouse) Owner() string { return s.opts.Owner }

// JobClaims returns the jobs with a live claim (younger than ClaimLease)
// and who holds each. Collectors polling the same histories claim a job
// (ClaimJobs) before analysing it and analyse it only once their claim is
// the decided winner, so each job is analysed once while its winner lives;
// when a winner dies without storing the job, its lease runs out and
// another collector's next claim wins.
func (s *ClickHouse) JobClaims(ctx context.Context) (map[string]JobClaim, error) {
	if s.closed() {
		return nil, fmt.Errorf("job claims: %w", ErrClosed)
	}
	lease := strconv.FormatInt(int64(s.opts.ClaimLease/time.Second), 10)
	settle := strconv.FormatInt(int64((s.opts.ClaimSettle+time.Second-1)/time.Second), 10)
	q := `SELECT ` + rowSelect + `, job_id, argMin(owner, (claimed, token)), toUInt8(min(claimed) <= now() - ` + settle + `)
FROM job_claims WHERE claimed > now() - ` + lease + ` GROUP BY job_id`
	out := map[string]JobClaim{}
	err := s.c.query(ctx, q, func(r *rowReader) {
		id, owner, decided := r.str(), r.str(), r.boolean()
		out[id] = JobClaim{Owner: owner, Decided: decided}
	})
	if err != nil {
		return nil, fmt.Errorf("query job claims: %w", err)
	}
	return out, nil
}

// ClaimJobs claims ids for this collector, in one insert; the server
// stamps each claim with its own clock.
func (s *ClickHouse) ClaimJobs(ctx context.Context, ids []string) error {
	if s.closed() {
		return fmt.Errorf("claim jobs: %w", ErrClosed)
	}
	if len(ids) == 0 {
		return nil
	}
	var w rowWriter
	for _, id := range ids {
		w.str(id)
		w.str(s.opts.Owner)
		w.u64(randomUint64())
	}
	if err := s.c.insert(ctx, "job_claims", ddl.TableByName("job_claims").InsertCols(), joinBytes([][]byte{w.b})); err != nil {
		return fmt.Errorf("claim jobs: %w", err)
	}
	return nil
}
