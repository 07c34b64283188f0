package loadgen

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/stratatrace/strata/agent/streamer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Config of a load run.
type Config struct {
	// Collectors are host:port addresses.
	Collectors []string
	// Agents is the number of simulated agents (machines); default 16.
	Agents int
	// RecordsPerBatch: default 64. PagesPerRecord: default 1024 (a
	// 4 MiB block). RunPages: see the package doc.
	RecordsPerBatch, PagesPerRecord, RunPages int
	// Duration is how long the agents produce batches; BatchesPerAgent,
	// when set, stops each agent after that many instead. After either
	// the run waits until every produced batch is acknowledged.
	Duration        time.Duration
	BatchesPerAgent int
	// Window is each streamer's batches in flight; default the streamer's.
	Window int
	// DrainTimeout bounds the wait for the last acknowledgements after
	// production ended; default 5 minutes.
	DrainTimeout time.Duration
	// App is the application id of every record; default
	// "application_loadgen_<run>".
	App string
	// Logger receives the streamers' warnings; nil discards them.
	Logger *slog.Logger
	// Progress, when set, is called about every second with the totals
	// so far.
	Progress func(Totals)
	// Credentials are the agents' transport credentials and bearer token
	// (grpc.WithTransportCredentials, grpc.WithPerRPCCredentials); none:
	// plain TCP without authentication, for collectors run --insecure.
	Credentials []grpc.DialOption
}

// Totals count what the collectors acknowledged as stored.
type Totals struct {
	Elapsed    time.Duration
	Batches    uint64 // acknowledged, duplicates included
	Duplicates uint64 // acknowledged as already stored
	Records    uint64 // records in the acknowledged batches, counted once per batch
	Pages      uint64 // pages in them
	Runs       uint64 // page runs in them
	Reconnects uint64
}

// Result is a finished run.
type Result struct {
	Totals
	// Produced is how long agents produced batches; Drained how long the
	// last acknowledgements took after that.
	Produced, Drained time.Duration
	// App and Boot identify the run's records in the store.
	App, Boot string
	// PerNode is each machine's acknowledged batches (every seq from 1 to
	// it was acknowledged once).
	PerNode map[string]uint64
	// RecordsPerBatch is the shape of every batch.
	RecordsPerBatch int
}

// Rate is records, pages and runs per second over d.
func (t Totals) Rate(d time.Duration) (records, pages, runs float64) {
	s := d.Seconds()
	if s <= 0 {
		return 0, 0, 0
	}
	return float64(t.Records) / s, float64(t.Pages) / s, float64(t.Runs) / s
}

