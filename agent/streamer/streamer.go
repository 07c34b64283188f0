package streamer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratatrace/strata/agent/fit"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Source is what the streamer reads from; *spool.Spool satisfies it.
type Source interface {
	Next(after uint64) (*stratav1.Batch, error)
	Ack(seq uint64) error
	Acked() uint64
	Notify() <-chan struct{}
}

// Config of a streamer; zero values take defaults.
type Config struct {
	Target      string // collector address, host:port or unix:///path
	Window      int    // batches in flight before waiting for acks (default 32)
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
	DialOptions []grpc.DialOption // replace the default insecure credentials
	Logger      *slog.Logger
}

// Stats are counters since New.
type Stats struct {
	Sent       uint64 // batches sent, resends included
	Acked      uint64 // acks received
	Duplicates uint64 // acks that said the batch was already stored
	Records    uint64 // records the collector stored
	Reconnects uint64
	Rejected   uint64 // batches or pieces the collector refused as invalid
	Split      uint64 // spooled batches sent as pieces (refused, or over the wire limits)
	// Records and workloads lost: the collector refused them alone, after
	// bisection (or one could not be cut to fit the wire limits).
	RecordsDropped, WorkloadsDropped uint64
	Connected                        bool
}

// Streamer pushes batches from a Source to a collector.
type Streamer struct {
	src  Source
	cfg  Config
	log  *slog.Logger
	conn *grpc.ClientConn

	sent, acked, dups, records, reconnects, rejected atomic.Uint64
	split, recordsDropped, workloadsDropped          atomic.Uint64
	connected                                        atomic.Bool
	lastErr                                          atomic.Value // string
	// refused is the seq of a spooled batch the collector refused as
	// invalid, 0 for none: the next session bisects it before going on.
	refused atomic.Uint64
	// dropped holds the pieces of the batch being split that were already
	// counted as dropped; only Run's goroutine uses it.
	dropped map[uint64]bool
}

