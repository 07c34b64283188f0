package hooksrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stratatrace/strata/agent/procmem"
)

// DefaultPath is where the agent listens unless configured otherwise; the
// hook uses the same default (STRATA_DEFAULT_SOCKET in strata_hook.h).
const DefaultPath = "/run/strata/hook.sock"

// Defaults of Config.
const (
	DefaultMode         os.FileMode = 0o666
	DefaultMaxBlocks                = 1 << 16
	DefaultHelloTimeout             = 10 * time.Second
	// DefaultIdleTimeout closes a session that sent no frame for this
	// long after HELLO. Hooks send a DROPPED frame at least every
	// KeepaliveInterval, so a JVM idle between jobs stays connected.
	DefaultIdleTimeout = 3 * time.Minute
	// KeepaliveInterval is how often a hook must send a frame (DROPPED
	// when it has nothing else to say); jvmhook/include/strata_hook.h
	// states it as STRATA_KEEPALIVE_SEC for the hook's side.
	KeepaliveInterval = 30 * time.Second
)

// Errors of Listen and of sessions.
var (
	ErrInUse          = errors.New("socket in use by a live listener")
	ErrNotSocket      = errors.New("path exists and is not a socket")
	ErrNoHello        = errors.New("first frame is not HELLO")
	ErrDuplicateHello = errors.New("second HELLO in a session")
	ErrOffInSession   = errors.New("OFF after HELLO")
	ErrForeignPID     = errors.New("frame names a pid that is not the peer's")
	ErrTooManyBlocks  = errors.New("too many live blocks in one session")
	ErrFrameTooLarge  = errors.New("packet larger than FrameMax")
	ErrBadConfig      = errors.New("invalid config")
	ErrHelloTimeout   = errors.New("no HELLO in time")
)

// Config configures a Server.
type Config struct {
	// Path of the SEQPACKET socket. Its directory is created (0755) when
	// missing; a stale socket file there (nobody accepting) is removed.
	Path string
	// Mode of the socket file. The default 0666 lets executors of any user
	// connect: YARN runs containers as the submitting user, and the agent
	// does not trust file permissions anyway: SO_PEERCRED binds every range
	// to the peer's own address space, so a peer can only describe itself.
	// Use 0660 plus a group to restrict who may report at all.
	Mode os.FileMode
	// GID is the socket file's group; 0 keeps the creator's. With Mode
	// 0660 only the group's members (and root) may connect.
	GID int
	// FS is where the pid checks read /proc/<pid>/status (the agent's
	// --proc); the zero FS is procmem.Default().
	FS procmem.FS
	// MaxBlocks bounds the live blocks of one session; a session that
	// registers more is closed (default 65536).
	MaxBlocks int
	// HelloTimeout closes a connection that sends no HELLO in time, so a
	// silent peer cannot hold a session forever.
	HelloTimeout time.Duration
	// IdleTimeout closes a session that sends no frame for this long
	// after HELLO (default 3 min; negative: never). Keep it well above
	// KeepaliveInterval, the hooks' promise; Listen warns otherwise.
	IdleTimeout time.Duration
	// MaxSessions, MaxSessionsPerUID and MaxSessionsPerPID cap the open
	// connections on the node, per peer uid and per peer process (SO_PEERCRED);
	// a connection past a cap is closed at once (defaults 1024, 256, 4).
	MaxSessions, MaxSessionsPerUID, MaxSessionsPerPID int
	// MaxRangeBytes is the longest range a REGISTER or MOVE may name
	// (default 16 GiB); longer ones are dropped.
	MaxRangeBytes uint64
	// MaxBlocksPerUID and MaxLiveBlocks cap the live blocks of one peer
	// uid and of the node (defaults 131072 and 262144); a REGISTER of a new
	// block past either is dropped and the session goes on.
	MaxBlocksPerUID, MaxLiveBlocks int
	// MaxWalkExtents caps the extents of one walk (default 65536);
	// MaxSessionExtents and MaxLiveExtents the extents of the current walks
	// of one session and of the node (defaults 1<<20 and 1<<22, 16 and 64
	// MiB of extents). A walk past a cap is dropped: its block keeps its
	// previous walk and the session goes on.
	MaxWalkExtents, MaxSessionExtents, MaxLiveExtents int
}

