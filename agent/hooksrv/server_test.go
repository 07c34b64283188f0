package hooksrv

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// recorder is a Handler that keeps every event.
type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func (r *recorder) HandleEvent(_ context.Context, ev Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// of returns the events of the session with the given app id.
func (r *recorder) of(app string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range r.evs {
		if ev.Session.AppID == app {
			out = append(out, ev)
		}
	}
	return out
}

type testServer struct {
	*Server
	rec  *recorder
	logs *testenv.Output
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "hook.sock")
	}
	ts := &testServer{rec: &recorder{}, logs: &testenv.Output{}}
	log := slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := Listen(cfg, ts.rec, log)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ts.Server = srv
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", ts.logs)
		}
	})
	return ts
}

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

const peerTime = 1_700_000_000_000_000_000

// peer is a hook connection driven by the test.
type peer struct {
	t   testing.TB
	c   *net.UnixConn
	seq uint32
}

func dial(t testing.TB, path string) *peer {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &peer{t: t, c: c}
}

// send encodes body with the next seq, tid 77 and time peerTime+seq.
func (p *peer) send(body Body) Frame {
	p.t.Helper()
	f := Frame{Header: Header{Seq: p.seq, TID: 77, TimeNs: peerTime + uint64(p.seq)}, Body: body}
	p.seq++
	p.sendRaw(encode(f))
	return f
}

func (p *peer) sendRaw(b []byte) {
	p.t.Helper()
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatalf("write frame: %v", err)
	}
}

// waitClosed waits until the server closed this connection.
func (p *peer) waitClosed() {
	p.t.Helper()
	p.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := p.c.Read(make([]byte, 16)); !errors.Is(err, io.EOF) {
		p.t.Fatalf("read after server close: %v, want EOF", err)
	}
}

var me = uint32(os.Getpid())

func hello(app string) *Hello {
	return &Hello{PID: me, PageSize: 4096, MonotonicNs: 123, ByteArrayBase: 16, LongArrayBase: 16,
		RefSize: 4, AppID: app, ExecutorID: "1"}
}

func register(id, vaddr uint64, pid uint32) *Register {
	return &Register{BlockID: id, Vaddr: vaddr, Length: 8192, PID: pid, RDDID: 3, Partition: int32(id),
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP,
		Kind: KindRDD, Chunks: 1, StageID: 2, StageAttempt: 0, TaskAttemptID: int64(id) + 40, Column: -1,
		Name: "rdd_3_" + strconv.FormatUint(id, 10)}
}

// checkEvent compares an event with want, apart from Session and Received.
func checkEvent(t *testing.T, got, want Event) {
	t.Helper()
	if got.Received.IsZero() || got.Session == nil {
		t.Errorf("event %v lacks Received or Session", got.Kind)
	}
	got.Received, got.Session = time.Time{}, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("event\n%+v\nwant\n%+v", got, want)
	}
}