// New prepares a streamer; it connects lazily in Run.
func New(src Source, cfg Config) (*Streamer, error) {
	if cfg.Target == "" {
		return nil, errors.New("new streamer: empty collector address")
	}
	if cfg.Window <= 0 {
		cfg.Window = 32
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	opts := cfg.DialOptions
	if opts == nil {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	opts = append(opts,
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			// Ping an idle connection every 30 s so a collector that vanished
			// without a FIN (node lost) is noticed; the collector permits it.
			Time: 30 * time.Second,
			// Declare the connection dead when a ping goes unanswered this long.
			Timeout: 10 * time.Second,
			// Keep pinging between batches too: the agent may be quiet for minutes.
			PermitWithoutStream: true,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(stratav1.MaxBatchBytes)),
	)
	conn, err := grpc.NewClient(cfg.Target, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial collector: %w", err)
	}
	return &Streamer{src: src, cfg: cfg, log: cfg.Logger.With("component", "streamer"), conn: conn, dropped: map[uint64]bool{}}, nil
}

// Stats returns a snapshot of the counters.
func (s *Streamer) Stats() Stats {
	return Stats{
		Sent: s.sent.Load(), Acked: s.acked.Load(), Duplicates: s.dups.Load(),
		Records: s.records.Load(), Reconnects: s.reconnects.Load(), Rejected: s.rejected.Load(),
		Split: s.split.Load(), RecordsDropped: s.recordsDropped.Load(), WorkloadsDropped: s.workloadsDropped.Load(),
		Connected: s.connected.Load(),
	}
}

// Run streams until ctx ends, reconnecting with jittered exponential
// backoff. It returns nil when ctx is cancelled.
func (s *Streamer) Run(ctx context.Context) error {
	defer s.conn.Close()
	backoff := s.cfg.MinBackoff
	for {
		progressed, err := s.session(ctx)
		s.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		if progressed {
			backoff = s.cfg.MinBackoff
		}
		s.lastErr.Store(err.Error())
		s.reconnects.Add(1)
		if errors.Is(err, errRefused) {
			continue // not the network: bisect the refused batch at once
		}
		s.log.Warn("collector stream ended; retrying", "err", err, "in", backoff)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(backoff*2, s.cfg.MaxBackoff)
	}
}

// session runs one Push stream. It reports whether any ack arrived.
func (s *Streamer) session(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.resolveRefused(ctx); err != nil {
		return false, err
	}
	stream, err := stratav1.NewIngestServiceClient(s.conn).Push(ctx)
	if err != nil {
		return false, fmt.Errorf("open push stream: %w", err)
	}

	var (
		mu       sync.Mutex
		unacked  []uint64 // sent and not acknowledged, in order
		ackedAny bool
	)
	ackc := make(chan struct{}, 1)
	recvErr := make(chan error, 1)
	go func() {
		for {
			ack, err := stream.Recv()
			if err != nil {
				if status.Code(err) == codes.InvalidArgument {
					// Acks come in order, so the refused batch is the oldest
					// one sent. Resending it whole would be refused forever:
					// the next session bisects it (resolveRefused).
					mu.Lock()
					var bad uint64
					if len(unacked) > 0 {
						bad = unacked[0]
					}
					mu.Unlock()
					if bad != 0 {
						s.rejected.Add(1)
						s.refused.Store(bad)
						s.log.Warn("collector refused a batch as invalid; bisecting it", "seq", bad, "err", err)
						err = fmt.Errorf("%w: %w", errRefused, err)
					}
				}
				recvErr <- fmt.Errorf("receive ack: %w", err)
				return
			}
			if err := s.src.Ack(ack.GetSeq()); err != nil {
				recvErr <- fmt.Errorf("ack spool: %w", err)
				return
			}
			s.acked.Add(1)
			s.records.Add(uint64(ack.GetRecords()))
			if ack.GetDuplicate() {
				s.dups.Add(1)
			}
			s.connected.Store(true)
			mu.Lock()
			if len(unacked) > 0 {
				unacked = unacked[1:]
			}
			ackedAny = true
			mu.Unlock()
			select {
			case ackc <- struct{}{}:
			default:
			}
		}
	}()
	progressed := func() bool { mu.Lock(); defer mu.Unlock(); return ackedAny }

	cursor := s.src.Acked()
	// Notify and acks wake the loop; the poll is only a safety net.
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		mu.Lock()
		full := len(unacked) >= s.cfg.Window
		mu.Unlock()
		var b *stratav1.Batch
		if !full {
			if b, err = s.src.Next(cursor); err != nil {
				return progressed(), fmt.Errorf("read spool: %w", err)
			}
		}
		if b != nil && !fit.Fits(b) {
			// Over the wire limits (spooled by an older agent): every
			// earlier batch must be acknowledged first, since the spool's
			// Ack is cumulative; then it goes as pieces.
			if err := waitIdle(ctx, &mu, &unacked, ackc, recvErr); err != nil {
				return progressed(), err
			}
			if err := s.deliverSplit(ctx, b, false); err != nil {
				return progressed(), err
			}
			cursor = b.GetSeq()
			continue
		}
		if b == nil {
			select {
			case <-ctx.Done():
				stream.CloseSend()
				return progressed(), ctx.Err()
			case err := <-recvErr:
				return progressed(), err
			case <-s.src.Notify():
			case <-ackc:
			case <-poll.C:
			}
			continue
		}
		mu.Lock()
		unacked = append(unacked, b.GetSeq())
		mu.Unlock()
		if err := stream.Send(b); err != nil {
			// The real cause arrives on Recv.
			select {
			case rerr := <-recvErr:
				return progressed(), rerr
			case <-time.After(time.Second):
				return progressed(), fmt.Errorf("send batch: %w", err)
			}
		}
		s.sent.Add(1)
		cursor = b.GetSeq()
	}
}

// waitIdle waits until no batch of the session is unacknowledged.
func waitIdle(ctx context.Context, mu *sync.Mutex, unacked *[]uint64, ackc <-chan struct{}, recvErr <-chan error) error {
	for {
		mu.Lock()
		n := len(*unacked)
		mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-recvErr:
			return err
		case <-ackc:
		}
	}
}
