package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Appender is the part of the store ingest needs.
type Appender interface {
	Append(ctx context.Context, b *stratav1.Batch) (store.AppendResult, error)
}

// Service implements strata.v1.IngestService over an Appender.
type Service struct {
	stratav1.UnimplementedIngestServiceServer
	store Appender
	log   *slog.Logger
}

// New returns the ingest service; register it with Register.
func New(st Appender, log *slog.Logger) *Service {
	return &Service{store: st, log: log.With("component", "ingest")}
}

// Register adds the service to srv.
func (s *Service) Register(srv *grpc.Server) {
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
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		res, err := s.store.Append(ctx, b)
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