func TestServerTwoPeersForeignPIDRejected(t *testing.T) {
	ts := startServer(t, Config{})
	foreign := uint32(os.Getppid()) // a live process that is not the peer

	a := dial(t, ts.Path())
	a.send(hello("app-a"))
	a.send(register(1, 0x7f0000001000, me))

	b := dial(t, ts.Path())
	b.send(hello("app-b"))
	b.send(register(9, 0x7f0000001000, foreign))
	b.send(&Move{BlockID: 9, Vaddr: 0x7f0000009000, Length: 4096, PID: foreign, GCEpoch: 1})
	waitUntil(t, "two rejections", func() bool { return ts.Stats().Rejected == 2 })

	a.send(&Move{BlockID: 1, Vaddr: 0x7f0000003000, Length: 12288, PID: me, GCEpoch: 2})
	a.send(&Access{BlockID: 1, Offset: 4096, Length: 100, Kind: stratav1.AccessKind_ACCESS_KIND_WRITE})
	a.send(&Free{BlockID: 1, Reason: FreeEvicted})
	// b's session goes on after its rejected frames.
	b.send(register(5, 0x7f0000005000, me))
	waitUntil(t, "b's register", func() bool { return len(ts.rec.of("app-b")) == 2 })
	a.c.Close()
	waitUntil(t, "a's six events", func() bool { return len(ts.rec.of("app-a")) == 6 })

	evs := ts.rec.of("app-a")
	s := evs[0].Session
	want := Session{ID: s.ID, PID: me, UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), HookPID: me,
		AppID: "app-a", ExecutorID: "1", PageSize: 4096, ByteArrayBase: 16, LongArrayBase: 16, RefSize: 4,
		HelloTime: time.Unix(0, peerTime), HelloMonoNs: 123, Accepted: s.Accepted}
	if !reflect.DeepEqual(*s, want) || s.Accepted.IsZero() {
		t.Errorf("session\n%+v\nwant\n%+v", *s, want)
	}
	blk := Block{HookID: 1, RDDID: 3, Partition: 1, Name: "rdd_3_1",
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP,
		Kind: KindRDD, Chunks: 1, StageID: 2, StageAttempt: 0, TaskAttemptID: 41, Column: -1}
	at := func(seq uint32) time.Time { return time.Unix(0, peerTime+int64(seq)) }
	checkEvent(t, evs[0], Event{Kind: EventSessionStart, TID: 77, Time: at(0)})
	checkEvent(t, evs[1], Event{Kind: EventRegister, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC,
		Seq: 1, TID: 77, Time: at(1), Block: blk, Vaddr: 0x7f0000001000, Length: 8192})
	checkEvent(t, evs[2], Event{Kind: EventMove, Access: stratav1.AccessKind_ACCESS_KIND_MOVE,
		Seq: 2, TID: 77, Time: at(2), Block: blk, Vaddr: 0x7f0000003000, Length: 12288, GCEpoch: 2})
	checkEvent(t, evs[3], Event{Kind: EventAccess, Access: stratav1.AccessKind_ACCESS_KIND_WRITE,
		Seq: 3, TID: 77, Time: at(3), Block: blk, Vaddr: 0x7f0000003000, Length: 12288,
		AccessOffset: 4096, AccessLength: 100})
	checkEvent(t, evs[4], Event{Kind: EventFree, Access: stratav1.AccessKind_ACCESS_KIND_FREE,
		Seq: 4, TID: 77, Time: at(4), Block: blk, Vaddr: 0x7f0000003000, Length: 12288, FreeReason: FreeEvicted})
	if end := evs[5]; end.Kind != EventSessionEnd || end.Err != nil || end.Session != s {
		t.Errorf("last event %v err %v, want a clean session end", end.Kind, end.Err)
	}

	bevs := ts.rec.of("app-b")
	if bevs[1].Kind != EventRegister || bevs[1].Block.HookID != 5 || bevs[1].Session.PID != me {
		t.Errorf("b's second event = %+v, want the register of block 5", bevs[1])
	}
	if bevs[0].Session.ID == s.ID {
		t.Errorf("sessions share id %d", s.ID)
	}
	st := ts.Stats()
	if want := (Stats{Sessions: 2, Active: 1, Frames: 7, Rejected: 2}); st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if l := ts.logs.String(); !strings.Contains(l, "frame rejected") || !strings.Contains(l, "claimed_pid="+strconv.Itoa(int(foreign))) {
		t.Errorf("rejection not logged with the claimed pid:\n%s", l)
	}
}

func TestServerForeignHelloClosesSession(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.Path())
	h := hello("app-x")
	h.PID = uint32(os.Getppid())
	p.send(h)
	p.waitClosed()
	waitUntil(t, "session end", func() bool { return ts.Stats().Active == 0 })
	if st := ts.Stats(); st.Rejected != 1 || st.Malformed != 0 || st.Frames != 0 {
		t.Errorf("stats = %+v, want one rejection and nothing else", st)
	}
	if n := len(ts.rec.of("app-x")); n != 0 {
		t.Errorf("%d events from a session without a valid HELLO", n)
	}
}

