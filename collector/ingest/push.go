package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"google.golang.org/grpc"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Appender is the part of the store ingest needs.
type Appender interface {
	Append(ctx context.Context, b *stratav1.Batch) (store.AppendResult, error)
}

// ErrDraining ends Push streams once Drain was called; agents reconnect
// (to this collector once restarted, or another) and replay what was not
// acknowledged.
var ErrDraining = errors.New("collector shutting down")

// Service implements strata.v1.IngestService over an Appender.
type Service struct {
	stratav1.UnimplementedIngestServiceServer
	store     Appender
	log       *slog.Logger
	draining  chan struct{}
	drainOnce sync.Once
}

// New returns the ingest service; register it with Register.
func New(st Appender, log *slog.Logger) *Service {
	return &Service{store: st, log: log.With("component", "ingest"), draining: make(chan struct{})}
}

// Drain makes every Push stream end with ErrDraining after the batch it is
// storing, so a graceful stop need not wait for agents to hang up. Batches
// received but not yet stored are not acknowledged, and agents replay them.
func (s *Service) Drain() {
	s.drainOnce.Do(func() { close(s.draining) })
}

// Register adds the service to srv.
func (s *Service) Register(srv grpc.ServiceRegistrar) {
	stratav1.RegisterIngestServiceServer(srv, s)
}

// Push stores each batch of the stream and acknowledges it, in order, once
// durable. The stream ends at the client's close (nil), at the first
// malformed batch or store failure (the error, mapped to a code by the
// server's interceptor), or when the client goes away.
func (s *Service) Push(stream grpc.BidiStreamingServer[stratav1.Batch, stratav1.Ack]) error {
	ctx := stream.Context()
	var stored, dups uint64
	defer func() {
		s.log.Debug("push stream ended", "stored", stored, "duplicates", dups)
	}()
	// Recv blocks, so it runs in its own goroutine and the loop below can
	// also watch for Drain. The goroutine ends when the stream does, which
	// returning from this handler guarantees.
	type recv struct {
		b   *stratav1.Batch
		err error
	}
	in := make(chan recv)
	go func() {
		for {
			b, err := stream.Recv()
			select {
			case in <- recv{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var r recv
		select {
		case r = <-in:
		case <-s.draining:
			return ErrDraining
		case <-ctx.Done():
			return ctx.Err()
		}
		if errors.Is(r.err, io.EOF) {
			return nil
		}
		if r.err != nil {
			return r.err
		}
		b := r.b
		res, err := s.store.Append(ctx, b)
		if err != nil && ctx.Err() != nil {
			// The client went away while its batch was being stored. The
			// store finishes the write on its own; a replay finds it.
			s.log.Debug("stream ended while its batch was stored", "node", b.GetNodeName(), "boot_id", b.GetBootId(), "seq", b.GetSeq(), "error", err)
			return err
		}
		if err != nil {
			s.log.Warn("batch refused", "node", b.GetNodeName(), "boot_id", b.GetBootId(), "seq", b.GetSeq(), "error", err)
			return err
		}
		if res.Duplicate {
			dups++
		} else {
			stored++
		}
		if err := stream.Send(&stratav1.Ack{Seq: b.GetSeq(), Duplicate: res.Duplicate, Records: res.Records}); err != nil {
			return err
		}
	}
}
