package streamer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/agent/fit"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// errRefused ends a session whose oldest batch the collector refused as
// invalid; Run reconnects at once, without backoff, to bisect it.
var errRefused = errors.New("collector refused a batch")

// resolveRefused delivers the batch the collector refused, if any, as
// pieces; then the spool may acknowledge it and move on.
func (s *Streamer) resolveRefused(ctx context.Context) error {
	seq := s.refused.Load()
	if seq == 0 {
		return nil
	}
	b, err := s.src.Next(seq - 1)
	if err != nil {
		return fmt.Errorf("read spool: %w", err)
	}
	if b != nil && b.GetSeq() == seq {
		if err := s.deliverSplit(ctx, b, true); err != nil {
			return err
		}
	}
	s.refused.Store(0)
	return nil
}

// deliverSplit sends spooled batch b as pieces, each alone on a stream of
// its own, and acknowledges b in the spool once every piece is stored or
// dropped. refused says the collector already refused b whole.
//
// The pieces form a bisection tree: node 1 is b (with runs longer than
// stratav1.MaxRunPages cut and records over the batch budget split into
// sub-ranges, fit.Repair), node k's halves are nodes 2k and 2k+1 (fit.Halve).
// A piece over the wire limits is halved before it is sent; a piece the
// collector refuses is halved and its halves sent; a refused piece of one
// record or workload is dropped, counted and logged. Node 1 keeps b's seq;
// node k > 1 is sent as pieceSeq(b.Seq, k). The cut is deterministic, so a
// piece has the same seq on every attempt, and a piece the collector
// already stored (before a reconnect or an agent restart) is acknowledged
// as a duplicate, never stored twice.
func (s *Streamer) deliverSplit(ctx context.Context, b *stratav1.Batch, refused bool) error {
	orig := b.GetSeq()
	root := fit.Repair(b, fit.BatchBudget)
	if root != b {
		refused = false // repaired (runs cut, records split): worth sending whole
	}
	if err := s.deliverNode(ctx, orig, root, 1, refused); err != nil {
		return err
	}
	if err := s.src.Ack(orig); err != nil {
		return fmt.Errorf("ack spool: %w", err)
	}
	s.split.Add(1)
	clear(s.dropped)
	return nil
}

// deliverNode delivers node k of the tree rooted at spooled batch orig.
func (s *Streamer) deliverNode(ctx context.Context, orig uint64, p *stratav1.Batch, k uint64, refused bool) error {
	if !refused && fit.Fits(p) {
		p.Seq = orig
		if k > 1 {
			p.Seq = pieceSeq(orig, k)
		}
		err := s.pushOne(ctx, p)
		if status.Code(err) != codes.InvalidArgument {
			return err
		}
		s.rejected.Add(1)
		refused = true
		if fit.Items(p) == 1 {
			s.drop(p, orig, k, err)
			return nil
		}
	}
	x, y, ok := fit.Halve(p)
	if !ok { // one item that cannot be sent: refused, or over the limits
		s.drop(p, orig, k, fmt.Errorf("one item over the wire limits (refused %v)", refused))
		return nil
	}
	if err := s.deliverNode(ctx, orig, x, 2*k, false); err != nil {
		return err
	}
	return s.deliverNode(ctx, orig, y, 2*k+1, false)
}

// drop counts and logs what the collector will never take, once per piece
// however often a broken stream makes the bisection start over.
func (s *Streamer) drop(p *stratav1.Batch, orig, k uint64, why error) {
	key := pieceSeq(orig, k)
	if s.dropped[key] {
		return
	}
	s.dropped[key] = true
	s.recordsDropped.Add(uint64(len(p.GetRecords())))
	s.workloadsDropped.Add(uint64(len(p.GetWorkloads())))
	args := []any{"batch_seq", orig, "records", len(p.GetRecords()), "workloads", len(p.GetWorkloads()), "err", why}
	if r := p.GetRecords(); len(r) == 1 {
		args = append(args, "pid", r[0].GetPid(), "app_id", r[0].GetBlock().GetAppId(), "block", r[0].GetBlock().GetBlockId())
	}
	s.log.Warn("collector refused a record; dropped", args...)
}

// pushOne sends p alone on a stream of its own and waits for its ack.
func (s *Streamer) pushOne(ctx context.Context, p *stratav1.Batch) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := stratav1.NewIngestServiceClient(s.conn).Push(ctx)
	if err != nil {
		return fmt.Errorf("open push stream: %w", err)
	}
	if err := stream.Send(p); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("send piece: %w", err)
	}
	s.sent.Add(1)
	if err := stream.CloseSend(); err != nil {
		return fmt.Errorf("close piece stream: %w", err)
	}
	ack, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("receive piece ack: %w", err)
	}
	if ack.GetSeq() != p.GetSeq() {
		return fmt.Errorf("receive piece ack: seq %d, want %d", ack.GetSeq(), p.GetSeq())
	}
	s.acked.Add(1)
	s.records.Add(uint64(ack.GetRecords()))
	if ack.GetDuplicate() {
		s.dups.Add(1)
	}
	return nil
}

// pieceSeq is the seq of node k > 1 of spooled batch orig's bisection tree:
// the top bit set, so it never meets a spool seq (microseconds since the
// epoch, far below 2^63), and the rest a mix of orig and k, so pieces of
// different batches do not meet either (a collision of two 63-bit hashes in
// one boot is not a practical concern).
func pieceSeq(orig, k uint64) uint64 {
	return 1<<63 | mix(orig^mix(k))>>1
}

// mix is SplitMix64's finaliser: a bijection that spreads every input bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
