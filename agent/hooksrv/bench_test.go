package hooksrv

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// BenchmarkSessionThroughput measures how fast one session drains ACCESS
// frames (read, decode, pid and block checks, handler call) against a
// baseline that only reads the same packets from the same kind of socket.
// The hook drops frames only when the agent falls behind, so this is the
// rate a single JVM can report at without loss.
func BenchmarkSessionThroughput(b *testing.B) {
	const frames = 20000
	frame := encode(Frame{Body: &Access{BlockID: 1, Kind: stratav1.AccessKind_ACCESS_KIND_READ}})
	var base, full time.Duration
	for b.Loop() {
		base += baselineRead(b, frames, frame)
		full += sessionRead(b, frames, frame)
	}
	n := float64(b.N * frames)
	b.ReportMetric(float64(base.Nanoseconds())/n, "baseline-ns/frame")
	b.ReportMetric(float64(full.Nanoseconds())/n, "session-ns/frame")
	b.ReportMetric(float64(full)/float64(base), "x-baseline")
}

// baselineRead times n packets through a bare SEQPACKET listener.
func baselineRead(b *testing.B, n int, frame []byte) time.Duration {
	path := filepath.Join(b.TempDir(), "base.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, FrameMax+1)
		for i := 0; i < n; i++ {
			if _, _, _, _, err := c.ReadMsgUnix(buf, nil); err != nil {
				return
			}
		}
	}()
	p := dial(b, path)
	start := time.Now()
	for i := 0; i < n; i++ {
		p.sendRaw(frame)
	}
	<-done
	return time.Since(start)
}

// countHandler counts access events.
type countHandler struct{ n atomic.Int64 }

func (h *countHandler) HandleEvent(_ context.Context, ev Event) {
	if ev.Kind == EventAccess {
		h.n.Add(1)
	}
}

// sessionRead times n ACCESS frames through a Server with a counting handler.
func sessionRead(b *testing.B, n int, frame []byte) time.Duration {
	h := &countHandler{}
	srv, err := Listen(Config{Path: filepath.Join(b.TempDir(), "hook.sock")}, h, nil)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()
	p := dial(b, srv.Path())
	p.send(hello("bench"))
	p.send(register(1, 0x10000, me))
	start := time.Now()
	for i := 0; i < n; i++ {
		p.sendRaw(frame)
	}
	for h.n.Load() < int64(n) {
		time.Sleep(50 * time.Microsecond)
	}
	return time.Since(start)
}
