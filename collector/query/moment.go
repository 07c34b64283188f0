package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Looking back: the physical map, an RDD's blocks and Trace show the
// blocks live at one moment of an application's life (answer.Moment).
// Users name the moment as ParseMoment reads it; MomentWords says which
// moment is shown and why.

// MomentMetadata is the response header in which Trace says, with
// MomentWords, which moment it streams (TraceRequest.at); Numa says it in
// its response.
const MomentMetadata = "strata-moment"

// ParseMoment reads a moment as users name it (`strata trace --at`, the
// API's at=): "" the app's default (its peak once it has ended, else
// now), "now", "peak", an RFC 3339 time ("2023-11-14T22:13:22Z"), or a
// duration after the app's first record ("+42s", "+1m30s"). The result
// names no app. Anything else is answer.ErrInvalidQuery.
func ParseMoment(s string) (answer.MomentQuery, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return answer.MomentQuery{Want: answer.MomentDefault}, nil
	case "now":
		return answer.MomentQuery{Want: answer.MomentNow}, nil
	case "peak":
		return answer.MomentQuery{Want: answer.MomentPeak}, nil
	}
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return answer.MomentQuery{}, fmt.Errorf("%w: at %q: want a duration after the app's start, e.g. +42s", answer.ErrInvalidQuery, s)
		}
		return answer.MomentQuery{Want: answer.MomentAt, At: int64(d), SinceStart: true}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return answer.MomentQuery{}, fmt.Errorf("%w: at %q: want now, peak, an RFC 3339 time or +DURATION after the app's start", answer.ErrInvalidQuery, s)
	}
	if t.UnixNano() <= 0 {
		return answer.MomentQuery{}, fmt.Errorf("%w: at %q: before 1970", answer.ErrInvalidQuery, s)
	}
	return answer.MomentQuery{Want: answer.MomentAt, At: t.UnixNano()}, nil
}

// Moment resolves the moment at (as ParseMoment reads it) of app; an app
// the store holds no record of is known's error.
func (s *Service) Moment(ctx context.Context, app, at string) (answer.Moment, error) {
	mq, err := ParseMoment(at)
	if err != nil {
		return answer.Moment{}, err
	}
	mq.AppID = app
	m, err := s.store.Moment(ctx, mq)
	if errors.Is(err, answer.ErrNotFound) {
		if kerr := s.known(ctx, app); kerr != nil {
			return answer.Moment{}, kerr
		}
	}
	return m, err
}

// MomentWords says which moment m is and why it is shown, in the words
// `strata` and the web UI print: "the moment its RDDs held the most:
// 2023-11-14 22:13:22.000 UTC (+2s), 1.2 GiB; the application has ended".
func MomentWords(m answer.Moment) string {
	var s string
	switch m.Kind {
	case answer.MomentNow:
		s = "now"
		if m.Default {
			s += ": the application is running"
		}
		s += ", its RDDs hold " + ByteSize(m.Bytes)
	case answer.MomentPeak:
		s = "the moment its RDDs held the most: " + momentTime(m) + ", " + ByteSize(m.Bytes)
	default:
		s = momentTime(m) + ": its RDDs held " + ByteSize(m.Bytes)
		if m.PeakNs != 0 {
			s += " (at most " + ByteSize(m.PeakBytes) + ", at " + sinceStart(m.PeakNs-m.FirstNs) + ")"
		}
	}
	if m.Ended {
		s += "; the application has ended"
	}
	return s
}

// momentTime is m's time in UTC and after the app's first record.
func momentTime(m answer.Moment) string {
	return time.Unix(0, m.AtNs).UTC().Format("2006-01-02 15:04:05.000 MST") + " (" + sinceStart(m.AtNs-m.FirstNs) + ")"
}

// sinceStart is an offset from the app's first record to the millisecond,
// as ParseMoment reads it back: "+4.5s", "-1ms" (before the start). It is
// ASCII, as a gRPC or HTTP header value must be.
func sinceStart(ns int64) string {
	d := time.Duration(ns).Round(time.Millisecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// ByteSize is b in binary units as `strata` and the web UI print them:
// "512 B", "4.0 KiB", "1.2 GiB".
func ByteSize(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

// TraceMomentEach calls fn for each page of the records the blocks live
// at moment m (from Moment) hold then, in Trace's order. Now (a running
// app's default) is the state after the app's last lifecycle record.
func (s *Service) TraceMomentEach(ctx context.Context, req *stratav1.TraceRequest, m answer.Moment, fn func(*stratav1.TracePage) error) error {
	return s.traceAt(ctx, req, m.Time(), fn)
}

// traceMoment streams Trace at the moment its request asks for, first
// sending MomentWords as the response header MomentMetadata.
func (s *Service) traceMoment(req *stratav1.TraceRequest, at string, stream grpc.ServerStreamingServer[stratav1.TracePage]) error {
	ctx := stream.Context()
	m, err := s.Moment(ctx, req.GetAppId(), at)
	if err != nil {
		return err
	}
	if err := stream.SendHeader(metadata.Pairs(MomentMetadata, MomentWords(m))); err != nil {
		return err
	}
	return s.TraceMomentEach(ctx, req, m, stream.Send)
}

// NumaMoment counts the pages of the blocks live at moment m (from
// Moment) per RDD per NUMA node; now is Numa's answer.
func (s *Service) NumaMoment(ctx context.Context, app string, m answer.Moment) ([]*stratav1.NumaRow, error) {
	var rows []*stratav1.NumaRow
	var err error
	if m.AtNs == 0 {
		rows, err = s.store.Numa(ctx, app)
	} else {
		rows, err = s.store.NumaAt(ctx, app, m.AtNs)
	}
	if err := s.emptyOf(ctx, app, len(rows), err); err != nil {
		return nil, err
	}
	return rows, nil
}