// A thread id of the peer is as good as its pid; the event still names the
// process (SO_PEERCRED), never the claimed id.
func TestServerAcceptsPeerThread(t *testing.T) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	var tid uint32
	for _, e := range ents {
		if n, _ := strconv.ParseUint(e.Name(), 10, 32); n != 0 && uint32(n) != me {
			tid = uint32(n)
		}
	}
	if tid == 0 {
		t.Skip("skipping: the test process has a single thread")
	}
	ts := startServer(t, Config{})
	p := dial(t, ts.Path())
	p.send(hello("app-t"))
	p.send(register(1, 0x10000, tid))
	waitUntil(t, "register", func() bool { return len(ts.rec.of("app-t")) == 2 })
	if ev := ts.rec.of("app-t")[1]; ev.Kind != EventRegister || ev.Session.PID != me {
		t.Errorf("event %v from pid %d, want register from %d", ev.Kind, ev.Session.PID, me)
	}
	if st := ts.Stats(); st.Rejected != 0 {
		t.Errorf("stats = %+v, want no rejection", st)
	}
}

func TestServerMalformedClosesOnlyThatSession(t *testing.T) {
	ts := startServer(t, Config{MaxBlocks: 2})
	a := dial(t, ts.Path())
	a.send(hello("app-a"))
	a.send(register(1, 0x7f0000001000, me))

	tests := []struct {
		name string
		send func(p *peer)
		want error
		log  string
	}{
		{"garbage", func(p *peer) { p.sendRaw([]byte("this is not a frame, not at all, no")) }, ErrBadMagic, "bad magic"},
		{"unknown type", func(p *peer) {
			b := encode(Frame{Body: &Free{BlockID: 1, Reason: FreeRemoved}})
			le.PutUint16(b[offType:], 42)
			p.sendRaw(b)
		}, ErrUnknownType, "unknown frame type"},
		{"truncated string", func(p *peer) {
			b := encode(Frame{Body: register(1, 0x1000, me)})
			p.sendRaw(setLength(b[:len(b)-2]))
		}, ErrBadString, "truncated"},
		{"oversized packet", func(p *peer) { p.sendRaw(make([]byte, 3*FrameMax)) }, ErrFrameTooLarge, "larger than FrameMax"},
		{"second hello", func(p *peer) { p.send(hello("again")) }, ErrDuplicateHello, "second HELLO"},
		{"too many blocks", func(p *peer) {
			for i := uint64(1); i <= 3; i++ {
				p.send(register(i, 0x1000*i, me))
			}
		}, ErrTooManyBlocks, "too many live blocks"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := "bad-" + strconv.Itoa(i)
			p := dial(t, ts.Path())
			p.send(hello(app))
			tc.send(p)
			p.waitClosed()
			waitUntil(t, "session end event", func() bool {
				evs := ts.rec.of(app)
				return len(evs) > 0 && evs[len(evs)-1].Kind == EventSessionEnd
			})
			evs := ts.rec.of(app)
			if end := evs[len(evs)-1]; !errors.Is(end.Err, tc.want) || !errors.Is(end.Err, ErrMalformed) {
				t.Errorf("session end error = %v, want %v", end.Err, tc.want)
			}
			if l := ts.logs.String(); !strings.Contains(l, "session closed") || !strings.Contains(l, tc.log) {
				t.Errorf("log lacks the reason %q:\n%s", tc.log, l)
			}
			// The good session goes on, and keeps its block.
			a.send(&Access{BlockID: 1, Kind: stratav1.AccessKind_ACCESS_KIND_READ})
			waitUntil(t, "a's access", func() bool { return len(ts.rec.of("app-a")) == 3+i })
			if ev := ts.rec.of("app-a")[2+i]; ev.Kind != EventAccess || ev.Vaddr != 0x7f0000001000 {
				t.Errorf("a's event = %+v, want an access of block 1", ev)
			}
		})
	}
	if st := ts.Stats(); st.Malformed != uint64(len(tests)) || st.Active != 1 {
		t.Errorf("stats = %+v, want %d malformed and a still active", st, len(tests))
	}
}

func TestServerNoHelloYieldsNoEvents(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.Path())
	p.send(register(1, 0x1000, me))
	p.waitClosed()
	waitUntil(t, "session gone", func() bool { return ts.Stats().Active == 0 })
	if st := ts.Stats(); st.Malformed != 1 {
		t.Errorf("stats = %+v, want one malformed", st)
	}
	ts.rec.mu.Lock()
	defer ts.rec.mu.Unlock()
	if len(ts.rec.evs) != 0 {
		t.Errorf("events without HELLO: %+v", ts.rec.evs)
	}
}