// Run plays cfg.Agents agents until they have produced for cfg.Duration
// (or cfg.BatchesPerAgent batches each) and every batch they produced is
// acknowledged, or ctx ends (then the error is ctx's).
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Collectors) == 0 {
		return Result{}, errors.New("loadgen: no collector address")
	}
	if cfg.Duration <= 0 && cfg.BatchesPerAgent <= 0 {
		return Result{}, errors.New("loadgen: neither a duration nor a batch count")
	}
	if cfg.Agents <= 0 {
		cfg.Agents = 16
	}
	if cfg.RecordsPerBatch <= 0 {
		cfg.RecordsPerBatch = 64
	}
	if cfg.PagesPerRecord <= 0 {
		cfg.PagesPerRecord = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Minute
	}
	boot := randomHex(8)
	if cfg.App == "" {
		cfg.App = "application_loadgen_" + boot
	}
	res := Result{App: cfg.App, Boot: boot, PerNode: map[string]uint64{}, RecordsPerBatch: cfg.RecordsPerBatch}

	agents := make([]*agent, cfg.Agents)
	for i := range agents {
		a, err := newAgent(cfg, i, boot)
		if err != nil {
			return res, err // the streamers made so far hold no connection until Run
		}
		agents[i] = a
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.st.Run(runCtx)
		}()
	}
	start := time.Now()
	totals := func() Totals {
		t := Totals{Elapsed: time.Since(start)}
		for _, a := range agents {
			s := a.st.Stats()
			t.Batches += s.Acked
			t.Duplicates += s.Duplicates
			t.Reconnects += s.Reconnects
			n := a.src.acked.Load()
			t.Records += n * uint64(cfg.RecordsPerBatch)
			t.Pages += n * uint64(cfg.RecordsPerBatch*cfg.PagesPerRecord)
			t.Runs += a.src.runs.Load()
		}
		return t
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		deadline = time.After(cfg.Duration)
	}
	producing := true
	for {
		if producing && (cfg.BatchesPerAgent > 0 && allProduced(agents)) {
			producing = false
			res.Produced = time.Since(start)
		}
		if !producing && allAcked(agents) {
			break
		}
		if !producing && time.Since(start)-res.Produced > cfg.DrainTimeout {
			stop()
			wg.Wait()
			res.Totals = totals()
			return res, fmt.Errorf("loadgen: batches still unacknowledged %v after production ended", cfg.DrainTimeout)
		}
		select {
		case <-ctx.Done():
			stop()
			wg.Wait()
			res.Totals = totals()
			return res, ctx.Err()
		case <-deadline:
			deadline = nil
			for _, a := range agents {
				a.src.stop()
			}
			producing = false
			res.Produced = time.Since(start)
		case <-tick.C:
			if cfg.Progress != nil {
				cfg.Progress(totals())
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	res.Drained = time.Since(start) - res.Produced
	stop()
	wg.Wait()
	res.Totals = totals()
	for _, a := range agents {
		res.PerNode[a.src.node] = a.src.acked.Load()
	}
	return res, nil
}

func allProduced(agents []*agent) bool {
	for _, a := range agents {
		if !a.src.done() {
			return false
		}
	}
	return true
}

func allAcked(agents []*agent) bool {
	for _, a := range agents {
		if a.src.acked.Load() < a.src.limit() {
			return false
		}
	}
	return true
}

// agent is one simulated machine: its source and its streamer.
type agent struct {
	src *source
	st  *streamer.Streamer
}

// credentials returns creds, or plain TCP when there are none.
func credentials(creds []grpc.DialOption) []grpc.DialOption {
	if len(creds) == 0 {
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	return slices.Clone(creds)
}

func newAgent(cfg Config, i int, boot string) (*agent, error) {
	src := newSource(cfg, i, boot)
	addrs := make([]resolver.Address, len(cfg.Collectors))
	for j, c := range cfg.Collectors {
		// TLS checks the collector's certificate against its host, not
		// the target's made-up authority.
		host, _, err := net.SplitHostPort(c)
		if err != nil {
			host = c
		}
		addrs[j] = resolver.Address{Addr: c, ServerName: host}
	}
	r := manual.NewBuilderWithScheme("loadgen")
	r.InitialState(resolver.State{Addresses: addrs})
	st, err := streamer.New(src, streamer.Config{
		Target: "loadgen:///collectors", Window: cfg.Window, Logger: cfg.Logger.With("node", src.node),
		MaxBackoff: 2 * time.Second,
		DialOptions: append(credentials(cfg.Credentials),
			grpc.WithResolvers(r),
			// pick_first over a shuffled list: agents spread over the
			// collectors, and one whose collector dies moves on.
			grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"pick_first": {"shuffleAddressList": true}}]}`),
		),
	})
	if err != nil {
		return nil, fmt.Errorf("loadgen: agent %d: %w", i, err)
	}
	return &agent{src: src, st: st}, nil
}

// source is an agent's batches: batch seq is made from (agent, seq)
// alone, so every send of it is the same.
type source struct {
	node, boot, app string
	recs            int
	pageSize        uint64
	// blocks are the agent's blocks' runs, laid out once; record i of
	// batch s reads block (s*recs+i) mod len(blocks).
	blocks     [][]*stratav1.PageRun
	blockVaddr []uint64
	base       int64

	mu      sync.Mutex
	max     uint64 // batches it will make; grows while producing
	stopped bool
	fixed   uint64 // BatchesPerAgent, 0 = until stopped
	acked   atomic.Uint64
	runs    atomic.Uint64 // runs in the acknowledged batches
	notify  chan struct{}
}

const blocksPerAgent = 64

func newSource(cfg Config, i int, boot string) *source {
	s := &source{node: "loadgen-" + strconv.Itoa(i), boot: boot, app: cfg.App, recs: cfg.RecordsPerBatch, pageSize: 4096,
		base: time.Now().UnixNano(), fixed: uint64(cfg.BatchesPerAgent), notify: make(chan struct{}, 1)}
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	pages := cfg.PagesPerRecord
	for b := range blocksPerAgent {
		vaddr := 0x7f00_0000_0000 + uint64(b)*uint64(pages)*s.pageSize*2
		var runs []*stratav1.PageRun
		thp := cfg.RunPages == 0 && b%4 == 0 && pages%512 == 0
		for off := 0; off < pages; {
			n := cfg.RunPages
			switch {
			case thp:
				n = 512
			case n <= 0:
				n = 1 + rng.IntN(32)
			}
			n = min(n, pages-off)
			run := &stratav1.PageRun{Vaddr: vaddr + uint64(off)*s.pageSize, Count: uint32(n), Kpagecount: 1,
				State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), NumaNode: 0, Kpageflags: 1<<3 | 1<<5}
			if thp {
				run.Pfn, run.FolioPages = 512*(1+uint64(rng.IntN(1<<18))), 512
				run.State |= uint32(stratav1.PageState_PAGE_STATE_THP)
				run.Kpageflags |= 1 << stratav1.KPFTHP
			} else {
				run.Pfn = 1 + uint64(rng.IntN(4<<20))
			}
			runs = append(runs, run)
			off += n
		}
		s.blocks = append(s.blocks, runs)
		s.blockVaddr = append(s.blockVaddr, vaddr)
	}
	return s
}

// runsOf is the number of page runs in batch seq.
func (s *source) runsOf(seq uint64) uint64 {
	var n uint64
	for i := range s.recs {
		n += uint64(len(s.blocks[(int(seq)*s.recs+i)%blocksPerAgent]))
	}
	return n
}

// limit is the last seq this source will make.
func (s *source) limit() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fixed > 0 {
		return s.fixed
	}
	return s.max
}

func (s *source) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped || (s.fixed > 0 && s.max >= s.fixed)
}

// stop ends production: the batches made so far are all it will make.
func (s *source) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.fixed > 0 {
		s.fixed = s.max
	}
}

// Next makes batch after+1 unless production has ended past it.
func (s *source) Next(after uint64) (*stratav1.Batch, error) {
	seq := after + 1
	s.mu.Lock()
	if seq > s.max {
		if s.stopped || (s.fixed > 0 && seq > s.fixed) {
			s.mu.Unlock()
			return nil, nil
		}
		s.max = seq
	}
	s.mu.Unlock()
	return s.batch(seq), nil
}

func (s *source) batch(seq uint64) *stratav1.Batch {
	b := &stratav1.Batch{NodeName: s.node, BootId: s.boot, Seq: seq,
		Node:    &stratav1.NodeInfo{NumaNodes: 1, PageSize: uint32(s.pageSize)},
		Records: make([]*stratav1.Record, s.recs)}
	for i := range s.recs {
		n := (int(seq)*s.recs + i) % blocksPerAgent
		runs := s.blocks[n]
		pages := uint64(0)
		for _, r := range runs {
			pages += uint64(r.GetCount())
		}
		b.Records[i] = &stratav1.Record{
			TimeUnixNano: s.base + int64(seq)*int64(s.recs) + int64(i), Access: stratav1.AccessKind_ACCESS_KIND_READ,
			Pid: 4242, Tid: 4243, PageSize: uint32(s.pageSize), Vaddr: s.blockVaddr[n], Length: pages * s.pageSize,
			CpuNumaNode: 0, Runs: runs,
			Block: &stratav1.SparkBlock{AppId: s.app, ExecutorId: "1", RddId: int32(n % 8), Partition: int32(n / 8),
				BlockId: "rdd_" + strconv.Itoa(n%8) + "_" + strconv.Itoa(n/8), Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE,
				Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP, HookBlockId: uint64(n + 1)},
		}
	}
	return b
}

// Ack records that every batch up to seq is stored. The streamer calls
// it from one goroutine, in order.
func (s *source) Ack(seq uint64) error {
	for cur := s.acked.Load(); cur < seq; cur++ {
		s.runs.Add(s.runsOf(cur + 1))
	}
	if seq > s.acked.Load() {
		s.acked.Store(seq)
	}
	return nil
}

// Acked is the last acknowledged seq.
func (s *source) Acked() uint64 { return s.acked.Load() }

// Notify never fires: Next has a batch whenever production has not
// ended, and the streamer polls.
func (s *source) Notify() <-chan struct{} { return s.notify }

func randomHex(n int) string {
	b := make([]byte, n)
	crand.Read(b)
	return hex.EncodeToString(b)
}