// DefaultConfig is the configuration a zero Config stands for: every
// limit at its default.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.Path == "" {
		c.Path = DefaultPath
	}
	if c.Mode == 0 {
		c.Mode = DefaultMode
	}
	if c.FS == (procmem.FS{}) {
		c.FS = procmem.Default()
	}
	if c.MaxBlocks == 0 {
		c.MaxBlocks = DefaultMaxBlocks
	}
	if c.HelloTimeout == 0 {
		c.HelloTimeout = DefaultHelloTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	setDefault(&c.MaxSessions, DefaultMaxSessions)
	setDefault(&c.MaxSessionsPerUID, DefaultMaxSessionsPerUID)
	setDefault(&c.MaxSessionsPerPID, DefaultMaxSessionsPerPID)
	setDefault(&c.MaxBlocksPerUID, DefaultMaxBlocksPerUID)
	setDefault(&c.MaxLiveBlocks, DefaultMaxLiveBlocks)
	setDefault(&c.MaxWalkExtents, DefaultMaxWalkExtents)
	setDefault(&c.MaxSessionExtents, DefaultMaxSessionExtents)
	setDefault(&c.MaxLiveExtents, DefaultMaxLiveExtents)
	if c.MaxRangeBytes == 0 {
		c.MaxRangeBytes = DefaultMaxRangeBytes
	}
	return c
}

func setDefault(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if len(c.Path) >= 108 { // sizeof(sockaddr_un.sun_path)
		return fmt.Errorf("validate config: %w: socket path longer than 107 bytes", ErrBadConfig)
	}
	if c.Mode&^os.ModePerm != 0 {
		return fmt.Errorf("validate config: %w: mode %v has non-permission bits", ErrBadConfig, c.Mode)
	}
	if c.GID < 0 {
		return fmt.Errorf("validate config: %w: negative group id %d", ErrBadConfig, c.GID)
	}
	if c.MaxBlocks < 0 || c.HelloTimeout < 0 || c.MaxSessions < 0 || c.MaxSessionsPerUID < 0 ||
		c.MaxSessionsPerPID < 0 || c.MaxBlocksPerUID < 0 || c.MaxLiveBlocks < 0 ||
		c.MaxWalkExtents < 0 || c.MaxSessionExtents < 0 || c.MaxLiveExtents < 0 {
		return fmt.Errorf("validate config: %w: negative block or session limit, or hello timeout", ErrBadConfig)
	}
	return nil
}

// Stats are the server's counters since Listen.
type Stats struct {
	Sessions      uint64 // connections accepted
	Active        uint64 // sessions open now
	Frames        uint64 // frames decoded and accepted
	Rejected      uint64 // frames naming a pid that is not the peer's
	Malformed     uint64 // sessions closed for a malformed frame or protocol error
	Unknown       uint64 // MOVE/ACCESS/FREE/WALK of a block id not live (its REGISTER was dropped?)
	DroppedByPeer uint64 // frames the hooks reported dropping (DROPPED frames)
	Walks         uint64 // complete walks and STALE marks delivered
	// WalksIncomplete counts walks lost because a part did not arrive (the
	// hook dropped it): their blocks kept their previous walks.
	WalksIncomplete uint64
	// Off counts the JVMs whose hook reported itself off (an OFF frame),
	// by OffReason (index 0 unused).
	Off [offReasonMax + 1]uint64
}

type counters struct {
	sessions, active, frames, rejected, malformed, unknown, droppedByPeer, walks, walksIncomplete atomic.Uint64

	// off counts the OFF frames taken, by OffReason.
	off [offReasonMax + 1]atomic.Uint64
}

// Server accepts hook connections and turns their frames into events.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	ln      *net.UnixListener
	ctx     context.Context // cancelled by Close; passed to the handler
	cancel  context.CancelFunc
	c       counters
	refused refusalCounters
	nextID  atomic.Uint64

	mu          sync.Mutex
	closed      bool
	sessions    map[*net.UnixConn]peerID
	uidSessions map[uint32]int
	pidSessions map[int32]int
	liveBlocks  int
	uidBlocks   map[uint32]int
	liveExtents int // extents of every session's current walks
	wg          sync.WaitGroup
}