func TestServerHelloTimeout(t *testing.T) {
	ts := startServer(t, Config{HelloTimeout: 50 * time.Millisecond})
	p := dial(t, ts.Path())
	p.waitClosed()
	if l := ts.logs.String(); !strings.Contains(l, "no HELLO in time") {
		t.Errorf("log lacks the reason:\n%s", l)
	}
	// After HELLO the deadline is gone.
	q := dial(t, ts.Path())
	q.send(hello("app-slow"))
	time.Sleep(150 * time.Millisecond)
	q.send(register(1, 0x1000, me))
	waitUntil(t, "register after the hello timeout", func() bool { return len(ts.rec.of("app-slow")) == 2 })
}

func TestServerUnknownBlocksAndDropped(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.Path())
	p.send(hello("app-d"))
	p.send(&Access{BlockID: 7, Kind: stratav1.AccessKind_ACCESS_KIND_READ})
	p.send(&Move{BlockID: 7, Vaddr: 0x1000, Length: 1, PID: me})
	p.send(&Free{BlockID: 7, Reason: FreeRemoved})
	p.send(&Dropped{Dropped: 3, Sent: 10})
	p.send(&Dropped{Dropped: 5, Sent: 20})
	p.c.Close()
	waitUntil(t, "session end", func() bool { return len(ts.rec.of("app-d")) == 2 })
	end := ts.rec.of("app-d")[1]
	if end.Kind != EventSessionEnd || end.PeerDropped != 5 || end.PeerSent != 20 || end.Err != nil {
		t.Errorf("end = %+v, want a clean end with 5 dropped, 20 sent", end)
	}
	if st := ts.Stats(); st.Unknown != 3 || st.DroppedByPeer != 5 || st.Frames != 3 {
		t.Errorf("stats = %+v, want 3 unknown, 5 dropped by peer, 3 frames", st)
	}
}

func TestServerCloseEndsSessions(t *testing.T) {
	ts := startServer(t, Config{})
	p := dial(t, ts.Path())
	p.send(hello("app-c"))
	p.send(register(1, 0x1000, me))
	waitUntil(t, "register", func() bool { return len(ts.rec.of("app-c")) == 2 })
	if err := ts.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	p.waitClosed()
	evs := ts.rec.of("app-c")
	if len(evs) != 3 || evs[2].Kind != EventSessionEnd || evs[2].Err != nil {
		t.Errorf("events after Close = %+v, want a clean session end", evs)
	}
	if _, err := os.Lstat(ts.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestListenSocketFile(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	h := HandlerFunc(func(context.Context, Event) {})

	t.Run("creates dir, mode 0666", func(t *testing.T) {
		path := filepath.Join(dir, "run", "hook.sock")
		srv, err := Listen(Config{Path: path}, h, log)
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		defer srv.Close()
		fi, err := os.Stat(path)
		if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
			t.Errorf("socket %v %v, want a socket with mode 0666", fi.Mode(), err)
		}
		if _, err := Listen(Config{Path: path}, h, log); !errors.Is(err, ErrInUse) {
			t.Errorf("second Listen on a live socket: %v, want ErrInUse", err)
		}
	})
	t.Run("removes stale socket", func(t *testing.T) {
		path := filepath.Join(dir, "stale.sock")
		ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
		srv, err := Listen(Config{Path: path, Mode: 0o660}, h, log)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		defer srv.Close()
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o660 {
			t.Errorf("socket mode %v %v, want 0660", fi.Mode(), err)
		}
	})
	t.Run("refuses a regular file", func(t *testing.T) {
		path := filepath.Join(dir, "file")
		if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Listen(Config{Path: path}, h, log); !errors.Is(err, ErrNotSocket) {
			t.Errorf("Listen on a file: %v, want ErrNotSocket", err)
		}
	})
	t.Run("nil handler", func(t *testing.T) {
		if _, err := Listen(Config{Path: filepath.Join(dir, "nil.sock")}, nil, log); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Listen without a handler: %v, want ErrBadConfig", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		if _, err := Listen(Config{Path: "/" + strings.Repeat("x", 120)}, h, log); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Listen with a long path: %v, want ErrBadConfig", err)
		}
	})
}