// Listen creates the socket and returns a Server ready to Serve. Events go
// to h; log may be nil to discard the server's log.
func Listen(cfg Config, h Handler, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("listen hook socket: %w: nil Handler", ErrBadConfig)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	if err := removeStale(cfg.Path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: cfg.Path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("listen hook socket: %w", err)
	}
	if cfg.GID > 0 {
		if err := os.Chown(cfg.Path, -1, cfg.GID); err != nil {
			ln.Close()
			return nil, fmt.Errorf("chown hook socket: %w", err)
		}
	}
	if err := os.Chmod(cfg.Path, cfg.Mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod hook socket: %w", err)
	}
	if cfg.IdleTimeout > 0 && cfg.IdleTimeout <= 2*KeepaliveInterval {
		log.Warn("idle timeout is not well above the hooks' keepalive interval: idle JVMs may be disconnected",
			"component", "hooksrv", "idle_timeout", cfg.IdleTimeout, "keepalive", KeepaliveInterval)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:         cfg,
		handler:     h,
		log:         log.With("component", "hooksrv"),
		ln:          ln,
		ctx:         ctx,
		cancel:      cancel,
		sessions:    map[*net.UnixConn]peerID{},
		uidSessions: map[uint32]int{},
		pidSessions: map[int32]int{},
		uidBlocks:   map[uint32]int{},
	}, nil
}

// removeStale removes a socket file nobody accepts on; it refuses to touch
// a live socket or a file that is not a socket.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat hook socket: %w", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("listen %s: %w", path, ErrNotSocket)
	}
	c, err := net.DialTimeout("unixpacket", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("listen %s: %w", path, ErrInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("probe hook socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// Path returns the socket path.
func (s *Server) Path() string { return s.cfg.Path }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	var off [offReasonMax + 1]uint64
	for r := range off {
		off[r] = s.c.off[r].Load()
	}
	return Stats{
		Off:           off,
		Sessions:      s.c.sessions.Load(),
		Active:        s.c.active.Load(),
		Frames:        s.c.frames.Load(),
		Rejected:      s.c.rejected.Load(),
		Malformed:     s.c.malformed.Load(),
		Unknown:       s.c.unknown.Load(),
		DroppedByPeer: s.c.droppedByPeer.Load(),
		Walks:         s.c.walks.Load(),
		// A walk part missing: the walk is lost, the block keeps its last.
		WalksIncomplete: s.c.walksIncomplete.Load(),
	}
}

// Serve accepts connections until ctx is done or Close is called, starting
// one goroutine per connection. It returns nil after a shutdown, else the
// accept error that stopped it. Serve calls Close before returning.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	defer s.Close()
	backoff := 5 * time.Millisecond
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) ||
				errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				s.log.Warn("accept failed, retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			return fmt.Errorf("accept hook connection: %w", err)
		}
		backoff = 5 * time.Millisecond
		cred, err := peerCred(conn)
		if err != nil {
			s.refuse(conn, nil, err)
			continue
		}
		if err := s.track(conn, peerID{uid: cred.Uid, pid: cred.Pid}); err != nil {
			if errors.Is(err, errClosing) {
				conn.Close()
				return nil
			}
			s.refuse(conn, cred, err)
			continue
		}
		s.c.sessions.Add(1)
		s.c.active.Add(1)
		go s.serveConn(conn, cred)
	}
}

// errClosing: the server is closing and takes no new session.
var errClosing = errors.New("server closing")

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track registers a session unless the server is closing or a session
// cap refuses it.
func (s *Server) track(conn *net.UnixConn, p peerID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosing
	}
	if err := s.admitLocked(conn, p); err != nil {
		return err
	}
	s.wg.Add(1)
	return nil
}

func (s *Server) untrack(conn *net.UnixConn) {
	s.mu.Lock()
	s.forgetLocked(conn)
	s.mu.Unlock()
	s.wg.Done()
}

// Close stops accepting, cancels the handler context, ends every session
// (each still delivers its SessionEnd event) and waits for the session goroutines. The socket file is removed.
// Close is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for conn := range s.sessions {
		conn.Close()
	}
	s.mu.Unlock()
	s.cancel() // unblocks handlers waiting on ctx before we wait for them
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("close hook socket: %w", err)
	}
	return nil
}
